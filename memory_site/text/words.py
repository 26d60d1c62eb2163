"""Word lists and the tokenizer every text function shares: stop-words, noise removal
(code, URLs, e-mail addresses, placeholders), plural folding and cached word records."""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

# Only the head of a huge text is analysed: pasted documents would otherwise dominate the cost
# and the keywords of a conversation.
MAX_TEXT_CHARS = 20_000


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
noted understood acknowledged gotcha correct precisely apologies congratulations congrats
fortunately unfortunately interesting wonderful fantastic excellent lovely brilliant amazing
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
# English and chat stop words only: the multilingual list holds first names ("Mia", "Ines"),
# which a reader of names or a query's terms must keep.
ENGLISH_STOP_WORDS: frozenset[str] = _word_set(_ENGLISH_STOP, _CHAT_STOP)

# Markup and code tokens: pasted HTML, CSS and source left outside a code fence would otherwise
# make "div", "class" and "span" a conversation's topics. Never a topic, tag or title word
# ("yoga class" still gives "yoga"); summaries keep the sentences they occur in.
CODE_TOKENS: frozenset[str] = _word_set(
    """
    div span class classname href src img alt nbsp amp quot apos xmlns doctype ul ol li tr td
    th tbody thead tfoot br hr iframe onclick onload px rem vh vw rgba rgb stylesheet tabindex
    aria attr attrs const var func fn def void null undefined nil true false elif endif println
    printf stdout stderr stdin init self args kwargs str int bool dict len async await lambda
    typeof instanceof struct enum impl pub usr sudo
    """
)

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
# An HTML/XML tag (with its attributes), a comment, or an entity such as "&nbsp;" / "&#8217;".
_MARKUP_RE = re.compile(
    r"<!--[\s\S]*?(?:-->|\Z)|<![^<>]{0,200}>|</?[A-Za-z][\w:-]*(?:\s[^<>]{0,500})?/?>"
    r"|&(?:[A-Za-z]{2,8}|#\d{1,6});"
)
_BLOCK_TAG_RE = re.compile(
    r"</?(?:p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|blockquote|pre|hr)\b", re.I
)
_FRAGMENT_SPLIT_RE = re.compile(r"[.,;:!?()\[\]{}\"“”„«»…|/\\<>=+*#@&%$^~`\n\r\t]+|\s[-–—]+\s")
_WORD_RE = re.compile(r"\w+(?:['’-]\w+)*")
_HAS_LETTER_RE = re.compile(r"[^\W\d_]")
_JUNK_WORD_RE = re.compile(r"(.)\1\1|^(?:ha|he|hi|lo|ja|xa)+h?l?$|^x+d+$|^_|_$")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE_RE = re.compile(r"\s+")
# "useState", "onClick", "getElementById": two lower-case letters, then a capitalised hump
# ("iPhone", "eBay" and "macOS" are not code).
_CAMEL_CODE_RE = re.compile(r"^[a-z]{2,}[A-Z][a-z]")


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
    if "<" in text or "&" in text:
        text = strip_markup(text)
    if "](" in text:
        text = _MD_LINK_RE.sub(r"\1", text)
    if "://" in text or ("." in text and _URL_HINT_RE.search(text)):
        text = _URL_RE.sub(" ", text)
    if "@" in text:
        text = _EMAIL_RE.sub(" ", text)
    if "[" in text or "<" in text:
        text = _PLACEHOLDER_RE.sub(" ", text)
    return text


def strip_markup(text: str) -> str:
    """``text`` without HTML/XML tags, comments and entities (the words between tags stay).

    Runs before any keyword is taken, so attribute names and tag names never become topics.
    A placeholder such as ``<EMAIL>`` (upper case, no attributes) is left for the caller.
    """
    return _MARKUP_RE.sub(_markup_replacement, text)


def _markup_replacement(match: re.Match) -> str:
    token = match.group(0)
    if _PLACEHOLDER_RE.fullmatch(token):
        return token
    if token.startswith("&"):
        return html.unescape(token).replace("\xa0", " ")
    # A block tag ends a sentence; an inline one ("<b>", "<span>") sits inside one.
    return "\n" if _BLOCK_TAG_RE.match(token) else " "


@lru_cache(maxsize=8192)
def verb_lemma(word: str) -> str:
    """The one verb lemmatizer of the text layer: a verb's dictionary form from lemminflect's
    lookup tables, its rules for words not in them ("likes", "liked" -> "like"; "went" -> "go";
    "is", "was" -> "be"). Loaded on first use, so a process that never compares facts never
    reads the tables."""
    from lemminflect import getLemma

    lemmas = getLemma(word, upos="VERB")
    return lemmas[0] if lemmas else word


def plural_fold(word: str) -> str:
    """The one plural rule of the text layer, for matching only (display forms come from the text
    itself): "parties" -> "party", "beaches" -> "beach", "cats" -> "cat"; "news", "this",
    "class", "bus" and words of three letters stay as they are."""
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
    if lower in CODE_TOKENS or "_" in lower or _CAMEL_CODE_RE.match(surface):
        return False
    digits = sum(ch.isdigit() for ch in lower)
    if digits * 2 > len(lower):
        return False
    if lower in STOP_WORDS or plural_fold(lower) in STOP_WORDS:
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
        key = plural_fold(lower)
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
