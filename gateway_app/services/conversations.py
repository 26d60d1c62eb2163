"""Chat-app conversations -> Mnemo sessions: match each call to its session, append only what
is new, store the reply once.

A chat app resends the whole conversation on every turn. The conversation is identified by
an explicit session id (X-Mnemo-Session-Id) or else by a stable key of (user, system prompt,
opening user messages); its `GatewayConversation` row is locked (SELECT ... FOR UPDATE, created
under a unique constraint) for the few milliseconds of the append, so two concurrent calls of
one conversation never open two sessions or store a message twice.

The opening is the first user message, or, when that one says nothing ("Hi", "Hello?"), the
user messages up to the first that does: two chats that both start with "Hello" and then ask
about cats and about rockets are two sessions. The first call of such a chat (only "Hello" so
far) is keyed by "Hello" alone; the call that brings the first real question takes that
session over (`_opening_session_adopt`), so the chat is not split.

Only user and assistant text is logged (tool calls and tool results are passed to the model,
not stored as memory). A conversation compares the hashes of its incoming messages with the
ones already stored: the longest common prefix is skipped, the rest appended. A client that
regenerates or edits an earlier turn simply continues from the point where it diverged.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from gateway_app.models import GatewayConversation
from ingestion_app.services.memories import memories_of_messages_delete
from memory_site.errors import Conflict
from mnemo_text.sentences import is_content_free
from sessions_app.models import ChatSession, Message
from sessions_app.selectors import (
    APP_TASKS_SESSION,
    session_get_for_user,
    session_messages,
    session_open_locked,
)
from sessions_app.services.messages import MAX_MESSAGE_CHARS, message_append, messages_create
from sessions_app.services.sessions import session_open, session_require_open
from sessions_app.services.usage import usage_record

LOGGED_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
SYSTEM_ROLES = ("system", "developer")
AGENT_ID = "openai-compat"
TITLE_CHARS = 80
APP_TASK_TITLE = "Chat app tasks (not remembered)"
# The metadata flag of that session: listed among no chats.
APP_TASKS_FLAG = next(iter(APP_TASKS_SESSION))
# Chats sharing an opening, each departing from the one before: beyond this many the last
# one's session is continued.
MAX_FORKS = 8


def message_text(message: dict) -> str:
    """The text of an OpenAI chat message: a string, or the text parts of a content list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def message_hash(role: str, text: str) -> str:
    """Whitespace-insensitive: clients re-serialize what they display (trailing newlines)."""
    normalized = " ".join(text.split())
    return hashlib.sha256(f"{role}\n{normalized}".encode()).hexdigest()[:32]


def logged_messages(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, text) of the messages Mnemo stores: user and assistant turns with text."""
    logged = []
    for message in messages:
        role = message.get("role")
        text = message_text(message)
        if role in LOGGED_ROLES and text.strip():
            logged.append((role, text[:MAX_MESSAGE_CHARS]))
    return logged


def conversation_key(*, messages: list[dict], session_id: uuid.UUID | None = None) -> str:
    """The conversation's stable key: its explicit session, else (system prompt, opening user
    messages; see the module docstring). The user is the other half of the unique key."""
    return conversation_keys(messages=messages, session_id=session_id)[0]


def conversation_keys(
    *, messages: list[dict], session_id: uuid.UUID | None = None, chat_id: str = ""
) -> tuple[str, str]:
    """(the key, the key of the first user message alone): the two differ when the chat opened
    with messages that say nothing and has since said something. A client's chat id (its own
    id for the chat, sent in a header) keys the conversation by itself."""
    if session_id is not None:
        key = _key(["session", str(session_id)])
        return key, key
    if chat_id:
        key = _key(["client-chat", chat_id])
        return key, key
    system = next((m for m in messages if m.get("role") in SYSTEM_ROLES), None)
    users = [
        " ".join(message_text(m).split()) for m in messages if m.get("role") == Message.Role.USER
    ]
    opening = users[:1]
    if users and is_content_free(users[0]):
        for position, text in enumerate(users[1:], start=2):
            if not is_content_free(text):
                opening = users[:position]
                break
    basis = ["chat", " ".join(message_text(system).split()) if system else ""]
    first_only = _key([*basis, users[0] if users else ""])
    return (_key([*basis, *opening]) if len(opening) > 1 else first_only), first_only


def _key(basis: list[str]) -> str:
    return hashlib.sha256(json.dumps(basis).encode()).hexdigest()


@dataclass
class LoggedTurn:
    """What one call stored. `stored_count` is the conversation's length after the append: the
    reply is stored only if nothing else was stored in between."""

    conversation_id: int
    session: ChatSession
    appended: list[Message] = field(default_factory=list)
    stored_count: int = 0
    new_session: bool = False
    # The stored reply this call's messages stop just short of (a repeated call, a retry whose
    # answer was lost, or a regeneration); "" when the call adds something new.
    previous_reply_hash: str = ""
    # The key of the stored chat this new one opened like (see conversation_turn_log); its
    # conversation is keyed by its reply once that is stored.
    fork_of: str = ""

    @property
    def user_message(self) -> Message | None:
        """The turn's new user message (the last one appended), if any."""
        for message in reversed(self.appended):
            if message.role == Message.Role.USER:
                return message
        return None


_SESSION_FIELDS = list(ChatSession._meta.concrete_fields)
_SESSION_COLUMNS = ", ".join(f"s.{field.column}" for field in _SESSION_FIELDS)


def _locked_conversation(*, user, key: str) -> tuple[GatewayConversation, bool, ChatSession | None]:
    """Get or create the conversation row and lock it for this transaction, with its session
    if that is still the caller's and open, locked too (one statement, `session_open_locked`'s
    rule; a second only when the session is closed or was created concurrently).

    A row another call is creating makes the insert wait for that call's commit, then take
    the update branch; either branch leaves the row locked until this transaction ends. The
    session's FOR UPDATE re-reads its status after waiting for a concurrent close.
    """
    table = GatewayConversation._meta.db_table
    sessions = ChatSession._meta.db_table
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH conversation AS (
                    INSERT INTO {table} (user_id, key, message_hashes, created_at, updated_at)
                    VALUES (%(user)s, %(key)s, '[]'::jsonb, %(now)s, %(now)s)
                    ON CONFLICT (user_id, key) DO UPDATE SET updated_at = EXCLUDED.updated_at
                    RETURNING id, session_id, message_hashes::text AS hashes, created_at,
                              xmax = 0 AS inserted
                )
                SELECT c.id, c.session_id, c.hashes, c.created_at, c.inserted, {_SESSION_COLUMNS}
                FROM conversation AS c LEFT JOIN LATERAL (
                    SELECT * FROM {sessions}
                    WHERE id = c.session_id AND user_id = %(user)s AND status = %(open)s
                    FOR UPDATE
                ) AS s ON true""",
            {"user": user.pk, "key": key, "now": now, "open": ChatSession.Status.OPEN},
        )
        row_id, session_id, hashes, created_at, inserted, *session_values = cursor.fetchone()
    # xmax = 0 only on a freshly inserted row version (PostgreSQL's insert-or-update tell).
    conversation = GatewayConversation(
        id=row_id,
        user=user,
        key=key,
        session_id=session_id,
        message_hashes=json.loads(hashes),
        created_at=created_at,
        updated_at=now,
    )
    session = None
    if session_values[0] is not None:
        session = ChatSession.from_db(
            connection.alias,
            [field.attname for field in _SESSION_FIELDS],
            [
                field.from_db_value(value, None, connection)
                if hasattr(field, "from_db_value")
                else value
                for field, value in zip(_SESSION_FIELDS, session_values, strict=True)
            ],
        )
        session.user = user
    elif session_id is not None:
        # The statement's snapshot predates a session that a concurrent call of this
        # conversation created and committed while the insert waited for its lock: look again.
        session = session_open_locked(user=user, session_id=session_id)
    return conversation, inserted, session


def _conversation_update(conversation: GatewayConversation, *, last_activity_at) -> None:
    """Save the conversation's session and hashes and, when messages were appended, move the
    session's last activity to the last one: one statement for the two rows."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH touched AS (
                    UPDATE {ChatSession._meta.db_table} SET last_activity_at = %(activity)s
                    WHERE id = %(session)s AND %(activity)s::timestamptz IS NOT NULL
                )
                UPDATE {GatewayConversation._meta.db_table}
                SET session_id = %(session)s, message_hashes = %(hashes)s::jsonb,
                    updated_at = %(now)s
                WHERE id = %(id)s""",
            {
                "activity": last_activity_at,
                "session": conversation.session_id,
                "hashes": json.dumps(conversation.message_hashes),
                "now": conversation.updated_at,
                "id": conversation.id,
            },
        )


def _opening_session_adopt(
    *, user, key: str, incoming_hashes: list[str]
) -> tuple[ChatSession | None, list[str]]:
    """The open session of the conversation keyed by the chat's first message alone ("Hello"),
    with its hashes, when everything it stored opens this call's messages: this chat's own
    first calls. That conversation lets go of it, so another chat opening with the same
    words starts a session of its own. (None, []) otherwise."""
    row = (
        GatewayConversation.objects.select_for_update()
        .filter(user=user, key=key, session__isnull=False)
        .first()
    )
    if row is None:
        return None, []
    stored = list(row.message_hashes or [])
    if not stored or _common_prefix(stored, incoming_hashes) != len(stored):
        return None, []
    session = session_open_locked(user=user, session_id=row.session_id)
    if session is None:
        return None, []
    row.session_id = None
    row.message_hashes = []
    row.save(update_fields=["session", "message_hashes", "updated_at"])
    return session, stored


def _last_reply_hash(session: ChatSession) -> str:
    last = session_messages(session=session).filter(role__in=LOGGED_ROLES).last()
    if last is None or last.role != Message.Role.ASSISTANT:
        return ""
    return message_hash(last.role, last.content)


def _stored_hashes(session: ChatSession) -> list[str]:
    return [
        message_hash(message.role, message.content)
        for message in session_messages(session=session)
        if message.role in LOGGED_ROLES and message.content.strip()
    ]


def _reply_replace(session: ChatSession, old_hash: str, *, by: Message) -> None:
    """A regenerated reply takes the place of the one it regenerates: that message goes, with
    the memory items made from it (its message item and its exchange's chunk, which the new
    reply's indexing then makes again), so neither the transcript nor memory keeps both."""
    old = (
        Message.objects.filter(session=session, role=Message.Role.ASSISTANT, id__lt=by.id)
        .order_by("-id")
        .first()
    )
    if old is None or message_hash(Message.Role.ASSISTANT, old.content) != old_hash:
        return
    memories_of_messages_delete(user_id=session.user_id, message_ids=[old.id])
    old.delete()


def _fork_key_set(conversation: GatewayConversation, key: str) -> None:
    """Key a new chat's conversation by where it departs from the chat it opened like; kept
    as it is when another chat already departs there with the same reply."""
    try:
        with transaction.atomic():
            GatewayConversation.objects.filter(id=conversation.id).update(key=key)
    except IntegrityError:
        pass


def _regenerates(stored: list[str], common: int) -> bool:
    """Whether a call sharing `common` messages with the stored transcript asks again for its
    last reply (a regeneration, a retry, a repeated call) or replaces it."""
    return common >= len(stored) - 1


def _common_prefix(stored: list[str], incoming: list[str]) -> int:
    length = 0
    for old, new in zip(stored, incoming, strict=False):
        if old != new:
            break
        length += 1
    return length


def conversation_turn_log(
    *,
    user,
    messages: list[dict],
    session_id: uuid.UUID | None = None,
    app_id: str = "",
    app_task: bool = False,
    chat_id: str = "",
) -> LoggedTurn:
    """Store the messages of this call that the conversation has not stored yet.

    `chat_id`: the client's own id of the chat (X-OpenWebUI-Chat-Id and the like): one chat,
    one session. Without it a call continues the conversation's session only when its
    messages extend what that session holds (or regenerate its last reply); one that departs
    from it earlier is another chat that opened the same way, and gets a session of its own.

    `app_task`: a chat app's own background request (`is_app_task`); all of a user's go into
    one session, "Chat app tasks", rather than one session per request.

    With `session_id` the conversation is that session (NotFound: not the caller's; Conflict:
    not open). Otherwise a conversation whose session closed continues in a new session; when
    nothing in the call is new (a chat app started a new chat with the same opening), the new
    session gets the whole conversation. Hooks are NOT run: the caller runs
    `message_run_hooks` for `appended` (off the reply's critical path). One transaction; the
    conversation row is locked until it commits.
    """
    incoming = logged_messages(messages)
    incoming_hashes = [message_hash(role, text) for role, text in incoming]
    if app_task and session_id is None:
        key = first_message_key = _key(["app-task"])
    else:
        key, first_message_key = conversation_keys(
            messages=messages, session_id=session_id, chat_id=chat_id
        )
    with transaction.atomic():
        explicit = None
        if session_id is not None:
            explicit = session_get_for_user(user=user, session_id=session_id, lock=True)
            session_require_open(explicit)
        conversation, created, continued = _locked_conversation(user=user, key=key)
        stored = list(conversation.message_hashes or [])
        if created and key != first_message_key:
            continued, stored = _opening_session_adopt(
                user=user, key=first_message_key, incoming_hashes=incoming_hashes
            )
        if explicit is not None:
            explicit.user = user  # the caller's own session: spares a read of its user
            if created:
                stored = _stored_hashes(explicit)
        session = explicit or continued
        common = _common_prefix(stored, incoming_hashes)
        fork_of = ""
        # Only a chat known by its opening alone can turn out to be another chat.
        by_transcript = explicit is None and not chat_id and not app_task
        if (
            by_transcript
            and session is not None
            and common == len(incoming_hashes) < len(stored) - 1
        ):
            # Only the opening of a longer stored chat (shorter than a regeneration): a new
            # chat that opened the same way. It gets a conversation of its own, keyed once its
            # reply is stored (conversation_reply_store) by where it then departs.
            fork_of = key
            conversation, _, session = _locked_conversation(
                user=user, key=_key([key, "opening", uuid.uuid4().hex])
            )
            stored, common = [], 0
        forks = 0
        while (
            by_transcript
            and session is not None
            and common < min(len(stored), len(incoming_hashes))
            and not _regenerates(stored, common)
            and forks < MAX_FORKS
        ):
            # Departs from the stored transcript before its end: another chat that opened the
            # same way (or an earlier turn edited). It is its own conversation, keyed by where
            # it departs, so each of the two keeps its session whichever is called next.
            forks += 1
            key = _key([key, "fork", incoming_hashes[common]])
            conversation, _, session = _locked_conversation(user=user, key=key)
            stored = list(conversation.message_hashes or [])
            common = _common_prefix(stored, incoming_hashes)
        new_session = session is None
        if new_session:
            first_user = next((text for role, text in incoming if role == "user"), "")
            session = session_open(
                user=user,
                app_id=app_id,
                title=APP_TASK_TITLE if app_task else " ".join(first_user.split())[:TITLE_CHARS],
                agent_id=AGENT_ID,
                metadata={
                    "source": "openai_compat",
                    "gateway_conversation_id": conversation.id,
                    **({APP_TASKS_FLAG: True} if app_task else {}),
                },
            )
            if common == len(incoming_hashes):
                common = 0
        previous_reply_hash = ""
        if not new_session and common == len(incoming_hashes) and len(stored) == common + 1:
            previous_reply_hash = stored[common]
        elif not new_session and incoming_hashes and common == len(stored) == len(incoming_hashes):
            # Nothing new, and no reply recorded after it: a concurrent copy of this call may
            # have recorded the conversation up to the question again, after the first copy's
            # reply was stored. The session's last message tells (the same reply twice would
            # otherwise be stored as a regeneration).
            previous_reply_hash = _last_reply_hash(session)
        # The session is locked (explicit or continued) or new in this transaction: the new
        # messages go in as one insert.
        appended = messages_create(
            session=session,
            messages=incoming[common:],
            metadata={"source": "openai_compat"},
        )
        conversation.message_hashes = incoming_hashes if incoming_hashes else stored
        conversation.session = session
        _conversation_update(
            conversation, last_activity_at=appended[-1].created_at if appended else None
        )
    return LoggedTurn(
        conversation_id=conversation.id,
        session=session,
        appended=appended,
        stored_count=len(conversation.message_hashes),
        new_session=new_session,
        previous_reply_hash=previous_reply_hash,
        fork_of=fork_of,
    )


def conversation_reply_store(
    *,
    user,
    turn: LoggedTurn,
    text: str,
    model: str,
    tokens_in: int,
    tokens_out: int,
    metadata: dict | None = None,
    incomplete: bool = False,
) -> Message | None:
    """Store the model's reply (and its usage row) once per turn (`incomplete`: a reply cut
    off before its end).

    The reply is appended only if the conversation is still where this call left it: a
    concurrent call of the same conversation that stored its own reply (or moved on) first
    wins, so a retried request never leaves two replies to one question. A call repeated
    after its turn was answered (the SDK's retry of a lost response, an app resending) whose
    reply is the stored one word for word keeps that one; a different reply is a regeneration:
    it replaces the stored one (`_reply_replace`). Usage is always recorded (the tokens were
    spent). Returns the stored message or None; hooks not run.
    """
    message = None
    content = text[:MAX_MESSAGE_CHARS]
    if text.strip():
        with transaction.atomic():
            conversation = GatewayConversation.objects.select_for_update().get(
                id=turn.conversation_id
            )
            hashes = list(conversation.message_hashes or [])
            in_place = (
                len(hashes) == turn.stored_count and conversation.session_id == turn.session.id
            )
            reply_hash = message_hash(Message.Role.ASSISTANT, content)
            repeated = reply_hash == turn.previous_reply_hash  # already stored, word for word
            if in_place and not repeated:
                try:
                    message = message_append(
                        user=user,
                        session_id=turn.session.id,
                        role=Message.Role.ASSISTANT,
                        content=content,
                        model=model,
                        incomplete=incomplete,
                        metadata={"source": "openai_compat", **(metadata or {})},
                        run_hooks=False,
                    )
                except Conflict:
                    message = None  # the session closed while the model was answering
                if message is not None and turn.previous_reply_hash:
                    _reply_replace(turn.session, turn.previous_reply_hash, by=message)
            if in_place and (repeated or message is not None):
                conversation.message_hashes = [*hashes, reply_hash]
                conversation.save(update_fields=["message_hashes", "updated_at"])
                if turn.fork_of:
                    _fork_key_set(conversation, _key([turn.fork_of, "fork", reply_hash]))
    usage_record(
        user=user,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        session=turn.session,
        kind="chat",
    )
    return message


def conversation_turn_discard(*, user, turn: LoggedTurn) -> bool:
    """Undo a call whose upstream failed, when the call opened its session: the session (its
    messages and pack log with it) is deleted and the conversation forgets it, so a failed
    call leaves no session holding only a question and a retry starts afresh. Its messages
    were not indexed yet (the caller runs the hooks of a new session's first call only after
    the reply). A call that continued a session keeps its messages: a retry finds them."""
    if not turn.new_session:
        return False
    with transaction.atomic():
        GatewayConversation.objects.filter(
            id=turn.conversation_id, session_id=turn.session.id
        ).update(session=None, message_hashes=[])
        ChatSession.objects.filter(id=turn.session.id, user=user).delete()
    return True


def conversation_task_forget(*, user, turn: LoggedTurn) -> None:
    """Delete what a side-task call stored (its prompt and reply) once its usage is recorded:
    the tasks session is bookkeeping for the call, never a transcript."""
    with transaction.atomic():
        Message.objects.filter(session_id=turn.session.id, session__user=user).delete()
        GatewayConversation.objects.filter(id=turn.conversation_id).update(message_hashes=[])
