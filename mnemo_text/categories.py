"""Category words a short memory is also found by: what kind of thing it tells.

A question about a kind of thing ("What activities does Melanie do?", "Which cities has John
been to?", "What do her kids like?") shares no word with the memories that answer it ("I
signed up for a pottery class", "We just got back from Rome"). A memory that names an
activity, a trip or a place, family, pets, books, art, music, an event, food, work, sport,
films and shows, games, shopping or a cause gets the category's own words ("activity hobby",
"place city country travel"...) in its keyword context (weight B of the search vector:
indexed, never shown, not embedded), so such a question's words meet it (figures in
bench/RESULTS.md). The lists are general English, but were written after reading some of
LoCoMo dev's multi-hop questions.

Deterministic and cheap (one word set per text); texts over CATEGORY_MAX_CHARS (a whole long
reply, a document chunk) are left alone: they name every category and would match them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from mnemo_text.buckets import bucket_classify

CATEGORY_MAX_CHARS = 1000

# category: (words that show it, words it is found by). General English, not tuned per item.
_CATEGORIES: dict[str, tuple[str, str]] = {
    "activity": (
        """hike hiking hiked camping camped camp swim swimming swam run running ran marathon
        painting painted paint pottery drawing drew dancing dance danced singing sang cooking
        cooked baking baked gardening fishing fished knitting yoga climbing climbed biking bike
        cycling surfing surfed skiing skied skating volunteering volunteered volunteer
        photography gaming kayaking class classes workshop lessons lesson sport sports soccer
        football basketball tennis golf hockey guitar piano violin concert museum trip roadtrip
        beach park game games tournament hobby hobbies""",
        "activity activities hobby hobbies",
    ),
    "place": (
        """trip travel traveled travelled traveling visited visit visiting flew flight vacation
        city country abroad roadtrip tour toured""",
        "place places city cities country countries location travel visited",
    ),
    "family": (
        """kids kid children child son sons daughter daughters husband wife family mom dad
        mother father parents brother sister grandma grandpa""",
        "family children kids",
    ),
    "pet": (
        """dog dogs cat cats puppy puppies kitten kittens pet pets turtle turtles hamster horse
        horses bird birds fish rabbit""",
        "pet pets animal animals",
    ),
    "book": (
        "book books novel novels read reading reads author library series",
        "book books reading",
    ),
    "art": (
        "painting paintings painted paint drawing drawings art artwork sculpture pottery mural canvas sketch",
        "art artwork",
    ),
    "music": (
        "concert concerts band bands song songs music guitar piano violin sing singing album festival",
        "music",
    ),
    "event": (
        """party parties festival parade conference event events wedding ceremony fair show
        convention meetup gala fundraiser competition tournament""",
        "event events",
    ),
    "food": (
        "cook cooking cooked recipe recipes dinner bake baking baked food restaurant dish dishes meal",
        "food",
    ),
    "work": (
        "job jobs work working career boss company business office startup studio store shop",
        "work job career business",
    ),
    "sport": (
        """soccer football basketball baseball tennis golf hockey volleyball rugby cricket boxing
        kickboxing karate judo taekwondo wrestling fencing gym workout workouts match team coach
        league marathon race""",
        "sport sports martial arts exercise",
    ),
    "screen": (
        """movie movies film films show shows series episode episodes season tv netflix watched
        watching cinema documentary anime""",
        "movie movies film show shows series tv watch",
    ),
    "game": (
        "game games gaming videogame videogames console xbox playstation nintendo played tournament",
        "game games gaming video",
    ),
    "shopping": (
        "bought buy buying purchase purchased shopping shop ordered store mall gift",
        "bought buy purchase item items shopping",
    ),
    "cause": (
        """charity charities volunteer volunteering volunteered donate donated donation fundraiser
        cause causes rights advocacy activist protest nonprofit shelter""",
        "cause causes charity support",
    ),
}


# Each word (as ASCII bytes) with the categories it shows: one lookup per word of the text
# (an import looks at every passage; fifteen set intersections per text cost twice as much).
def _word_categories() -> dict[bytes, tuple[str, ...]]:
    table: dict[bytes, tuple[str, ...]] = {}
    for name, (words, _) in _CATEGORIES.items():
        for word in map(str.encode, words.split()):
            table[word] = (*table.get(word, ()), name)
    return table


_WORD_CATEGORIES = _word_categories()
# Bytes other than a-z become spaces: after lower-casing and encoding to ASCII (every other
# character a "?"), ``split()`` yields the runs of [a-z] the words are made of.
_TO_LETTERS = bytes(byte if 97 <= byte <= 122 else 32 for byte in range(256))
# Entity types (mnemo_text.entities) that show a category on their own: "Rome", "Luna".
_ENTITY_CATEGORIES = {"place": "place", "pet": "pet"}


def categories_of(text: str, *, entity_types: Iterable[str] = ()) -> list[str]:
    """The categories a short text shows, in a fixed order ([] for a long text)."""
    if not text or len(text) > CATEGORY_MAX_CHARS:
        return []
    words = text.lower().encode("ascii", "replace").translate(_TO_LETTERS).split()
    found: set[str] = set()
    for names in filter(None, map(_WORD_CATEGORIES.get, words)):
        found.update(names)
    found.update(_ENTITY_CATEGORIES[kind] for kind in entity_types if kind in _ENTITY_CATEGORIES)
    return [name for name in _CATEGORIES if name in found]


def category_terms(text: str, *, entity_types: Iterable[str] = ()) -> str:
    """The words a short text is also found by ("" when it shows no category)."""
    return " ".join(_CATEGORIES[name][1] for name in categories_of(text, entity_types=entity_types))


class TextCues(NamedTuple):
    """What an item's text says about it without its entities: the bucket its cue words point
    to (``bucket_classify``) and its category words. Computed where the text is made when
    that is cheaper: the importer's worker processes, beside the main process's writes."""

    bucket: str
    category_terms: str


def text_cues(text: str) -> TextCues:
    return TextCues(bucket_classify(text), category_terms(text))
