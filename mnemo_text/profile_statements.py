"""The offline reader of profile statements: standing instructions, preferences and who the
user is, found sentence by sentence in the user's own words.

A standing instruction ("Always format code snippets with syntax highlighting") or a preference
("I prefer minimal dependencies") is said once and must shape every later answer, yet a later
request shares no words with it, so no search finds it; the profile keeps it instead. The rules
live in `data/profile_statements.toml` (patterns, word lists), labelled sentences in the tests
hold them to a precision/recall gate; with a model configured the model reads the statements and
these rules stay the offline fallback.

`replaces(new, old)` is the newer-replaces-older rule: the same fact slot, the same instruction
slot (language, answer length...), or most of the same words.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from mnemo_text.sentences import _sentences
from mnemo_text.words import _content_keys

INSTRUCTION = "instruction"
PREFERENCE = "preference"
FACT = "fact"
WITHDRAWAL = "withdrawal"
KINDS = (INSTRUCTION, PREFERENCE, FACT)

# Two statements with no shared slot replace one another when their words (markers left out)
# overlap this much: the shared share of the smaller set, and of the union. Both must hold,
# so "Always add comments to code snippets" does not replace "Always format code snippets
# with syntax highlighting" (two shared words of six).
MIN_OVERLAP = 0.5
MIN_JACCARD = 0.4
# A sentence longer than this is a paragraph that lost its punctuation, not a statement.
MAX_STATEMENT_CHARS = 300

_DATA = Path(__file__).with_name("data") / "profile_statements.toml"


@dataclass(frozen=True)
class ProfileStatement:
    """One statement: `text` as the user said it (facts: "Label: value"), `slot` the fact or
    instruction slot it fills ("" for none), `terms` the words that say what it is about."""

    kind: str
    text: str
    slot: str = ""
    terms: tuple[str, ...] = ()
    sentence: str = ""


@dataclass(frozen=True)
class _Fact:
    slot: str
    label: str
    pattern: re.Pattern
    one_per_relation: frozenset[str]


@dataclass(frozen=True)
class _Rules:
    markers: frozenset[str]
    openers: frozenset[str]
    # Words that say a sentence speaks to the assistant wherever they stand.
    addressed: re.Pattern
    # "Always <verb>" / "Never <verb>": an imperative even though "always" opens it.
    standing_verb: re.Pattern
    lead: re.Pattern
    instruction: tuple[re.Pattern, ...]
    instruction_exclude: tuple[re.Pattern, ...]
    withdrawal: tuple[re.Pattern, ...]
    preference: tuple[re.Pattern, ...]
    preference_exclude: tuple[re.Pattern, ...]
    reactions: tuple[re.Pattern, ...]
    tastes: re.Pattern
    # What the assistant writes ("answers", "code"): a taste in it is a preference.
    answer_things: re.Pattern
    owned_answer_things: re.Pattern
    weak_verbs: re.Pattern
    weak_objects: re.Pattern
    slots: tuple[tuple[str, re.Pattern], ...]
    facts: tuple[_Fact, ...]
    refused_values: frozenset[str]
    # Whether a sentence could be any statement at all: one scan before the others.
    maybe: re.Pattern


@cache
def _rules() -> _Rules:
    data = tomllib.loads(_DATA.read_text(encoding="utf-8"))
    subject = data["subject"]

    instruction = data["instruction"]
    verb = "(?:" + "|".join(re.escape(v) for v in instruction["verbs"].split()) + ")"

    def compiled(patterns: list[str], flags: int = 0) -> tuple[re.Pattern, ...]:
        return tuple(
            re.compile(p.replace("{subject}", subject).replace("{verb}", verb), flags)
            for p in patterns
        )

    facts = tuple(
        _Fact(
            slot=fact["slot"],
            label=fact["label"],
            pattern=re.compile(fact["pattern"]),
            one_per_relation=frozenset(fact.get("one_per_relation", ())),
        )
        for fact in data["facts"]
    )
    preference = data["preference"]
    return _Rules(
        markers=frozenset(data["marker_words"].split()),
        openers=frozenset(instruction["imperative_openers"].split()),
        addressed=re.compile(r"\b(?:" + "|".join(instruction["addressed_words"].split()) + r")\b"),
        standing_verb=re.compile(rf"^(?:always|never|only) (?:please )?{verb}\b"),
        lead=re.compile(instruction["lead"]),
        instruction=compiled(instruction["patterns"]),
        instruction_exclude=compiled(instruction["exclude"]),
        withdrawal=compiled(data["withdrawal"]["patterns"]),
        preference=compiled(preference["patterns"]),
        preference_exclude=compiled(preference["exclude"]),
        reactions=compiled(preference["reaction_objects"]),
        tastes=re.compile(preference["tastes"]),
        answer_things=re.compile(preference["answer_things"]),
        owned_answer_things=re.compile(preference["owned_answer_things"]),
        weak_verbs=re.compile(preference["weak_verbs"]),
        weak_objects=re.compile(preference["weak_objects"]),
        slots=tuple((name, re.compile(pattern)) for name, pattern in data["slots"].items()),
        facts=facts,
        refused_values=frozenset(data["fact_values"]["refused"].split()),
        maybe=re.compile(
            r"\b(?:" + "|".join(line for line in data["maybe"]["words"].splitlines() if line) + ")",
            re.IGNORECASE,
        ),
    )


def _normal(sentence: str) -> str:
    return sentence.replace("’", "'").replace("‘", "'").strip()


def statement_terms(text: str) -> tuple[str, ...]:
    """The folded content words of a statement, markers left out, each once, in order."""
    markers = _rules().markers
    seen: dict[str, None] = {}
    for key in _content_keys(text):
        if key not in markers:
            seen.setdefault(key, None)
    return tuple(seen)


def statement_slot(text: str) -> str:
    """The instruction slot a statement fills ("language", "answer_length"...), or ""."""
    lowered = _normal(text).lower()
    for name, pattern in _rules().slots:
        if pattern.search(lowered):
            return name
    return ""


def _without_lead(lowered: str, lead: re.Pattern) -> str:
    return lead.sub("", lowered, count=1)


def _addressed(lowered: str, rules: _Rules) -> bool:
    """Whether a sentence speaks to the assistant: an imperative, or one of the addressed
    words ("you", "please", "answers")."""
    first = lowered.split(" ", 1)[0].strip(",:;!")
    return (
        first in rules.openers
        or bool(rules.standing_verb.match(lowered))
        or bool(rules.addressed.search(lowered))
    )


def _instruction(lowered: str, full: str, rules: _Rules) -> bool:
    """`lowered` without its lead words ("please", "from now on,"), `full` with them."""
    if any(pattern.search(lowered) for pattern in rules.instruction_exclude):
        return False
    if not _addressed(lowered, rules):
        return False
    return any(pattern.search(lowered) or pattern.search(full) for pattern in rules.instruction)


def _preference(lowered: str, rules: _Rules) -> bool:
    if any(pattern.search(lowered) for pattern in rules.preference_exclude):
        return False
    for pattern in rules.preference:
        match = pattern.search(lowered)
        if match is None:
            continue
        groups = match.groupdict()
        thing = (groups.get("object") or "").strip(" ,.!;:")
        if any(reaction.search(thing) for reaction in rules.reactions):
            continue
        verb = groups.get("verb") or ""
        # "I like concise explanations": a taste in what the assistant writes, named bare or
        # as the user's own ("I like my code examples in TypeScript").
        in_answers = rules.answer_things.search(thing) and (
            not rules.weak_objects.match(thing) or rules.owned_answer_things.match(thing)
        )
        if rules.tastes.match(verb) and not in_answers:
            continue
        if rules.weak_verbs.match(verb) and rules.weak_objects.match(thing):
            continue
        return True
    return False


def _facts(sentence: str, rules: _Rules) -> list[ProfileStatement]:
    found: list[ProfileStatement] = []
    for fact in rules.facts:
        match = fact.pattern.search(sentence)
        if match is None:
            continue
        value = re.sub(r"'s?$", "", match.group("value")).strip(" ,.'")
        if not value or value.split()[0] in rules.refused_values:
            continue
        relation = (match.groupdict().get("relation") or "").lower()
        slot = fact.slot.replace("{relation}", relation)
        if "{value}" in slot or (relation and relation not in fact.one_per_relation):
            slot = slot.replace("{value}", "").rstrip(":") + ":" + value.lower()
        label = fact.label.replace("{Relation}", relation.capitalize())
        found.append(
            ProfileStatement(
                kind=FACT, text=f"{label}: {value}", slot=slot, terms=(), sentence=sentence
            )
        )
    unique: dict[str, ProfileStatement] = {}
    for statement in found:
        unique.setdefault(statement.slot, statement)
    return list(unique.values())


def sentence_statements(sentence: str) -> list[ProfileStatement]:
    """The statements one sentence makes (an instruction, a preference, a withdrawal, facts)."""
    rules = _rules()
    sentence = _normal(sentence)
    if not sentence or len(sentence) > MAX_STATEMENT_CHARS or not rules.maybe.search(sentence):
        return []
    full = sentence.lower()
    lowered = _without_lead(full, rules.lead)
    statements = _facts(sentence, rules)
    if any(pattern.search(lowered) for pattern in rules.withdrawal):
        kind = WITHDRAWAL
    elif _instruction(lowered, full, rules):
        kind = INSTRUCTION
    elif _preference(lowered, rules):
        kind = PREFERENCE
    else:
        return statements
    statements.append(
        ProfileStatement(
            kind=kind,
            text=sentence,
            slot=statement_slot(sentence),
            terms=statement_terms(sentence),
            sentence=sentence,
        )
    )
    return statements


def profile_statements(text: str) -> list[ProfileStatement]:
    """Every statement in a user's message, in the order said (code and markup removed)."""
    if not text or not _rules().maybe.search(text):
        return []
    statements: list[ProfileStatement] = []
    for sentence in _sentences(text):
        statements.extend(sentence_statements(sentence))
    return statements


def replaces(new: ProfileStatement, old_kind: str, old_slot: str, old_terms: tuple) -> bool:
    """Whether `new` replaces an older statement (given by its kind, slot and terms).

    Facts replace the fact in their slot. An instruction, a preference or a withdrawal replaces
    an instruction or a preference that fills the same slot, or that is about mostly the same
    words (MIN_OVERLAP of the smaller set and MIN_JACCARD of both).
    """
    if new.kind == FACT or old_kind == FACT:
        return new.kind == old_kind == FACT and new.slot == old_slot
    if new.slot and new.slot == old_slot:
        return True
    if not new.terms or not old_terms:
        return False
    shared = len(set(new.terms) & set(old_terms))
    smaller = min(len(set(new.terms)), len(set(old_terms)))
    union = len(set(new.terms) | set(old_terms))
    return shared / smaller >= MIN_OVERLAP and shared / union >= MIN_JACCARD
