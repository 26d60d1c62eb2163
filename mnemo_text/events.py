"""Questions about when, or in what order, someone did something, and the statements that
answer them: a speaker reporting something done ("I just finished the CSV import", "Today I
got the chart working", "The alerts are live now").

Such a question rarely shares its verb with the answer ("In what order did I *build* them?"
against "I *finished* it"), and a working chat names the same things far more often in
requests ("Can you help me with the CSV import?") than in reports of them. Search weighs the
reports up for these questions (retrieval.trust.event_weight_apply). The phrases and words
are data (data/events.toml); tenses come from lemminflect's tables.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

from mnemo_text.words import verb_lemma

_DATA = tomllib.loads((Path(__file__).parent / "data" / "events.toml").read_text("utf-8"))


def _words(key: str) -> str:
    return "|".join(_DATA[key].split())


_WHEN_OR_ORDER = re.compile(
    r"\b(?:" + "|".join(_DATA["when_or_order_questions"]) + r")\b", re.IGNORECASE
)
# A first-person subject (with "have" for a perfect), at most two adverbs, the verb, and the
# word after it (a determiner skipped) for the problem reports.
_FIRST_PERSON_VERB = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:(?:" + _words("between_subject_and_verb") + r")\s+){0,2}"
    r"([a-z]+)(?:\s+(?:an?|the|this|that|some)?\s*([a-z]+))?",
    re.IGNORECASE,
)
# "working on/with/for/to" is an activity, not a state.
_STATES = "|".join(
    r"working(?!\s+(?:on|with|for|to)\b)" if state == "working" else state
    for state in _DATA["done_states"].split()
)
_DONE_STATE = re.compile(
    r"\b(?:is|are|was|were|i'm|i am|we're|we are)\s+(?:now\s+|finally\s+|all\s+)?"
    r"(?:" + _STATES + r")\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(r"\b(?:" + _words("conditions") + r")\b[^.!?;:]*$", re.IGNORECASE)
_NOT_EVENTS = frozenset(_DATA["not_events"].split())
_PROBLEMS = frozenset(_DATA["problems_after_verb"].split())


def asks_when_or_order(question: str) -> bool:
    """Whether the question asks when, or in what order, someone did something."""
    return bool(_WHEN_OR_ORDER.search(question))


@lru_cache(maxsize=8192)
def _is_past_event_verb(word: str) -> bool:
    """A verb's simple past or past participle (lemminflect's VBD and VBN forms) that is an
    event of its own: "finished", "got", "went"; not "was", "had", "could", "wanted", nor a
    form equal to its lemma ("set", "put", which read as the present as often)."""
    from lemminflect import getInflection

    word = word.lower()
    lemma = verb_lemma(word)
    if lemma in _NOT_EVENTS or lemma == word:
        return False
    return word in getInflection(lemma, tag="VBD") or word in getInflection(lemma, tag="VBN")


def _conditional(text: str, at: int) -> bool:
    """Whether the clause before `at` opens with a condition ("when", "once", "if"…)."""
    return bool(_CONDITION.search(text, 0, at))


@lru_cache(maxsize=8192)
def reports_something_done(text: str) -> bool:
    """Whether the text reports something done: a first-person subject with a verb in the
    past ("I just finished the import", "I've merged it"), or a thing or the speaker said to
    be done, working, live ("The recurring payments job is done now", "I'm done with the
    chart"); not as a condition ("Let me know when it is ready") nor a problem report ("I got
    an error")."""
    for match in _DONE_STATE.finditer(text):
        if not _conditional(text, match.start()):
            return True
    for match in _FIRST_PERSON_VERB.finditer(text):
        verb, after = match.group(1), (match.group(2) or "").lower()
        if after in _PROBLEMS or _conditional(text, match.start()):
            continue
        if _is_past_event_verb(verb):
            return True
    return False
