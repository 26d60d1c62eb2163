"""The entity extractor's reading of a text: tokens, sentence starts, the spans of
capitalized words that may be names and the word tests the rules share (common words,
sentence openers, plurals). Used by `entity_relations` and `entities`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo_text import entity_names as names
from mnemo_text.words import ENGLISH_STOP_WORDS, plural_fold

ENTITY_TYPES = (
    "person",
    "place",
    "organization",
    "project",
    "pet",
    "product",
    "event",
    "concept",
    "other",
)
_TOKEN_RE = re.compile(
    rf"(?:{'|'.join(names.ABBREVIATIONS)})\.(?=\s)|[^\W\d_][\w&+#]*(?:[-'’][\w]+)*|\d[\w:/.-]*|[^\w\s]"
)
COMMON_WORDS = ENGLISH_STOP_WORDS
SENTENCE_END = frozenset({".", "!", "?", "…"})
CONNECTORS = names.NAME_CONNECTORS
POSSESSIVES = frozenset({"my", "our", "his", "her", "their", "your"})
# Words that follow a verb, not a name, at the start of a sentence ("Mix the flour", "Ask your
# doctor"): a name opening a sentence is followed by its verb or a comma.
IMPERATIVE_OBJECTS = frozenset(
    {"the", "a", "an", "your", "my", "our", "their", "its", "this", "these", "those", "it", "them"}
)
ADJECTIVES = frozenset(
    """
    little big older younger old new best oldest youngest dear late baby twin elder adopted
    rescue sweet beloved favorite favourite former first second third two three other ex-
    golden german border french english miniature toy cocker springer
    """.split()
)
NAMING_WORDS = frozenset({"named", "called", "nicknamed"})
PERSON_NAMING_NOUNS = frozenset({"girl", "boy", "baby", "son", "daughter", "guy", "woman", "man"})
SKIP_BEFORE_OBJECT = frozenset({"a", "an", "the", "my", "our", "his", "her", "new", "used"})
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE_RE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}|"
    rf"(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b(?:,?\s+\d{{4}})?|"
    rf"(?:in|since|until)\s+(?:{_MONTHS}\s+)?(?:19|20)\d\d|"
    rf"(?:next|last|this)\s+(?:week|month|year|summer|winter|spring|autumn|fall|weekend|"
    rf"monday|tuesday|wednesday|thursday|friday|saturday|sunday|{_MONTHS}))\b",
    re.IGNORECASE,
)
_POSSESSIVE_S_RE = re.compile(r"'s\b")
_NAME_PUNCTUATION_RE = re.compile(r"[^\w&+#\s-]")
_SURFACE_POSSESSIVE_RE = re.compile(r"['’]s$")
CON_RE = re.compile(r"[a-z]Con$")


@dataclass(frozen=True)
class ExtractedEntity:
    """One mention of a named thing: its surface name, type and where it stands."""

    name: str
    normalized: str
    type: str
    start: int
    end: int
    sentence: str
    description: str = ""
    relation: str = ""
    # The word before the relation: "my" in "my dog Max", "his" in "his dog Rex", "ana's".
    owner: str = ""
    # The type came from the text (a relation, a word list, a cue such as "work at"), not from
    # the default for a short capitalised name ("Globex is hiring": a person, uncued).
    cued: bool = False
    # Another name of the person named just before ("Kat, short for Katherine", "Elizabeth
    # (everyone calls her Liz)"): that one's normalized name.
    alias_of: str = ""


@dataclass(slots=True)
class Token:
    text: str
    lower: str
    start: int
    end: int
    # Starts with a letter and is capitalized: "Ines", or "iPhone" / "eBay" (a lower-case
    # start with a capital inside). Set once per token: the span finder asks for every token.
    name_like: bool


@dataclass
class Span:
    first: int  # token index
    last: int
    type: str = ""
    relation: str = ""
    owner: str = ""
    from_context: bool = False
    # The relation a title in front of the name gave ("Aunt Rosa": aunt); the title is cut.
    title_relation: str = ""


def normalize_entity_name(name: str) -> str:
    """The key entities are matched on: accents, case, "the", a possessive 's and punctuation
    removed ("The Ines's" -> "ines"; "Tomás" -> "tomas")."""
    text = unicodedata.normalize("NFKD", name or "")
    text = "".join(char for char in text if not unicodedata.combining(char))
    text = text.replace("’", "'").lower().strip()
    text = _POSSESSIVE_S_RE.sub("", text)
    text = _NAME_PUNCTUATION_RE.sub(" ", text)
    words = text.split()
    if len(words) > 1 and words[0] == "the":
        words = words[1:]
    return " ".join(words)[:200]


PROMPT_ALIASES_MAX = 3


def entity_prompt_line(kind: str, name: str, aliases: Sequence[str], description: str) -> str:
    """The line the context pack and search show for an entity, with what else the user calls
    it: "[ENTITY: person] Ines (Ines Costa, my sister): the user's sister". Aliases are stored
    normalized: a name is shown capitalized, a relation ("my sister") as said; an alias inside
    the name ("okafor" of "Mrs. Okafor", "acme" of "Acme Corp") adds nothing and is left out."""
    own_words = set(normalize_entity_name(name).split())
    shown = []
    for alias in aliases:
        words = alias.split()
        if not words or set(words) <= own_words:
            continue
        if len(words) > 1 and words[-1] in names.RELATION_TYPES:
            shown.append(alias)
        else:
            shown.append(" ".join(word[:1].upper() + word[1:] for word in words))
        if len(shown) == PROMPT_ALIASES_MAX:
            break
    line = f"[ENTITY: {kind}] {name}"
    if shown:
        line += f" ({', '.join(shown)})"
    return line + (f": {description}" if description else "")


def entity_dates(sentence: str) -> list[str]:
    """Date expressions in a sentence ("June 5", "next June", "in 2019", "2024-05-01")."""
    return [match.group(0) for match in _DATE_RE.finditer(sentence or "")]


def text_tokens(text: str) -> list[Token]:
    tokens = []
    for match in _TOKEN_RE.finditer(text):
        word = match.group(0)
        first = word[0]
        start, end = match.span()
        tokens.append(
            Token(
                word,
                word.lower().replace("’", "'"),
                start,
                end,
                # islower() first: most words have no capital at all, which it says in C.
                first.isalpha()
                and not word.islower()
                and (first.isupper() or any(map(str.isupper, word[1:3]))),
            )
        )
    return tokens


def sentence_start_indexes(tokens: list[Token], text: str) -> set[int]:
    """Token indexes that open a sentence (after . ! ? a line break or a "Name:" label)."""
    starts = {0}
    for index, token in enumerate(tokens[:-1]):
        following = tokens[index + 1]
        if token.text in SENTENCE_END or token.text in {":", '"', "“", "(", "-", "–", "—"}:
            starts.add(index + 1)
        elif "\n" in text[token.end : following.start]:
            starts.add(index + 1)
    return starts


def is_name_token(tokens: list[Token], index: int) -> bool:
    if not tokens[index].name_like:
        return False
    # A redaction placeholder ("[EMAIL]", "<PHONE>") is not a name.
    return not (index and tokens[index - 1].text in {"[", "<"})


def tokens_adjacent(tokens: list[Token], text: str, left: int, right: int) -> bool:
    """True when only plain spaces stand between two tokens."""
    gap = text[tokens[left].end : tokens[right].start]
    return gap.strip(" ") == "" and "\n" not in gap


def model_number_join(tokens: list[Token], text: str, span: Span) -> None:
    """ "iPhone 15", "Pixel 8": a product's model number is part of its name."""
    following = span.last + 1
    if (
        following < len(tokens)
        and tokens[following].text.isdigit()
        and len(tokens[following].text) <= 4
        and tokens_adjacent(tokens, text, span.last, following)
        and not (
            following + 1 < len(tokens) and tokens[following + 1].lower in _COUNTED_NOUNS
        )  # "a MacBook 2 weeks ago", "read Dune 3 times"
    ):
        span.last = following


_COUNTED_NOUNS = frozenset(
    """time times day days week weeks month months year years hour hours minute minutes mins
    page pages chapter chapters episode episodes people more of percent % x""".split()
)
# Sentence adverbs ("Luckily Anna came", "Apparently, ..."), by ending: long enough that names
# like Emily, Lily, Sally or Kelly are not taken for one.
_OPENING_ADVERB_RE = re.compile(r"^[a-z]{3,}(?:ously|fully|edly|ingly|ntly|tely|dly|ally|ily)$")


def common_word_at(tokens: list[Token], index: int) -> bool:
    return (
        is_sentence_opener(tokens[index].lower)
        or _plural_subject(tokens, index)
        or _compound_modifier(tokens, index)
    )


def _compound_modifier(tokens: list[Token], index: int) -> bool:
    """ "Astronomy club meets", "Marker pens help": an unknown word right before a lower-case
    noun that others modify (names.COMPOUND_HEADS) is that noun's modifier, not a name."""
    following = index + 1
    return (
        following < len(tokens)
        and not tokens[following].name_like
        and tokens[following].lower in names.COMPOUND_HEADS
        and not known_word(tokens[index].lower)
    )


def is_sentence_opener(word: str) -> bool:
    """Whether a capitalized word opening a sentence is a common word, not a name ("Luckily",
    "Dinner", "Tbh", "Yesterday", "Swimming", "Friendship", "Dogs"); a digest that retells the
    sentence lower-cases it."""
    lower = word.lower().rstrip(".,")
    return (
        lower in names.NOT_NAMES
        or lower in COMMON_WORDS
        or lower in names.SENTENCE_OPENERS
        or is_opening_verb(lower)
        or (len(lower) >= 7 and _OPENING_ADVERB_RE.match(lower) is not None)
        or _common_noun(lower)
    )


def is_opening_verb(lower: str) -> bool:
    """ "Called Sarah", "Texted Jen", "Met Rachel": a chat sentence that leaves out its "I"."""
    if lower in names.OPENING_VERBS:
        return True
    return (
        len(lower) >= 6
        and lower.endswith("ed")
        and lower.isalpha()
        and lower not in names.NAMES_ENDING_ED
        and not known_word(lower)
    )


def opens_instruction(first: str, second: str) -> bool:
    """Whether a sentence opening with these two words is an instruction ("Appreciate the
    small joys", "Ask your doctor"): a lone unknown word followed by an article or possessive."""
    return second.lower() in IMPERATIVE_OBJECTS and not known_word(first.lower())


def _common_noun(lower: str) -> bool:
    """A common noun by the word list (also its plural) or by a noun or gerund ending."""
    if lower in names.COMMON_NOUNS or plural_fold(lower) in names.COMMON_NOUNS:
        return True
    if plural_fold(lower) in names.RELATION_TYPES:  # "Kids grow up fast", "Sisters fight"
        return True
    if lower in names.NAMES_WITH_NOUN_ENDINGS or known_word(lower):
        return False
    return len(lower) >= 6 and lower.endswith(names.COMMON_NOUN_ENDINGS)


_PREPOSITIONS = frozenset("in of on at for from with about around near under over".split())


def _plural_subject(tokens: list[Token], index: int) -> bool:
    """A word ending in s followed by a verb only a plural takes ("Concerts are loud", "Plants
    need water", "Horses truly scare me"): a plural noun, where "James has" is a name."""
    lower = tokens[index].lower
    if len(lower) < 4 or plural_fold(lower) == lower or known_word(lower):
        return False
    following = index + 1
    while following < len(tokens) and tokens[following].lower in names.OPENER_ADVERBS:
        following += 1
    if following < len(tokens) and tokens[following].lower in names.PLURAL_VERBS:
        return True
    # "Patterns in my sleep data look odd": a long plural, a phrase after it, then the verb a
    # plural takes ("James in accounting looks tired" keeps its name).
    if len(lower) < 7 or following >= len(tokens) or tokens[following].lower not in _PREPOSITIONS:
        return False
    ahead = tokens[following + 1 : following + 7]
    return any(token.lower in names.PLURAL_VERBS for token in ahead)


def known_word(lower: str) -> bool:
    return (
        lower in names.ORGANIZATIONS
        or lower in names.PRODUCTS
        or lower in names.PLACES
        or lower in names.CONCEPTS
        or lower in names.EVENTS
    )


def span_surface(tokens: list[Token], text: str, span: Span) -> str:
    surface = text[tokens[span.first].start : tokens[span.last].end]
    return _SURFACE_POSSESSIVE_RE.sub("", surface)


def words_before(tokens: list[Token], index: int, count: int) -> list[str]:
    """Up to ``count`` lower-case tokens before ``index``, nearest first, stopping at a
    sentence end."""
    words: list[str] = []
    position = index - 1
    while position >= 0 and len(words) < count:
        lower = tokens[position].lower
        if lower in SENTENCE_END:
            break
        words.append(lower)
        position -= 1
    return words
