"""Named entities without a model: people, pets, places, organizations, projects, products,
events and concepts a user talks about, with the sentence and offsets of each mention.

Rules, in the order they decide a name's type (first match wins):

1. A possessive relation before or after the name: "my sister Ines", "our cat, Luna", "Luna,
   our cat", "a kitten named Pepper", "my mom's friend Linda". The relation noun gives the type
   (sister -> person, dog -> pet, startup -> organization, app -> project) and the description
   ("Ana's sister" for the speaker Ana, "the user's sister" without one). Also after the name
   ("Tom is my oldest friend") and after a noun just introduced ("We got a puppy. Her name is
   Biscuit"); "She has a cat named Olive" after one named person is that person's cat.
2. A title: "Dr. Alvarez", "Mrs. Patel", "Professor Okafor" -> person.
3. Small word lists (``entity_names``): holidays and famous events, well-known companies,
   products, brands followed by a model ("Toyota Corolla"), languages and -isms, countries and
   big cities.
4. The name's own first or last word: "Mount Rainier", "Lake Tahoe" -> place; "St. Mary's
   Hospital", "Wellcome Trust" -> organization; "Berlin Marathon" -> event; "Project Atlas".
5. The words around it: "the Apollo migration" -> project, "the Harbor Lights festival" ->
   event, "in/to/from/near/visited X" and "in the Alps" (one plural word) -> place, "works at
   X", "interview at X" -> organization, "reading/bought/using X" -> product.
6. A name joined by "and" or a comma to a typed name takes its type ("Arizona and Utah").
7. Otherwise one to three capitalized words are a person; "the Warriors" (a plural after
   "the") is an organization.

Capitalized words at the start of a sentence count only when they are not common words
("Yesterday", "Can", "Write"); dates, weekdays and months are never entities; a nationality
word is a language only when learnt or spoken ("learning Japanese"), otherwise an adjective.
``entity_dates`` finds the dates of a sentence, which the caller may keep with a mention.

Pure and deterministic, like the rest of ``memory_site.text``: ~0.1 ms for a chat message.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memory_site.text import entity_names as names
from memory_site.text.words import _CHAT_STOP, _ENGLISH_STOP, MAX_TEXT_CHARS

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
# English and chat stop-words only: the multilingual list holds first names ("Mia", "Ines").
_COMMON_WORDS = frozenset(_ENGLISH_STOP.split()) | frozenset(_CHAT_STOP.split())
_SENTENCE_END = frozenset({".", "!", "?", "…"})
_CONNECTORS = names.NAME_CONNECTORS
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their", "your"})
# Words that follow a verb, not a name, at the start of a sentence ("Mix the flour", "Ask your
# doctor"): a name opening a sentence is followed by its verb or a comma.
_IMPERATIVE_OBJECTS = frozenset(
    {"the", "a", "an", "your", "my", "our", "their", "its", "this", "these", "those", "it", "them"}
)
_ADJECTIVES = frozenset(
    """
    little big older younger old new best oldest youngest dear late baby twin elder adopted
    rescue sweet beloved favorite favourite former first second third two three other ex-
    golden german border french english miniature toy cocker springer
    """.split()
)
_NAMING_WORDS = frozenset({"named", "called", "nicknamed"})
_PERSON_NAMING_NOUNS = frozenset({"girl", "boy", "baby", "son", "daughter", "guy", "woman", "man"})
_SKIP_BEFORE_OBJECT = frozenset({"a", "an", "the", "my", "our", "his", "her", "new", "used"})
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
_CON_RE = re.compile(r"[a-z]Con$")


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
class _Token:
    text: str
    lower: str
    start: int
    end: int
    # Starts with a letter and is capitalized: "Ines", or "iPhone" / "eBay" (a lower-case
    # start with a capital inside). Set once per token: the span finder asks for every token.
    name_like: bool


@dataclass
class _Span:
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


def _tokens(text: str) -> list[_Token]:
    tokens = []
    for match in _TOKEN_RE.finditer(text):
        word = match.group(0)
        first = word[0]
        start, end = match.span()
        tokens.append(
            _Token(
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


def _sentence_starts(tokens: list[_Token], text: str) -> set[int]:
    """Token indexes that open a sentence (after . ! ? a line break or a "Name:" label)."""
    starts = {0}
    for index, token in enumerate(tokens[:-1]):
        following = tokens[index + 1]
        if token.text in _SENTENCE_END or token.text in {":", '"', "“", "(", "-", "–", "—"}:
            starts.add(index + 1)
        elif "\n" in text[token.end : following.start]:
            starts.add(index + 1)
    return starts


def _is_name_token(tokens: list[_Token], index: int) -> bool:
    if not tokens[index].name_like:
        return False
    # A redaction placeholder ("[EMAIL]", "<PHONE>") is not a name.
    return not (index and tokens[index - 1].text in {"[", "<"})


def _adjacent(tokens: list[_Token], text: str, left: int, right: int) -> bool:
    """True when only plain spaces stand between two tokens."""
    gap = text[tokens[left].end : tokens[right].start]
    return gap.strip(" ") == "" and "\n" not in gap


def _with_model_number(tokens: list[_Token], text: str, span: _Span) -> None:
    """ "iPhone 15", "Pixel 8": a product's model number is part of its name."""
    following = span.last + 1
    if (
        following < len(tokens)
        and tokens[following].text.isdigit()
        and len(tokens[following].text) <= 4
        and _adjacent(tokens, text, span.last, following)
        and not (
            following + 1 < len(tokens) and tokens[following + 1].lower in _COUNTED_NOUNS
        )  # "a MacBook 2 weeks ago", "read Dune 3 times"
    ):
        span.last = following


_COUNTED_NOUNS = frozenset(
    """time times day days week weeks month months year years hour hours minute minutes mins
    page pages chapter chapters episode episodes people more of percent % x""".split()
)


def _candidate_spans(tokens: list[_Token], text: str, starts: set[int]) -> list[_Span]:
    spans: list[_Span] = []
    index = 0
    while index < len(tokens):
        if not _is_name_token(tokens, index):
            index += 1
            continue
        last = index
        while True:
            step = last + 1
            if step < len(tokens) and _adjacent(tokens, text, last, step):
                if _is_name_token(tokens, step):
                    last = step
                    continue
                # "University of Edinburgh", "Habitat for Humanity": a connector between names.
                if (
                    tokens[step].lower in _CONNECTORS
                    and step + 1 < len(tokens)
                    and _adjacent(tokens, text, step, step + 1)
                    and _is_name_token(tokens, step + 1)
                    and _joins(tokens[last].lower, tokens[step + 1].lower)
                ):
                    last = step + 1
                    continue
            break
        spans.append(_Span(index, last))
        index = last + 1
    return [span for span in (_trim(span, tokens, starts) for span in spans) if span]


def _joins(left: str, right: str) -> bool:
    """Whether a connector may join two names: not "Vancouver for Christmas"."""
    if right in names.NOT_NAMES or right in names.HOLIDAYS:
        return False
    return left not in names.PLACES and left not in names.PRODUCTS


# Sentence adverbs ("Luckily Anna came", "Apparently, ..."), by ending: long enough that names
# like Emily, Lily, Sally or Kelly are not taken for one.
_OPENING_ADVERB_RE = re.compile(r"^[a-z]{3,}(?:ously|fully|edly|ingly|ntly|tely|dly|ally|ily)$")


def _common(tokens: list[_Token], index: int) -> bool:
    return (
        is_sentence_opener(tokens[index].lower)
        or _plural_subject(tokens, index)
        or _compound_modifier(tokens, index)
    )


def _compound_modifier(tokens: list[_Token], index: int) -> bool:
    """ "Astronomy club meets", "Marker pens help": an unknown word right before a lower-case
    noun that others modify (names.COMPOUND_HEADS) is that noun's modifier, not a name."""
    following = index + 1
    return (
        following < len(tokens)
        and not tokens[following].name_like
        and tokens[following].lower in names.COMPOUND_HEADS
        and not _known(tokens[index].lower)
    )


def is_sentence_opener(word: str) -> bool:
    """Whether a capitalized word opening a sentence is a common word, not a name ("Luckily",
    "Dinner", "Tbh", "Yesterday", "Swimming", "Friendship", "Dogs"); a digest that retells the
    sentence lower-cases it."""
    lower = word.lower().rstrip(".,")
    return (
        lower in names.NOT_NAMES
        or lower in _COMMON_WORDS
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
        and not _known(lower)
    )


def opens_instruction(first: str, second: str) -> bool:
    """Whether a sentence opening with these two words is an instruction ("Appreciate the
    small joys", "Ask your doctor"): a lone unknown word followed by an article or possessive."""
    return second.lower() in _IMPERATIVE_OBJECTS and not _known(first.lower())


def _common_noun(lower: str) -> bool:
    """A common noun by the word list (also its plural) or by a noun or gerund ending."""
    if lower in names.COMMON_NOUNS or _singular(lower) in names.COMMON_NOUNS:
        return True
    if _singular(lower) in names.RELATION_TYPES:  # "Kids grow up fast", "Sisters fight"
        return True
    if lower in names.NAMES_WITH_NOUN_ENDINGS or _known(lower):
        return False
    return len(lower) >= 6 and lower.endswith(names.COMMON_NOUN_ENDINGS)


def _singular(lower: str) -> str:
    if lower.endswith("ies") and len(lower) > 4:
        return lower[:-3] + "y"  # parties, puppies
    if lower.endswith(("ches", "shes", "xes", "sses")):
        return lower[:-2]  # beaches, classes
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")):
        return lower[:-1]
    return lower


_PREPOSITIONS = frozenset("in of on at for from with about around near under over".split())


def _plural_subject(tokens: list[_Token], index: int) -> bool:
    """A word ending in s followed by a verb only a plural takes ("Concerts are loud", "Plants
    need water", "Horses truly scare me"): a plural noun, where "James has" is a name."""
    lower = tokens[index].lower
    if len(lower) < 4 or _singular(lower) == lower or _known(lower):
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


def _trim(span: _Span, tokens: list[_Token], starts: set[int]) -> _Span | None:
    first, last = span.first, span.last
    # A common word opening a sentence ("Yesterday Oscar", "The Warriors") is not a name; the
    # first word of "New York" or "Los Angeles" is.
    while (
        first <= last
        and first in starts
        and _common(tokens, first)
        and not (
            first < last
            and (
                tokens[first].lower in names.PLACE_NAME_PREFIXES
                or tokens[first].lower in names.RELATION_TITLES
            )
        )
    ):
        first += 1
        # "Cooking for Marco": the connector left in front of the name goes too.
        while first <= last and tokens[first].lower in _CONNECTORS:
            first += 1
    # "Aunt Rosa", "Grandma Ruth": the title is the relation, the name what follows it.
    title_relation = ""
    if first < last and tokens[first].lower in names.RELATION_TITLES:
        title_relation = names.RELATION_TITLES[tokens[first].lower]
        first += 1
    while (
        first <= last
        and tokens[first].lower.rstrip(".") in names.NOT_NAMES
        and not _name_after_relation(tokens, first, starts)
    ):
        first += 1
    while last >= first and (
        (tokens[last].lower in names.NOT_NAMES and not _name_after_relation(tokens, last, starts))
        or tokens[last].lower in _CONNECTORS
    ):
        last -= 1
    if first > last:
        return None
    if first == last and tokens[first].lower.rstrip(".") in names.TITLES:
        return None
    # A company's legal form alone ("Acme Holdings, Inc."): part of the name before it.
    if first == last and tokens[first].lower in names.LEGAL_SUFFIXES:
        return None
    # "Victorian London", "Italian Alps" -> the place without its adjective.
    if (
        first < last
        and tokens[first].lower in names.NATIONALITIES
        and " ".join(token.lower for token in tokens[first + 1 : last + 1]) in names.PLACES
    ):
        first += 1
    # An instruction's verb opening a sentence ("Preheat the oven", "Bleed the radiator", "Add a
    # pinch"): a lone word there followed by an article or a possessive is not a name.
    if (
        first == last
        and first in starts
        and last + 1 < len(tokens)
        and tokens[last + 1].lower in _IMPERATIVE_OBJECTS
        and not _known(tokens[first].lower)
        and not _named_by_relation(tokens, last, starts)
    ):
        return None
    # A lone acronym we do not know ("TV", "NDA") is skipped rather than guessed.
    word = tokens[first].text
    if first == last and word.isupper() and len(word) > 1 and not _known(word.lower()):
        return None
    return _Span(first, last, title_relation=title_relation)


_PRESENT_VERBS = frozenset({"is", "was", "has", "had", "loves", "likes", "hates"})


def _named_by_relation(tokens: list[_Token], last: int, starts: set[int]) -> bool:
    """ "Steve the cat", "Lily the hamster": a name followed by "the" and a relation noun. At a
    sentence start only with a verb after it ("Steve the cat knocked..."): "Feed the cat" and
    "Email the landlord about..." are instructions."""
    if not (
        last + 2 < len(tokens)
        and tokens[last + 1].lower == "the"
        and tokens[last + 2].lower in names.RELATION_TYPES
    ):
        return False
    if last not in starts:
        return True
    verb = tokens[last + 3].lower if last + 3 < len(tokens) else ""
    return verb in _PRESENT_VERBS or (len(verb) > 3 and verb.isalpha() and verb.endswith("ed"))


def _name_after_relation(tokens: list[_Token], index: int, starts: set[int]) -> bool:
    """ "my son Will", "my aunt May": a given name that is also a common word, capitalized
    inside a sentence right after a possessive and a relation noun."""
    if index in starts or tokens[index].lower not in names.NAME_WORDS_AFTER_RELATION:
        return False
    return _relation_before(tokens, _Span(index, index)) is not None


def _known(lower: str) -> bool:
    return (
        lower in names.ORGANIZATIONS
        or lower in names.PRODUCTS
        or lower in names.PLACES
        or lower in names.CONCEPTS
        or lower in names.EVENTS
    )


def _span_text(tokens: list[_Token], text: str, span: _Span) -> str:
    surface = text[tokens[span.first].start : tokens[span.last].end]
    return _SURFACE_POSSESSIVE_RE.sub("", surface)


def _previous_words(tokens: list[_Token], index: int, count: int) -> list[str]:
    """Up to ``count`` lower-case tokens before ``index``, nearest first, stopping at a
    sentence end."""
    words: list[str] = []
    position = index - 1
    while position >= 0 and len(words) < count:
        lower = tokens[position].lower
        if lower in _SENTENCE_END:
            break
        words.append(lower)
        position -= 1
    return words


# First-person subjects of "I have a cat named Pixel", "we adopted a puppy called Rex", and a
# digest's "The user has a cat named Pixel".
_FIRST_PERSON_OWNERS = {
    "i": "my",
    "i've": "my",
    "i'm": "my",
    "we": "our",
    "we've": "our",
    "user": "my",
}


def _naming_owner(before_noun: list[str]) -> str:
    """Whose is "<owner> cat named Pixel": "my"/"her"/"ana's" as written, "my" for "I have a
    cat named", "she" for "She has a cat named" (not the speaker's; maybe a person named
    before)."""
    for position, word in enumerate(before_noun[:3]):  # past "tiny", "little old"
        if word in _POSSESSIVES or word.endswith("'s"):
            return word
        if word in {"a", "an"}:
            for subject in before_noun[position + 1 : position + 4]:
                if subject in _FIRST_PERSON_OWNERS:
                    return _FIRST_PERSON_OWNERS[subject]
                if subject in _THIRD_PERSON:
                    return subject
            return ""
    return ""


# Verbs of using someone else's work: "reading a book called", "watched a series called".
_CONSUMING_VERBS = frozenset(
    """read reading reads watch watched watching watches listen listened listening listens
    bought buy buying finished finishing loved love enjoyed enjoying recommend recommended
    discovered found binged binge binging""".split()
)


def _consumed(before_noun: list[str]) -> bool:
    """Whether "<verb> a <noun> called X" uses a work rather than owns it: a consuming verb
    just before the article ("reading a book", "watched this great series")."""
    for position, word in enumerate(before_noun[:3]):
        if word in {"a", "an", "this", "that", "the"}:
            following = before_noun[position + 1 : position + 3]
            return any(verb in _CONSUMING_VERBS for verb in following[:1]) or (
                following[:1] == ["to"] and following[1:2] == ["listening"]
            )
    return False


# A third person's subject or possessive and the people it may stand for (by relation noun).
_THIRD_PERSON = {"she": "female", "her": "female", "he": "male", "his": "male"}


def _whose(found: list[ExtractedEntity]) -> list[ExtractedEntity]:
    """ "My friend Anna visited. She has a cat named Olive": when a relation's owner is she/he/
    her/his and the text named exactly one person before it (of a fitting relation, if any),
    the relation is that person's ("Anna's cat"). Two people, or none: not guessed."""
    people: dict[str, ExtractedEntity] = {}
    resolved = []
    for entity in found:
        gender = _THIRD_PERSON.get(entity.owner) if entity.relation else None
        if gender and len(people) == 1:
            person = next(iter(people.values()))
            if names.RELATION_GENDERS.get(person.relation, gender) == gender:
                entity = replace(
                    entity,
                    owner=f"{person.normalized}'s",
                    description=f"{person.name}'s {entity.relation}",
                )
        if entity.type == "person":
            people.setdefault(entity.normalized, entity)
        resolved.append(entity)
    return resolved


# Pronouns that stand for a noun introduced just before the name: "a puppy ... Her name is
# Biscuit", "a rescue dog and named him Pepper".
_NAME_PRONOUNS = frozenset({"her", "his", "its", "their", "him", "it", "them"})
# People a pronoun may introduce that way: a newborn or adopted child, "a baby girl".
_INTRODUCED_PEOPLE = frozenset(
    {"baby", "son", "daughter", "kid", "child", "grandson", "granddaughter", "nephew", "niece"}
)
_PRONOUN_LOOKBACK_TOKENS = 30


def _relation_by_pronoun(
    tokens: list[_Token], span: _Span, before: list[str]
) -> tuple[str, str, str] | None:
    """(type, relation noun, owner) for a name given after its noun: "We got a puppy. Her name
    is Biscuit", "adopted a dog and named him Pepper", "Our dog's name is Rex"."""
    if before[:2] == ["is", "name"] and len(before) > 2:
        marker, used = before[2], 3
    elif before[:1] == ["name's"] and len(before) > 1:
        marker, used = before[1], 2
    elif len(before) > 1 and before[0] in _NAME_PRONOUNS and before[1] in _NAMING_WORDS:
        marker, used = before[0], 1
    else:
        return None
    if marker.endswith("'s") and marker[:-2] in names.RELATION_TYPES:
        # "Our dog's name is Rex", "My sister's name is Ines".
        noun = marker[:-2]
        return names.RELATION_TYPES[noun], noun, _naming_owner(before[used:])
    if marker not in _NAME_PRONOUNS:
        return None
    # The nearest relation noun before the pronoun, in this sentence or the one before.
    position, sentence_ends = span.first - used - 1, 0
    while position >= max(0, span.first - _PRONOUN_LOOKBACK_TOKENS):
        lower = tokens[position].lower
        if lower in _SENTENCE_END:
            sentence_ends += 1
            if sentence_ends > 1:
                return None
        elif lower in names.RELATION_TYPES:
            break
        position -= 1
    else:
        return None
    noun = tokens[position].lower
    kind = names.RELATION_TYPES[noun]
    if kind != "pet" and noun not in _INTRODUCED_PEOPLE:
        return None
    # Only a noun just introduced ("a puppy", "a rescue dog"): "My boss hired someone. His
    # name is Raj" is not about the boss.
    words = _previous_words(tokens, position, 8)
    for index, word in enumerate(words[:4]):
        if word in {"a", "an"}:
            return kind, noun, _naming_owner(words[index:])
        if word in _POSSESSIVES or word.endswith("'s"):
            return None
    return None


def _favourite_before(tokens: list[_Token], span: _Span) -> tuple[str, str, str] | None:
    """(type, "favourite <noun>", owner) for "My favourite band is Radiohead" and "my favourite
    movie, Inception,": a preference, typed by the noun (not "the user's band")."""
    before = _previous_words(tokens, span.first, 6)
    if before and before[0] == "the":  # "My favourite team is the Warriors"
        before = before[1:]
    if before and before[0] in {"is", "was", ","}:
        before = before[1:]
    words = before[:3]
    if len(words) == 3 and words[1] in names.FAVOURITE_WORDS and _possessive(words[2]):
        return _favourite(words[0], words[2])
    return None


def _possessive(word: str) -> bool:
    """ "my", "our", or a name's: "user's" in a digest's "The user's favourite band is..."."""
    return word in {"my", "our"} or word.endswith("'s")


def _favourite_after(tokens: list[_Token], span: _Span) -> tuple[str, str, str] | None:
    """The same for "Radiohead is my favourite band" and "Arcade Fire, my favourite band"."""
    after = [token.lower for token in tokens[span.last + 1 : span.last + 7]]
    if len(after) > 2 and after[1] == "the" and after[2].endswith("'s"):
        after = [after[0], *after[2:]]  # "is the user's favourite band"
    if len(after) >= 4 and after[0] in {"is", "was", ","} and _possessive(after[1]):
        rest = after[2:]
        if rest[0] == "all-time":
            rest = rest[1:]
        if len(rest) >= 2 and rest[0] in names.FAVOURITE_WORDS:
            return _favourite(rest[1], after[1])
    return None


def _favourite(noun: str, owner: str) -> tuple[str, str, str] | None:
    noun = _singular(noun) if _singular(noun) in names.FAVOURITE_TYPES else noun
    if not noun.isalpha():
        return None
    kind = names.FAVOURITE_TYPES.get(noun) or names.RELATION_TYPES.get(noun, "concept")
    return ("product" if kind == "project" else kind), f"favourite {noun}", owner


def _relation_before(tokens: list[_Token], span: _Span) -> tuple[str, str, str] | None:
    """(type, relation noun, owner) for "my sister Ines", "our startup, Brightleaf",
    "a kitten named Pepper", "my mom's friend Linda"."""
    before = _previous_words(tokens, span.first, 7)
    introduced = _relation_by_pronoun(tokens, span, before)
    if introduced:
        return introduced
    position = 0
    if before and before[0] == "the":
        position = 1
    # "My sister is Ines", "My kids are Sam and Ella": the relation before the verb.
    if len(before) > 2 and before[0] in {"is", "was", "are", "were"}:
        if before[1] in names.RELATION_TYPES or _singular(before[1]) in names.RELATION_TYPES:
            position = 1
    if position < len(before) and before[position] == ",":
        position += 1
    if position < len(before) and before[position] in _NAMING_WORDS:
        for offset, word in enumerate(before[position + 1 : position + 5]):
            noun = word.rstrip("s") if word.rstrip("s") in names.RELATION_TYPES else word
            if noun in names.RELATION_TYPES:
                after_noun = before[position + 2 + offset :]
                if names.RELATION_TYPES[noun] == "project" and _consumed(after_noun):
                    return "product", "", ""  # "I'm reading a book called The Overstory"
                owner = _naming_owner(after_noun)
                return names.RELATION_TYPES[noun], noun, owner
            if noun in _PERSON_NAMING_NOUNS:
                return "person", "", ""
            # "a little hotel called Hotel Koe", "a cafe called Blue Bottle".
            if names.SUFFIX_TYPES.get(noun) in {"place", "organization"}:
                return names.SUFFIX_TYPES[noun], "", ""
            if noun in names.NAMED_PLACE_NOUNS:
                return "place", "", ""
        return "person", "", ""
    if position >= len(before):
        return None
    if position and before[position - 1] == ",":
        position = _past_employer(tokens, span, before, position)
    noun = before[position]
    if noun not in names.RELATION_TYPES:
        # "two guinea pigs, Salt and Pepper": a plural relation noun.
        if noun.endswith("s") and noun[:-1] in names.RELATION_TYPES:
            noun = noun[:-1]
        else:
            return None
    owner_position = position + 1
    while owner_position < len(before) and before[owner_position] in _ADJECTIVES:
        owner_position += 1
    relation = _qualified(noun, before[position + 1 : position + 2])
    if noun == "pig" and owner_position < len(before) and before[owner_position] == "guinea":
        owner_position += 1
    if owner_position >= len(before):
        return None
    owner = before[owner_position]
    # "my wife's sister Clara": the user's wife's sister.
    if (
        owner.endswith("'s")
        and owner_position + 1 < len(before)
        and before[owner_position + 1] in {"my", "our"}
    ):
        owner = f"{before[owner_position + 1]} {owner}"
    # "my business partner Omar", "my tennis coach Sergio": one noun before the relation.
    if (
        owner_position + 1 < len(before)
        and owner.isalpha()
        and owner not in _COMMON_WORDS
        and owner not in _POSSESSIVES
        and not tokens[span.first - 1 - owner_position].name_like
        and (
            before[owner_position + 1] in _POSSESSIVES or before[owner_position + 1].endswith("'s")
        )
    ):
        owner = before[owner_position + 1]
    if owner in _POSSESSIVES or owner.endswith("'s") or owner in {"a", "an", "two", "three"}:
        return names.RELATION_TYPES[noun], relation, owner
    if owner == "the" and names.RELATION_TYPES[noun] == "pet":
        return "pet", noun, owner  # "the parrot Kiwi", as "Kiwi the parrot"
    return None


# Adjectives that single one person out, kept with the relation noun: "my best friend Priya" is
# the user's best friend (one person, an alias worth keeping); "my old friend" is a friend.
_SINGLING_ADJECTIVES = frozenset({"best"})


def _qualified(noun: str, adjective: list[str]) -> str:
    """The relation as said when the adjective right before the noun singles one out."""
    return f"{adjective[0]} {noun}" if adjective and adjective[0] in _SINGLING_ADJECTIVES else noun


_EMPLOYER_PREPOSITIONS = frozenset({"at", "from", "with", "in"})


def _past_employer(tokens: list[_Token], span: _Span, before: list[str], position: int) -> int:
    """Where the relation noun of "my manager at Globex, Dana Reyes" is in ``before`` (the words
    before the name, nearest first): past the comma, up to three capitalized words and their
    preposition. ``position`` (the word after the comma) when there is no such phrase."""
    index = position
    while index < min(len(before), position + 3) and tokens[span.first - 1 - index].name_like:
        index += 1
    if (
        index > position
        and index + 1 < len(before)
        and before[index] in _EMPLOYER_PREPOSITIONS
        and before[index + 1] in names.RELATION_TYPES
    ):
        return index + 1
    return position


def _relation_after(
    tokens: list[_Token], span: _Span, starts: set[int]
) -> tuple[str, str, str] | None:
    """(type, relation noun, owner) for "Luna, our cat,", "Ben, my old roommate,", "Tom
    Becker is my oldest friend" and "Waffles is a beagle" (owner "a")."""
    position = span.last + 1
    if _named_by_relation(tokens, span.last, starts):
        noun = tokens[position + 1].lower
        return names.RELATION_TYPES[noun], noun, "the"
    if position + 2 >= len(tokens) or tokens[position].lower not in {",", "is", "was"}:
        return None
    owner = tokens[position + 1].lower
    position += 2
    while position + 1 < len(tokens) and tokens[position].lower in _ADJECTIVES:
        position += 1
    noun = tokens[position].lower
    adjective = [tokens[position - 1].lower] if tokens[position - 1].lower in _ADJECTIVES else []
    # "Kenji is my business partner": the last of two relation nouns is the relation.
    if (
        owner in _POSSESSIVES
        and position + 1 < len(tokens)
        and tokens[position + 1].lower in names.RELATION_TYPES
        and not noun.endswith("'s")  # "Anna is my sister's friend": not the user's friend
    ):
        position += 1
        noun = tokens[position].lower
    if (owner in _POSSESSIVES or owner in {"a", "an"}) and noun in names.RELATION_TYPES:
        if owner in {"a", "an"}:
            if _is_compound(tokens, position):
                return None
            # "Tom, a friend of mine,": the speaker's friend.
            after = [token.lower for token in tokens[position + 1 : position + 3]]
            if after in (["of", "mine"], ["of", "ours"]):
                owner = "my" if after[1] == "mine" else "our"
        return names.RELATION_TYPES[noun], _qualified(noun, adjective), owner
    return None


def _is_compound(tokens: list[_Token], position: int) -> bool:
    """ "Anna is a dog trainer", "Atlas is a game studio": the relation noun is not the head."""
    following = tokens[position + 1].lower if position + 1 < len(tokens) else ""
    return following.isalpha() and following not in _COMMON_WORDS


def _lexicon_type(words: list[str], normalized: str) -> str:
    if normalized in names.HOLIDAYS or normalized in names.EVENTS:
        return "event"
    if len(words) > 1 and words[0] in names.PRODUCT_BRANDS:
        return "product"
    for lexicon, kind in (
        (names.ORGANIZATIONS, "organization"),
        (names.PRODUCTS, "product"),
        (names.CONCEPTS, "concept"),
        (names.PLACES, "place"),
    ):
        if normalized in lexicon:
            return kind
    if len(words) == 1 and len(words[0]) > 5 and words[0].endswith("ism"):
        return "concept"
    return ""


def _shape_type(words: list[str], surface: str) -> str:
    if words[0].rstrip(".") in names.TITLES or words[0] in names.TITLES:
        if words[0] not in {"st", "st."}:
            return "person"
    if len(words) > 1 and words[-1] in names.SUFFIX_TYPES:
        return names.SUFFIX_TYPES[words[-1]]
    if len(words) > 1 and words[0] in names.PREFIX_TYPES:
        return names.PREFIX_TYPES[words[0]]
    if (
        len(words) > 1
        and words[0] in names.PLACE_NAME_PREFIXES
        and not _lexicon_type(words, " ".join(words))
    ):
        return "place"
    if _CON_RE.search(surface):
        return "event"
    return ""


def _context_type(tokens: list[_Token], span: _Span) -> str:
    after = tokens[span.last + 1].lower if span.last + 1 < len(tokens) else ""
    # "took Max to the vet": a pet.
    if after in {"to", "at", "from"} and any(
        token.lower in names.PET_PLACES for token in tokens[span.last + 2 : span.last + 4]
    ):
        return "pet"
    if after in names.PROJECT_NOUNS:
        return "project"
    if after in names.EVENT_NOUNS:
        return "event"
    if after in names.PLACE_NOUNS:
        return "place"
    if (
        after == ","
        and span.last + 2 < len(tokens)
        and tokens[span.last + 2].lower in names.LEGAL_SUFFIXES
    ):
        return "organization"
    before = _previous_words(tokens, span.first, 5)
    if not before:
        return ""
    if before[0] == "project":
        return "project"
    nearest = before[0]
    skipped = 0
    while skipped < len(before) - 1 and before[skipped] in _SKIP_BEFORE_OBJECT:
        skipped += 1
    verb = before[skipped]
    if verb in names.PRODUCT_VERBS and skipped < 3:
        return "product"
    if verb in names.ORGANIZATION_VERBS or (
        verb == "into" and len(before) > skipped + 1 and before[skipped + 1] in {"got", "get"}
    ):
        return "organization"
    if nearest in {"at", "for"} and any(word in names.WORK_CUES for word in before[1:4]):
        return "organization"
    # "volunteer with Habitat for Humanity", but "I work with Anna" is a colleague.
    if nearest == "with" and any(word in names.WITH_ORGANIZATION_CUES for word in before[1:4]):
        return "organization"
    if tokens[span.last].lower.endswith("'s") and after in names.OWNED_PLACE_NOUNS:
        return ""  # "at Kate's party": Kate is the owner
    if nearest == "to" and any(word in names.TO_PERSON_WORDS for word in before[1:4]):
        return ""  # "talked to Paul", "gave the book to Maria": a person
    if nearest == "from" and any(word in names.FROM_PERSON_WORDS for word in before[1:4]):
        return ""  # "a text from Mike": a person
    if nearest == "into" and len(before) > 1 and before[1] in names.INTO_PERSON_WORDS:
        return ""  # "ran into Oliver Grant": a person
    if nearest == "for" and len(before) > 1 and before[1] in {"ticket", "tickets", "seats"}:
        return "event"  # "tickets for Hamilton"
    if nearest in names.PLACE_CUES or "at" in {nearest, verb} or verb in names.PLACE_CUES:
        if nearest == "at" or nearest in names.PLACE_CUES or verb in {"visit", "visited"}:
            return "place"
        if nearest == "the" and skipped == 1:
            # "hiking in the Alps", "dinner at The Golden Fork": a person is not "the".
            return "place"
    return ""


def _is_one_plural_word(tokens: list[_Token], span: _Span) -> bool:
    return span.first == span.last and tokens[span.first].lower.endswith("s")


def _type_span(tokens: list[_Token], text: str, span: _Span, starts: set[int]) -> str:
    surface = _span_text(tokens, text, span)
    normalized = normalize_entity_name(surface)
    words = normalized.split() or [""]
    relation = (
        _favourite_before(tokens, span)
        or _relation_before(tokens, span)
        or _own_place_or_employer(tokens, span)
        or _favourite_after(tokens, span)
        or _relation_after(tokens, span, starts)
    )
    if not relation and span.title_relation:
        relation = ("person", span.title_relation, "my")
    if relation:
        span.relation, span.owner = relation[1], relation[2]
        span.from_context = True
        return relation[0]
    for kind in (_shape_type(words, surface), _lexicon_type(words, normalized)):
        if kind:
            span.from_context = True
            return kind
    kind = _context_type(tokens, span)
    if kind:
        span.from_context = True
        return kind
    before = _previous_words(tokens, span.first, 1)
    if before and before[0] == "the" and (span.first < span.last or words[0].endswith("s")):
        # "the Warriors", "volunteering with the Red Cross": not a person.
        return "organization"
    if span.last - span.first <= 2 and all(token.isalpha() or "-" in token for token in words):
        return "person"
    return "other"


# "<subject> <cue> <preposition> X" -> (type, relation): "I work at Globex" is the user's
# employer, "I live in Lisbon" the user's home, "I'm from Porto" the user's hometown.
_OWN_RELATIONS = {
    ("at", "work"): ("organization", "employer"),
    ("at", "works"): ("organization", "employer"),
    ("at", "working"): ("organization", "employer"),
    ("at", "job"): ("organization", "employer"),
    ("for", "work"): ("organization", "employer"),
    ("for", "works"): ("organization", "employer"),
    ("for", "working"): ("organization", "employer"),
    ("in", "live"): ("place", "home"),
    ("in", "lives"): ("place", "home"),
    ("in", "living"): ("place", "home"),
    ("in", "based"): ("place", "home"),
    ("in", "lived"): ("place", "former home"),
    ("to", "moved"): ("place", "home"),
    ("to", "moving"): ("place", "home"),
    ("to", "relocated"): ("place", "home"),
    ("from", "i'm"): ("place", "hometown"),
    ("from", "am"): ("place", "hometown"),
    ("from", "originally"): ("place", "hometown"),
}
# Words that may stand between the subject and the cue ("I started a new job at", "I still
# live in", "We just moved to").
_OWN_RELATION_SKIP = frozenset(
    """a an new first still now currently just recently started got have has landed took
    also actually finally full-time part-time remote""".split()
)
# These relations describe a name but are not another name for it: the user's home or
# employer changes, and "my home" said later may be the next one (no relation alias).
UNALIASED_RELATIONS = frozenset({"employer", "home", "former home", "hometown"})
_OWN_SUBJECTS = {
    "i": "my",
    "i'm": "my",
    "i've": "my",
    "we": "our",
    "we're": "our",
    "we've": "our",
    "my": "my",
    "our": "our",
    "user": "user's",
}


def _own_place_or_employer(tokens: list[_Token], span: _Span) -> tuple[str, str, str] | None:
    """(type, relation, owner) for the user's own employer, home or hometown: "I work at
    Globex", "my job at Globex", "I live in Lisbon", "We just moved to Denver", "I'm from
    Porto" (not "My sister works at Globex": the subject must be the user)."""
    before = _previous_words(tokens, span.first, 8)
    if len(before) < 2:
        return None
    cue = before[1]
    if (before[0], cue) in {("from", "i'm"), ("from", "am"), ("from", "originally")}:
        found = _OWN_RELATIONS[(before[0], cue)]
        return found[0], found[1], "my" if cue != "originally" else _own_subject(before[2:])
    found = _OWN_RELATIONS.get((before[0], cue))
    if not found:
        return None
    owner = _own_subject(before[2:])
    return (found[0], found[1], owner) if owner else None


def _own_subject(words: list[str]) -> str:
    """The user's possessive when the first word past the skippable ones is the user; past
    "and", the subject of the clause before ("I live in Austin and work at Globex"), unless
    someone else is named first ("my sister lives in Austin and works at Globex")."""
    for index, word in enumerate(words[:5]):
        if word in _OWN_RELATION_SKIP:
            continue
        if word == "and":
            for earlier in words[index + 1 : index + 6]:
                if earlier in _OWN_SUBJECTS:
                    return _OWN_SUBJECTS[earlier]
                if earlier in _OTHER_SUBJECTS or earlier in names.RELATION_TYPES:
                    return ""
            return ""
        return _OWN_SUBJECTS.get(word, "")
    return ""


# Words that make the clause before "and" someone else's ("Tom, who lives in Austin and...").
_OTHER_SUBJECTS = frozenset("he she they who that which his her their".split())


def _nationality_kind(tokens: list[_Token], span: _Span) -> str | None:
    """For a lone nationality word: "concept" when it is a language being learnt, None when it
    is an adjective; "" when the span is not a nationality word."""
    if span.first != span.last or tokens[span.first].lower not in names.NATIONALITIES:
        return ""
    before = _previous_words(tokens, span.first, 3)
    if any(word in names.LANGUAGE_VERBS for word in before):
        return "concept"
    return None


def _inherit_conjunct_types(tokens: list[_Token], spans: list[_Span], kinds: list[str]) -> None:
    """ "Arizona and Utah", "Salt and Pepper": an untyped name joined to a typed one by "and",
    "or" or a comma takes its type."""
    for index in range(1, len(spans)):
        left, right = spans[index - 1], spans[index]
        between = [token.lower for token in tokens[left.last + 1 : right.first]]
        if between not in (["and"], ["or"], [","], [",", "and"]):
            continue
        if between == [","] and not _ends_list_item(tokens, right):
            continue  # "At Globex, Dana runs the team": not a list
        if left.from_context and not right.from_context:
            kinds[index] = kinds[index - 1]
            right.relation, right.owner = left.relation, left.owner
        elif right.from_context and not left.from_context:
            kinds[index - 1] = kinds[index]


_LIST_CONTINUATIONS = frozenset({",", "and", "or", "&", ";"}) | _SENTENCE_END


def _ends_list_item(tokens: list[_Token], span: _Span) -> bool:
    """Whether the span could be an item of a list: the text ends or the list goes on after it."""
    following = span.last + 1
    return following >= len(tokens) or tokens[following].lower in _LIST_CONTINUATIONS


def _sentence_bounds(tokens: list[_Token], text: str, starts: list[int], index: int) -> str:
    """The sentence holding token ``index``; ``starts`` sorted (a bisection, not a scan: a long
    imported chunk has hundreds of sentences and of names)."""
    position = bisect_right(starts, index)
    first = starts[position - 1]
    last = starts[position] - 1 if position < len(starts) else len(tokens) - 1
    return " ".join(text[tokens[first].start : tokens[last].end].split())


def _description(relation: str, owner: str, speaker: str) -> str:
    if not relation:
        return ""
    if owner in {"my", "our"}:
        subject = speaker or "the user"
        return f"{subject}'s {relation}"
    if owner == "user's":
        # A digest's "The user's sister Anna" names the same relation as "my sister Anna";
        # "user's sister" would replace "the user's sister" as a new description.
        return f"the user's {relation}"
    if owner.startswith(("my ", "our ")):
        subject = speaker or "the user"
        return f"{subject}'s {owner.split(' ', 1)[1]} {relation}"
    if owner.endswith("'s"):
        return f"{_owner_display(owner)} {relation}"
    return relation


def _owner_display(owner: str) -> str:
    """A named owner as a name ("sam's" -> "Sam's"); a relation noun as it is ("mom's")."""
    word = owner[:-2]
    if word in names.RELATION_TYPES or word in names.NOT_NAMES or word in _COMMON_WORDS:
        return owner
    return owner[:1].upper() + owner[1:]


def extract_entities(text: str, *, speaker: str = "") -> list[ExtractedEntity]:
    """Every named entity in ``text``, in order of appearance (one entry per mention).

    ``speaker`` is who wrote the text; "my sister Ines" then reads as the speaker's sister.
    Offsets index into ``text`` as given (only its first 20,000 characters are read).
    """
    if not isinstance(text, str) or not text.strip():
        return []
    text = text[:MAX_TEXT_CHARS]
    if text == text.lower() or text == text.upper():
        # No capital letter, no name: most chat lines of a lower-case typist; all capitals
        # ("JOHN IS MY BROTHER") tell no name from the other words either.
        return []
    tokens = _tokens(text)
    if not tokens:
        return []
    starts = _sentence_starts(tokens, text)
    spans = _candidate_spans(tokens, text, starts)
    kept: list[_Span] = []
    kinds: list[str] = []
    for span in spans:
        nationality = _nationality_kind(tokens, span)
        if nationality is None:
            continue
        kind = nationality or _type_span(tokens, text, span, starts)
        if nationality:
            span.from_context = True
        if kind == "product":
            _with_model_number(tokens, text, span)
        kept.append(span)
        kinds.append(kind)
    _inherit_conjunct_types(tokens, kept, kinds)
    found: list[ExtractedEntity] = []
    ordered_starts = sorted(starts)
    for span, kind in zip(kept, kinds, strict=True):
        surface = _span_text(tokens, text, span)
        normalized = normalize_entity_name(surface)
        if not normalized or len(normalized) < 2:
            continue
        start = tokens[span.first].start
        found.append(
            ExtractedEntity(
                name=surface,
                normalized=normalized,
                type=kind,
                start=start,
                end=start + len(surface),
                sentence=_sentence_bounds(tokens, text, ordered_starts, span.first)[:500],
                description=_description(span.relation, span.owner, speaker),
                relation=span.relation,
                owner=span.owner,
                cued=span.from_context,
            )
        )
    return _nicknames(_whose(found), text)


# What stands between a person's name and another name of theirs: "Kat, short for Katherine",
# "Elizabeth (everyone calls her Liz)", "Robert, who goes by Bob", "Jon aka Jonny".
_NICKNAME_CUES = (
    ("short", "for"),
    ("aka",),
    ("a", "k", "a"),
    ("goes", "by"),
    ("calls", "her"),
    ("calls", "him"),
    ("call", "her"),
    ("call", "him"),
    ("known", "as"),
    ("nicknamed",),
)
_GAP_WORD_RE = re.compile(r"[^\W\d_]+")


def _nicknames(found: list[ExtractedEntity], text: str) -> list[ExtractedEntity]:
    """Marks a person's other name said right after theirs (``alias_of``), so both are one."""
    marked = list(found)
    for index in range(1, len(marked)):
        before, after = marked[index - 1], marked[index]
        if before.type != "person" or after.type != "person" or before.alias_of:
            continue
        gap = text[before.end : after.start]
        if any(mark in gap for mark in ".!?\n"):
            continue
        words = tuple(_GAP_WORD_RE.findall(gap.lower()))
        if len(words) <= 6 and any(words[-len(cue) :] == cue for cue in _NICKNAME_CUES):
            marked[index] = replace(after, alias_of=before.normalized)
    return marked
