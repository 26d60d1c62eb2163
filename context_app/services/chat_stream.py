"""One streamed chat turn: store the user message, prepare the context pack, stream the model's
reply as server-sent events, store the reply and its usage.

The work is split at the moment the HTTP response starts:

- `chat_turn_start` (sync, before any byte is sent) checks the session, stores the user
  message and prepares the pack, so every input or ownership problem is still a JSON 4xx and
  the topic headers can be set.
- `chat_turn_frames` (async generator) runs the provider's blocking stream in a thread, relays
  its deltas as `message` frames and ends with `done` (or `error`). Whatever happens after the
  first byte (model failure, client disconnect) is handled here: the user message is always
  kept, a partial reply is stored marked `incomplete`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async

from context_app.models import ContextSettings, InjectionLog
from context_app.services.context_pack import ContextPack, attachments_block, prepare_context
from ingestion_app.services.deferred_embeddings import embeddings_hold
from memory_site.errors import Conflict
from memory_site.providers import LLM, ChatResult, ProviderError, get_llm
from memory_site.sse import sse_event
from memory_site.tokens import count_tokens
from mnemo_text.redaction import redact
from sessions_app.models import ChatSession, Message
from sessions_app.services.messages import message_append
from sessions_app.services.usage import usage_record

logger = logging.getLogger(__name__)

CONTEXT_VERSION_AUGMENTED = "v2"


@dataclass
class StreamTurn:
    """Everything the streaming phase needs, prepared before the response starts."""

    user: object
    session: ChatSession | None
    user_message: Message | None
    llm: LLM
    llm_messages: list[dict]
    model: str
    pack: ContextPack | None
    debug: bool
    prompt_tokens: int
    previous_response_id: str = ""
    response_id: str = field(default_factory=lambda: f"resp_{uuid.uuid4().hex[:24]}")

    def headers(self) -> dict[str, str]:
        """X-Reggie-Topic* when the pack has a topic."""
        topic = self.pack.topic if self.pack else None
        if topic is None:
            return {}
        return {
            "X-Reggie-Topic": _header_safe(topic.key),
            "X-Reggie-Topic-Title": _header_safe(topic.title),
            "X-Reggie-Topic-Score": f"{topic.score:.2f}",
            "X-Reggie-Topic-Source": topic.source,
        }

    def context_event(self) -> dict:
        if self.pack is None:
            return {
                "status": "skipped",
                "reason": "no_session" if self.session is None else "context_version",
                "topic": None,
                "segments": [],
                "pack": "",
                "hash": None,
                "reused": False,
                "elapsed_ms": 0.0,
            }
        return self.pack.debug_payload()


def _header_safe(value: str) -> str:
    return " ".join(str(value).split())[:200]


def chat_turn_start(
    *,
    user,
    messages: list[dict],
    session_id: uuid.UUID | None = None,
    context_version: str = "v2",
    attachments: list[dict] | None = None,
    model: str = "",
    previous_response_id: str = "",
    debug: bool = False,
    context_header: str = "",
) -> StreamTurn:
    """Store the turn's user message and prepare what the model will be sent.

    `messages` is the conversation as the client holds it; its last item is the new user
    turn (the serializer guarantees it). Raises NotFound (not the caller's session) and
    Conflict (session not open) before anything is stored. Everything sent to the model is
    redacted; the context pack is prepended as one system message when `context_version` is
    v2 and a session is given.
    """
    attachments = attachments or []
    llm = get_llm()
    user_message = None
    session = None
    pack = None
    attachment_report: list[dict] = []
    block_text = ""
    context_settings = ContextSettings.current()
    if attachments:
        block = attachments_block(attachments, cap_chars=context_settings.attachment_cap_chars)
        block_text, attachment_report = block.text, block.report

    if session_id is not None:
        metadata = {"context_version": context_version}
        if previous_response_id:
            metadata["previous_response_id"] = previous_response_id
        if attachment_report:
            metadata["attachments"] = attachment_report
        if context_header:
            metadata["context_header"] = context_header[:32]
        user_message = message_append(
            user=user,
            session_id=session_id,
            role=Message.Role.USER,
            content=messages[-1]["content"],
            metadata=metadata,
        )
        session = user_message.session

    llm_messages = [
        {"role": message["role"], "content": redact(message["content"])} for message in messages
    ]
    if block_text:
        llm_messages[-1]["content"] = f"{llm_messages[-1]['content']}\n\n{block_text}"
    conversation_tokens = sum(count_tokens(message["content"]) for message in llm_messages)

    if session is not None and context_version == CONTEXT_VERSION_AUGMENTED:
        # The previous reply's vectors wait for this pack (`embeddings_hold`).
        with embeddings_hold():
            pack = prepare_context(
                session=session,
                user_message=user_message,
                query=user_message.content_sanitized,
                conversation_tokens=conversation_tokens,
                context_settings=context_settings,
            )
        if pack.system_message:
            llm_messages.insert(0, pack.system_message)
    return StreamTurn(
        user=user,
        session=session,
        user_message=user_message,
        llm=llm,
        llm_messages=llm_messages,
        model=model,
        pack=pack,
        debug=debug,
        prompt_tokens=conversation_tokens + (pack.tokens if pack and pack.text else 0),
        previous_response_id=previous_response_id,
    )


class _ModelStream:
    """The provider's blocking stream, run in a thread and relayed through an asyncio queue.

    Items: ("chunk", StreamChunk), ("result", ChatResult), ("error", Exception), then ("end",).
    `stop()` makes the thread abandon the stream after the chunk it is waiting for.
    """

    def __init__(self, llm: LLM, messages: list[dict], model: str):
        self.llm = llm
        self.messages = messages
        self.model = model or None
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chat-stream", daemon=True)

    def start(self) -> _ModelStream:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()

    def _emit(self, *item) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the event loop is gone: nobody is listening any more
            self.stopped.set()

    def _run(self) -> None:
        iterator = None
        try:
            iterator = self.llm.stream(self.messages, model=self.model)
            for chunk in iterator:
                if self.stopped.is_set():
                    break
                if chunk.result is not None:
                    self._emit("result", chunk.result)
                elif chunk.text:
                    self._emit("chunk", chunk)
        except ProviderError as exc:
            self._emit("error", exc)
        except Exception as exc:  # noqa: BLE001 - reported to the client as an error frame
            logger.exception("chat stream: provider stream crashed")
            self._emit("error", exc)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing an abandoned HTTP stream
                    pass
            self._emit("end")

    async def items(self) -> AsyncIterator[tuple]:
        while True:
            item = await self.queue.get()
            if item[0] == "end":
                return
            yield item


@dataclass
class _Reply:
    parts: list[str] = field(default_factory=list)
    result: ChatResult | None = None
    provider_response_id: str = ""
    store_task: asyncio.Future | None = None
    stored_ids: dict | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _store_reply(turn: StreamTurn, reply: _Reply, *, incomplete: bool, finish: str) -> dict:
    """Store the assistant message (if any text), its usage row, and link it to the turn's
    injection log. Returns {"assistant": id or None, "usage": {...}, "model": ...}."""
    text = reply.text
    result = reply.result
    model = (result.model if result and result.model else "") or turn.model or turn.llm.model
    tokens_in = result.tokens_in if result and result.tokens_in else turn.prompt_tokens
    tokens_out = result.tokens_out if result and result.tokens_out else count_tokens(text)
    outcome = {
        "assistant": None,
        "usage": {"tokens_in": tokens_in, "tokens_out": tokens_out},
        "model": model,
    }
    if not text:
        return outcome
    assistant = None
    if turn.session is not None:
        metadata = {"response_id": turn.response_id, "finish": finish}
        if reply.provider_response_id and reply.provider_response_id != turn.response_id:
            metadata["provider_response_id"] = reply.provider_response_id
        if turn.previous_response_id:
            metadata["previous_response_id"] = turn.previous_response_id
        if turn.pack is not None and turn.pack.injection_log_id:
            metadata["injection_log_id"] = turn.pack.injection_log_id
            metadata["context_hash"] = turn.pack.hash
        try:
            assistant = message_append(
                user=turn.user,
                session_id=turn.session.id,
                role=Message.Role.ASSISTANT,
                content=text,
                model=model,
                incomplete=incomplete,
                metadata=metadata,
                # An interrupted reply is kept for the record but not indexed as memory.
                run_hooks=not incomplete,
            )
        except Conflict:
            logger.warning(
                "chat stream: session %s closed during the reply; reply not stored", turn.session.id
            )
        if assistant is not None and turn.pack is not None and turn.pack.injection_log_id:
            InjectionLog.objects.filter(id=turn.pack.injection_log_id).update(
                assistant_message=assistant
            )
    usage_record(
        user=turn.user,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        session=turn.session,
        kind="chat",
    )
    outcome["assistant"] = assistant.id if assistant else None
    return outcome


async def _store_once(turn: StreamTurn, reply: _Reply, *, incomplete: bool, finish: str) -> dict:
    """Store the reply exactly once, even if the client disconnects while it is being stored."""
    if reply.store_task is None:
        reply.store_task = asyncio.ensure_future(
            sync_to_async(_store_reply)(turn, reply, incomplete=incomplete, finish=finish)
        )
    reply.stored_ids = await asyncio.shield(reply.store_task)
    return reply.stored_ids


async def chat_turn_frames(turn: StreamTurn) -> AsyncIterator[bytes]:
    """The SSE frames of one turn: [context] message* (done | error).

    A client that goes away mid-stream (the generator is cancelled or closed) still gets the
    text generated so far stored as an incomplete reply. A model failure yields an `error`
    frame; the user message stays stored.
    """
    if turn.debug:
        yield sse_event("context", turn.context_event())
    reply = _Reply()
    stream = _ModelStream(turn.llm, turn.llm_messages, turn.model).start()
    try:
        async for item in stream.items():
            kind = item[0]
            if kind == "chunk":
                chunk = item[1]
                reply.parts.append(chunk.text)
                provider_id = (chunk.meta or {}).get("id")
                if provider_id and not reply.provider_response_id:
                    reply.provider_response_id = provider_id
                yield sse_event("message", {"chunk": chunk.text, "id": turn.response_id})
            elif kind == "result":
                reply.result = item[1]
                reply.provider_response_id = reply.provider_response_id or item[1].response_id
            elif kind == "error":
                exc = item[1]
                logger.warning(
                    "chat stream: model failed for session %s: %s",
                    getattr(turn.session, "id", None),
                    exc,
                )
                await _store_once(turn, reply, incomplete=True, finish="error")
                yield sse_event("error", _error_body(exc))
                return
        outcome = await _store_once(turn, reply, incomplete=False, finish="completed")
        yield sse_event("done", _done_body(turn, outcome))
    finally:
        stream.stop()
        if reply.store_task is None:
            # The client disconnected before the reply was complete: keep what was generated.
            await _store_once(turn, reply, incomplete=True, finish="disconnected")
        elif not reply.store_task.done():
            await asyncio.shield(reply.store_task)


def _error_body(exc: Exception) -> dict:
    if isinstance(exc, ProviderError):
        return {
            "code": "upstream_error",
            "message": f"The language model failed before finishing the reply: {str(exc)[:300]}. "
            "Your message was saved; you can retry.",
        }
    return {
        "code": "stream_failed",
        "message": "The reply could not be generated because of an internal error. Your message was saved.",
    }


def _done_body(turn: StreamTurn, outcome: dict) -> dict:
    pack = turn.pack
    return {
        "status": "completed",
        "id": turn.response_id,
        "model": outcome["model"],
        "message_ids": {
            "user": turn.user_message.id if turn.user_message else None,
            "assistant": outcome["assistant"],
        },
        "usage": outcome["usage"],
        "context": {
            "chars": len(pack.text) if pack else 0,
            "hash": (pack.hash or None) if pack else None,
        },
    }
