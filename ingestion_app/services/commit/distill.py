"""Distillation: a session's new messages become atomic facts, each traced to its messages.

With an LLM one structured call per transcript window; offline `mnemo_text.facts`
over the user's own statements. Both clean and redact every fact before it goes further.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory_site.providers import ProviderError, get_embedder
from memory_site.tokens import count_tokens
from mnemo_text.facts import extract_facts
from mnemo_text.redaction import redact
from sessions_app.models import ChatSession, Message
from sessions_app.services.usage import usage_record_json

# One distillation call reads at most this many transcript tokens; longer backlogs take several.
TRANSCRIPT_WINDOW_TOKENS = 12_000
MAX_FACT_CHARS = 1_000

_ROLE_LABELS = {Message.Role.USER: "User", Message.Role.ASSISTANT: "Assistant"}
SUBJECT_PREFIX = re.compile(r"^the user(?:'s)?\s+", re.IGNORECASE)

FACTS_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "source_message_ids": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["text", "source_message_ids"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}

DISTILL_PROMPT = """You turn a chat transcript into long-term memory: atomic facts about the user.

Rules:
- One claim per fact. Split "I live in Paris and work at Acme" into two facts.
- Self-contained: a fact must make sense on its own, months later, without the conversation.
  Call the user "The user" (or by their name if they gave it); write names instead of pronouns
  ("The user's sister Anna", never "she"); keep dates, places, numbers and names.
- Only durable information worth remembering: biography, preferences, relationships, plans,
  decisions, projects, constraints. No greetings, no questions, no small talk.
- Facts come from what the user says. Do not record the assistant's suggestions or guesses
  unless the user clearly accepted them.
- If the conversation changes something, state only the latest value.
- Keep placeholders such as [EMAIL] or [PHONE] exactly as written; never guess what they hide.
- source_message_ids: the ids in square brackets of the messages each fact comes from.
- Return {"facts": []} when there is nothing worth remembering."""


@dataclass
class Fact:
    """A distilled fact on its way to the store."""

    text: str
    source_message_ids: list[int]
    embedding: list[float] = field(default_factory=list)
    neighbours: list = field(default_factory=list)  # FactNeighbour, most similar first


def fact_clean(text: str) -> str:
    # Model output is derived from redacted text, but a model can still echo or invent PII.
    text = redact(" ".join(str(text).split()))
    return text[:MAX_FACT_CHARS].strip()


def _merge_same_text(facts: list[Fact]) -> list[Fact]:
    merged: dict[str, Fact] = {}
    for fact in facts:
        key = fact.text.casefold().rstrip(".")
        if key in merged:
            ids = merged[key].source_message_ids
            ids.extend(i for i in fact.source_message_ids if i not in ids)
        else:
            merged[key] = fact
    return list(merged.values())


def facts_distill_offline(messages: list[Message]) -> list[Fact]:
    """Facts from the user's own statements, each traced to the message it came from."""
    facts = []
    for message in messages:
        if message.role != Message.Role.USER:
            continue
        for text in extract_facts([("user", message.content_sanitized)]):
            cleaned = fact_clean(text)
            if cleaned:
                facts.append(Fact(text=cleaned, source_message_ids=[message.id]))
    return _merge_same_text(facts)


def _transcript_windows(messages: list[Message]) -> list[tuple[str, list[int]]]:
    """Transcript lines `[id] Role: text`, cut into windows of at most TRANSCRIPT_WINDOW_TOKENS.

    System messages are left out: they carry injected context (earlier memories), and
    distilling them would store memories of memories.
    """
    windows: list[tuple[str, list[int]]] = []
    lines: list[str] = []
    ids: list[int] = []
    tokens = 0
    for message in messages:
        label = _ROLE_LABELS.get(message.role)
        if label is None or not message.content_sanitized.strip():
            continue
        line = f"[{message.id}] {label}: {message.content_sanitized.strip()}"
        line_tokens = message.token_count or count_tokens(line)
        if lines and tokens + line_tokens > TRANSCRIPT_WINDOW_TOKENS:
            windows.append(("\n".join(lines), ids))
            lines, ids, tokens = [], [], 0
        lines.append(line)
        ids.append(message.id)
        tokens += line_tokens
    if lines:
        windows.append(("\n".join(lines), ids))
    return windows


def chat_json_with_usage(
    llm, *, user, session, prompt: list[dict], schema: dict, name: str
) -> dict:
    """One structured call, with its usage row (counted by the provider)."""
    result = llm.chat_json(prompt, schema=schema, schema_name=name)
    usage_record_json(user=user, session=session, kind="facts", result=result)
    return result.data


def facts_distill_with_llm(
    llm, *, user, session: ChatSession, messages: list[Message]
) -> list[Fact]:
    facts: list[Fact] = []
    for transcript, ids in _transcript_windows(messages):
        prompt = [
            {"role": "system", "content": DISTILL_PROMPT},
            {"role": "user", "content": f"Transcript:\n{transcript}"},
        ]
        payload = chat_json_with_usage(
            llm, user=user, session=session, prompt=prompt, schema=FACTS_SCHEMA, name="memory_facts"
        )
        raw_facts = payload.get("facts")
        if not isinstance(raw_facts, list):
            raise ProviderError("LLM answer has no 'facts' list")
        window_ids = set(ids)
        user_ids = [m.id for m in messages if m.id in window_ids and m.role == Message.Role.USER]
        for item in raw_facts:
            # Defensive: accept bare strings and ignore ids that are not in this window.
            if isinstance(item, str):
                text, sources = item, []
            elif isinstance(item, dict):
                text, sources = item.get("text", ""), item.get("source_message_ids") or []
            else:
                continue
            if not isinstance(text, str):
                continue
            cleaned = fact_clean(text)
            if not cleaned:
                continue
            source_ids = [i for i in sources if isinstance(i, int) and i in window_ids]
            facts.append(Fact(text=cleaned, source_message_ids=source_ids or user_ids or ids))
    return _merge_same_text(facts)


def facts_embed(facts: list[Fact]) -> None:
    if not facts:
        return
    vectors = get_embedder().embed([fact.text for fact in facts])
    if len(vectors) != len(facts):
        raise ProviderError("the embedder returned a different number of vectors")
    for fact, vector in zip(facts, vectors, strict=True):
        fact.embedding = list(vector)
