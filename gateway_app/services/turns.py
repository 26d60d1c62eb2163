"""One proxied chat-completions call: log the conversation, prepare the context pack, build
the upstream request; afterwards store the reply.

The caller's request is forwarded as it came (model, tools, tool_choice, response_format and
every other field untouched) with two changes: message text is redacted like everything
Mnemo sends to a model, and the context pack is prepended as one system message. Tool calls
and tool results pass through unchanged.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django_q.tasks import async_task

from context_app.models import ContextSettings
from context_app.services.context_pack import (
    context_pack_record,
    prepare_context,
    query_embedding_start,
)
from context_app.services.context_pack.segments import ContextPack
from gateway_app.services.conversations import (
    LoggedTurn,
    conversation_reply_store,
    conversation_task_forget,
    conversation_turn_discard,
    conversation_turn_log,
    message_text,
)
from memory_site.task_paths import GATEWAY_BACKLOG_INDEX_TASK
from memory_site.tokens import count_tokens
from mnemo_text.indexable import is_app_task
from mnemo_text.redaction import redact
from sessions_app.models import Message
from sessions_app.services.messages import message_run_hooks

logger = logging.getLogger(__name__)

_REDACTED_ROLES = ("system", "developer", "user", "assistant")
# A call's newest messages are indexed in the request (the next turn's pack can find them);
# older ones it brings along (a long chat Mnemo sees for the first time) go to the worker: each
# turn pair costs a model call for its header, which would hold the reply for minutes.
INLINE_HOOK_MESSAGES = 2
# Messages per queued task: 50 turn pairs at the 1.5 s header budget stay well inside the
# task timeout (Q_CLUSTER["timeout"], 600 s).
BACKLOG_TASK_MESSAGES = 100


@dataclass
class ProxyTurn:
    """Everything the streaming phase needs, prepared before the upstream call."""

    user: object
    logged: LoggedTurn
    upstream_body: dict
    caller_wants_usage: bool
    pack: ContextPack | None = None
    prompt_tokens: int = 0
    hooks_pending: list[Message] = field(default_factory=list)
    # False for a chat app's task prompt (`is_app_task`): logged, never indexed.
    indexed: bool = True

    @property
    def session_id(self) -> str:
        return str(self.logged.session.id)

    def headers(self) -> dict[str, str]:
        headers = {"X-Mnemo-Session-Id": self.session_id}
        if self.pack is not None:
            headers["X-Mnemo-Context"] = str(
                self.pack.status
            )  # a plain str: WSGI refuses subclasses
            if self.pack.hash:
                headers["X-Mnemo-Context-Hash"] = self.pack.hash
        return headers


def _redacted(message: dict) -> dict:
    if message.get("role") not in _REDACTED_ROLES:
        return message
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": redact(content)}
    if isinstance(content, list):
        parts = [
            {**part, "text": redact(part["text"])}
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
        return {**message, "content": parts}
    return message


# The pack of turn N is matched against the conversation's last few user turns, not only the
# newest: "And a gift under 100 euros?" says nothing of the sister the chat is about.
QUERY_USER_TURNS = 3
QUERY_CHARS = 1500


def _pack_query(messages: list[dict]) -> str:
    """The newest user turns, oldest first, the newest whole, within QUERY_CHARS."""
    texts = (message_text(m) for m in messages if m.get("role") == Message.Role.USER)
    turns = [text for text in texts if text.strip()][-QUERY_USER_TURNS:]
    if not turns:
        return ""
    newest, earlier = turns[-1][:QUERY_CHARS], turns[:-1]
    room = QUERY_CHARS - len(newest)
    kept = []
    for text in reversed(earlier):
        if room <= 0:
            break
        kept.insert(0, text[-room:])
        room -= len(text) + 1
    return "\n".join([*kept, newest])


def _gateway_context_settings() -> ContextSettings:
    """The staff's context settings, except that a pack may come from the first user turn on:
    a chat app cannot open its session early, and a new chat's first message is where earlier
    memory matters most (MNEMO_GATEWAY_MIN_USER_TURNS, default 1)."""
    context_settings = ContextSettings.current()
    context_settings.min_user_turns = min(
        context_settings.min_user_turns, settings.MNEMO_GATEWAY_MIN_USER_TURNS
    )
    return context_settings


def proxy_turn_start(
    *,
    user,
    body: dict,
    session_id: uuid.UUID | None = None,
    memory: bool = True,
    task: bool = False,
    chat_id: str = "",
) -> ProxyTurn:
    """Log the call's new messages and prepare the upstream request.

    `task`: the app marked the call as a side task (X-Mnemo-Task: a title, tags, an emoji):
    forwarded without memory and never indexed, as a "### Task:" prompt is. `chat_id`: the
    app's own id of the chat, which keys its session.

    Raises NotFound / Conflict for an explicit session that is not the caller's / not open.
    The context pack (unless `memory` is False) never fails the call: a failed build sends the
    request unaugmented. The new messages' after-message hooks are left to the caller
    (`proxy_turn_hooks`), so indexing runs beside the upstream call instead of before it.
    """
    messages = body["messages"]
    upstream_messages = [_redacted(message) for message in messages]
    query_embedding = None
    last_user = next(
        (m for m in reversed(upstream_messages) if m.get("role") == Message.Role.USER), None
    )
    query = message_text(last_user) if last_user else ""
    # A chat app's own title/tags/follow-up request quotes the chat back: no pack, no memory.
    indexed = not (task or is_app_task(query))
    query = _pack_query(upstream_messages) or query
    memory = memory and indexed
    if memory:
        # The embedder works on the query while the database stores the turn.
        query_embedding = query_embedding_start(query)
    try:
        logged = conversation_turn_log(
            user=user,
            messages=messages,
            session_id=session_id,
            app_task=not indexed,
            chat_id=chat_id,
        )
    except BaseException:
        if query_embedding is not None:
            query_embedding.cancel()
        raise
    conversation_tokens = sum(count_tokens(message_text(m)) for m in upstream_messages)
    pack = None
    if memory:
        pack = prepare_context(
            session=logged.session,
            user_message=logged.user_message,
            query=query,
            conversation_tokens=conversation_tokens,
            context_settings=_gateway_context_settings(),
            query_embedding=query_embedding,
            defer_record=True,  # see proxy_turn_record
        )
        if pack.system_message:
            upstream_messages.insert(0, pack.system_message)
    upstream_body = {**body, "messages": upstream_messages}
    upstream_body["model"] = body.get("model") or settings.LLM_MODEL
    caller_wants_usage = True
    if body.get("stream"):
        # Usage is recorded for every call; a caller that did not ask for it does not see it.
        options = body.get("stream_options") or {}
        caller_wants_usage = bool(options.get("include_usage"))
        upstream_body["stream_options"] = {**options, "include_usage": True}
    return ProxyTurn(
        user=user,
        logged=logged,
        upstream_body=upstream_body,
        caller_wants_usage=caller_wants_usage,
        pack=pack,
        prompt_tokens=conversation_tokens + (pack.tokens if pack and pack.text else 0),
        hooks_pending=list(logged.appended) if indexed else [],
        indexed=indexed,
    )


def proxy_turn_record(turn: ProxyTurn) -> None:
    """Write the pack's InjectionLog row and session state, which `proxy_turn_start` leaves
    for after the first token (they are an audit trail and the next turn's refresh state, not
    part of what the upstream needs). Idempotent; never raises."""
    if turn.pack is not None:
        context_pack_record(turn.pack)


def proxy_turn_hooks(turn: ProxyTurn) -> None:
    """Record the pack if still pending, then run the after-message hooks of the call's new
    messages (indexing, consolidation): the newest INLINE_HOOK_MESSAGES here, any older ones
    in queued tasks of BACKLOG_TASK_MESSAGES."""
    proxy_turn_record(turn)
    pending, turn.hooks_pending = turn.hooks_pending, []
    backlog = pending[:-INLINE_HOOK_MESSAGES]
    for start in range(0, len(backlog), BACKLOG_TASK_MESSAGES):
        batch = backlog[start : start + BACKLOG_TASK_MESSAGES]
        async_task(
            GATEWAY_BACKLOG_INDEX_TASK,
            [message.id for message in batch],
            task_name=f"gateway-backlog-{batch[0].id}",
        )
    for message in pending[-INLINE_HOOK_MESSAGES:]:
        message_run_hooks(message=message)


def proxy_turn_failed(turn: ProxyTurn) -> bool:
    """After a failed upstream call, what the call stored: forgotten with its session when the
    call opened it (`conversation_turn_discard`; True: the session is gone), its text deleted
    when it was a side task, else kept and indexed (a retry does not store it twice)."""
    if turn.logged.new_session or not turn.indexed:
        if turn.pack is not None:
            turn.pack.pending_record = None
        turn.hooks_pending = []
        if conversation_turn_discard(user=turn.user, turn=turn.logged):
            return True
        conversation_task_forget(user=turn.user, turn=turn.logged)
        return False
    proxy_turn_hooks(turn)
    return False


def messages_hooks_run(*, message_ids: list[int]) -> int:
    """Run the after-message hooks of these messages, oldest first; returns how many ran.
    Idempotent (the hooks are: indexing finds the items it stored); a deleted message is
    skipped."""
    messages = Message.objects.filter(id__in=message_ids).order_by("id")
    count = 0
    for message in messages:
        message_run_hooks(message=message)
        count += 1
    return count


def proxy_turn_finish(
    turn: ProxyTurn,
    *,
    text: str,
    model: str,
    tokens_in: int = 0,
    tokens_out: int = 0,
    finish_reason: str = "",
    response_id: str = "",
    incomplete: bool = False,
) -> Message | None:
    """Store the reply and its usage (see `conversation_reply_store`); returns the stored
    message, whose hooks are queued in `hooks_pending`. The pack is recorded first (if still
    pending), so the reply names its InjectionLog row. An `incomplete` reply (the stream broke
    off) is stored, marked so, and not indexed: a half answer is not a memory."""
    proxy_turn_record(turn)
    metadata = {"finish": finish_reason or "stop"}
    if response_id:
        metadata["provider_response_id"] = response_id
    if turn.pack is not None and turn.pack.injection_log_id:
        metadata["injection_log_id"] = turn.pack.injection_log_id
        metadata["context_hash"] = turn.pack.hash
    reply = conversation_reply_store(
        user=turn.user,
        turn=turn.logged,
        text=text,
        model=model or turn.upstream_body.get("model", ""),
        tokens_in=tokens_in or turn.prompt_tokens,
        tokens_out=tokens_out or count_tokens(text),
        metadata=metadata,
        incomplete=incomplete,
    )
    if reply is not None and turn.indexed and not incomplete:
        turn.hooks_pending.append(reply)
    if not turn.indexed:
        # A side task's text (often a whole chat quoted back) is kept no longer than its usage
        # row, just written, needs: nothing of it.
        conversation_task_forget(user=turn.user, turn=turn.logged)
        reply = None
    settings_row = ContextSettings.current()
    if settings_row.verbose_logging:
        logger.info(
            "gateway session=%s appended=%d reply=%s context=%s chars=%d",
            turn.session_id,
            len(turn.logged.appended),
            reply.id if reply else "-",
            turn.pack.status if turn.pack else "off",
            len(turn.pack.text) if turn.pack else 0,
        )
    return reply
