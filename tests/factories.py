"""Plain factory functions for test data (no factory library needed)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import F


def make_user(username: str, *, staff: bool = False, password: str = "pass-word-123"):
    user_model = get_user_model()
    user = user_model.objects.create_user(username=username, password=password, is_staff=staff)
    return user


def open_session(user, **fields):
    from sessions_app.services.sessions import session_open

    return session_open(user=user, **fields)


def add_message(session, role: str, content: str, **fields):
    from sessions_app.services.messages import message_append

    return message_append(
        user=session.user, session_id=session.id, role=role, content=content, **fields
    )


def chatgpt_conversation(
    title: str,
    turns: list[tuple[str, str]],
    *,
    started: int = 1714000000,
    conversation_id: str = "conv-1",
) -> dict:
    """One linear conversation of a ChatGPT `conversations.json`, said from `started` (epoch
    seconds) on, a minute a message."""
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for index, (role, text) in enumerate(turns):
        node = f"{conversation_id}-m{index}"
        mapping[parent]["children"] = [node]
        mapping[node] = {
            "id": node,
            "parent": parent,
            "children": [],
            "message": {
                "id": node,
                "author": {"role": role},
                "create_time": started + index * 60,
                "content": {"content_type": "text", "parts": [text]},
                "metadata": {},
            },
        }
        parent = node
    return {
        "title": title,
        "create_time": started,
        "update_time": started + 600,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": conversation_id,
        "id": conversation_id,
    }


def memory_write(
    user,
    content: str,
    *,
    source: str = "fact",
    embedding="hashed",
    app_id: str = "default",
    project_id: str = "",
    agent_id: str = "",
    chat_session=None,
    with_entities: bool = True,
    **fields,
):
    """A memory item written by the store's one writer (`memory_item_create`), as production
    writes it: content hash, token count, provenance, folded accents, category words, bucket
    and entities. `embedding`: "hashed" (the fake embedder's deterministic vector), "model" (the
    configured embedder), None (not embedded yet) or a vector."""
    from ingestion_app.services.memory_store import MemoryScope, memory_item_create
    from memory_site.providers import embed_one
    from tests.fake_openai import hashed_embedding

    if fields.get("chat_session_id") is not None:
        from sessions_app.models import ChatSession

        chat_session = ChatSession.objects.get(id=fields["chat_session_id"])
    fields.pop("chat_session_id", None)
    if embedding == "hashed":
        embedding = hashed_embedding(content, 384)
    elif embedding == "model":
        embedding = embed_one(content)
    scope = MemoryScope(
        user_id=user.pk,
        app_id=app_id,
        project_id=project_id,
        agent_id=agent_id,
        chat_session=chat_session,
    )
    return memory_item_create(
        scope=scope,
        source=source,
        content=content,
        embedding=embedding,
        with_entities=with_entities,
        **fields,
    )


def lease_run_out(model, job_id) -> None:
    """Move a job's last heartbeat back past its lease (MNEMO_JOB_LEASE_SECONDS): what the time a
    dead worker's lease takes to run out does, without a test waiting for it."""
    model.objects.filter(id=job_id).update(
        heartbeat_at=F("heartbeat_at") - timedelta(seconds=settings.MNEMO_JOB_LEASE_SECONDS + 1)
    )
