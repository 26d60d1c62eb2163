"""The retrieval service (context_app.selectors.memory_search): scope, modes, fusion, filters,
threshold, budget and the prompt format. Embeddings come from the local all-MiniLM-L6-v2, so
"semantic" means what it means in production."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from ingestion_app.selectors import memory_stats
from memory_site.errors import InvalidInput
from memory_site.providers import get_embedder
from retrieval import scope as search_scope
from retrieval.config import RANKING, ranking_with
from retrieval.search import (
    SearchFilters,
    format_for_prompt,
    memory_search,
    search_vector_text,
)
from tests.factories import add_message, memory_write, open_session

pytestmark = pytest.mark.django_db

MODES = ("hybrid", "semantic", "keyword")


def remember(user, content: str, *, source: str = "fact", days_ago: float = 0, **fields):
    """A memory row as the write paths store it: sanitized text, embedding, token count."""
    when = fields.pop("occurred_at", None) or timezone.now() - timedelta(days=days_ago)
    return memory_write(
        user,
        content,
        source=source,
        embedding="model",
        occurred_at=when,
        created_at=when,
        **fields,
    )


def ids(result) -> list[int]:
    return [hit.id for hit in result.items]


# --- scope ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "query",
    [
        "The secret launch code of the Andromeda project is 7741.",
        "Andromeda",
        '"launch code"',
        "a",
        "'; DROP TABLE rag_store; --",
    ],
)
def test_another_users_or_apps_memory_never_appears(user, other_user, mode, query):
    secret = "The secret launch code of the Andromeda project is 7741."
    theirs = remember(other_user, secret)
    other_app = remember(user, secret, app_id="another-app")
    mine = remember(user, "I water the Andromeda ficus on Sundays.")

    result = memory_search(user=user, query=query, mode=mode, min_similarity=None, top_k=50)

    assert theirs.id not in ids(result)
    assert other_app.id not in ids(result)
    assert set(ids(result)) <= {mine.id}
    mine_for_them = memory_search(user=other_user, query=query, mode=mode, min_similarity=None)
    assert mine.id not in ids(mine_for_them)


@pytest.mark.parametrize("path", ["exact", "big"])
def test_another_users_conversation_never_appears(user, other_user, request, path):
    if path == "big":  # sampled BM25, speaker index, HNSW: see big_scope_paths below
        request.getfixturevalue("big_scope_paths")
    theirs = open_session(other_user)
    add_message(theirs, "user", "My bank PIN is hidden under the Zanzibar postcard.")
    add_message(theirs, "assistant", "Noted, the Zanzibar postcard.")
    mine = open_session(user)
    add_message(mine, "user", "I bought a postcard in Lisbon.")

    for mode in MODES:
        # No relevance floor: this test is about scope (the floor would drop a query naming
        # "Zanzibar", which this user never mentioned; see test_search_trust).
        result = memory_search(
            user=user, query="Zanzibar postcard PIN", mode=mode, top_k=50, min_relevance=0
        )
        assert all("Zanzibar" not in hit.content for hit in result.items), mode
        assert result.items, mode  # my own postcard message is still found


# --- modes ------------------------------------------------------------------------------------


TICKETS = [
    "Ticket KX-93241: printer jams on floor 3.",
    "Ticket KX-39214: VPN drops every hour.",
    "Ticket KX-93214: badge reader broken.",
    "Ticket KX-93124: monitor flickers.",
    "Ticket KX-92314: laptop battery swollen.",
]


def test_keyword_mode_finds_an_exact_name_semantic_search_misses(user):
    items = {text: remember(user, text) for text in TICKETS}
    wanted = items["Ticket KX-93214: badge reader broken."]

    semantic = memory_search(user=user, query="KX-93214", mode="semantic", top_k=1)
    keyword = memory_search(user=user, query="KX-93214", mode="keyword", top_k=1)
    hybrid = memory_search(user=user, query="KX-93214", mode="hybrid", top_k=3)

    assert ids(semantic) != [wanted.id]
    assert ids(keyword) == [wanted.id]
    assert wanted.id in ids(hybrid)  # the keyword side brings it into the fused top 3


@pytest.mark.xfail(
    strict=True,
    reason="on rows the store writes, 'The Kitchen Faucet' (an album) is an entity, and the "
    "entity leg's rank 1 for the lower-case 'kitchen faucet' lifts it over the answer, though "
    "its relevance is lower (0.53 against 0.90)",
)
def test_hybrid_ranks_the_memory_matching_both_signals_first(user):
    both = remember(user, "Fixing the leaking kitchen faucet needs a new rubber washer.")
    meaning_only = remember(
        user, "Water dripping from the tap under the sink stops once the seal is replaced."
    )
    words_only = remember(user, "The Kitchen Faucet is the name of our band's first album.")
    remember(user, "I repainted the bedroom walls blue.")

    result = memory_search(
        user=user, query="How do I fix a leaking kitchen faucet?", min_similarity=None
    )

    assert ids(result)[0] == both.id
    assert {meaning_only.id, words_only.id} <= set(ids(result))
    semantic = memory_search(user=user, query="kitchen faucet leaking", mode="semantic")
    keyword = memory_search(user=user, query="kitchen faucet leaking", mode="keyword")
    assert meaning_only.id in ids(semantic) and meaning_only.id not in ids(keyword)


def test_semantic_mode_scores_are_similarities_in_order(user):
    for text in TICKETS:
        remember(user, text)

    result = memory_search(user=user, query="broken badge reader", mode="semantic")

    similarities = [hit.similarity for hit in result.items]
    assert similarities == sorted(similarities, reverse=True)
    assert all(hit.score == pytest.approx(hit.similarity) for hit in result.items)
    assert all(hit.keyword_rank is None for hit in result.items)


def test_keyword_mode_needs_no_embedder(user, settings):
    remember(user, "The spare key is in the blue flowerpot.")
    settings.EMBEDDING_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens: embedding would fail
    settings.LLM_TIMEOUT_SECONDS = 0.5
    settings.LLM_MAX_RETRIES = 0

    result = memory_search(user=user, query="where is the spare key", mode="keyword")

    assert [hit.content for hit in result.items] == ["The spare key is in the blue flowerpot."]
    assert result.items[0].keyword_rank > 0 and result.query_embedding_ms == 0


def test_quoted_phrase_must_match(user):
    exact = remember(user, "We met at the blue door cafe.")
    remember(user, "The door was blue and the cafe was closed.")

    result = memory_search(user=user, query='"blue door"', mode="keyword")

    assert ids(result) == [exact.id]


@pytest.mark.parametrize(
    "arguments, field",
    [({"mode": "fuzzy"}, "mode"), ({"sources": ["email"]}, "sources"), ({"top_k": 0}, "top_k")],
)
def test_bad_arguments_are_refused(user, arguments, field):
    with pytest.raises(InvalidInput) as error:
        memory_search(user=user, query="anything", **arguments)
    assert error.value.field == field


# --- threshold, budget, packing ------------------------------------------------------------------


def test_similarity_threshold_drops_unrelated_memories(user):
    related = remember(user, "My daughter Ana is learning the violin.")
    unrelated = remember(user, "Quarterly tax forms are due in April.")

    loose = memory_search(
        user=user, query="Ana violin lessons", min_similarity=None, min_relevance=0
    )
    strict = memory_search(user=user, query="Ana violin lessons", min_similarity=0.4)

    assert set(ids(loose)) == {related.id, unrelated.id}
    assert ids(strict) == [related.id]
    assert all(hit.similarity >= 0.4 for hit in strict.items)
    # Keyword mode has no similarity to threshold on.
    keyword = memory_search(user=user, query="Ana violin", mode="keyword", min_similarity=0.99)
    assert ids(keyword) == [related.id]


def test_token_budget_and_top_k_are_honoured(user):
    for index in range(12):
        remember(user, f"Garden note {index}: the tomatoes need water " + "and care " * index)

    result = memory_search(user=user, query="garden tomatoes water", max_tokens=60, top_k=10)

    assert 0 < result.total_tokens_used <= 60
    assert result.total_tokens_used == sum(hit.token_count for hit in result.items)
    unlimited = memory_search(user=user, query="garden tomatoes water", max_tokens=None, top_k=10)
    assert len(unlimited.items) == 10
    # Packed in rank order; an item too long for what is left is skipped, not the end: the
    # budgeted result is the unbudgeted ranking without the items that did not fit.
    kept = set(ids(result))
    assert ids(result) == [item_id for item_id in ids(unlimited) if item_id in kept]
    used = 0
    for hit in unlimited.items:
        if hit.id in kept:
            used += hit.token_count
        else:
            assert used + hit.token_count > 60


def test_messages_are_never_returned_twice(user):
    session = open_session(user)
    add_message(session, "user", "Which wood is best for a sauna bench? Mine is rotting.")
    reply = add_message(session, "assistant", "Abachi or aspen: they stay cool to the touch.")

    result = memory_search(user=user, query="sauna bench wood abachi aspen", top_k=10)

    seen: set[int] = set()
    for hit in result.items:
        assert not set(hit.source_message_ids) & seen, "an item repeated covered messages"
        seen |= set(hit.source_message_ids)
    assert reply.id in seen


# --- ranking rules ------------------------------------------------------------------------------


def conversation(user, turns: list[tuple[str, str]]):
    session = open_session(user)
    for speaker, text in turns:
        role = "user" if speaker == "Caroline" else "assistant"
        add_message(session, role, text, metadata={"speaker": speaker})
    return session


def test_question_naming_a_speaker_prefers_their_messages(user):
    conversation(
        user,
        [
            ("Melanie", "I went hiking near the lake last weekend."),
            ("Caroline", "I went hiking in the mountains last weekend."),
            ("Melanie", "The lake trail was muddy."),
        ],
    )

    result = memory_search(user=user, query="Where did Caroline go hiking?", sources=["chunk"])

    first = result.items[0]
    assert first.metadata["granularity"] == "message"
    # Caroline's own message leads its slot; the reply of the same exchange follows it there.
    assert first.content.splitlines()[0] == "Caroline: I went hiking in the mountains last weekend."
    assert all("Caroline: I went hiking" not in hit.content for hit in result.items[1:])


def test_question_naming_a_speaker_finds_their_answer_before_their_small_talk(user):
    # No word of the question is in the answer: the vector leg decides. With the name in the
    # query's vector, "Melanie: Good, thanks!" (mostly her name) ranked above her answer.
    conversation(
        user,
        [
            ("Melanie", "Long runs by the river calm me down after work."),
            ("Caroline", "Hey Melanie, how are you, Melanie?"),
            ("Melanie", "Good, thanks!"),
            ("Caroline", "Melanie, you look great!"),
            ("Melanie", "Aw, you're sweet."),
            ("Caroline", "So nice to see you, Melanie."),
            ("Melanie", "Same here, honestly."),
            ("Caroline", "Melanie, you deserve some rest."),
            ("Melanie", "I know, I know."),
            ("Caroline", "Take care of yourself, Melanie."),
            ("Melanie", "I will, promise."),
        ],
    )

    result = memory_search(user=user, query="What does Melanie do to relax?", sources=["chunk"])

    assert result.items[0].content == "Melanie: Long runs by the river calm me down after work."


def test_keyword_search_leaves_out_the_names_and_the_year_every_message_holds(user):
    # Each message's header holds its speaker and its date ("8 May 2026: Melanie"), its keyword
    # context the messages around it: the lake comes last, far from the first two.
    conversation(
        user,
        [
            ("Caroline", "I painted a sunset yesterday."),
            ("Melanie", "My kids love the beach."),
            ("Caroline", "The tomatoes in my garden are ripe."),
            ("Melanie", "I started a pottery class."),
            ("Caroline", "I went hiking near the lake last weekend."),
        ],
    )
    query = f"What did Caroline and Melanie say about the lake in {timezone.now().year}?"
    as_before = RANKING.replace(
        keyword_drops_common_year=False, keyword_drops_every_named_speaker=False
    )

    hits = memory_search(user=user, query=query, mode="keyword", sources=["chunk"]).items
    every_message = memory_search(
        user=user, query=query, mode="keyword", sources=["chunk"], config=as_before
    ).items

    found = " ".join(hit.content for hit in hits)
    assert hits[0].content == "Caroline: I went hiking near the lake last weekend."
    assert "sunset" not in found and "beach" not in found
    read_whole = " ".join(hit.content for hit in every_message)
    assert "sunset" in read_whole and "beach" in read_whole


def test_a_query_of_only_the_common_year_still_searches_for_it(user):
    conversation(user, [("Melanie", "I went hiking near the lake last weekend.")])
    year = str(timezone.now().year)

    hits = memory_search(user=user, query=year, mode="keyword", sources=["chunk"]).items

    assert hits and "hiking near the lake" in hits[0].content


@pytest.mark.parametrize(
    ("years", "common"),
    [((2023, 2023, 2023, 2024), "2023"), ((2022, 2022, 2023, 2023, 2024, 2024), "")],
)
def test_the_year_most_of_a_scope_was_said_in(user, years, common):
    from django.db import connection

    for index, year in enumerate(years):
        remember(user, f"note {index}", occurred_at=datetime(year, 3, 1, tzinfo=UTC))
    scope, params = search_scope.scope_sql(
        user_id=user.id, app_id="default", sources=["fact"], filters=SearchFilters()
    )

    with connection.cursor() as cursor:
        stats = search_scope.scope_stats(cursor, scope=scope, params=params)

    assert stats.count == len(years) and stats.common_year == common


class CountingEmbedder:
    """The real embedder, with the texts it was asked to embed."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_a_question_naming_a_speaker_is_embedded_once_without_the_name(user, monkeypatch):
    conversation(
        user,
        [
            ("Melanie", "Long runs by the river calm me down after work."),
            ("Caroline", "Hey Melanie, how are you, Melanie?"),
            ("Melanie", "Good, thanks!"),
        ],
    )
    from retrieval import query as selectors

    counting = CountingEmbedder(get_embedder())
    monkeypatch.setattr(selectors, "get_embedder", lambda: counting)
    query = "What does Melanie do to relax?"

    alone = memory_search(user=user, query=query, sources=["chunk"])
    assert counting.texts == ["What does do to relax?"]

    # A caller that embeds ahead embeds the same text and the search embeds nothing.
    text = search_vector_text(user=user, query=query, sources=["chunk"])
    assert text == "What does do to relax?"
    vector = get_embedder().embed([text])[0]
    counting.texts.clear()
    ahead = memory_search(
        user=user, query=query, sources=["chunk"], query_embedding=vector, query_embedding_text=text
    )
    assert counting.texts == []
    assert [hit.id for hit in ahead.items] == [hit.id for hit in alone.items]

    # One that embedded the whole question (the context pack) gets the name's direction taken
    # out of its vector: at most the name itself is embedded, once per process.
    whole = get_embedder().embed([query])[0]
    derived = memory_search(user=user, query=query, sources=["chunk"], query_embedding=whole)
    assert set(counting.texts) <= {"Melanie"}
    assert derived.items[0].content == alone.items[0].content


def test_an_answer_next_to_the_matching_question_is_found(user):
    conversation(
        user,
        [
            ("Caroline", "What instrument does your son play these days?"),
            ("Melanie", "He switched to the cello last spring."),
            ("Caroline", "Nice!"),
        ],
    )

    result = memory_search(user=user, query="what instrument does the son play", top_k=3)

    # The question itself is not a memory (memory_store's rule); the answer is returned (as its
    # message item or inside the exchange's turn-pair chunk).
    assert any("He switched to the cello last spring." in hit.content for hit in result.items)
    assert not any(hit.content.startswith("Caroline: What instrument") for hit in result.items)


def test_recency_weight_puts_the_newer_of_equal_memories_first(user):
    old = remember(user, "Lunch with Priya at the ramen bar.", days_ago=300)
    new = remember(user, "Lunch with Priya at the ramen bar!", days_ago=1)

    plain = memory_search(user=user, query="lunch with Priya", recency_half_life_days=None)
    weighted = memory_search(user=user, query="lunch with Priya", recency_half_life_days=30)

    assert ids(weighted)[0] == new.id
    assert set(ids(plain)) == {old.id, new.id}
    old_hit = next(hit for hit in weighted.items if hit.id == old.id)
    assert old_hit.score < next(hit for hit in plain.items if hit.id == old.id).score


# --- filters ------------------------------------------------------------------------------------


def test_filters_narrow_the_scope(user):
    session = open_session(user)
    base = datetime(2024, 3, 10, tzinfo=UTC)
    in_project = remember(user, "Bake sourdough bread", project_id="kitchen", occurred_at=base)
    by_agent = remember(user, "Sourdough bread schedule", agent_id="baker", occurred_at=base)
    in_session = remember(
        user, "Sourdough bread starter", chat_session=session, occurred_at=base + timedelta(5)
    )
    tagged = remember(
        user, "Sourdough bread flour", topics=["flour"], occurred_at=base + timedelta(10)
    )
    summary = remember(
        user, "Summary: sourdough bread", source="summary", occurred_at=base + timedelta(20)
    )
    query = "sourdough bread"

    def found(**filters):
        sources = filters.pop("sources", None)
        extra = {"sources": sources} if sources else {}
        return set(
            ids(memory_search(user=user, query=query, filters=SearchFilters(**filters), **extra))
        )

    everything = {in_project.id, by_agent.id, in_session.id, tagged.id, summary.id}
    assert found() == everything
    assert found(project_id="kitchen") == {in_project.id}
    assert found(agent_id="baker") == {by_agent.id}
    assert found(chat_session_id=str(session.id)) == {in_session.id}
    assert found(exclude_chat_session_id=str(session.id)) == everything - {in_session.id}
    assert found(topics=["flour", "yeast"]) == {tagged.id}
    assert found(since=base + timedelta(1)) == {in_session.id, tagged.id, summary.id}
    assert found(until=base + timedelta(6)) == {in_project.id, by_agent.id, in_session.id}
    assert found(sources=["summary"]) == {summary.id}


# --- prompt format and stats ------------------------------------------------------------------


def test_format_for_prompt_quotes_items_with_date_never_the_header(user):
    session = open_session(user)
    add_message(
        session,
        "user",
        "I went to a support group yesterday.",
        metadata={"speaker": "Caroline"},
        created_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
    )
    remember(
        user,
        "Caroline\nvolunteers at the shelter.",
        header="A long contextual header that must not be shown.",
        occurred_at=datetime(2023, 6, 1, tzinfo=UTC),
    )

    result = memory_search(
        user=user, query="Caroline support group shelter", sources=["chunk", "fact"]
    )
    text = format_for_prompt(result.items)

    assert '(8 May 2023) "Caroline: I went to a support group yesterday."' in text.splitlines()
    assert '(1 June 2023, fact) "Caroline volunteers at the shelter."' in text.splitlines()
    assert "contextual header" not in text


def test_stats_count_only_the_callers_memories(user, other_user):
    remember(user, "a", project_id="p1", topics=["cooking", "bread"])
    remember(user, "b", source="summary", project_id="p1", topics=["cooking"])
    remember(user, "c", source="chunk", app_id="other")
    remember(other_user, "d", project_id="p1", topics=["cooking"])

    stats = memory_stats(user=user)
    one_app = memory_stats(user=user, app_id="default")

    assert stats["total"] == 3
    assert stats["by_source"] == {"fact": 1, "chunk": 1, "summary": 1, "document": 0}
    assert stats["by_project"] == {"p1": 2, "": 1}
    assert stats["by_topic"] == {"cooking": 2, "bread": 1}
    assert one_app["total"] == 2 and one_app["by_source"]["chunk"] == 0


# --- big scopes ---------------------------------------------------------------------------------


def test_big_scope_path_ranks_like_the_exact_one(user):
    for text in TICKETS + [
        "The badge office is on floor 2.",
        "Printer paper is in the cupboard.",
        "Badge photos are taken on Mondays.",
    ]:
        remember(user, text)
    query = "broken badge reader ticket"

    exact = memory_search(user=user, query=query, mode="keyword")
    big = memory_search(
        user=user, query=query, mode="keyword", config=RANKING.replace(single_statement_items=0)
    )

    assert ids(big) == ids(exact)
    assert [hit.keyword_rank for hit in big.items] == pytest.approx(
        [hit.keyword_rank for hit in exact.items]
    )
    # Pruned to the rarest term's rows, the best match still comes first.
    pruned = memory_search(
        user=user,
        query=query,
        mode="keyword",
        config=RANKING.replace(single_statement_items=0, prune_df=1),
    )
    assert ids(pruned)[0] == ids(exact)[0]
    assert len(pruned.items) < len(exact.items)


@pytest.fixture
def big_scope_paths(monkeypatch):
    """Every scope takes the paths of big ones: sampled BM25, speakers from the speaker index,
    the vector query forced onto HNSW (user condition kept off the btree)."""
    monkeypatch.setattr(
        search_scope, "_table_stats_cached", (0.0, search_scope.TableStats(0.0, {}))
    )
    with ranking_with(RANKING.replace(vector_index_min_items=0, single_statement_items=0)):
        yield


@pytest.mark.parametrize("path", ["exact", "big"])
def test_speaker_named_in_the_question_outranks_a_message_mentioning_them(user, request, path):
    # Melanie's message holds both question words; only the speaker rule (name dropped from
    # the keyword query, Caroline's own messages boosted) puts Caroline's answer first.
    if path == "big":
        request.getfixturevalue("big_scope_paths")
    conversation(
        user,
        [
            ("Melanie", "Caroline told me about hiking, I went hiking near the lake."),
            ("Caroline", "Yes, I spent the weekend in the mountains."),
            ("Melanie", "Sounds lovely."),
        ],
    )

    result = memory_search(user=user, query="Where did Caroline go hiking?", sources=["chunk"])

    # (the reply of the same exchange shares its slot, after it)
    assert result.items[0].content.startswith(
        "Caroline: Yes, I spent the weekend in the mountains."
    )


def round_trips_counted(monkeypatch) -> list[int]:
    """The statements of each round trip the search's pipeline makes, as they are sent."""
    from retrieval import candidates

    sent: list[int] = []
    run = candidates.statements_run

    def counted(cursor, statements):
        sent.append(len(statements))
        return run(cursor, statements)

    monkeypatch.setattr(candidates, "statements_run", counted)
    return sent


def test_a_hybrid_search_takes_four_round_trips_of_seven_statements(
    user, fake_embedder, monkeypatch
):
    """Once the scope's statistics are cached (they are for a minute): the query's lexemes
    with the vector index's settings; the three legs (BM25 with one column per lexeme); the
    candidates' load (text included: no stage reads a row again); the supersede window's
    similarities. A search that grew a read per leg or per result fails."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for index in range(12):
        memory_write(user, f"Mara keeps bees on the roof, note {index} about the hive")
    memory_search(user=user, query="bees on the roof")  # the scope's statistics, cached
    sent = round_trips_counted(monkeypatch)

    with CaptureQueriesContext(connection) as captured:
        result = memory_search(user=user, query="Where does Mara keep her bees?")

    assert len(result.items) == 10
    assert sent == [2, 3, 1, 1]
    statements = [query["sql"] for query in captured.captured_queries]
    assert len(statements) == 7, statements
    assert "to_tsvector" in statements[0] and "hnsw.ef_search" in statements[1]
    keyword = [sql for sql in statements if "AS tf0" in sql]
    # One tf column per lexeme the query keeps.
    assert len(keyword) == 1 and "AS tf1" in keyword[0]
    assert sum("embedding <=>" in sql and "nearest" in sql for sql in statements) == 1
    assert sum("named AS MATERIALIZED" in sql for sql in statements) == 1


def test_a_semantic_search_sends_the_index_settings_with_its_leg(user, fake_embedder, monkeypatch):
    """No keyword side, no lexemes to read first: the settings go ahead of the vector leg in
    its own round trip."""
    for index in range(4):
        memory_write(user, f"Mara keeps bees on the roof, note {index} about the hive")
    memory_search(user=user, query="bees", mode="semantic")  # the scope's statistics, cached
    sent = round_trips_counted(monkeypatch)
    assert memory_search(user=user, query="Where are the bees?", mode="semantic").items
    assert sent[0] == 2 and len(sent) <= 3


def test_a_ranking_config_without_tf_saturation_is_refused():
    with pytest.raises(ValueError, match="bm25_k1"):
        RANKING.replace(bm25_k1=0)


@pytest.mark.django_db(transaction=True)
def test_a_failing_search_statement_is_a_django_database_error_and_the_next_search_works(
    user, fake_embedder
):
    """The pipelined statements fail as Django's own do (a DatabaseError the context pack
    degrades on, not the driver's), and leave the connection usable once the transaction is
    rolled back."""
    from django.db import DatabaseError, connection, transaction

    memory_write(user, "Mara keeps bees on the roof")
    memory_search(user=user, query="bees")  # the scope's statistics, cached: no Django read
    with pytest.raises(DatabaseError), transaction.atomic():
        with connection.cursor() as cursor, pytest.raises(DatabaseError):
            cursor.execute("SELECT 1 / 0")  # the transaction is aborted from here on
        memory_search(user=user, query="Where are the bees?")
    assert [hit.content for hit in memory_search(user=user, query="Where are the bees?").items]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("threshold", [2, None])
def test_a_search_repeated_on_a_connection_is_planned_once_unless_told_not_to(
    user, fake_embedder, threshold
):
    """DATABASE_PREPARE_THRESHOLD: the search's statements are prepared on a connection after
    a few runs (the server plans each once instead of on every search); with
    the setting at 0 (a pooler that cannot keep prepared statements) none is, and both give
    the same results."""
    from django.db import connection

    for index in range(6):
        memory_write(user, f"Mara keeps bees on the roof, note {index} about the hive")
    connection.ensure_connection()
    connection.connection.prepare_threshold = threshold
    try:
        results = [
            [hit.id for hit in memory_search(user=user, query="Where are the bees?").items]
            for _ in range(4)
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%%AS tf0%%'"
            )
            prepared = cursor.fetchall()
    finally:
        connection.close()
    assert results[0] and all(ids == results[0] for ids in results)
    assert len(prepared) == (1 if threshold else 0)


@pytest.mark.django_db(transaction=True)
def test_the_search_forgets_the_table_figures_when_the_store_analyzes_the_table(user):
    """The vector leg decides between HNSW and an exact sort from the table's row count, kept
    in the process for minutes: after the store's own ANALYZE (a bulk import) the next search
    reads the new count, not the one from before the import."""
    from django.db import connection

    from ingestion_app.services.memory_store import memory_store_vacuum

    with connection.cursor() as cursor:
        before = search_scope.table_stats(cursor).rows
    for index in range(5):
        memory_write(user, f"Imported note {index} about the garden", embedding=None)
    assert memory_store_vacuum()
    with connection.cursor() as cursor:
        after = search_scope.table_stats(cursor).rows
    assert after >= before + 5


def test_a_small_scope_is_sorted_exactly_never_walked_on_the_graph(user):
    """Under `vector_index_min_items`, the vector leg reads the scope's rows and sorts them by
    exact distance, even where the planner would rather walk the HNSW graph (told here to
    avoid sorting): the nearest items of a small scope are the exact ones."""
    from django.db import connection, transaction

    from ingestion_app.selectors import vector_literal
    from retrieval.candidates import statements_run, vector_statements
    from retrieval.search import SOURCES

    for index in range(3):
        memory_write(user, f"Note {index} on the hive", embedding="model")
    scope, params = search_scope.scope_sql(
        user_id=user.pk, app_id="default", sources=SOURCES, filters=SearchFilters()
    )
    vector = vector_literal(get_embedder().embed(["hive"])[0])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        settings_statement, search = vector_statements(
            cursor, scope=scope, params=params, vector=vector, limit=10, scope_items=3
        )
        statements_run(cursor, [settings_statement])
        cursor.execute("EXPLAIN " + search.sql, search.params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "rag_embedding_hnsw" not in plan, plan


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_small_scope_is_sorted_exactly_in_every_mode(user, mode):
    """A semantic search knows its scope's size as a hybrid one does, so a small user is
    sorted exactly there too: walked on the graph of a big (or churned) table, an iterative
    scan can stop before it reaches any of a few rows and return nothing."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for index in range(3):
        memory_write(user, f"Note {index} on the hive", embedding="model")

    with CaptureQueriesContext(connection) as captured:
        found = memory_search(user=user, query="beehive notes", mode=mode, min_relevance=0)

    assert found.items
    # The vector leg: the nearest items, by distance to the query's vector.
    leg = [q["sql"] for q in captured.captured_queries if "AS distance FROM" in q["sql"]]
    assert leg and all("OFFSET 0" in sql for sql in leg), leg
