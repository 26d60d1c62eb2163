"""What is stored as memory and how it describes itself (issues 15 and 22, write side):
passages of long messages, the not-indexed rule, one exchange key per exchange, provenance
labels, export frontmatter for every kind, original dates of imports, the re-index command."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
import yaml
from django.core.management import call_command

from ingestion_app.models import MemoryItem
from ingestion_app.services.documents import document_ingest
from ingestion_app.services.memory_store import MemoryScope, memory_item_create
from memory_site.providers.local import NO_MODEL_NOTICE
from retrieval.search import memory_search
from tests.factories import add_message, open_session
from tests.ingestion_app.export_builders import chatgpt_linear, write_json

pytestmark = pytest.mark.django_db

FILLER = [
    "Planning a lake trip in the Alps works best when you book the first night early.",
    "Trains from Salzburg run every hour and the scenery on the way is worth the window seat.",
    "Most guesthouses ask for cash on arrival, so keep some euros at hand for the stay.",
    "The old town gets crowded by ten in the morning when the tour buses arrive.",
    "An early walk along the shore is the quietest way to see the village.",
]
FACT = "The ferry to Hallstatt leaves at 7:40 from pier three, and it is the only one before noon."


def long_reply() -> str:
    return " ".join([*FILLER, *FILLER[:3], FACT, *FILLER[2:], *FILLER[:2]])


def items_of(session):
    return list(MemoryItem.objects.filter(chat_session=session).order_by("id"))


def message_items_of(session):
    return [i for i in items_of(session) if i.metadata.get("granularity") == "message"]


def test_a_fact_in_the_middle_of_a_long_reply_is_its_own_passage(user, fake_embedder):
    session = open_session(user, title="Trip planning")
    when = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)
    add_message(
        session, "user", "I am going to Hallstatt next week with my sister.", created_at=when
    )
    reply = add_message(session, "assistant", long_reply(), created_at=when)

    passages = [i for i in message_items_of(session) if i.metadata["message_id"] == reply.id]

    assert len(passages) >= 3
    holding = [p for p in passages if "7:40 from pier three" in p.content]
    assert len(holding) == 1
    passage = holding[0]
    # Much shorter than the reply, and it says who, when and which chat.
    assert len(passage.content) < len(reply.content_sanitized) / 2
    assert passage.content.startswith("Assistant: ")
    assert passage.header == "3 November 2026: Assistant in chat 'Trip planning'"
    assert passage.source_message_ids == [reply.id]
    meta = passage.metadata["passage"]
    assert meta["count"] == len(passages)
    assert reply.content_sanitized[meta["start"] : meta["end"]] in passage.content
    assert passage.occurred_at == when
    # Every passage is embedded (in the hook's one embedder call).
    assert all(p.embedding is not None for p in passages)
    # Search finds the passage itself, not only the whole reply.
    result = memory_search(
        user=user, query="ferry Hallstatt pier", mode="keyword", sources=["chunk"], top_k=5
    )
    assert passage.id in [hit.id for hit in result.items]


def test_short_turns_stay_whole(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "My sister Anna is allergic to peanuts.")

    (item,) = message_items_of(session)

    assert item.content == "User: My sister Anna is allergic to peanuts."
    assert "passage" not in item.metadata


@pytest.mark.parametrize(
    "text",
    [
        "Hi!",
        "thanks, got it",
        "Thanks so much, that's really helpful!",
        "Great, thanks a lot!",
        "What am I allergic to?",
        f"{NO_MODEL_NOTICE}\n\nContext it would have used:\n[Relevant memories]\n- peanuts",
        'Sure. [Relevant memories]\n(3 Nov 2026) "User: I am allergic to peanuts."',
    ],
    ids=[
        "greeting",
        "acknowledgement",
        "thanks for the help",
        "thanks a lot",
        "content-free question",
        "offline reply",
        "pack echo",
    ],
)
def test_messages_without_information_are_not_memories(user, fake_embedder, text):
    session = open_session(user)
    add_message(session, "user", "I moved to Denver in March for a new job.")
    add_message(session, "assistant", text)

    stored = [i.content for i in message_items_of(session)]
    boilerplate = NO_MODEL_NOTICE in text or "[Relevant memories]" in text

    assert stored == ["User: I moved to Denver in March for a new job."]
    # The user's statement is kept; a boilerplate reply does not even make a turn-pair chunk.
    has_chunk = any(i.metadata.get("kind") == "turn_pair" for i in items_of(session))
    assert has_chunk is not boilerplate


def test_the_offline_reply_is_not_indexed(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "My cat is called Pixel.")
    add_message(session, "assistant", "Mnemo has no model; your message was noted.", model="local")

    assert [i.content for i in items_of(session)] == ["User: My cat is called Pixel."]


def test_one_exchange_shares_one_exchange_key(user, fake_embedder):
    session = open_session(user)
    add_message(session, "user", "I want to prune my roses this weekend.")
    add_message(session, "assistant", long_reply())
    add_message(session, "user", "I also grow tulips by the fence.")

    items = items_of(session)
    first_exchange = [i for i in items if "tulips" not in i.content]
    keys = {i.metadata["exchange_key"] for i in first_exchange}

    assert len(first_exchange) >= 3  # the prompt, the reply's passages, the turn-pair chunk
    assert any(i.metadata.get("kind") == "turn_pair" for i in first_exchange)
    assert len(keys) == 1
    (later,) = [i for i in items if "tulips" in i.content]
    assert later.metadata["exchange_key"] not in keys


def test_provenance_of_a_chat_item(user, fake_embedder):
    session = open_session(user, title="Trip planning")
    add_message(
        session,
        "user",
        "I booked the guesthouse by the lake.",
        created_at=datetime(2026, 11, 3, tzinfo=UTC),
    )

    (item,) = items_of(session)

    assert item.metadata["provenance"] == "Chat 'Trip planning', 3 Nov 2026"


def test_provenance_of_a_document_and_a_fact(user, fake_embedder):
    document, _ = document_ingest(
        user=user, text="Employees get 30 days of leave.", filename="handbook.txt"
    )
    fact = memory_item_create(
        scope=MemoryScope(user_id=user.pk, app_id="default"),
        source=MemoryItem.Source.FACT,
        content="Allergic to peanuts",
    )

    chunk = MemoryItem.objects.get(metadata__document_id=str(document.id))
    assert chunk.metadata["provenance"] == "Document 'handbook.txt'"
    assert fact.metadata["provenance"] == "Committed fact"


def _import_export(tmp_path, user, exchanges, *, title="Visa paperwork", start=None):
    kwargs = {"start": start} if start is not None else {}
    write_json(tmp_path / "c.json", [chatgpt_linear(title, exchanges, **kwargs)])
    call_command(
        "import_conversations",
        str(tmp_path / "c.json"),
        "--user",
        user.username,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


def test_an_import_keeps_its_original_date_provenance_and_passages(
    user, tmp_path, fake_embedder, upload_dir
):
    said = datetime(2024, 2, 12, 10, 0, tzinfo=UTC)
    _import_export(
        tmp_path,
        user,
        [("Help me plan my Austria trip, I live in Austin.", long_reply())],
        start=said.timestamp(),
    )

    items = list(MemoryItem.objects.filter(user=user).order_by("id"))
    chunk = next(i for i in items if i.metadata.get("pair_keys"))
    passages = [i for i in items if i.metadata.get("granularity") == "passage"]

    assert chunk.occurred_at.date() == said.date()
    assert chunk.metadata["provenance"] == (
        "Imported from ChatGPT export, conversation 'Visa paperwork', 12 Feb 2024"
    )
    assert passages and all(p.occurred_at.date() == said.date() for p in passages)
    holding = [p for p in passages if "7:40 from pier three" in p.content]
    assert len(holding) == 1
    assert holding[0].metadata["exchange_key"] == chunk.metadata["exchange_key"]
    assert holding[0].metadata["message_id"]
    assert holding[0].metadata["provenance"] == chunk.metadata["provenance"]


def test_the_prompt_of_an_imported_long_exchange_is_found_on_its_own(
    user, tmp_path, fake_embedder, upload_dir
):
    prompt = "I paid $200 for the two-day writing workshop at the literary festival."
    _import_export(
        tmp_path,
        user,
        [
            (prompt, long_reply()),
            ("Thanks, that helps.", "Glad it helped."),  # a short exchange: the chunk is enough
        ],
    )

    items = list(MemoryItem.objects.filter(user=user).order_by("id"))
    chunk = next(i for i in items if i.metadata.get("pair_keys") and prompt in i.content)
    own = [
        i
        for i in items
        if i.metadata.get("granularity") == "passage" and i.metadata["role"] == "user"
    ]
    assert [i.content for i in own] == [f"User: {prompt}"]
    assert own[0].metadata["exchange_key"] == chunk.metadata["exchange_key"]
    assert own[0].embedding is not None
    # The exchange takes one slot and comes back short, whichever of its items ranks first.
    hits = memory_search(user=user, query="How much did the writing workshop cost me?").items
    assert prompt in hits[0].content and len(hits[0].content) < len(chunk.content) / 2
    assert len({hit.metadata.get("exchange_key") for hit in hits}) == len(hits)


def test_a_reply_passage_embeds_its_date_and_its_own_text_only(
    user, tmp_path, fake_embedder, upload_dir
):
    prompt = "Help me plan my Austria trip, I live in Austin."
    _import_export(
        tmp_path,
        user,
        [(prompt, long_reply())],
        start=datetime(2024, 2, 12, 10, 0, tzinfo=UTC).timestamp(),
    )

    passages = MemoryItem.objects.filter(
        user=user, metadata__granularity="passage", metadata__role="assistant"
    )
    assert passages.count() > 1
    for passage in passages:
        # The prompt is embedded with the exchange's chunk and as its own passage already.
        assert passage.embedding_text == f"(12 February 2024) {passage.content}"
        assert prompt not in passage.embedding_text
        assert passage.embedding is not None


def test_export_chunks_writes_real_frontmatter_for_every_kind(
    user, tmp_path, fake_embedder, upload_dir
):
    _import_export(tmp_path, user, [("I live in Austin and work as a nurse.", long_reply())])
    session = open_session(user, title="Garden")
    when = datetime(2026, 5, 8, 13, 56, tzinfo=UTC)
    add_message(session, "user", "I planted tomatoes on the balcony.", created_at=when)
    add_message(session, "assistant", long_reply(), created_at=when)
    document_ingest(user=user, text="Employees get 30 days of leave.", filename="handbook.txt")
    memory_item_create(
        scope=MemoryScope(user_id=user.pk, app_id="default"),
        source=MemoryItem.Source.FACT,
        content="Allergic to peanuts",
    )
    out_dir = tmp_path / "export"

    call_command("export_chunks", str(out_dir), "--user", user.username, stdout=io.StringIO())

    files = list(out_dir.glob("*.md"))
    assert len(files) == MemoryItem.objects.filter(user=user).count()
    by_kind: dict[str, list[dict]] = {}
    for path in files:
        frontmatter = yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])
        by_kind.setdefault(frontmatter["kind"], []).append(frontmatter)
    assert set(by_kind) == {"turn_pair", "message", "passage", "document", "fact"}
    for kind, entries in by_kind.items():
        for frontmatter in entries:
            assert frontmatter["timestamp"] and not frontmatter["timestamp"].startswith("0000")
            assert frontmatter["source_platform"], kind
            assert frontmatter["provenance"], kind
            assert frontmatter["chunk_id"], kind
    message = next(f for f in by_kind["message"] if f["conversation_title"] == "Garden")
    assert message["timestamp"].startswith("2026-05-08")
    assert message["source_file"] == f"{session.id}.md"
    assert message["provenance"] == "Chat 'Garden', 8 May 2026"
    assert by_kind["document"][0]["conversation_title"]
    assert by_kind["document"][0]["source_file"] == "handbook.txt"


def test_reindex_moves_old_items_into_passages_and_is_idempotent(user, fake_embedder):
    session = open_session(user, title="Trip planning")
    add_message(session, "user", "Hello!")
    reply = add_message(session, "assistant", long_reply())
    # Data written before passages: one whole item, no labels; a greeting item.
    MemoryItem.objects.filter(chat_session=session).delete()
    for message in (reply,):
        memory_item_create(
            scope=MemoryScope.of_session(session),
            source=MemoryItem.Source.CHUNK,
            content=f"Assistant: {message.content_sanitized}",
            chunk_id=f"msg-{message.id}",
            source_message_ids=[message.id],
            metadata={"granularity": "message", "message_id": message.id, "provenance": ""},
        )

    call_command("memory_reindex", stdout=io.StringIO())
    first = sorted((i.chunk_id, i.content) for i in message_items_of(session))
    out = io.StringIO()
    call_command("memory_reindex", stdout=out)

    assert len(first) >= 3
    assert any("7:40 from pier three" in content for _, content in first)
    assert all(i.metadata["exchange_key"] for i in message_items_of(session))
    assert sorted((i.chunk_id, i.content) for i in message_items_of(session)) == first
    assert "messages re-indexed: 0" in out.getvalue()


def test_reindex_gives_chunks_imported_under_the_old_rule_their_prompt_passage(
    user, tmp_path, fake_embedder, upload_dir
):
    prompt = "I paid $200 for the two-day writing workshop at the literary festival."
    _import_export(tmp_path, user, [(prompt, long_reply())])
    # As imported before the prompt of a long exchange became a passage (rule 1).
    MemoryItem.objects.filter(user=user, content=f"User: {prompt}").delete()
    for chunk in MemoryItem.objects.filter(user=user, metadata__has_key="pair_keys"):
        del chunk.metadata["passage_rule"]
        chunk.save(update_fields=["metadata"])
    passages_before = MemoryItem.objects.filter(user=user, metadata__granularity="passage").count()

    out = io.StringIO()
    call_command("memory_reindex", stdout=out)
    again = io.StringIO()
    call_command("memory_reindex", stdout=again)

    assert "import passages added: 1" in out.getvalue()
    restored = MemoryItem.objects.get(user=user, content=f"User: {prompt}")
    assert restored.embedding is not None and restored.metadata["exchange_key"]
    assert (
        MemoryItem.objects.filter(user=user, metadata__granularity="passage").count()
        == passages_before + 1
    )
    assert "items labelled: 0, import passages added: 0" in again.getvalue()


def test_reindex_gives_items_written_before_category_words_theirs_once(user, fake_embedder):
    session = open_session(user, title="Weekend")
    add_message(session, "user", "I signed up for a pottery class on Thursdays.")
    item = MemoryItem.objects.get(chat_session=session, metadata__granularity="message")
    assert item.keyword_context.endswith("activity activities hobby hobbies art artwork")
    # As written before category words existed.
    MemoryItem.objects.filter(id=item.id).update(keyword_context="")

    out = io.StringIO()
    call_command("memory_reindex", stdout=out)
    again = io.StringIO()
    call_command("memory_reindex", stdout=again)

    item.refresh_from_db()
    assert item.keyword_context == "activity activities hobby hobbies art artwork"
    assert "items given category words: 1" in out.getvalue()
    assert "items given category words: 0" in again.getvalue()
