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

Pure and deterministic, like the rest of ``mnemo_text``: ~0.1 ms for a chat message.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import replace

from mnemo_text import entity_names as names
from mnemo_text.entity_relations import (
    favourite_after,
    favourite_before,
    name_after_relation,
    named_by_relation,
    relation_after,
    relation_before,
    whose_relations,
)
from mnemo_text.entity_tokens import (
    COMMON_WORDS,
    CON_RE,
    CONNECTORS,
    IMPERATIVE_OBJECTS,
    SENTENCE_END,
    SKIP_BEFORE_OBJECT,
    ExtractedEntity,
    Span,
    Token,
    common_word_at,
    is_name_token,
    known_word,
    model_number_join,
    normalize_entity_name,
    sentence_start_indexes,
    span_surface,
    text_tokens,
    tokens_adjacent,
    words_before,
)
from mnemo_text.words import MAX_TEXT_CHARS


def _candidate_spans(tokens: list[Token], text: str, starts: set[int]) -> list[Span]:
    spans: list[Span] = []
    index = 0
    while index < len(tokens):
        if not is_name_token(tokens, index):
            index += 1
            continue
        last = index
        while True:
            step = last + 1
            if step < len(tokens) and tokens_adjacent(tokens, text, last, step):
                if is_name_token(tokens, step):
                    last = step
                    continue
                # "University of Edinburgh", "Habitat for Humanity": a connector between names.
                if (
                    tokens[step].lower in CONNECTORS
                    and step + 1 < len(tokens)
                    and tokens_adjacent(tokens, text, step, step + 1)
                    and is_name_token(tokens, step + 1)
                    and _joins(tokens[last].lower, tokens[step + 1].lower)
                ):
                    last = step + 1
                    continue
            break
        spans.append(Span(index, last))
        index = last + 1
    return [span for span in (_trim(span, tokens, starts) for span in spans) if span]


def _joins(left: str, right: str) -> bool:
    """Whether a connector may join two names: not "Vancouver for Christmas"."""
    if right in names.NOT_NAMES or right in names.HOLIDAYS:
        return False
    return left not in names.PLACES and left not in names.PRODUCTS


def _trim(span: Span, tokens: list[Token], starts: set[int]) -> Span | None:
    first, last = span.first, span.last
    # A common word opening a sentence ("Yesterday Oscar", "The Warriors") is not a name; the
    # first word of "New York" or "Los Angeles" is.
    while (
        first <= last
        and first in starts
        and common_word_at(tokens, first)
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
        while first <= last and tokens[first].lower in CONNECTORS:
            first += 1
    # "Aunt Rosa", "Grandma Ruth": the title is the relation, the name what follows it.
    title_relation = ""
    if first < last and tokens[first].lower in names.RELATION_TITLES:
        title_relation = names.RELATION_TITLES[tokens[first].lower]
        first += 1
    while (
        first <= last
        and tokens[first].lower.rstrip(".") in names.NOT_NAMES
        and not name_after_relation(tokens, first, starts)
    ):
        first += 1
    while last >= first and (
        (tokens[last].lower in names.NOT_NAMES and not name_after_relation(tokens, last, starts))
        or tokens[last].lower in CONNECTORS
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
        and tokens[last + 1].lower in IMPERATIVE_OBJECTS
        and not known_word(tokens[first].lower)
        and not named_by_relation(tokens, last, starts)
    ):
        return None
    # A lone acronym we do not know ("TV", "NDA") is skipped rather than guessed.
    word = tokens[first].text
    if first == last and word.isupper() and len(word) > 1 and not known_word(word.lower()):
        return None
    return Span(first, last, title_relation=title_relation)


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
    if CON_RE.search(surface):
        return "event"
    return ""


def _context_type(tokens: list[Token], span: Span) -> str:
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
    before = words_before(tokens, span.first, 5)
    if not before:
        return ""
    if before[0] == "project":
        return "project"
    nearest = before[0]
    skipped = 0
    while skipped < len(before) - 1 and before[skipped] in SKIP_BEFORE_OBJECT:
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


def _is_one_plural_word(tokens: list[Token], span: Span) -> bool:
    return span.first == span.last and tokens[span.first].lower.endswith("s")


def _type_span(tokens: list[Token], text: str, span: Span, starts: set[int]) -> str:
    surface = span_surface(tokens, text, span)
    normalized = normalize_entity_name(surface)
    words = normalized.split() or [""]
    relation = (
        favourite_before(tokens, span)
        or relation_before(tokens, span)
        or _own_place_or_employer(tokens, span)
        or favourite_after(tokens, span)
        or relation_after(tokens, span, starts)
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
    before = words_before(tokens, span.first, 1)
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


def _own_place_or_employer(tokens: list[Token], span: Span) -> tuple[str, str, str] | None:
    """(type, relation, owner) for the user's own employer, home or hometown: "I work at
    Globex", "my job at Globex", "I live in Lisbon", "We just moved to Denver", "I'm from
    Porto" (not "My sister works at Globex": the subject must be the user)."""
    before = words_before(tokens, span.first, 8)
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


def _nationality_kind(tokens: list[Token], span: Span) -> str | None:
    """For a lone nationality word: "concept" when it is a language being learnt, None when it
    is an adjective; "" when the span is not a nationality word."""
    if span.first != span.last or tokens[span.first].lower not in names.NATIONALITIES:
        return ""
    before = words_before(tokens, span.first, 3)
    if any(word in names.LANGUAGE_VERBS for word in before):
        return "concept"
    return None


def _inherit_conjunct_types(tokens: list[Token], spans: list[Span], kinds: list[str]) -> None:
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


_LIST_CONTINUATIONS = frozenset({",", "and", "or", "&", ";"}) | SENTENCE_END


def _ends_list_item(tokens: list[Token], span: Span) -> bool:
    """Whether the span could be an item of a list: the text ends or the list goes on after it."""
    following = span.last + 1
    return following >= len(tokens) or tokens[following].lower in _LIST_CONTINUATIONS


def _sentence_bounds(tokens: list[Token], text: str, starts: list[int], index: int) -> str:
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
    if word in names.RELATION_TYPES or word in names.NOT_NAMES or word in COMMON_WORDS:
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
    tokens = text_tokens(text)
    if not tokens:
        return []
    starts = sentence_start_indexes(tokens, text)
    spans = _candidate_spans(tokens, text, starts)
    kept: list[Span] = []
    kinds: list[str] = []
    for span in spans:
        nationality = _nationality_kind(tokens, span)
        if nationality is None:
            continue
        kind = nationality or _type_span(tokens, text, span, starts)
        if nationality:
            span.from_context = True
        if kind == "product":
            model_number_join(tokens, text, span)
        kept.append(span)
        kinds.append(kind)
    _inherit_conjunct_types(tokens, kept, kinds)
    found: list[ExtractedEntity] = []
    ordered_starts = sorted(starts)
    for span, kind in zip(kept, kinds, strict=True):
        surface = span_surface(tokens, text, span)
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
    return _nicknames(whose_relations(found), text)


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
