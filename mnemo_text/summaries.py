"""Extractive bullet digests of a conversation, and folding several digests into one."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mnemo_text.entity_names import NAME_CONNECTORS, PLACE_NAME_PREFIXES
from mnemo_text.entity_tokens import is_opening_verb, is_sentence_opener, opens_instruction
from mnemo_text.fact_updates import statements_parse, statements_replaced
from mnemo_text.facts import (
    _FIRST_PERSON_RE,
    _OTHER_PERSON_RE,
    _clause_to_fact,
    _clauses,
)
from mnemo_text.keywords import keywords
from mnemo_text.sentences import (
    _FILLER_OPENER_RE,
    _FILLER_SENTENCE_RE,
    _clip,
    _is_question,
    _is_request,
    _role_kind,
    _sentences,
)
from mnemo_text.words import MAX_TEXT_CHARS, _content_keys


@dataclass
class _Unit:
    order: tuple[int, int]
    kind: str
    speaker: str
    text: str
    keys: list[str]
    relevance: float = 0.0
    vector: dict[str, float] | None = None
    # The user's stated facts in this sentence, already in the third person (digest lines).
    facts: list[str] = field(default_factory=list)


# "we"/"our" statements are retold as "The user said they ..." (who "we" are is not known).
_WE_WORDS = {
    "we": "they",
    "we're": "they're",
    "we've": "they've",
    "we'll": "they'll",
    "we'd": "they'd",
    "our": "their",
    "ours": "theirs",
    "us": "them",
    "ourselves": "themselves",
}
# "us" only in lower case: "the US" is a country.
_WE_RE = re.compile(r"(?i:\b(?:we|we're|we've|we'll|we'd|our|ours|ourselves)\b)|\bus\b")
_YOU_RE = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_LEADING_FUNCTION_WORD_RE = re.compile(
    r"^(?:the|a|an|this|that|these|those|it|there|she|he|they|her|his|its|their)\b", re.I
)


def _lower_opening(body: str) -> bool:
    """Whether the sentence's first word is lower-cased once it is retold mid-sentence: a
    function word, or a common opener ("Apparently, Emily is moving": "Apparently" would read
    as a name after "noted that"). A name is left as written."""
    first, _, rest = body.partition(" ")
    if _LEADING_FUNCTION_WORD_RE.match(body):
        return True
    if first == "I" or first.startswith("I'"):
        return False
    # "New York is expensive", "Los Angeles was sunny": the first word of a place's name.
    if first.lower() in PLACE_NAME_PREFIXES and rest[:1].isupper():
        return False
    # An instruction ("Appreciate the small joys"): its verb is followed by an article.
    return is_sentence_opener(first) or opens_instruction(first, rest.split(" ", 1)[0])


def _reported(sentence: str) -> str:
    """ "The Bürgeramt website is confusing" -> "The user noted that the Bürgeramt website is
    confusing" (a leading function word or opener is lower-cased, a name is left as written);
    "Called Sarah about the lease" -> "The user called Sarah about the lease"."""
    body = sentence.rstrip(" .!…")
    first = body.split(" ", 1)[0]
    if is_opening_verb(first.lower()):
        # "Called Sarah about the lease": the user's own "I" left out.
        return f"The user {first.lower()}{body[len(first) :]}."
    if _lower_opening(body):
        body = body[:1].lower() + body[1:]
    return f"The user noted that {body}."


def _we_statement(sentence: str) -> str | None:
    """ "We are planning a trip to Japan" -> "The user said they are planning a trip to Japan."
    None when the sentence is not a plain "we" statement."""
    if not _WE_RE.search(sentence) or _YOU_RE.search(sentence) or _FIRST_PERSON_RE.search(sentence):
        return None
    body = _WE_RE.sub(lambda match: _we_word(match.group(0)), sentence.rstrip(" .!…"))
    if _lower_opening(body) or body[:4].lower() in {"they", "thei"}:
        body = body[:1].lower() + body[1:]
    return f"The user said {body}."


def _we_word(word: str) -> str:
    return _WE_WORDS.get(word.lower(), word)


def _unit_facts(sentence: str) -> list[str]:
    """The stated facts of one user sentence as digest lines: first-person clauses retold in the
    third person (the same rule as ``extract_facts``), or a "we" statement."""
    facts = [fact for clause in _clauses(sentence) if (fact := _clause_to_fact(clause, "The user"))]
    if facts:
        return [f"- {fact}" for fact in facts]
    if _is_question(sentence) or _is_request(sentence):
        return []
    we_line = _we_statement(_FILLER_OPENER_RE.sub("", sentence).strip() or sentence)
    return [f"- {_clip(we_line, 220)}"] if we_line else []


# Lower-case words a name may hold ("Quinta da Aveleda", "Bank of England", "Tom and Jerry").
_NAME_PARTICLES = NAME_CONNECTORS | {"do", "dos", "das", "della", "di", "der", "the", "and"}
_FRAGMENT_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*")


def _is_bare_name(sentence: str) -> bool:
    """A sentence that is only a name ("Quinta da Aveleda.", the answer to a question): no
    statement to retell ("The user noted that Quinta da Aveleda." says nothing)."""
    words = _FRAGMENT_WORD_RE.findall(sentence)
    return 0 < len(words) <= 6 and all(
        word[0].isupper() or word.lower() in _NAME_PARTICLES for word in words
    )


# An assistant's sentence that only answers the user's news with a pleasantry.
_PLEASANTRY_RE = re.compile(
    r"^(?:congratulations|congrats|happy (?:birthday|anniversary)|(?:so |really )?glad\b|"
    r"(?:great|good|nice|lovely) to hear|sounds (?:great|good|fun|lovely|exciting|amazing)|"
    r"that(?:'s| is| sounds) (?:so )?(?:great|awesome|wonderful|exciting|amazing|lovely)|"
    r"how exciting|what (?:great|wonderful|exciting) news)\b",
    re.IGNORECASE,
)


def _digest_line(unit: _Unit) -> str | None:
    """The digest line of a sentence that holds no stated fact; None for a question or request
    (what the user asked is not something they said about themselves, and the assistant's or
    another speaker's "How is Biscuit settling in?" tells nothing either)."""
    sentence = _FILLER_OPENER_RE.sub("", unit.text).strip() or unit.text
    sentence = sentence[:1].upper() + sentence[1:]
    sentence = _clip(sentence, 200)
    if _is_question(sentence) or _is_bare_name(sentence):
        return None
    if unit.kind == "user":
        if _is_request(sentence):
            return None
        if _FIRST_PERSON_RE.search(sentence) or _OTHER_PERSON_RE.search(sentence):
            return None  # first or second person that the fact rule would not retell safely
        return f"- {_reported(sentence)}"
    if unit.kind == "assistant":
        if _PLEASANTRY_RE.match(sentence):
            return None  # "Congratulations on the move!" is the user's news, said back
        return f"- Assistant: {sentence}"
    return f"- {unit.speaker}: {sentence}"


def _tfidf(units: list[_Unit]) -> None:
    document_frequency: Counter = Counter()
    for unit in units:
        document_frequency.update(set(unit.keys))
    total = len(units)
    for unit in units:
        counts = Counter(unit.keys)
        vector = {
            key: count * (math.log((total + 1) / (document_frequency[key] + 1)) + 1.0)
            for key, count in counts.items()
        }
        norm = math.sqrt(sum(value * value for value in vector.values())) or 1.0
        unit.vector = {key: value / norm for key, value in vector.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(key, 0.0) for key, value in a.items())


def summarize(
    turns: list[tuple[str, str]],
    *,
    max_chars: int = 800,
    embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None,
) -> str:
    """A bullet digest ("- ..." lines, in conversation order) of what the user stated, then
    the most informative rest of the conversation.

    Every fact the user stated about themselves ("I moved to Berlin" -> "The user moved to
    Berlin.", "We are planning a trip" -> "The user said they are planning a trip.") is kept
    while they fit ``max_chars`` (past it, the most central ones). The user's questions and
    requests are never lines: they are not memories, and the answer that follows carries the
    content. The remaining room, up to half of the transcript (at least 160 characters), goes
    to other sentences scored by TF-IDF centrality (or, if ``embed`` is given, by cosine
    similarity of its vectors to their mean; it must be deterministic) and picked with maximal
    marginal relevance so lines do not repeat each other or a fact. Deterministic; never
    exceeds ``max_chars``; cut at a line boundary. Greetings, thanks and other filler are never
    picked; empty input gives "". A chat of questions alone gives one line naming what was
    asked about.
    """
    if max_chars <= 0 or not turns:
        return ""
    units: list[_Unit] = []
    transcript_chars = 0
    question_texts: list[str] = []
    seen_facts: set[str] = set()
    for turn_index, turn in enumerate(turns):
        if not turn or len(turn) < 2:
            continue
        role, text = turn[0], turn[1]
        if not isinstance(text, str) or not text.strip():
            continue
        kind = _role_kind(str(role or ""))
        if kind == "skip":
            continue
        transcript_chars += min(len(text), MAX_TEXT_CHARS)
        speaker = str(role or "").strip() or "Speaker"
        for sentence_index, sentence in enumerate(_sentences(text)):
            if _FILLER_SENTENCE_RE.match(sentence) or _PLACEHOLDER_ONLY_RE.match(sentence):
                continue
            keys = _content_keys(sentence)
            if len(keys) < (1 if kind == "user" else 2):
                continue
            unit = _Unit((turn_index, sentence_index), kind, speaker, sentence, keys)
            if kind == "user":
                if _FIRST_PERSON_RE.search(sentence) or _WE_RE.search(sentence):
                    # A fact stated twice is one fact (its first wording is kept).
                    facts = [fact for fact in _unit_facts(sentence) if fact not in seen_facts]
                    seen_facts.update(facts)
                    unit.facts = facts
                if not unit.facts and _is_question(sentence):
                    question_texts.append(sentence)
            units.append(unit)
    if not units:
        return ""
    _tfidf(units)

    centroid: Counter = Counter()
    for unit in units:
        centroid.update(unit.vector)
    centroid_norm = math.sqrt(sum(value * value for value in centroid.values())) or 1.0
    for unit in units:
        relevance = _cosine(unit.vector, centroid) / centroid_norm
        if len(unit.text.split()) > 45:
            relevance *= 0.8
        unit.relevance = relevance

    # Long conversations: only the most central fact sentences compete (the budget holds a
    # dozen lines at most), which keeps this fast.
    fact_units = sorted(
        (unit for unit in units if unit.facts), key=lambda u: (-u.relevance, u.order)
    )[:MAX_FACT_SENTENCES]
    lines_of: dict[int, list[str]] = {}
    others = []
    for unit in units:
        if unit.facts:
            continue
        line = _digest_line(unit)
        if line is not None:
            lines_of[id(unit)] = [line]
            others.append(unit)
    for unit in fact_units:
        lines_of[id(unit)] = unit.facts
    fact_chars = sum(len(line) + 1 for unit in fact_units for line in unit.facts)
    budget = min(max_chars, max(160, transcript_chars // 2, fact_chars))

    # Long conversations: MMR over the most central sentences only keeps this fast.
    pool = fact_units + sorted(others, key=lambda u: (-u.relevance, u.order))[:80]
    similarity = _similarity_function(pool, embed)
    top_relevance = max(unit.relevance for unit in pool) if pool else 1.0
    top_relevance = top_relevance or 1.0

    selected: list[int] = []
    used = 0
    # Facts first, most central first, while they fit.
    for index in range(len(fact_units)):  # most central first
        cost = sum(len(line) + 1 for line in lines_of[id(pool[index])]) - (0 if used else 1)
        if used + cost > budget or any(similarity(index, j) >= 0.85 for j in selected):
            continue
        selected.append(index)
        used += cost
    remaining = list(range(len(fact_units), len(pool)))
    # Maximal marginal relevance; each candidate's closeness to the picked lines is kept up
    # to date as lines are picked, instead of being recomputed for every candidate each round.
    closeness = {i: max((similarity(i, j) for j in selected), default=0.0) for i in remaining}
    others_taken = 0
    while remaining and (not selected or budget - used > 24) and others_taken < 12:
        room = budget - used - (1 if used else 0)
        remaining = [i for i in remaining if len(lines_of[id(pool[i])][0]) <= room]
        if not remaining:
            break
        best = max(
            remaining,
            key=lambda i: (
                0.7 * pool[i].relevance / top_relevance - 0.3 * closeness[i],
                -pool[i].order[0],
                -pool[i].order[1],
            ),
        )
        remaining.remove(best)
        if closeness[best] >= 0.85:
            continue
        selected.append(best)
        used += len(lines_of[id(pool[best])][0]) + (1 if used else 0)
        others_taken += 1
        for i in remaining:
            closeness[i] = max(closeness[i], similarity(i, best))
    if not selected:
        first = pool[0] if pool else None
        if first is not None:
            line = _clip(lines_of[id(first)][0], budget)
            return line if len(line) > 2 else ""
        return _asked_about(question_texts, budget)
    ordered = sorted(selected, key=lambda i: pool[i].order)
    return "\n".join(line for i in ordered for line in lines_of[id(pool[i])])


def _asked_about(questions: list[str], budget: int) -> str:
    """One line for a chat of questions alone: "- The user asked about X and Y." """
    phrases = [phrase for phrase, _confidence in keywords(questions, k=2)]
    if not phrases:
        return ""
    line = f"- The user asked about {' and '.join(phrases)}."
    return _clip(line, budget) if budget > 2 else ""


MAX_FACT_SENTENCES = 40
_PLACEHOLDER_ONLY_RE = re.compile(r"^[\s\W]*(?:\[[A-Z_ ]+\][\s\W]*)+$")


def _similarity_function(
    pool: list[_Unit], embed: Callable[[list[str]], Sequence[Sequence[float]]] | None
) -> Callable[[int, int], float]:
    if embed is None:
        return lambda i, j: _cosine(pool[i].vector, pool[j].vector)
    vectors = [list(map(float, vector)) for vector in embed([unit.text for unit in pool])]
    norms = [math.sqrt(sum(x * x for x in vector)) or 1.0 for vector in vectors]
    unit_vectors = [[x / norm for x in vector] for vector, norm in zip(vectors, norms, strict=True)]
    mean = [sum(column) / len(unit_vectors) for column in zip(*unit_vectors, strict=True)]
    mean_norm = math.sqrt(sum(x * x for x in mean)) or 1.0
    for unit, vector in zip(pool, unit_vectors, strict=True):
        centrality = sum(a * b for a, b in zip(vector, mean, strict=True)) / mean_norm
        unit.relevance = centrality * (1.2 if unit.kind == "user" else 1.0)
    cache: dict[tuple[int, int], float] = {}

    def similarity(i: int, j: int) -> float:
        key = (i, j) if i < j else (j, i)
        if key not in cache:
            cache[key] = sum(a * b for a, b in zip(unit_vectors[i], unit_vectors[j], strict=True))
        return cache[key]

    return similarity


def _digest_items(summary: str) -> list[str]:
    items: list[str] = []
    for line in (summary or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if line[:2] in {"- ", "* ", "• "}:
            items.append("- " + line[2:].strip())
        else:
            items.extend("- " + sentence for sentence in _sentences(line))
    return items


def _replaced_lines(per_summary: list[list[str]]) -> set[tuple[int, int]]:
    """(digest, line) positions of the lines newer digests (lower indexes) replace: each of the
    line's statements given a new value (mnemo_text.fact_updates); a line of two facts
    of which only one changed stays."""
    stated = [
        [statements_parse([line[2:] if line.startswith("- ") else line]) for line in items]
        for items in per_summary
    ]
    stale: set[tuple[int, int]] = set()
    newer: list = []  # the statements of every digest before the current one
    for summary_index, lines in enumerate(stated):
        for line_index, statements in enumerate(lines):
            if newer and statements and statements_replaced(statements, newer):
                stale.add((summary_index, line_index))
        newer.extend(statement for statements in lines for statement in statements)
    return stale


def fold_summaries(summaries: list[str], *, max_chars: int, newer: Sequence[str] = ()) -> str:
    """Fold several digests (newest first) into one digest of at most ``max_chars``.

    Lines are taken round-robin (the first line of every digest, newest first, then every
    second line...) so older sessions stay represented while the newest win when space runs
    out; near-duplicate lines keep only their newest copy, and a line a newer digest states a
    new value of ("The user lives in Austin." after "The user moved to Denver.") is left out.
    ``newer``: digests newer than all of these, not folded here (the recent rollup's, when
    folding the history) but whose new values leave older lines out just the same. Output is
    grouped newest first and cut at line boundaries; a single line longer than the budget is
    clipped.
    """
    if max_chars <= 0 or not summaries:
        return ""
    per_summary = [_digest_items(summary) for summary in summaries if isinstance(summary, str)]
    ahead = [_digest_items(summary) for summary in newer if isinstance(summary, str)]
    stale = {
        (summary_index - len(ahead), line_index)
        for summary_index, line_index in _replaced_lines([*ahead, *per_summary])
    }
    seen_keys: list[set[str]] = []
    candidates: list[tuple[int, int, str]] = []  # (round, summary index, line)
    for summary_index, items in enumerate(per_summary):
        for line_index, line in enumerate(items):
            if (summary_index, line_index) not in stale:
                candidates.append((line_index, summary_index, line))
    candidates.sort(key=lambda item: (item[0], item[1]))
    chosen: list[tuple[int, int, str]] = []
    used = 0
    for line_index, summary_index, line in candidates:
        keys = set(_content_keys(line)) or {line.lower()}
        if any(len(keys & old) / len(keys | old) >= 0.8 for old in seen_keys):
            continue
        cost = len(line) + (1 if used else 0)
        if used + cost > max_chars:
            if not chosen:
                line = _clip(line, max_chars)
                cost = len(line)
            else:
                continue
        seen_keys.append(keys)
        chosen.append((summary_index, line_index, line))
        used += cost
    chosen.sort(key=lambda item: (item[0], item[1]))
    return "\n".join(line for _summary, _line, line in chosen)
