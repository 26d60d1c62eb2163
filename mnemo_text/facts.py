"""Atomic third-person facts from the user's own first-person statements."""

from __future__ import annotations

import re

from mnemo_text.entity_tokens import is_opening_verb
from mnemo_text.sentences import (
    _FILLER_SENTENCE_RE,
    _is_question,
    _is_request,
    _role_kind,
    _sentences,
)
from mnemo_text.third_person import _has_verb, _names, _possessive, _third_person
from mnemo_text.words import _PLACEHOLDER_RE, STOP_WORDS

_FIRST_PERSON_RE = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_OTHER_PERSON_RE = re.compile(
    r"(?i:\b(?:you|your|yours|yourself|we|our|ours|we're|we've|we'll|we'd)\b)|\bus\b"
)
_DISCOURSE_RE = re.compile(
    r"^(?:(?:oh|ah|well|so|also|and|but|btw|by the way|actually|anyway|anyways|okay|ok|yeah|"
    r"yes|no|hey|hi|hello|fyi|just so you know|for context|for the record|honestly|basically|"
    r"plus|um|uh|hmm|oh and|sure|right|thanks|thank you|lol|lmao|haha|omg|wow|ugh)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
_MEMORY_PREFIX_RE = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|never forget|"
    r"for (?:future )?reference|just so you know)(?:\s+that)?[\s,:]+",
    re.IGNORECASE,
)
# A short label before a first-person statement ("Quick update: I'm allergic to penicillin",
# "Big news: we bought a house"): a heading, not part of the fact.
_LEAD_IN_LABEL_RE = re.compile(
    r"^(?:[^\W\d_]+\s+){0,2}[^\W\d_]+\s*:\s+(?=(?:i|i'm|i've|i'd|i'll|my|we|we're|our)\b)|"
    # "Quick update: Marco and I moved to Seattle", "Big news - I got the job".
    r"^(?:(?:a |an )?(?:quick|small|little|big|good|great|some|exciting|sad)\s+)?"
    r"(?:update|news|heads[- ]up)\s*[:!-]\s+",
    re.IGNORECASE,
)
_NOT_A_FACT_RE = re.compile(
    r"^(?:i (?:don't|do not) (?:know|understand|get it|think so|care|mind|remember)\b|"
    r"i'm (?:not sure|confused|sorry|curious|wondering|asking|glad|happy to hear|back)\b|"
    r"i am (?:not sure|confused|sorry|curious|wondering|asking)\b|"
    r"i (?:see|agree|understand|guess|mean|meant|suppose|wonder|was wondering|hope so|"
    r"appreciate|apologi[sz]e)\b|"
    r"i (?:like|love|hate|liked|loved) (?:it|that|this|your|the idea|them)\b|"
    r"i (?:have|got) (?:a|another|one more|some) (?:question|questions|quick question)\b|"
    r"i (?:need|want|would like|'d like|wanna) (?:to know|to ask|to understand|help|"
    r"some help|you|advice|ideas|tips|suggestions|recommendations|an? (?:answer|list|summary|"
    r"example|recipe|explanation|idea|suggestion))\b|"
    r"i'd like (?:to know|to ask|you|help|an? (?:answer|list|summary|example|recipe))\b|"
    r"i (?:will|'ll|would) (?:try|check|look|do that|let you know)\b|i'll (?:try|check|look)\b|"
    r"i (?:tried|did) (?:that|this|it)\b|i (?:think|believe|feel) (?:so|not|that's)\b|"
    r"i can't (?:believe|wait)\b|i'm (?:going to|gonna) (?:try|ask|check)\b)",
    re.IGNORECASE,
)
_HYPOTHETICAL_RE = re.compile(
    r"^(?:if|what if|suppose|supposing|imagine|let's say|say|assuming|hypothetically|pretend)\b",
    re.IGNORECASE,
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*[,;]?\s*\b(?:and|but|so|plus|though|although|while|whereas)\s+"
    r"(?=(?:(?:now|also|then|currently|recently|still|actually|really|just|even)\s+)?"
    r"(?:i|i'm|i've|i'd|i'll|my)\b)|\s*;\s*|"
    r"\s*,\s*(?=(?:(?:can|could|would|will)\s+you|please|what|how|where|which|why|any|"
    r"i|i'm|i've|i'd|i'll|my)\b)",
    re.IGNORECASE,
)
_NAME_INTRO_RE = re.compile(
    r"^(?:(i'm|i am)|my name is|my name's|call me)\s+"
    r"([A-Z][\w'-]{1,30}(?:\s+[A-Z][\w'-]{1,30})?)$",
    re.IGNORECASE,
)
# "I'm Japanese" is a nationality, not a name.
_NATIONALITY_END_RE = re.compile(r"(?:ese|ish|ian|ean|can|ani|i|ch|ic)$", re.IGNORECASE)
# "Now I live in Berlin" -> "I now live in Berlin" -> "The user now lives in Berlin".
_LEADING_ADVERB_RE = re.compile(
    r"^(now|currently|still|also|recently|finally|actually)\s+(i|i'm|i've|i'll|i'd)\b", re.I
)
_SYMBOLS_RE = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F]")


_SUBORDINATE_RE = re.compile(
    r"^(?:when|while|after|before|because|since|although|though|if|as|once|until|unless|"
    r"whenever|whereas)\b",
    re.IGNORECASE,
)


def _clauses(sentence: str) -> list[str]:
    """Split coordinated clauses only where a new first-person clause starts and the left part
    is itself a clause ("I live in Paris and my sister lives in Rome"); "My wife and I live in
    Rome" stays whole."""
    clauses: list[str] = []
    start = 0
    separator = ""
    for match in [*_CLAUSE_SPLIT_RE.finditer(sentence), None]:
        end = match.start() if match else len(sentence)
        part = sentence[start:end].strip(" ,;")
        if part:
            if clauses and (
                not _has_verb(clauses[-1].split()) or _SUBORDINATE_RE.match(clauses[-1])
            ):
                # "Last year, I moved" / "When I was ten, I lived in Spain": the left part
                # cannot stand alone, so undo the split.
                clauses[-1] = clauses[-1] + separator + part
            else:
                clauses.append(part)
        if match:
            separator = match.group(0)
            start = match.end()
    return clauses


def _clause_to_fact(clause: str, user_name: str) -> str | None:
    clause = _SYMBOLS_RE.sub("", clause).strip()
    clause = _LEAD_IN_LABEL_RE.sub("", _DISCOURSE_RE.sub("", clause))
    clause = _MEMORY_PREFIX_RE.sub("", clause).strip(" ,;:-")
    if not clause or _is_question(clause) or _HYPOTHETICAL_RE.match(clause):
        return None
    if _is_request(clause) or _NOT_A_FACT_RE.match(clause) or _FILLER_SENTENCE_RE.match(clause):
        return None
    if not _FIRST_PERSON_RE.search(clause) or _OTHER_PERSON_RE.search(clause):
        return None
    if _PLACEHOLDER_RE.search(clause) or "[" in clause:
        return None
    words = clause.split()
    if not 2 <= len(words) <= 50:
        return None
    body = _LEADING_ADVERB_RE.sub(r"\2 \1", clause.rstrip(" .!…:,;-"))
    first = body.split(" ", 1)[0]
    if first[:1].isupper() and is_opening_verb(first.lower()):
        body = f"I {first.lower()}{body[len(first) :]}"  # "Had a call with my boss": "I" left out
    name_match = _NAME_INTRO_RE.match(body)
    if (
        name_match
        and name_match.group(2)[:1].isupper()
        and name_match.group(2).lower() not in STOP_WORDS
        and not (name_match.group(1) and _NATIONALITY_END_RE.search(name_match.group(2)))
    ):
        start_name, _mid = _names(user_name)
        return f"{_possessive(start_name)} name is {name_match.group(2)}."
    fact = _third_person(body, user_name)
    if _FIRST_PERSON_RE.search(fact.replace(_names(user_name)[0], "")):
        return None  # a first-person word we could not rewrite safely
    if len(fact) > 300:
        return None
    return fact + "."


def _fact_key(fact: str) -> str:
    return " ".join(re.findall(r"\w+", fact.lower()))


def extract_facts(turns: list[tuple[str, str]], *, user_name: str = "The user") -> list[str]:
    """Atomic, self-contained facts from the user's own first-person statements.

    "I moved to Berlin last month" -> "The user moved to Berlin last month."; "My sister Anna is
    a nurse" -> "The user's sister Anna is a nurse."; "I'm Sam" -> "The user's name is Sam.".
    Coordinated first-person clauses become separate facts. Questions, greetings, thanks,
    reactions ("I see", "I love it"), commands and requests to the assistant, hypotheticals,
    sentences about "you"/"we", and sentences holding redaction placeholders are skipped.
    Assistant turns are never used (see the module docstring). Duplicates are dropped; order
    follows the conversation. Roles "user"/"human" (or ``user_name`` itself) count as the user.
    """
    facts: list[str] = []
    seen: set[str] = set()
    for turn in turns or []:
        if not turn or len(turn) < 2:
            continue
        role, text = turn[0], turn[1]
        if _role_kind(str(role or ""), user_name) != "user" or not isinstance(text, str):
            continue
        for sentence in _sentences(text):
            for clause in _clauses(sentence):
                fact = _clause_to_fact(clause, user_name)
                if fact is None:
                    continue
                key = _fact_key(fact)
                if key and key not in seen:
                    seen.add(key)
                    facts.append(fact)
    return facts
