"""The offline "local LLM": deterministic summaries, facts, headers, titles and tags.

When no OpenAI-compatible model is configured, every piece of derived text in Mnemo comes from
here. Everything is pure Python (regular expressions, counters and a small TF-IDF), so the same
input always gives the same output, nothing touches the network or the database, and a typical
turn pair is processed in well under a millisecond (the importer needs >1,000 pairs/s).

Design choices worth knowing:

- Keywords come from content words and short keyphrases (runs of 2-3 content words between
  stop-words and punctuation). English, chat filler and a small multilingual stop list are
  removed, as are numbers, placeholders such as ``[EMAIL]``, URLs, code blocks and laughter.
  Plurals are folded ("recipes" and "recipe" count together). The confidence (0-1) grows with
  the evidence (how often, in how many texts) and with the keyword's rank.
- Summaries are extractive bullet digests: sentences are scored by TF-IDF centrality (or by an
  optional, caller-supplied sentence embedder), picked with maximal marginal relevance so they
  do not repeat each other, compressed (filler openers dropped, long sentences clipped) and
  rewritten in the third person for the user's own statements. A digest never exceeds
  ``max_chars`` nor (past 160 characters) half of the transcript, so it cannot turn into a
  transcript replay.
- Facts come only from the user's own first-person statements. What the assistant says is never
  turned into a fact, not even when it "confirms" something: an assistant restating or guessing
  is exactly how wrong memories are born, and a true fact the user said is already captured.
- ``is_update`` is a documented pattern rule (see its docstring), not a model judgement.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "contextual_header",
    "extract_facts",
    "fact_subject",
    "fold_summaries",
    "is_update",
    "keywords",
    "STOP_WORDS",
    "summarize",
    "tags",
    "title",
]

# Only the head of a huge text is analysed: pasted documents would otherwise dominate the cost
# and the keywords of a conversation.
MAX_TEXT_CHARS = 20_000

# --------------------------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------------------------

_ENGLISH_STOP = """
a about above across after afterwards again against all almost alone along already also although
always am among amongst amount an and another any anyhow anyone anything anyway anywhere are
around as at be became because become becomes becoming been before beforehand behind being
below beside besides between beyond both but by can cannot cant could couldnt de
describe did do does doing done down due during each eg either else elsewhere empty enough
etc even ever every everyone everything everywhere except few find first for former
formerly from full further get gets getting give given go goes going gone got had has have
having he hence her here hereafter hereby herein hereupon hers herself him himself his how however
hundred ie if in inc indeed into is it its itself just keep kept last latter latterly
least less let lets ltd made many may me meanwhile might mine more moreover most mostly much
must my myself namely neither never nevertheless next nine no nobody none noone nor not
nothing now nowhere of off often on once one only onto or other others otherwise our ours
ourselves out over own part per perhaps please put rather re same see seem seemed seeming seems
serious several she should show since sincere six sixty so some somehow someone something
sometime sometimes somewhere still such take ten than that the their theirs them themselves
then thence there thereafter thereby therefore therein thereupon these they third this
those though three through throughout thru thus to together too top toward towards twelve twenty
two un under until up upon us very via was we well were what whatever when whence whenever where
whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever whole
whom whose why will with within without would yet you your yours yourself yourselves
i im ive id ill youre youve youll youd hes shes its were theyre theyve isnt arent wasnt werent
dont doesnt didnt wont wouldnt cant couldnt shouldnt havent hasnt hadnt
i'm i've i'd i'll you're you've you'll you'd he's she's it's we're we've we'll we'd they're
they've they'll they'd isn't aren't wasn't weren't don't doesn't didn't won't wouldn't can't
couldn't shouldn't haven't hasn't hadn't let's that's there's here's what's who's where's how's
via vs versus within upon onto thing things stuff way ways lot lots kind sort bit
"""

# Words that carry no topic in a chat: greetings, politeness, reactions, meta-talk about the
# conversation itself, generic verbs and adjectives.
_CHAT_STOP = """
hi hello hey hiya yo thanks thank thx ty cheers welcome bye goodbye ok okay okey k sure yes yeah
yep yup nope nah alright right cool great nice awesome perfect fine good bad better best worse
lol lmao rofl omg wow oh ah uh um umm hmm hm huh haha hehe ugh oops yay
please pls plz sorry excuse mind maybe probably actually basically literally really quite pretty
simply just like likely unlikely definitely certainly absolutely totally kinda sorta gonna wanna
gotta lemme dunno
want wants wanted wanting need needs needed needing know knows knew known knowing think thinks
thought thinking make makes making use uses used using try tries tried trying help helps helped
helping ask asks asked asking tell tells told telling say says said saying mean means meant
look looks looked looking seem feel feels felt wonder wondering wondered guess suppose let
come comes came coming going went goes put puts give gives gave giving take takes took
answer answers question questions reply response respond explain explains explained
example examples info information thing things something anything everything nothing
someone anyone everyone stuff idea ideas tip tips advice suggestion suggestions recommendation
recommendations option options way ways time times today tomorrow yesterday day days week weeks
year years month months moment minute minutes hour hours
new old big small little large long short high low many much more most less least lot lots
different same various specific certain general particular main important simple easy hard
possible real true false able sure whole full quick quickly fast slow currently recently
also still already ever never always usually often sometimes now then soon later again
chat chatgpt assistant ai bot conversation message messages thread
love loves loved loving hate hates hated enjoy enjoys enjoyed prefer prefers preferred
check checks checked checking early late online sound sounds hope hoping glad happy
möchte möchten würde würden gerne bitte danke hallo quiero quieres puedo puedes gracias hola
merci bonjour voudrais veux peux grazie ciao vorrei quero posso obrigado obrigada olá
etc eg ie vs
"""

# A small multilingual list (German, French, Spanish, Italian, Portuguese, Dutch function
# words). Words that are also English content words (war, son, gift, art, kind, hat...) are left
# out on purpose.
_MULTILINGUAL_STOP = """
der die das den dem des ein eine einer einen einem eines und oder aber nicht ist sind war waren
bin bist sein ich du er sie es wir ihr mich mir dich dir uns euch mein meine dein deine sein
seine ihre unser auf aus bei mit nach von vor zu zum zur im ins am vom für über unter durch gegen
ohne um auch noch schon nur sehr wie wenn dass daß als ob weil denn doch ja nein hier dort dann
kann könnte muss soll will wird werden wurde habe hast hatte gibt mehr
le la les un une des du de et ou mais est sont était être avoir ai as avons ont je tu il elle
nous vous ils elles mon ma mes ton ta tes sa ses notre votre leur leurs ce cet cette ces qui que
quoi dont où dans sur sous avec pour par sans chez entre vers pas ne plus très bien aussi comme
au aux y en se cest
el los las del al y o u pero es son era fue ser estar está están estoy yo tú él ella nosotros
vosotros ellos ellas mi mis tu tus su sus nuestro nuestra que quien cual cuando donde como para
por con sin sobre entre hasta desde muy más menos también ya sí no lo les una uno unos unas este
esta estos estas ese esa eso hay
il lo gli di da tra fra è sono ero era essere avere ho hai ha abbiamo hanno io lui lei noi voi
loro mio mia miei mie tuo tua suo sua che chi cui dove come quando perché con su per non più
molto anche ma se questo questa quello quella nel nella nei delle degli dei della dello
o os as um uma uns umas do da dos das em no na nos nas pelo pela com não que eu você ele ela
nós eles elas meu minha seu sua mas mais muito também isso isto aquele aquela
het een en van ik je jij hij zij wij jullie niet dat deze dit op te zijn met voor er maar om
ook als bij nog naar uit aan wat hoe wie waar wanneer omdat heb heeft hebben was waren wordt
"""


def _word_set(*blobs: str) -> frozenset[str]:
    words: set[str] = set()
    for blob in blobs:
        words.update(blob.split())
    return frozenset(words)


STOP_WORDS: frozenset[str] = _word_set(_ENGLISH_STOP, _CHAT_STOP, _MULTILINGUAL_STOP)

# Words whose trailing "s" is not a plural.
_NO_FOLD = frozenset(
    """news series species physics mathematics maths economics politics ethics statistics
    analytics athletics gymnastics linguistics logistics electronics robotics genetics
    kubernetes lens bus gas yes this its his has was does goes always perhaps chaos canvas
    atlas alias bias campus census corpus status virus bonus focus thesis basis analysis
    diagnosis crisis emphasis hypothesis synopsis axis iris paris texas kansas christmas
    windows aws ios macos sms gps dns vs os cors jens""".split()
)

_PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Z0-9_]*(?:[ :_-][A-Z0-9_]+)*\]|<[A-Z][A-Z0-9_]*>")
_MD_LINK_RE = re.compile(r"!?\[([^\]\n]{0,200})\]\([^)\s]{0,500}\)")
_URL_TLDS = (
    r"(?:com|org|net|edu|gov|io|de|uk|fr|es|it|nl|eu|co|"
    r"ai|app|dev|info|me|ch|at|ru|jp|cn|us|ca|au)"
)
_URL_RE = re.compile(
    r"(?:https?://|www\.)\S+|\b(?:[\w-]+\.)+" + _URL_TLDS + r"\b(?:/\S*)?", re.IGNORECASE
)
# Every match of _URL_RE contains "://", "www." or ".<tld>" followed by a word boundary; this
# search is many times cheaper than trying the full pattern at every word boundary.
_URL_HINT_RE = re.compile(r"www\.|\." + _URL_TLDS + r"\b", re.IGNORECASE)
_SCHEME_URL_RE = re.compile(r"(?:https?://|www\.)([\w.-]+)\S*", re.IGNORECASE)
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_CODE_FENCE_RE = re.compile(r"```[\s\S]*?(?:```|\Z)")
_FRAGMENT_SPLIT_RE = re.compile(r"[.,;:!?()\[\]{}\"“”„«»…|/\\<>=+*#@&%$^~`\n\r\t]+|\s[-–—]+\s")
_WORD_RE = re.compile(r"\w+(?:['’-]\w+)*")
_HAS_LETTER_RE = re.compile(r"[^\W\d_]")
_JUNK_WORD_RE = re.compile(r"(.)\1\1|^(?:ha|he|hi|lo|ja|xa)+h?l?$|^x+d+$|^_|_$")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE_RE = re.compile(r"\s+")


# --------------------------------------------------------------------------------------------
# Tokenisation shared by every function
# --------------------------------------------------------------------------------------------


def _strip_noise(text: str) -> str:
    """Remove what is never a topic: code blocks, URLs, e-mail addresses and placeholders."""
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
    # Each pattern runs only when the text holds a character it needs (ASCII is already NFKC):
    # most chat text has no code, link or placeholder, and a regex scan per text adds up.
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if "```" in text:
        text = _CODE_FENCE_RE.sub("\n", text)
    if "](" in text:
        text = _MD_LINK_RE.sub(r"\1", text)
    if "://" in text or ("." in text and _URL_HINT_RE.search(text)):
        text = _URL_RE.sub(" ", text)
    if "@" in text:
        text = _EMAIL_RE.sub(" ", text)
    if "[" in text or "<" in text:
        text = _PLACEHOLDER_RE.sub(" ", text)
    return text


def _fold(word: str) -> str:
    """Light plural folding for matching only (display forms come from the text itself)."""
    if len(word) <= 3 or word in _NO_FOLD or not word.endswith("s"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "ics", "oes", "'s")):
        return word
    return word[:-1]


def _is_content(lower: str, surface: str) -> bool:
    if len(lower) > 30 or not _HAS_LETTER_RE.search(lower):
        return False
    if "'" in lower or _JUNK_WORD_RE.search(lower):
        return False
    digits = sum(ch.isdigit() for ch in lower)
    if digits * 2 > len(lower):
        return False
    if lower in STOP_WORDS or _fold(lower) in STOP_WORDS:
        return False
    if len(lower) < 3:
        # Two-letter words only as acronyms ("AI", "EU", "UK").
        return len(lower) == 2 and surface.isupper() and surface.isalpha()
    return True


# A content word right after one of these is most likely a verb...
_VERB_PRECEDERS = frozenset("i you we they he she to i'd i'll we'll you'll don't didn't".split())
# ...and so is one right before one of these.
_DETERMINERS = frozenset(
    "a an the my your his her their our its this that these those some any me him them us it".split()
)
_CJK = "\x00cjk"

# Fields of a cached word (a plain tuple: the tokenizer looks up one per word of every text).
_LOWER, _SURFACE, _KEY, _KEY1, _UPPER, _ED, _PRECEDER, _DETERMINER, _BIGRAMS = range(9)
# Stands between two fragments of a text (and after the last one); built at run time so it is
# never the same object as a word's tuple (the tokenizer tests identity).
_BOUNDARY: tuple = ("",) * 3 + (None, False, False, False, False, ())
# A word, or a run of fragment-splitting punctuation (matched as "", a fragment boundary): one
# scan finds the same words as splitting the text into fragments and then finding the words
# of each, because no word character can start or occur inside a separator.
_TOKEN_RE = re.compile(f"({_WORD_RE.pattern})|{_FRAGMENT_SPLIT_RE.pattern}")


@lru_cache(maxsize=100_000)
def _word(raw: str) -> tuple:
    """Everything the tokenizer needs to know about one raw word, computed once per spelling
    (chat vocabulary is small and this is the hot loop): lowercase, surface, key (the folded
    content word, "" for a non-content word, or the CJK marker), the key as a 1-tuple (the
    candidate key of the word), whether the surface starts upper-case, whether it looks like a
    past participle, whether it makes the next word verb-like ("I", "to") or the previous one
    ("the", "my"), and for CJK text its character bigrams."""
    if not raw:
        return _BOUNDARY
    surface = raw.replace("’", "'").strip("-'")
    lower = surface.lower()
    if lower.endswith("'s"):
        lower, surface = lower[:-2], surface[:-2]
    if not lower:
        return ("", "", "", None, False, False, False, False, ())
    bigrams: tuple[str, ...] = ()
    if _CJK_RE.search(lower):
        key = _CJK
        # No spaces in Chinese/Japanese: character bigrams stand in for words.
        chars = [ch for ch in lower if _CJK_RE.match(ch)]
        bigrams = tuple(chars[index] + chars[index + 1] for index in range(len(chars) - 1))
    elif _is_content(lower, surface):
        key = _fold(lower)
    else:
        key = ""
    return (
        lower,
        surface,
        key,
        (key,) if key and key != _CJK else None,
        surface[:1].isupper(),
        lower.endswith("ed") and len(lower) > 4,
        lower in _VERB_PRECEDERS,
        lower in _DETERMINERS,
        bigrams,
    )


def _words_of(text: str) -> list[tuple]:
    """The cached words of ``text`` (noise removed) in order, with ``_BOUNDARY`` between two
    fragments (split at punctuation) and at the end."""
    words = list(map(_word, _TOKEN_RE.findall(_strip_noise(text))))
    words.append(_BOUNDARY)
    return words


def _content_keys(text: str) -> list[str]:
    """The keys of the content words of ``text`` in order (CJK as character bigrams).

    Fragment boundaries do not matter here, so the plain word pattern is enough: it finds the
    same words in the whole text as in each fragment."""
    keys: list[str] = []
    for word in map(_word, _WORD_RE.findall(_strip_noise(text))):
        if word[_KEY1] is not None:
            keys.append(word[_KEY])
        elif word[_BIGRAMS]:
            keys.extend(word[_BIGRAMS])
    return keys


# --------------------------------------------------------------------------------------------
# Keywords, tags, title
# --------------------------------------------------------------------------------------------


class _Candidate:
    """One keyword or keyphrase and the evidence for it."""

    __slots__ = (
        "keys",
        "count",
        "first",
        "text_hits",
        "capitalised",
        "surfaces",
        "mass",
        "score",
        "current",
        "whole_run",
    )

    def __init__(
        self,
        keys: tuple[str, ...],
        first: int,
        count: int,
        mass: float,
        capitalised: int,
        surfaces: dict[str, int],
        whole_run: bool,
    ) -> None:
        self.keys = keys
        self.count = count
        self.first = first
        self.text_hits = 1  # in how many texts it occurs
        self.capitalised = capitalised
        self.surfaces = surfaces
        self.mass = mass  # occurrences weighted by how noun-like each one looked
        self.score = 0.0
        self.current = 0.0  # the score while ranking (lowered as better candidates are picked)
        self.whole_run = whole_run  # a phrase that was once a complete run of 2-3 content words


# keys, first occurrence (position among the text's occurrences), count, weights in text order,
# capitalised count, {surface: count} in first-seen order, ever a whole run
_Evidence = tuple[tuple[str, ...], int, int, list[float], int, dict[str, int], bool]
# A phrase lifted out of a long run and seen once: keys, first occurrence, weight, surface
_OneOff = tuple[tuple[str, ...], int, float, str]


def _add_phrase(
    grouped: dict,
    singles: dict,
    keys: tuple[str, ...],
    position: int,
    surface: str,
    weight: float,
    whole: bool,
) -> None:
    """One phrase occurrence. A phrase seen once and not as a whole run waits in ``singles``
    as (position, surface): most n-grams of long runs never repeat, and this way they cost
    one small tuple instead of an evidence entry."""
    entry = grouped.get(keys)
    if entry is not None:
        entry[1].append(weight)
        surfaces = entry[3]
        surfaces[surface] = surfaces.get(surface, 0) + 1
        if whole:
            entry[4] = True
        return
    seen = singles.pop(keys, None) if singles else None
    if seen is None:
        if whole:
            grouped[keys] = [position, [weight], 0, {surface: 1}, True]
        else:  # phrases that are not whole runs always weigh 1.0
            singles[keys] = (position, surface)
        return
    first, first_surface = seen
    surfaces = {first_surface: 1}
    surfaces[surface] = surfaces.get(surface, 0) + 1
    grouped[keys] = [first, [1.0, weight], 0, surfaces, whole]


def _add_run_phrases(
    grouped: dict, singles: dict, position: int, run: list[tuple], verbs: list[bool]
) -> int:
    """The phrase occurrences of one run of two or more content words (cached words and
    their verb-like flags); returns the position after them."""
    size = len(run)
    keys_of = [word[_KEY] for word in run]
    surface_of = [word[_SURFACE] for word in run]
    if size <= 3:
        if size == 3:
            # Sub-phrases of "Japan Rail Pass" merge with their occurrences elsewhere.
            first, second, third = keys_of
            _add_phrase(
                grouped,
                singles,
                (first, second),
                position,
                f"{surface_of[0]} {surface_of[1]}",
                1.0,
                False,
            )
            _add_phrase(
                grouped,
                singles,
                (second, third),
                position + 1,
                f"{surface_of[1]} {surface_of[2]}",
                1.0,
                False,
            )
            position += 2
        weight = 0.6 if verbs[0] or verbs[-1] else 1.0
        _add_phrase(grouped, singles, tuple(keys_of), position, " ".join(surface_of), weight, True)
        return position + 1
    # Capitalised names of two or three words ("The Japan Rail Pass costs").
    start = -1
    for index in range(size + 1):
        if index < size and run[index][_UPPER] and not verbs[index]:
            if start < 0:
                start = index
        elif start >= 0:
            if 2 <= index - start <= 3:
                _add_phrase(
                    grouped,
                    singles,
                    tuple(keys_of[start:index]),
                    position,
                    " ".join(surface_of[start:index]),
                    1.0,
                    True,
                )
                position += 1
            start = -1
    for index in range(size - 1):
        _add_phrase(
            grouped,
            singles,
            (keys_of[index], keys_of[index + 1]),
            position,
            f"{surface_of[index]} {surface_of[index + 1]}",
            1.0,
            False,
        )
        position += 1
    for index in range(size - 2):
        _add_phrase(
            grouped,
            singles,
            (keys_of[index], keys_of[index + 1], keys_of[index + 2]),
            position,
            f"{surface_of[index]} {surface_of[index + 1]} {surface_of[index + 2]}",
            1.0,
            False,
        )
        position += 1
    return position


@lru_cache(maxsize=1024)
def _text_evidence(text: str) -> tuple[int, tuple[_Evidence, ...], tuple[_OneOff, ...]]:
    """(number of candidate occurrences, evidence per distinct candidate, one-offs) of a text.

    The text is cut into runs of adjacent content words (split at stop-words and punctuation;
    a content word is verb-like when it is not capitalised mid-fragment and follows "I", "to"...
    or precedes "the", "my"...; CJK text gives one run per character bigram). Occurrences, in
    text order per run: each content word; for a run of three, its two bigrams; a run of 2-3
    words as a whole; in a longer run, its capitalised names ("The Japan Rail Pass costs") and
    then all its bigrams and trigrams (which count only if they repeat: those seen once are
    listed apart as one-offs, which most of them stay). They are folded per
    candidate once and cached per text (the importer ranks a turn's user text twice and its
    reply twice), so ranking merges a few dozen aggregates instead of replaying every
    occurrence. Weights stay in text order so the merged mass is the same float sum as adding
    occurrence by occurrence. One walk over the cached words does the tokenizing and the
    counting (this is the importer's hottest loop: fields are read by position).
    """
    # keys -> [first position, weights, capitalised count, {surface: count}, whole run]
    grouped: dict[tuple[str, ...], list] = {}
    singles: dict[tuple[str, ...], tuple[int, str]] = {}  # phrases seen once so far
    get = grouped.get
    position = 0
    words = _words_of(text)
    run_start = -1  # index of the current run's first word
    verbs: list[bool] = []  # verb-like flags of the run's words
    previous_preceder = False
    fragment_start = True
    for index, word in enumerate(words):
        # word: lower, surface, key, key1, upper, ed, preceder, determiner, bigrams
        key1 = word[3]
        if key1 is not None:
            if word[4] and not fragment_start:  # capitalised mid-fragment: never verb-like
                verb_like = False
                weight = 1.0
                capitalised = 1
            else:
                # The next word exists: the list ends with a boundary (no determiner).
                verb_like = previous_preceder or words[index + 1][7]
                weight = 0.5 if verb_like or word[5] else 1.0
                capitalised = 0
            entry = get(key1)
            if entry is None:
                grouped[key1] = [position, [weight], capitalised, {word[1]: 1}, False]
            else:
                entry[1].append(weight)
                entry[2] += capitalised
                surfaces = entry[3]
                surface = word[1]
                surfaces[surface] = surfaces.get(surface, 0) + 1
            position += 1
            if run_start < 0:
                run_start = index
                verbs = [verb_like]
            else:
                verbs.append(verb_like)
        else:
            if run_start >= 0:
                if index - run_start > 1:
                    position = _add_run_phrases(
                        grouped, singles, position, words[run_start:index], verbs
                    )
                run_start = -1
            if word is _BOUNDARY:
                previous_preceder = False
                fragment_start = True
                continue
            if word[8]:
                for bigram in word[8]:
                    entry = get((bigram,))
                    if entry is None:
                        grouped[(bigram,)] = [position, [1.0], 0, {bigram: 1}, False]
                    else:
                        entry[1].append(1.0)
                        surfaces = entry[3]
                        surfaces[bigram] = surfaces.get(bigram, 0) + 1
                    position += 1
        if word[0]:
            previous_preceder = word[6]
        fragment_start = False
    evidence = tuple(
        (keys, first, len(weights), weights, capitalised, surfaces, whole)
        for keys, (first, weights, capitalised, surfaces, whole) in grouped.items()
    )
    one_offs = tuple((keys, first, 1.0, surface) for keys, (first, surface) in singles.items())
    return position, evidence, one_offs


def _collect_candidates(
    texts: Iterable[str], first_text_weight: float = 1.0
) -> tuple[dict[tuple[str, ...], _Candidate], int]:
    """Candidates of the texts, merged. A phrase lifted out of a long run and seen once so far
    waits in ``pending`` (it can only rank if it repeats); most such n-grams never do, so
    they never cost a candidate, and the one-offs of the last text are only looked up (nothing
    after it could repeat them). Only candidates that can enter ``_ranked``'s pool are
    returned: every candidate is a single word, a phrase seen at least twice or a whole run.

    A text repeated right after itself (the importer counts a user's words twice) is merged
    copy after copy per candidate in one pass. Masses are summed weight by weight in text
    order, so they are the same floats whichever way the evidence was grouped."""
    candidates: dict[tuple[str, ...], _Candidate] = {}
    pending: dict[tuple[str, ...], tuple[int, float, str]] = {}
    valid = [text for text in texts if isinstance(text, str) and text.strip()]
    groups: list[list] = []  # [text, copies in a row]
    for text in valid:
        if groups and (groups[-1][0] is text or groups[-1][0] == text):
            groups[-1][1] += 1
        else:
            groups.append([text, 1])
    position = 0
    last = len(groups) - 1
    for number, (text, copies) in enumerate(groups):
        boost = first_text_weight if number == 0 else 1.0
        occurrences, evidence, one_offs = _text_evidence(text)
        every_copy = (boost,) + (1.0,) * (copies - 1)  # the boost of each copy
        for keys, first, count, weights, capitalised, surfaces, whole in evidence:
            candidate = candidates.get(keys)
            boosts = every_copy
            if candidate is None and pending and keys in pending:
                # Seen once in an earlier text, now again: the one-off becomes a candidate.
                earlier_position, earlier_mass, earlier_surface = pending.pop(keys)
                candidate = candidates[keys] = _Candidate(
                    keys, earlier_position, 1, 0.0 + earlier_mass, 0, {earlier_surface: 1}, False
                )
            elif candidate is None:
                mass = 0.0
                if boost == 1.0:
                    for weight in weights:
                        mass += weight
                else:
                    for weight in weights:
                        mass += weight * boost
                candidate = candidates[keys] = _Candidate(
                    keys, position + first, count, mass, capitalised, dict(surfaces), whole
                )
                if copies == 1:
                    continue
                boosts = every_copy[1:]
            for copy_boost in boosts:
                candidate.text_hits += 1
                candidate.count += count
                mass = candidate.mass
                if copy_boost == 1.0:
                    for weight in weights:
                        mass += weight
                else:
                    for weight in weights:
                        mass += weight * copy_boost
                candidate.mass = mass
                known = candidate.surfaces
                for surface, seen in surfaces.items():
                    known[surface] = known.get(surface, 0) + seen
                candidate.capitalised += capitalised
                if whole:
                    candidate.whole_run = True
        if number == last and copies == 1 and not pending and len(candidates) == len(evidence):
            # Every candidate is one of this text's own entries (always so for a single text)
            # and nothing comes after it: none of its one-offs can repeat.
            break
        for keys, first, weight, surface in one_offs:
            candidate = candidates.get(keys)
            later = copies - 1  # copies merged after the first
            if candidate is None:
                waiting = pending.pop(keys, None)
                if waiting is None:
                    if copies == 1:
                        if number < last:
                            pending[keys] = (position + first, weight * boost, surface)
                        continue
                    # The first copy waits, the second makes it a candidate.
                    candidate = candidates[keys] = _Candidate(
                        keys, position + first, 1, 0.0 + weight * boost, 0, {surface: 1}, False
                    )
                    for _ in range(later):
                        candidate.text_hits += 1
                        candidate.count += 1
                        candidate.mass += weight
                        candidate.surfaces[surface] += 1
                    continue
                earlier_position, earlier_mass, earlier_surface = waiting
                candidate = candidates[keys] = _Candidate(
                    keys, earlier_position, 1, 0.0 + earlier_mass, 0, {earlier_surface: 1}, False
                )
            candidate.text_hits += 1
            candidate.count += 1
            candidate.mass += weight * boost
            known = candidate.surfaces
            known[surface] = known.get(surface, 0) + 1
            for _ in range(later):
                candidate.text_hits += 1
                candidate.count += 1
                candidate.mass += weight
                known[surface] = known.get(surface, 0) + 1
        position += occurrences * copies
    return candidates, len(valid)


def _display(candidate: _Candidate, *, lowercase: bool) -> str:
    """The form shown to people: the singular if the text uses it, else the commonest form."""
    surfaces = candidate.surfaces
    if len(surfaces) == 1:  # the usual case: one spelling
        (only,) = surfaces
        return only.lower() if lowercase else only
    by_lower: dict[str, int] = {}
    for surface, count in surfaces.items():
        folded = surface.lower()
        by_lower[folded] = by_lower.get(folded, 0) + count
    joined_keys = " ".join(candidate.keys)
    if joined_keys in by_lower:
        chosen_lower = joined_keys
    else:
        chosen_lower = min(by_lower, key=lambda form: (-by_lower[form], form))
    if lowercase:
        return chosen_lower
    cased = [form for form in surfaces if form.lower() == chosen_lower]
    return min(cased, key=lambda form: (-surfaces[form], form))


@lru_cache(maxsize=100_000)
def _tail_capitalised(surface: str) -> bool:
    """Every word after the first starts upper-case: "Japan Rail Pass", "Markthalle Neun"."""
    return all(word[:1].isupper() for word in surface.split()[1:])


@lru_cache(maxsize=100_000)
def _word_weight(key: str) -> float:
    return 0.6 if len(key) <= 3 and not _CJK_RE.search(key) else 1.0


def _ranked(
    texts: Sequence[str], k: int, *, first_text_weight: float = 1.0
) -> list[tuple[_Candidate, float]]:
    candidates, text_count = _collect_candidates(texts, first_text_weight)
    if not candidates or k <= 0:
        return []
    # Every candidate is in the pool: a phrase lifted out of a long run is kept only if it
    # repeats, and _collect_candidates never makes a candidate of a one-off.
    pool = candidates.values()
    heap = []
    phrases: list[_Candidate] = []
    for candidate in pool:
        spread = 0.5 + 0.5 * candidate.text_hits / text_count
        keys = candidate.keys
        if len(keys) == 1:
            weight = _word_weight(keys[0])
            if candidate.capitalised * 2 >= candidate.count:
                weight *= 1.25  # names of people, places and products
            score = candidate.mass * weight * spread
        else:
            phrase_weight = 1.4 if len(keys) == 2 else 1.6
            surfaces = candidate.surfaces
            common = max(surfaces, key=surfaces.__getitem__) if len(surfaces) > 1 else ""
            common = common or next(iter(surfaces))
            if _tail_capitalised(common):
                phrase_weight *= 1.2  # "Japan Rail Pass", "Markthalle Neun"
            score = candidate.mass * phrase_weight * spread
            phrases.append(candidate)
        candidate.score = candidate.current = score
        heap.append((-score, candidate.first, keys, candidate))
    # Scores only ever go down, so a lazy max-heap gives the same greedy order as re-sorting.
    # (Entries never compare their candidates: keys are unique.)
    heapq.heapify(heap)
    remaining: dict[str, float] = {}
    chosen: list[_Candidate] = []
    picked_scores: list[float] = []
    while heap and len(chosen) < k:
        negative_score, first, keys, best = heapq.heappop(heap)
        if -negative_score != best.current:
            heapq.heappush(heap, (-best.current, first, keys, best))
            continue
        if best.current <= 0:
            break
        if len(keys) > 1:
            if any(_contains(chosen_one.keys, keys) for chosen_one in chosen):
                continue
            # Mentions covered by the phrase no longer count for its words.
            for key in keys:
                unigram = candidates.get((key,))
                left = remaining.get(key)
                if left is None:
                    left = float(unigram.count) if unigram is not None else 0.0
                left = remaining[key] = left - best.count
                if unigram is not None:
                    unigram.current = min(
                        unigram.current, unigram.score * max(left, 0.0) / max(unigram.count, 1)
                    )
        else:
            word = keys[0]
            for phrase in phrases:
                if word in phrase.keys:
                    phrase.current *= 0.7
        chosen.append(best)
        picked_scores.append(best.current)
    top = max(picked_scores, default=1.0) or 1.0
    ranked = []
    for candidate, score in zip(chosen, picked_scores, strict=True):
        evidence = 1.0 - math.exp(-0.5 * score)
        ranked.append((candidate, round(min(1.0, evidence * (0.5 + 0.5 * score / top)), 3)))
    return ranked


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    if len(inner) > len(outer):
        return False
    return any(outer[i : i + len(inner)] == inner for i in range(len(outer) - len(inner) + 1))


def keywords(texts: list[str], *, k: int = 8) -> list[tuple[str, float]]:
    """Salient lowercase keywords and keyphrases (1-3 words) with a confidence in [0, 1].

    Best first; ties break on first appearance, so the result is deterministic. Stop-words
    (English, chat filler, a small multilingual list), numbers, placeholders like ``[EMAIL]``,
    URLs, code blocks and words shorter than three letters (except acronyms) never appear.
    A word repeated across several texts outranks one said once; a phrase outranks its words.
    Confidence = (1 - exp(-score / 2)) * (0.5 + 0.5 * score / best score), where the score is
    the (noun-weighted) count times how widely it is spread over the texts: one mention in one
    text gives about 0.4, a topic repeated in every text approaches 1. Non-increasing with rank.
    """
    if isinstance(texts, str):
        texts = [texts]
    return [(_display(c, lowercase=True), conf) for c, conf in _ranked(list(texts or []), k)]


_NON_WORD_RE = re.compile(r"[^\w]+")


def _kebab(phrase: str) -> str:
    return _NON_WORD_RE.sub("-", phrase.lower()).strip("-_")


def tags(texts: list[str], *, k: int = 3) -> list[str]:
    """Up to ``k`` lowercase kebab-case topic tags (default 1-3), best first.

    A tag whose words are all inside a better tag is skipped ("japan" after "japan-rail-pass").
    Empty or content-free input gives an empty list.
    """
    if isinstance(texts, str):
        texts = [texts]
    return _tags(list(texts or []), k)


def _tags(texts: list[str], k: int, first_text_weight: float = 1.0) -> list[str]:
    if k <= 0:
        return []
    chosen: list[str] = []
    chosen_words: list[set[str]] = []
    ranked = _ranked(texts, max(k * 3, 6), first_text_weight=first_text_weight)
    for candidate, _confidence in ranked:
        tag = _kebab(_display(candidate, lowercase=True))[:40].strip("-")
        if not tag or tag in chosen:
            continue
        words = set(tag.split("-"))
        if any(words <= earlier for earlier in chosen_words):
            continue
        chosen.append(tag)
        chosen_words.append(words)
        if len(chosen) == k:
            break
    return chosen


def _title_word(word: str) -> str:
    if any(ch.isupper() for ch in word):
        return word  # keep "iPhone", "API", "PostgreSQL" as written
    return "-".join(part[:1].upper() + part[1:] for part in word.split("-"))


def title(texts: list[str]) -> str:
    """A 3-5 word Title Case title built from the most salient phrases of the (user) texts.

    Phrases keep the casing the user wrote ("API", "iPhone") and appear in conversation order.
    With fewer than three salient words the title becomes "Notes on X"; with none it is
    "Untitled Conversation".
    """
    if isinstance(texts, str):
        texts = [texts]
    picked: list[_Candidate] = []
    words: list[str] = []
    seen: set[str] = set()
    # The opening message usually states what the conversation is for, so it counts 1.5x.
    for candidate, _confidence in _ranked(list(texts or []), 8, first_text_weight=1.5):
        display = _display(candidate, lowercase=False).split()
        fresh = [word for word in display if word.lower() not in seen]
        if not fresh or len(words) + len(fresh) > 5:
            continue
        picked.append(candidate)
        words.extend(fresh)
        seen.update(word.lower() for word in fresh)
        if len(words) >= 4:
            break
    if not picked:
        return "Untitled Conversation"
    picked.sort(key=lambda c: c.first)
    ordered: list[str] = []
    seen = set()
    for candidate in picked:
        for word in _display(candidate, lowercase=False).split():
            if word.lower() not in seen:
                ordered.append(_title_word(word))
                seen.add(word.lower())
    if len(ordered) < 3:
        ordered = ["Notes", "on", *ordered]
    return " ".join(ordered[:5])


# --------------------------------------------------------------------------------------------
# Sentences and speakers
# --------------------------------------------------------------------------------------------

_USER_ROLES = frozenset({"user", "human", "me", "customer", "client", "you"})
_ASSISTANT_ROLES = frozenset(
    {"assistant", "ai", "bot", "model", "gpt", "chatgpt", "claude", "gemini", "llm", "agent"}
)
_SKIPPED_ROLES = frozenset({"system", "tool", "function", "developer", "ipython"})

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[^\sa-z])|(?<=[。！？])")
_LINE_MARKER_RE = re.compile(r"^\s*(?:[-*+•>]+|\d{1,3}[.)]|#{1,6})\s*")
_EMPHASIS_RE = re.compile(r"\*\*|__|`")


def _role_kind(role: str, user_name: str = "") -> str:
    lowered = (role or "").strip().lower()
    if lowered in _USER_ROLES or (user_name and lowered == user_name.strip().lower()):
        return "user"
    if lowered in _ASSISTANT_ROLES:
        return "assistant"
    if lowered in _SKIPPED_ROLES:
        return "skip"
    return "other"


def _sentences(text: str) -> list[str]:
    """Sentences of a message, with markdown markers, code blocks and URLs removed."""
    if not isinstance(text, str) or not text:
        return []
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    # Each pattern runs only when the text holds what every match of it contains.
    if "```" in text:
        text = _CODE_FENCE_RE.sub("\n", text)
    if "](" in text:
        text = _MD_LINK_RE.sub(r"\1", text)
    if "://" in text or "www." in text.lower():
        text = _SCHEME_URL_RE.sub(
            lambda match: match.group(1).removeprefix("www.").rstrip("."), text
        )
    if "**" in text or "__" in text or "`" in text:
        text = _EMPHASIS_RE.sub("", text)
    sentences: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        line = _LINE_MARKER_RE.sub("", line)
        for sentence in _SENTENCE_SPLIT_RE.split(line):
            # Whitespace runs as one space, trimmed (str.split and \s agree on whitespace).
            sentence = " ".join(sentence.split())
            if sentence:
                sentences.append(sentence)
    return sentences


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary with an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


_FILLER_OPENER_RE = re.compile(
    r"^(?:(?:sure|certainly|of course|absolutely|great question|good question|okay|ok|alright|"
    r"well|so|yes|yeah|no|oh|hi|hello|hey|thanks|thank you|got it|right|actually|basically|"
    r"honestly|anyway|also|and|but|btw|by the way|fyi|hmm|um|uh)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
_FILLER_SENTENCE_RE = re.compile(
    r"^(?:hi|hello|hey|thanks?|thank you(?: so much| very much)?|thx|ok(?:ay)?|cool|great|nice|"
    r"awesome|perfect|sure|yes|no|yep|nope|lol|haha\w*|got it|sounds good|makes sense|"
    r"good (?:morning|afternoon|evening|night)|bye|goodbye|you're welcome|no problem|"
    r"i see|i agree|i understand|let me know(?: if .*)?|hope (?:this|that) helps.*|"
    r"(?:is there )?anything else.*|feel free .*|happy to help.*|glad (?:i could|to) help.*|"
    r"here(?:'s| is| are) (?:a|an|some|the|what|how)\b[^.]{0,60}:)[\s!.?:]*$",
    re.IGNORECASE,
)


def _is_question(sentence: str) -> bool:
    stripped = sentence.rstrip()
    if stripped.endswith("?"):
        return True
    return bool(_QUESTION_START_RE.match(stripped))


_QUESTION_START_RE = re.compile(
    r"^(?:(?:do|does|did|can|could|would|will|should|is|are|am|was|were|have|has)\s+"
    r"(?:you|i|we|it|they|he|she|there|this|that|anyone|someone)\b|"
    r"(?:what|why|how|where|who|which)\b.*\b(?:do|does|did|can|could|should|would|is|are)\s+"
    r"(?:i|you|we|it|they)\b)",
    re.IGNORECASE,
)

_IMPERATIVE_VERBS = frozenset(
    """write tell give show explain help make create generate list summarize summarise translate
    fix find suggest recommend describe compare draft rewrite edit check review continue add
    remove delete change update convert calculate plan build design send remind draw outline
    brainstorm proofread correct improve shorten expand simplify format analyze analyse
    search look read answer respond provide share teach walk guide name define break imagine
    pretend act play let lets stop start keep go do try use run write""".split()
)
_REQUEST_START_RE = re.compile(
    r"^(?:please\b|pls\b|can you\b|could you\b|would you\b|will you\b|i want you to\b|"
    r"i need you to\b|i'd like you to\b|i would like you to\b|help me\b|let me\b|let's\b)",
    re.IGNORECASE,
)


def _is_request(sentence: str) -> bool:
    if _REQUEST_START_RE.match(sentence):
        return True
    first = sentence.split(" ", 1)[0].strip(",.:;!").lower()
    return first in _IMPERATIVE_VERBS


# --------------------------------------------------------------------------------------------
# First person -> third person
# --------------------------------------------------------------------------------------------

_MODALS = frozenset(
    """can could will would shall should may might must cannot can't couldn't won't wouldn't
    shouldn't mightn't mustn't didn't wasn't weren't used had did was were""".split()
)
_IRREGULAR_PAST = frozenset(
    """went was were had got made took came saw bought left met began became grew knew thought
    felt found gave kept lost paid ran sold sent spent told wrote built fell drove ate flew won
    broke chose forgot hurt quit set put cut let hit understood taught caught brought fought
    sought stood sat slept woke wore swam sang rang drank led fed held heard meant lent
    rode rose shook spoke stole struck swore threw tore wept""".split()
)
_ADVERBS = frozenset(
    """also really usually often never always still just currently recently now actually even
    only mostly sometimes rarely seldom finally already kinda sorta totally generally mainly
    primarily definitely probably personally honestly then once somehow""".split()
)
_VERB_HINTS = frozenset(
    """am is are was were be been being has have had do does did will would can could shall
    should may might must live lives lived moved moves work works worked love loves loved like
    likes liked hate hates own owns play plays study studies studied teach teaches enjoy enjoys
    speak speaks spoke run runs drive drives go goes went got get gets use uses prefer prefers
    need needs want wants visit visits visited started joined married turned""".split()
)


def _third_person_singular(verb: str) -> str:
    lowered = verb.lower()
    special = {
        "am": "is",
        "'m": "is",
        "are": "is",
        "have": "has",
        "'ve": "has",
        "do": "does",
        "don't": "doesn't",
        "haven't": "hasn't",
        "aren't": "isn't",
        "go": "goes",
    }
    if lowered in special:
        return special[lowered]
    if (
        lowered in _MODALS
        or lowered in _IRREGULAR_PAST
        or not lowered.isalpha()
        or lowered.endswith("ed")
        or len(lowered) < 2
    ):
        return verb
    if lowered.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lowered.endswith("y") and lowered[-2:-1] not in tuple("aeiou"):
        return verb[:-1] + "ies"
    return verb + "s"


def _has_verb(words: Sequence[str]) -> bool:
    for index, word in enumerate(words):
        lowered = word.lower()
        if lowered in _VERB_HINTS or (len(lowered) > 4 and lowered.endswith("ed")):
            return True
        if lowered in {"i", "i'm", "i've", "i'd", "i'll"} and index + 1 < len(words):
            return True
    return False


_PIECE_RE = re.compile(r"\w+(?:'\w+)?|[^\w\s]+|\s+")


def _names(user_name: str) -> tuple[str, str]:
    """(subject at sentence start, subject mid-sentence) for the user."""
    name = (user_name or "The user").strip() or "The user"
    first, _, rest = name.partition(" ")
    if first.lower() in {"the", "a", "an"} and rest:
        return name[:1].upper() + name[1:], first.lower() + " " + rest
    return name, name


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") and not name.lower().endswith("user") else "'s")


def _third_person(text: str, user_name: str = "The user") -> str:
    """Rewrite first-person words: "I live" -> "The user lives", "my" -> "the user's"."""
    start_name, mid_name = _names(user_name)
    pieces = _PIECE_RE.findall(text.replace("’", "'"))
    words_seen: list[str] = []
    out: list[str] = []
    index = 0

    def subject() -> str:
        return start_name if not words_seen else mid_name

    def next_word_index(start: int) -> int:
        for position in range(start, len(pieces)):
            if pieces[position].strip() and pieces[position][0].isalnum():
                return position
            if pieces[position].strip():
                return -1  # punctuation before any word: nothing to conjugate
        return -1

    while index < len(pieces):
        piece = pieces[index]
        lowered = piece.lower()
        if not piece.strip() or not piece[0].isalnum():
            out.append(piece)
            index += 1
            continue
        if lowered == "i'm":
            out.append(subject() + " is")
        elif lowered == "i've":
            out.append(subject() + " has")
        elif lowered == "i'll":
            out.append(subject() + " will")
        elif lowered == "i'd":
            following = next_word_index(index + 1)
            word = pieces[following].lower() if following >= 0 else ""
            had = word == "been" or (word.endswith("ed") and word not in {"need"})
            out.append(subject() + (" had" if had else " would"))
        elif lowered == "i":
            compound = bool(words_seen) and words_seen[-1].lower() in {"and", "or", "nor"}
            if compound and _has_verb(words_seen[:-1]):
                compound = False
            out.append(subject())
            if not compound:
                following = next_word_index(index + 1)
                while following >= 0 and (
                    pieces[following].lower() in _ADVERBS
                    or (pieces[following].lower().endswith("ly") and len(pieces[following]) > 4)
                ):
                    following = next_word_index(following + 1)
                if following >= 0:
                    pieces[following] = _third_person_singular(pieces[following])
        elif lowered in {"my", "mine"}:
            out.append(_possessive(subject()))
        elif lowered == "me":
            out.append(mid_name if words_seen else start_name)
        elif lowered == "myself":
            out.append("themselves")
        else:
            out.append(piece)
        words_seen.append(piece)
        index += 1
    result = "".join(out).strip()
    return result[:1].upper() + result[1:]


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


@dataclass
class _Unit:
    order: tuple[int, int]
    kind: str
    speaker: str
    text: str
    keys: list[str]
    relevance: float = 0.0
    vector: dict[str, float] | None = None


def _digest_line(unit: _Unit) -> str:
    sentence = _FILLER_OPENER_RE.sub("", unit.text).strip() or unit.text
    sentence = sentence[:1].upper() + sentence[1:]
    sentence = _clip(sentence, 200)
    if unit.kind == "user":
        if _is_question(sentence):
            return f"- User asked: {sentence}"
        if _is_request(sentence):
            return f"- User requested: {sentence}"
        if _FIRST_PERSON_RE.search(sentence) and not _OTHER_PERSON_RE.search(sentence):
            return f"- {_third_person(sentence)}"
        return f"- User: {sentence}"
    if unit.kind == "assistant":
        return f"- Assistant: {sentence}"
    return f"- {unit.speaker}: {sentence}"


def _tfidf(units: list[_Unit]) -> None:
    document_frequency: Counter = Counter()
    for unit in units:
        document_frequency.update(set(unit.keys))
    total = len(units)
    for unit in units:
        counts = Counter(unit.keys)
        vector = {
            key: count * (math.log((total + 1) / (document_frequency[key] + 1)) + 1.0)
            for key, count in counts.items()
        }
        norm = math.sqrt(sum(value * value for value in vector.values())) or 1.0
        unit.vector = {key: value / norm for key, value in vector.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(key, 0.0) for key, value in a.items())


def summarize(
    turns: list[tuple[str, str]],
    *,
    max_chars: int = 800,
    embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None,
) -> str:
    """A bullet digest ("- ..." lines, in conversation order) of the most informative sentences.

    Extractive and deterministic: sentences are scored by TF-IDF centrality (or, if ``embed`` is
    given, by cosine similarity of its vectors to their mean; it must be deterministic), with a
    small bonus for the user's own sentences, and picked with maximal marginal relevance so
    lines do not repeat each other. The user's statements are put in the third person, questions
    and requests are labelled. The result never exceeds ``max_chars`` nor, past 160 characters,
    half of the transcript (so it is never a replay), and it is cut at a line boundary.
    Greetings, thanks and other filler are never picked; empty input gives "".
    """
    if max_chars <= 0 or not turns:
        return ""
    units: list[_Unit] = []
    transcript_chars = 0
    for turn_index, turn in enumerate(turns):
        if not turn or len(turn) < 2:
            continue
        role, text = turn[0], turn[1]
        if not isinstance(text, str) or not text.strip():
            continue
        kind = _role_kind(str(role or ""))
        if kind == "skip":
            continue
        transcript_chars += min(len(text), MAX_TEXT_CHARS)
        speaker = str(role or "").strip() or "Speaker"
        for sentence_index, sentence in enumerate(_sentences(text)):
            if _FILLER_SENTENCE_RE.match(sentence) or _PLACEHOLDER_ONLY_RE.match(sentence):
                continue
            keys = _content_keys(sentence)
            if len(keys) < (1 if kind == "user" else 2):
                continue
            units.append(_Unit((turn_index, sentence_index), kind, speaker, sentence, keys))
    if not units:
        return ""
    budget = min(max_chars, max(160, transcript_chars // 2))
    first_user_turn = next((unit.order[0] for unit in units if unit.kind == "user"), -1)
    _tfidf(units)

    centroid: Counter = Counter()
    for unit in units:
        centroid.update(unit.vector)
    centroid_norm = math.sqrt(sum(value * value for value in centroid.values())) or 1.0
    for unit in units:
        relevance = _cosine(unit.vector, centroid) / centroid_norm
        if unit.kind == "user":
            relevance *= 1.2
            if unit.order[0] == first_user_turn:
                relevance *= 1.15  # the opening message usually states the purpose
        if len(unit.text.split()) > 45:
            relevance *= 0.8
        unit.relevance = relevance

    # Long conversations: MMR over the most central sentences only keeps this fast.
    pool = sorted(units, key=lambda u: (-u.relevance, u.order))[:80]
    similarity = _similarity_function(pool, embed)
    top_relevance = max(unit.relevance for unit in pool) or 1.0

    selected: list[int] = []
    lines: dict[int, str] = {}
    used = 0
    first_user = next((i for i, unit in enumerate(pool) if unit.kind == "user"), None)
    remaining = list(range(len(pool)))
    while remaining and (not selected or budget - used > 24) and len(selected) < 12:
        if not selected and first_user is not None:
            best = first_user  # the user's own words anchor every digest
        else:
            best = max(
                remaining,
                key=lambda i: (
                    0.7 * pool[i].relevance / top_relevance
                    - 0.3 * max((similarity(i, j) for j in selected), default=0.0),
                    -pool[i].order[0],
                    -pool[i].order[1],
                ),
            )
        remaining.remove(best)
        if any(similarity(best, j) >= 0.85 for j in selected):
            continue
        line = _digest_line(pool[best])
        cost = len(line) + (1 if used else 0)
        if used + cost > budget:
            if not selected and used == 0:
                line = _clip(line, budget)
                cost = len(line)
            else:
                continue
        selected.append(best)
        lines[best] = line
        used += cost
    ordered = sorted(selected, key=lambda i: pool[i].order)
    return "\n".join(lines[i] for i in ordered)


_PLACEHOLDER_ONLY_RE = re.compile(r"^[\s\W]*(?:\[[A-Z_ ]+\][\s\W]*)+$")


def _similarity_function(
    pool: list[_Unit], embed: Callable[[list[str]], Sequence[Sequence[float]]] | None
) -> Callable[[int, int], float]:
    if embed is None:
        return lambda i, j: _cosine(pool[i].vector, pool[j].vector)
    vectors = [list(map(float, vector)) for vector in embed([unit.text for unit in pool])]
    norms = [math.sqrt(sum(x * x for x in vector)) or 1.0 for vector in vectors]
    unit_vectors = [[x / norm for x in vector] for vector, norm in zip(vectors, norms, strict=True)]
    mean = [sum(column) / len(unit_vectors) for column in zip(*unit_vectors, strict=True)]
    mean_norm = math.sqrt(sum(x * x for x in mean)) or 1.0
    for unit, vector in zip(pool, unit_vectors, strict=True):
        centrality = sum(a * b for a, b in zip(vector, mean, strict=True)) / mean_norm
        unit.relevance = centrality * (1.2 if unit.kind == "user" else 1.0)
    cache: dict[tuple[int, int], float] = {}

    def similarity(i: int, j: int) -> float:
        key = (i, j) if i < j else (j, i)
        if key not in cache:
            cache[key] = sum(a * b for a, b in zip(unit_vectors[i], unit_vectors[j], strict=True))
        return cache[key]

    return similarity


def _digest_items(summary: str) -> list[str]:
    items: list[str] = []
    for line in (summary or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if line[:2] in {"- ", "* ", "• "}:
            items.append("- " + line[2:].strip())
        else:
            items.extend("- " + sentence for sentence in _sentences(line))
    return items


def fold_summaries(summaries: list[str], *, max_chars: int) -> str:
    """Fold several digests (newest first) into one digest of at most ``max_chars``.

    Lines are taken round-robin (the first line of every digest, newest first, then every
    second line...) so older sessions stay represented while the newest win when space runs
    out; near-duplicate lines keep only their newest copy. Output is grouped newest first and
    cut at line boundaries; a single line longer than the budget is clipped.
    """
    if max_chars <= 0 or not summaries:
        return ""
    per_summary = [_digest_items(summary) for summary in summaries if isinstance(summary, str)]
    seen_keys: list[set[str]] = []
    candidates: list[tuple[int, int, str]] = []  # (round, summary index, line)
    for summary_index, items in enumerate(per_summary):
        for line_index, line in enumerate(items):
            candidates.append((line_index, summary_index, line))
    candidates.sort(key=lambda item: (item[0], item[1]))
    chosen: list[tuple[int, int, str]] = []
    used = 0
    for line_index, summary_index, line in candidates:
        keys = set(_content_keys(line)) or {line.lower()}
        if any(len(keys & old) / len(keys | old) >= 0.8 for old in seen_keys):
            continue
        cost = len(line) + (1 if used else 0)
        if used + cost > max_chars:
            if not chosen:
                line = _clip(line, max_chars)
                cost = len(line)
            else:
                continue
        seen_keys.append(keys)
        chosen.append((summary_index, line_index, line))
        used += cost
    chosen.sort(key=lambda item: (item[0], item[1]))
    return "\n".join(line for _summary, _line, line in chosen)


# --------------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------------

_FIRST_PERSON_RE = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_OTHER_PERSON_RE = re.compile(
    r"(?i:\b(?:you|your|yours|yourself|we|our|ours|we're|we've|we'll|we'd)\b)|\bus\b"
)
_DISCOURSE_RE = re.compile(
    r"^(?:(?:oh|ah|well|so|also|and|but|btw|by the way|actually|anyway|anyways|okay|ok|yeah|"
    r"yes|no|hey|hi|hello|fyi|just so you know|for context|for the record|honestly|basically|"
    r"plus|um|uh|hmm|oh and|sure|right|thanks|thank you|lol|lmao|haha|omg|wow|ugh)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
_MEMORY_PREFIX_RE = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|never forget|"
    r"for (?:future )?reference|just so you know)(?:\s+that)?[\s,:]+",
    re.IGNORECASE,
)
_NOT_A_FACT_RE = re.compile(
    r"^(?:i (?:don't|do not) (?:know|understand|get it|think so|care|mind|remember)\b|"
    r"i'm (?:not sure|confused|sorry|curious|wondering|asking|glad|happy to hear|back)\b|"
    r"i am (?:not sure|confused|sorry|curious|wondering|asking)\b|"
    r"i (?:see|agree|understand|guess|mean|meant|suppose|wonder|was wondering|hope so|"
    r"appreciate|apologi[sz]e)\b|"
    r"i (?:like|love|hate|liked|loved) (?:it|that|this|your|the idea|them)\b|"
    r"i (?:have|got) (?:a|another|one more|some) (?:question|questions|quick question)\b|"
    r"i (?:need|want|would like|'d like|wanna) (?:to know|to ask|to understand|help|"
    r"some help|you|advice|ideas|tips|suggestions|recommendations|an? (?:answer|list|summary|"
    r"example|recipe|explanation|idea|suggestion))\b|"
    r"i'd like (?:to know|to ask|you|help|an? (?:answer|list|summary|example|recipe))\b|"
    r"i (?:will|'ll|would) (?:try|check|look|do that|let you know)\b|i'll (?:try|check|look)\b|"
    r"i (?:tried|did) (?:that|this|it)\b|i (?:think|believe|feel) (?:so|not|that's)\b|"
    r"i can't (?:believe|wait)\b|i'm (?:going to|gonna) (?:try|ask|check)\b)",
    re.IGNORECASE,
)
_HYPOTHETICAL_RE = re.compile(
    r"^(?:if|what if|suppose|supposing|imagine|let's say|say|assuming|hypothetically|pretend)\b",
    re.IGNORECASE,
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*[,;]?\s*\b(?:and|but|so|plus|though|although|while|whereas)\s+"
    r"(?=(?:(?:now|also|then|currently|recently|still|actually|really|just|even)\s+)?"
    r"(?:i|i'm|i've|i'd|i'll|my)\b)|\s*;\s*|"
    r"\s*,\s*(?=(?:(?:can|could|would|will)\s+you|please|what|how|where|which|why|any|"
    r"i|i'm|i've|i'd|i'll|my)\b)",
    re.IGNORECASE,
)
_NAME_INTRO_RE = re.compile(
    r"^(?:(i'm|i am)|my name is|my name's|call me)\s+"
    r"([A-Z][\w'-]{1,30}(?:\s+[A-Z][\w'-]{1,30})?)$",
    re.IGNORECASE,
)
# "I'm Japanese" is a nationality, not a name.
_NATIONALITY_END_RE = re.compile(r"(?:ese|ish|ian|ean|can|ani|i|ch|ic)$", re.IGNORECASE)
# "Now I live in Berlin" -> "I now live in Berlin" -> "The user now lives in Berlin".
_LEADING_ADVERB_RE = re.compile(
    r"^(now|currently|still|also|recently|finally|actually)\s+(i|i'm|i've|i'll|i'd)\b", re.I
)
_SYMBOLS_RE = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]")


_SUBORDINATE_RE = re.compile(
    r"^(?:when|while|after|before|because|since|although|though|if|as|once|until|unless|"
    r"whenever|whereas)\b",
    re.IGNORECASE,
)


def _clauses(sentence: str) -> list[str]:
    """Split coordinated clauses only where a new first-person clause starts and the left part
    is itself a clause ("I live in Paris and my sister lives in Rome"); "My wife and I live in
    Rome" stays whole."""
    clauses: list[str] = []
    start = 0
    separator = ""
    for match in [*_CLAUSE_SPLIT_RE.finditer(sentence), None]:
        end = match.start() if match else len(sentence)
        part = sentence[start:end].strip(" ,;")
        if part:
            if clauses and (
                not _has_verb(clauses[-1].split()) or _SUBORDINATE_RE.match(clauses[-1])
            ):
                # "Last year, I moved" / "When I was ten, I lived in Spain": the left part
                # cannot stand alone, so undo the split.
                clauses[-1] = clauses[-1] + separator + part
            else:
                clauses.append(part)
        if match:
            separator = match.group(0)
            start = match.end()
    return clauses


def _clause_to_fact(clause: str, user_name: str) -> str | None:
    clause = _SYMBOLS_RE.sub("", clause).strip()
    clause = _MEMORY_PREFIX_RE.sub("", _DISCOURSE_RE.sub("", clause)).strip(" ,;:-")
    if not clause or _is_question(clause) or _HYPOTHETICAL_RE.match(clause):
        return None
    if _is_request(clause) or _NOT_A_FACT_RE.match(clause) or _FILLER_SENTENCE_RE.match(clause):
        return None
    if not _FIRST_PERSON_RE.search(clause) or _OTHER_PERSON_RE.search(clause):
        return None
    if _PLACEHOLDER_RE.search(clause) or "[" in clause:
        return None
    words = clause.split()
    if not 2 <= len(words) <= 50:
        return None
    body = _LEADING_ADVERB_RE.sub(r"\2 \1", clause.rstrip(" .!…:,;-"))
    name_match = _NAME_INTRO_RE.match(body)
    if (
        name_match
        and name_match.group(2)[:1].isupper()
        and name_match.group(2).lower() not in STOP_WORDS
        and not (name_match.group(1) and _NATIONALITY_END_RE.search(name_match.group(2)))
    ):
        start_name, _mid = _names(user_name)
        return f"{_possessive(start_name)} name is {name_match.group(2)}."
    fact = _third_person(body, user_name)
    if _FIRST_PERSON_RE.search(fact.replace(_names(user_name)[0], "")):
        return None  # a first-person word we could not rewrite safely
    if len(fact) > 300:
        return None
    return fact + "."


def _fact_key(fact: str) -> str:
    return " ".join(re.findall(r"\w+", fact.lower()))


def extract_facts(turns: list[tuple[str, str]], *, user_name: str = "The user") -> list[str]:
    """Atomic, self-contained facts from the user's own first-person statements.

    "I moved to Berlin last month" -> "The user moved to Berlin last month."; "My sister Anna is
    a nurse" -> "The user's sister Anna is a nurse."; "I'm Sam" -> "The user's name is Sam.".
    Coordinated first-person clauses become separate facts. Questions, greetings, thanks,
    reactions ("I see", "I love it"), commands and requests to the assistant, hypotheticals,
    sentences about "you"/"we", and sentences holding redaction placeholders are skipped.
    Assistant turns are never used (see the module docstring). Duplicates are dropped; order
    follows the conversation. Roles "user"/"human" (or ``user_name`` itself) count as the user.
    """
    facts: list[str] = []
    seen: set[str] = set()
    for turn in turns or []:
        if not turn or len(turn) < 2:
            continue
        role, text = turn[0], turn[1]
        if _role_kind(str(role or ""), user_name) != "user" or not isinstance(text, str):
            continue
        for sentence in _sentences(text):
            for clause in _clauses(sentence):
                fact = _clause_to_fact(clause, user_name)
                if fact is None:
                    continue
                key = _fact_key(fact)
                if key and key not in seen:
                    seen.add(key)
                    facts.append(fact)
    return facts


# --------------------------------------------------------------------------------------------
# Fact subjects and updates
# --------------------------------------------------------------------------------------------

_SUBJECT_VERBS = (
    _VERB_HINTS
    | _MODALS
    | frozenset(
        """doesn't isn't wasn't hasn't haven't aren't weren't didn't won't moves relocated resides
    resided turned joined started works worked teaches taught studies studied owns speaks plans
    plans loves hates enjoys prefers drives runs lives""".split()
    )
)


def _split_subject(fact: str, user_name: str) -> tuple[list[str], list[str]]:
    """(subject words, predicate words), lowercase."""
    lowered = [word.lower() for word in re.findall(r"[\w'-]+", fact.replace("’", "'"))]
    name_words = _names(user_name)[0].lower().split()
    count = len(name_words)
    if count and len(lowered) >= count and lowered[: count - 1] == name_words[:-1]:
        head = lowered[count - 1]
        if head == name_words[-1]:
            return lowered[:count], lowered[count:]
        if head in {name_words[-1] + "'s", name_words[-1] + "'"}:
            # "The user's older sister Anna is ...": the word after the possessive is always
            # part of the subject, which then runs to the first verb.
            for index in range(count + 1, min(len(lowered), count + 7)):
                word = lowered[index]
                if word in _SUBJECT_VERBS or (word.endswith("ed") and len(word) > 4):
                    return lowered[:index], lowered[index:]
            return lowered[: count + 1], lowered[count + 1 :]
    for index in range(1, min(len(lowered), 8)):
        if lowered[index] in _SUBJECT_VERBS:
            return lowered[:index], lowered[index:]
    return lowered[:2], lowered[2:]


def fact_subject(fact: str, *, user_name: str = "The user") -> str:
    """The lowercase subject of a fact: "the user" or "the user's sister anna".

    For facts written by ``extract_facts`` the subject is the user or a possessive phrase about
    the user ending before the first verb; other sentences fall back to the words before their
    first common verb.
    """
    if not fact or not fact.strip():
        return ""
    subject, _predicate = _split_subject(fact, user_name)
    return " ".join(subject)


_NEGATIONS = frozenset({"not", "never", "no", "longer", "doesn't", "isn't", "wasn't", "don't"})
_TIME_WORDS = frozenset(
    """now currently recently just still also already again anymore last next this ago since
    week weeks month months year years yesterday today tomorrow soon lately finally then
    january february march april may june july august september october november december
    spring summer autumn fall winter back""".split()
)
_NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_RELATION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        (
            "residence",
            r"^(?:(?:is|has been|was) )?(?:lives?|lived|living|moved|moves|moving|relocated|"
            r"relocates|relocating|resides|resided|based|located|settled)(?: (?:back|over))?"
            r"(?: (?:in|to|at|near|into|out to))?\b",
        ),
        (
            "employer",
            r"^(?:(?:is|has been|was) )?(?:works?|worked|working|employed) (?:at|for|by)\b|"
            r"^(?:joined|got a job (?:at|with)|started (?:a new job|working) (?:at|for)|"
            r"started at)\b",
        ),
        ("job", r"^(?:(?:is|has been|was) )?(?:works?|worked|working|employed) as\b"),
        ("name", r"^(?:is called|is named|goes by)\b"),
        ("age", r"^(?:is|turned|turns) (?:\d+|[a-z]+-?[a-z]*) years? old\b|^turned \d+\b"),
        ("origin", r"^(?:is|comes|came|was) (?:originally )?from\b|^was born in\b"),
        (
            "marital",
            r"^(?:is|got|was) (?:married|single|divorced|engaged|widowed|separated)\b",
        ),
        ("diet", r"^is (?:a )?(?:vegan|vegetarian|pescatarian|carnivore|keto)\b"),
    )
)
# Relations a person holds one value of at a time; a different value replaces the old one.
_SINGLE_VALUED = frozenset(
    {"residence", "employer", "job", "name", "age", "origin", "marital", "diet", "attribute"}
)


@dataclass(frozen=True)
class _ParsedFact:
    subject: str
    relation: str
    value: frozenset[str]
    numbers: tuple[float, ...]
    negated: bool


_LEMMA_SPECIAL = {
    "is": "be",
    "are": "be",
    "was": "be",
    "were": "be",
    "am": "be",
    "been": "be",
    "has": "have",
    "had": "have",
    "have": "have",
    "does": "do",
    "did": "do",
    "do": "do",
    "goes": "go",
    "went": "go",
}


def _crude_lemma(word: str) -> str:
    """A comparison key shared by a verb's forms: likes/like/liked -> "lik"."""
    if word in _LEMMA_SPECIAL:
        return _LEMMA_SPECIAL[word]
    for suffix in ("ies", "es", "ed", "s", "d", "e", "y"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            return word[: -len(suffix)]
    return word


_YEAR_RE = re.compile(r"(?:1[89]|20)\d\d")


def _is_number(word: str) -> bool:
    return word in _NUMBER_WORDS or word.replace(".", "", 1).isdigit()


def _parse_fact(fact: str, user_name: str) -> _ParsedFact:
    subject_words, predicate = _split_subject(fact, user_name)
    negated = any(word in _NEGATIONS or word.endswith("n't") for word in predicate)
    cleaned: list[str] = []
    for word in predicate:
        if word in _NEGATIONS or word in {"does", "do", "did", "now", "currently", "recently"}:
            continue
        if word.endswith("n't"):
            word = {"isn't": "is", "wasn't": "was", "hasn't": "has", "aren't": "is"}.get(word, "")
            if not word:
                continue
        cleaned.append(word)
    phrase = " ".join(cleaned)
    relation, rest = "", phrase
    for name, pattern in _RELATION_PATTERNS:
        match = pattern.match(phrase)
        if match:
            # For age, diet and marital status the value is inside the matched words.
            relation = name
            rest = phrase if name in {"age", "diet", "marital"} else phrase[match.end() :]
            break
    if not relation and cleaned:
        possessive = any(word.endswith(("'s", "'")) for word in subject_words)
        verb, rest = cleaned[0], " ".join(cleaned[1:])
        if possessive and verb in {"is", "are", "was", "were"}:
            relation = "attribute"
        else:
            relation = "verb:" + _crude_lemma(verb)
            following = cleaned[1] if len(cleaned) > 1 else ""
            if (
                verb in {"is", "are", "was", "were", "am"}
                and following
                and following not in {"a", "an", "the"}
                and not _is_number(following)
            ):
                # "is vegan" and "is tall" are different relations; "is a nurse" is "be".
                relation += " " + following
    value_words = re.findall(r"[\w'-]+", rest)
    numbers = tuple(
        float(_NUMBER_WORDS[word]) if word in _NUMBER_WORDS else float(word)
        for word in value_words
        if _is_number(word) and not _YEAR_RE.fullmatch(word)
    )
    value = frozenset(
        _fold(word)
        for word in value_words
        if word not in STOP_WORDS
        and word not in _TIME_WORDS
        and not _is_number(word)
        and not _YEAR_RE.fullmatch(word)
    )
    return _ParsedFact(" ".join(subject_words), relation, value, numbers, negated)


def _same_subject(a: str, b: str) -> bool:
    """Equal, or a longer name for the same possessive ("sister" / "sister anna")."""
    if a == b:
        return True
    shorter, longer = sorted((a.split(), b.split()), key=len)
    has_possessive = any(word.endswith(("'s", "'")) for word in shorter[:-1])
    return has_possessive and longer[: len(shorter)] == shorter


def is_update(old: str, new: str, *, user_name: str = "The user") -> bool:
    """True if ``new`` replaces ``old``: same subject, same relation, a different value.

    The rule, applied to facts in ``extract_facts`` form:

    1. Both facts are split into subject (``fact_subject``), relation and value. Relations are
       normalised into classes so that wording does not matter: residence ("lives in", "moved
       to", "relocated to", "is based in"), employer ("works at/for", "joined"), job ("works
       as"), name, age, origin, marital status, diet; a possessive subject with "is" is an
       attribute ("The user's favourite colour is ..."); any other verb is its own relation.
    2. Subjects must match (a longer name of the same possessive counts: "sister" / "sister
       Anna"), and relations must be the same class.
    3. Single-valued relations (the classes above and attributes) are updated when their values
       differ, ignoring time words: "lives in Paris" -> "moved to Berlin last month" is an
       update, "moved to Berlin" -> "lives in Berlin" is not.
    4. Any relation is updated when only its polarity flips ("likes coffee" -> "doesn't like
       coffee") or only its number changes ("has two kids" -> "has three kids").
    5. Multi-valued relations ("likes", "has", "speaks"...) with a different value are additions,
       not updates. Identical facts are not updates.
    """
    if not old or not new or _fact_key(old) == _fact_key(new):
        return False
    before, after = _parse_fact(old, user_name), _parse_fact(new, user_name)
    if not _same_subject(before.subject, after.subject):
        return False
    if before.relation != after.relation or not before.relation:
        return False
    same_value = before.value == after.value or bool(
        before.value
        and after.value
        and (before.value <= after.value or after.value <= before.value)
    )
    if before.negated != after.negated and same_value:
        return True
    if before.numbers != after.numbers and before.value == after.value and before.numbers:
        return True
    if before.relation in _SINGLE_VALUED and before.negated == after.negated:
        return bool(before.value or after.value) and not same_value
    return False


# --------------------------------------------------------------------------------------------
# Contextual headers
# --------------------------------------------------------------------------------------------

_PLATFORM_NAMES = {
    "chatgpt": "ChatGPT",
    "openai": "ChatGPT",
    "claude": "Claude",
    "gemini": "Gemini",
    "local": "Mnemo",
    "mnemo": "Mnemo",
    "api": "API",
}
_ISO_DATE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")


def _platform_label(platform: str) -> str:
    platform = (platform or "").strip()
    if not platform:
        return ""
    return _PLATFORM_NAMES.get(platform.lower(), platform)


def _date_label(date: str) -> str:
    date = (date or "").strip()
    match = _ISO_DATE_RE.match(date)
    return match.group(1) if match else date


def _human_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _best_sentence(sentences: list[str], topic_keys: set[str]) -> str:
    best, best_score = "", -1.0
    for sentence in sentences:
        keys = set(_content_keys(sentence))
        score = len(keys & topic_keys) + 0.1 * min(len(keys), 10)
        if _is_question(sentence) or _is_request(sentence):
            score += 2.0  # the ask is the clearest statement of intent
        if score > best_score:
            best, best_score = sentence, score
    return best


def _quoted(sentence: str, limit: int = 180) -> str:
    """A quotation that ends its sentence: 'said: "I moved".' / 'asked: "Where?"'."""
    text = _clip(sentence.strip().replace('"', "'"), limit).rstrip(" .,;:")
    return f'"{text}"' + ("" if text.endswith(("?", "!", "…")) else ".")


def contextual_header(
    *,
    user_text: str,
    assistant_text: str,
    title: str = "",
    prior: str = "",
    platform: str = "",
    date: str = "",
    topics: list[str] | None = None,
) -> str:
    """A 2-4 sentence header that orients a model reading this chunk out of context.

    Sentence 1 names the platform, the conversation title, the date and the topics (given, or
    the chunk's own tags with the user's words weighted double). Sentence 2 says what the user
    wanted, quoting their most telling question, request or statement. Sentence 3 (if ``prior``
    is given) recalls the earlier context; the last one lists what the assistant's answer
    covered. Never a generic "this chunk discusses a conversation".
    """
    user_text = user_text if isinstance(user_text, str) else ""
    assistant_text = assistant_text if isinstance(assistant_text, str) else ""
    topic_list = [t for t in (topics or []) if isinstance(t, str) and t.strip()]
    if not topic_list:
        # The user's words say what the exchange is about; the answer only helps.
        topic_list = _tags([user_text, assistant_text], 3, first_text_weight=2.0)
    topic_words = [topic.replace("-", " ").replace("_", " ").strip() for topic in topic_list]
    topic_keys = {key for topic in topic_words for key in _content_keys(topic)}

    platform_label = _platform_label(platform)
    date_label = _date_label(date)
    opening = f"{platform_label} conversation" if platform_label else "Conversation"
    if title and title.strip():
        opening += f' "{_clip(title.strip(), 80)}"'
    if date_label:
        opening += f" from {date_label}"
    user_sentences = [s for s in _sentences(user_text) if not _FILLER_SENTENCE_RE.match(s)]
    if topic_words:
        opening += f" about {_human_list(topic_words)}."
    elif user_sentences:
        opening += " with a short exchange on a single point."
    elif user_text.strip():
        opening += " opening with a greeting and no specific topic yet."
    else:
        opening += " with no user message."
    sentences = [opening]

    if user_sentences:
        ask = _best_sentence(user_sentences, topic_keys)
        quoted = _quoted(ask)
        if _is_question(ask):
            sentences.append(f"The user wanted to know: {quoted}")
        elif _is_request(ask):
            sentences.append(f"The user asked the assistant: {quoted}")
        else:
            sentences.append(f"The user said: {quoted}")
    elif user_text.strip():
        sentences.append(f"The user only wrote {_quoted(user_text.strip(), 60)}")
    else:
        sentences.append("The exchange starts from the assistant's side.")

    if prior and prior.strip():
        items = _digest_items(prior)
        prior_text = "; ".join(item[2:].rstrip(".") for item in items[:3]) if items else prior
        prior_text = _clip(_SPACE_RE.sub(" ", prior_text).strip().rstrip("."), 200)
        sentences.append(f"Earlier in the conversation: {prior_text}.")

    covered = [
        phrase
        for phrase, _confidence in keywords([assistant_text], k=6)
        if not set(_content_keys(phrase)) <= topic_keys
    ][:3]
    if covered:
        sentences.append(f"The assistant's answer covered {_human_list(covered)}.")
    elif assistant_text.strip() and len(sentences) < 3:
        reply = _sentences(assistant_text)
        if reply:
            sentences.append(f"The assistant replied: {_quoted(reply[0], 120)}")
    return " ".join(sentences[:4])
