"""What the words around a name say it is to someone: "my sister Ines", "Luna, our cat",
"a kitten named Pepper", "my favourite band is Radiohead", "my old job at Globex"; each
relation gives a type, a description and an owner (the user, the speaker or a named person).
"""

from __future__ import annotations

from dataclasses import replace

from mnemo_text import entity_names as names
from mnemo_text.entity_tokens import (
    ADJECTIVES,
    COMMON_WORDS,
    NAMING_WORDS,
    PERSON_NAMING_NOUNS,
    POSSESSIVES,
    SENTENCE_END,
    ExtractedEntity,
    Span,
    Token,
    words_before,
)
from mnemo_text.words import plural_fold

_PRESENT_VERBS = frozenset({"is", "was", "has", "had", "loves", "likes", "hates"})


def named_by_relation(tokens: list[Token], last: int, starts: set[int]) -> bool:
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


def name_after_relation(tokens: list[Token], index: int, starts: set[int]) -> bool:
    """ "my son Will", "my aunt May": a given name that is also a common word, capitalized
    inside a sentence right after a possessive and a relation noun."""
    if index in starts or tokens[index].lower not in names.NAME_WORDS_AFTER_RELATION:
        return False
    return relation_before(tokens, Span(index, index)) is not None


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
        if word in POSSESSIVES or word.endswith("'s"):
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


def whose_relations(found: list[ExtractedEntity]) -> list[ExtractedEntity]:
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
    tokens: list[Token], span: Span, before: list[str]
) -> tuple[str, str, str] | None:
    """(type, relation noun, owner) for a name given after its noun: "We got a puppy. Her name
    is Biscuit", "adopted a dog and named him Pepper", "Our dog's name is Rex"."""
    if before[:2] == ["is", "name"] and len(before) > 2:
        marker, used = before[2], 3
    elif before[:1] == ["name's"] and len(before) > 1:
        marker, used = before[1], 2
    elif len(before) > 1 and before[0] in _NAME_PRONOUNS and before[1] in NAMING_WORDS:
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
        if lower in SENTENCE_END:
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
    words = words_before(tokens, position, 8)
    for index, word in enumerate(words[:4]):
        if word in {"a", "an"}:
            return kind, noun, _naming_owner(words[index:])
        if word in POSSESSIVES or word.endswith("'s"):
            return None
    return None


def favourite_before(tokens: list[Token], span: Span) -> tuple[str, str, str] | None:
    """(type, "favourite <noun>", owner) for "My favourite band is Radiohead" and "my favourite
    movie, Inception,": a preference, typed by the noun (not "the user's band")."""
    before = words_before(tokens, span.first, 6)
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


def favourite_after(tokens: list[Token], span: Span) -> tuple[str, str, str] | None:
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
    noun = plural_fold(noun) if plural_fold(noun) in names.FAVOURITE_TYPES else noun
    if not noun.isalpha():
        return None
    kind = names.FAVOURITE_TYPES.get(noun) or names.RELATION_TYPES.get(noun, "concept")
    return ("product" if kind == "project" else kind), f"favourite {noun}", owner


def relation_before(tokens: list[Token], span: Span) -> tuple[str, str, str] | None:
    """(type, relation noun, owner) for "my sister Ines", "our startup, Brightleaf",
    "a kitten named Pepper", "my mom's friend Linda"."""
    before = words_before(tokens, span.first, 7)
    introduced = _relation_by_pronoun(tokens, span, before)
    if introduced:
        return introduced
    position = 0
    if before and before[0] == "the":
        position = 1
    # "My sister is Ines", "My kids are Sam and Ella": the relation before the verb.
    if len(before) > 2 and before[0] in {"is", "was", "are", "were"}:
        if before[1] in names.RELATION_TYPES or plural_fold(before[1]) in names.RELATION_TYPES:
            position = 1
    if position < len(before) and before[position] == ",":
        position += 1
    if position < len(before) and before[position] in NAMING_WORDS:
        for offset, word in enumerate(before[position + 1 : position + 5]):
            noun = word.rstrip("s") if word.rstrip("s") in names.RELATION_TYPES else word
            if noun in names.RELATION_TYPES:
                after_noun = before[position + 2 + offset :]
                if names.RELATION_TYPES[noun] == "project" and _consumed(after_noun):
                    return "product", "", ""  # "I'm reading a book called The Overstory"
                owner = _naming_owner(after_noun)
                return names.RELATION_TYPES[noun], noun, owner
            if noun in PERSON_NAMING_NOUNS:
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
    while owner_position < len(before) and before[owner_position] in ADJECTIVES:
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
        and owner not in COMMON_WORDS
        and owner not in POSSESSIVES
        and not tokens[span.first - 1 - owner_position].name_like
        and (before[owner_position + 1] in POSSESSIVES or before[owner_position + 1].endswith("'s"))
    ):
        owner = before[owner_position + 1]
    if owner in POSSESSIVES or owner.endswith("'s") or owner in {"a", "an", "two", "three"}:
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


def _past_employer(tokens: list[Token], span: Span, before: list[str], position: int) -> int:
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


def relation_after(
    tokens: list[Token], span: Span, starts: set[int]
) -> tuple[str, str, str] | None:
    """(type, relation noun, owner) for "Luna, our cat,", "Ben, my old roommate,", "Tom
    Becker is my oldest friend" and "Waffles is a beagle" (owner "a")."""
    position = span.last + 1
    if named_by_relation(tokens, span.last, starts):
        noun = tokens[position + 1].lower
        return names.RELATION_TYPES[noun], noun, "the"
    if position + 2 >= len(tokens) or tokens[position].lower not in {",", "is", "was"}:
        return None
    owner = tokens[position + 1].lower
    position += 2
    while position + 1 < len(tokens) and tokens[position].lower in ADJECTIVES:
        position += 1
    noun = tokens[position].lower
    adjective = [tokens[position - 1].lower] if tokens[position - 1].lower in ADJECTIVES else []
    # "Kenji is my business partner": the last of two relation nouns is the relation.
    if (
        owner in POSSESSIVES
        and position + 1 < len(tokens)
        and tokens[position + 1].lower in names.RELATION_TYPES
        and not noun.endswith("'s")  # "Anna is my sister's friend": not the user's friend
    ):
        position += 1
        noun = tokens[position].lower
    if (owner in POSSESSIVES or owner in {"a", "an"}) and noun in names.RELATION_TYPES:
        if owner in {"a", "an"}:
            if _is_compound(tokens, position):
                return None
            # "Tom, a friend of mine,": the speaker's friend.
            after = [token.lower for token in tokens[position + 1 : position + 3]]
            if after in (["of", "mine"], ["of", "ours"]):
                owner = "my" if after[1] == "mine" else "our"
        return names.RELATION_TYPES[noun], _qualified(noun, adjective), owner
    return None


def _is_compound(tokens: list[Token], position: int) -> bool:
    """ "Anna is a dog trainer", "Atlas is a game studio": the relation noun is not the head."""
    following = tokens[position + 1].lower if position + 1 < len(tokens) else ""
    return following.isalpha() and following not in COMMON_WORDS
