"""Questions about when, or in what order, someone did something, and the statements that
answer them: a speaker reporting something done ("I just finished the CSV import", "Today I
got the chart working", "The alerts are live now").

Such a question rarely shares its verb with the answer ("In what order did I *build* them?"
against "I *finished* it"), and a working chat names the same things far more often in
requests ("Can you help me with the CSV import?") than in reports of them. Search weighs the
reports up for these questions (retrieval.trust.event_weight_apply). The phrases and words
are data (data/events.toml); the past tense comes from lemminflect's tables.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

from mnemo_text.words import verb_lemma

_DATA = tomllib.loads((Path(__file__).parent / "data" / "events.toml").read_text("utf-8"))

_WHEN_OR_ORDER = re.compile(
    r"\b(?:" + "|".join(_DATA["when_or_order_questions"]) + r")\b", re.IGNORECASE
)
_FIRST_PERSON_VERB = re.compile(
    r"\b(?:i|we)\s+(?:(?:"
    + "|".join(_DATA["between_subject_and_verb"].split())
    + r")\s+){0,2}([a-z]+)\b",
    re.IGNORECASE,
)
_DONE_STATE = re.compile(
    r"\b(?:is|are|was|were)\s+(?:now\s+|finally\s+|all\s+)?(?:"
    + "|".join(_DATA["done_states"].split())
    + r")\b",
    re.IGNORECASE,
)
_NOT_EVENTS = frozenset(_DATA["not_events"].split())


def asks_when_or_order(question: str) -> bool:
    """Whether the question asks when, or in what order, someone did something."""
    return bool(_WHEN_OR_ORDER.search(question))


@lru_cache(maxsize=8192)
def _is_past_event_verb(word: str) -> bool:
    """A verb's simple past (lemminflect's VBD forms) that is an event of its own: "finished",
    "got", "went"; not "was", "had", "could", nor a form equal to its lemma ("set", "put",
    which read as the present as often)."""
    from lemminflect import getInflection

    word = word.lower()
    lemma = verb_lemma(word)
    if lemma in _NOT_EVENTS or lemma == word:
        return False
    return word in getInflection(lemma, tag="VBD")


@lru_cache(maxsize=8192)
def reports_something_done(text: str) -> bool:
    """Whether the text reports something done: a first-person subject with a verb in the
    simple past ("I just finished the import"), or a thing said to be done, working, live
    ("The recurring payments job is done now")."""
    if _DONE_STATE.search(text):
        return True
    return any(_is_past_event_verb(match.group(1)) for match in _FIRST_PERSON_VERB.finditer(text))
