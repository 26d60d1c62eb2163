"""Rewriting the user's first-person statements in the third person ("I moved" ->
"The user moved"), for summaries and facts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemo_text.words import verb_third_person

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
    primarily definitely probably personally honestly then once somehow no longer""".split()
)  # "no longer": "I no longer work" -> "The user no longer works"
_VERB_HINTS = frozenset(
    """am is are was were be been being has have had do does did will would can could shall
    should may might must live lives lived moved moves work works worked love loves loved like
    likes liked hate hates own owns play plays study studies studied teach teaches enjoy enjoys
    speak speaks spoke run runs drive drives go goes went got get gets use uses prefer prefers
    need needs want wants visit visits visited started joined married turned""".split()
)


# Verbs in their base form that, after "and", continue the sentence's own "I ...": "I live in
# Austin and work at Globex" -> "... and works at Globex" (a word list: "I love my dog and cat"
# must not become "cats").
_SECOND_VERBS = frozenset(
    """live work love like hate own play study teach enjoy speak run drive go use prefer need
    want visit have do walk train write read cook coach volunteer travel paint""".split()
)


def _third_person_singular(verb: str) -> str:
    lowered = verb.lower()
    # Contractions and negations lemminflect does not inflect.
    special = {
        "am": "is",
        "'m": "is",
        "are": "is",
        "'ve": "has",
        "don't": "doesn't",
        "haven't": "hasn't",
        "aren't": "isn't",
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
    inflected = verb_third_person(lowered)
    return inflected.capitalize() if verb[:1].isupper() else inflected


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
                    verb = pieces[following]
                    pieces[following] = _third_person_singular(verb)
                    if pieces[following] != verb:
                        _second_verb_conjugate(pieces, following)
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


def _second_verb_conjugate(pieces: list[str], verb_at: int) -> None:
    """The verb after the first "and" of the clause that `verb_at` (a conjugated present-tense
    verb) opens, when it is a base form of _SECOND_VERBS: the same subject does it."""
    for position in range(verb_at + 1, len(pieces)):
        piece = pieces[position]
        if piece.strip() and not piece[0].isalnum():
            return  # a clause ends at punctuation
        if piece.lower() != "and":
            continue
        following = [p for p in pieces[position + 1 : position + 6] if p.strip()]
        # "... and work at Globex", not "I love my family and work." (a noun there).
        if (
            len(following) > 1
            and following[0].lower() in _SECOND_VERBS
            and following[1][0].isalnum()
        ):
            index = pieces.index(following[0], position + 1)
            pieces[index] = _third_person_singular(pieces[index])
        return


def third_person_text(text: str) -> str:
    """ "I moved to Denver with my partner" -> "The user moved to Denver with the user's
    partner": how digests and facts retell the user's own words."""
    return _third_person(text)
