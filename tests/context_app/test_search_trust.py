"""What a user notices about search results: nothing for an unrelated query, an explanation on
every result, one slot per exchange, the statement above the question, the matching passage
of a long item, the newer of two values first (and `as_of` turning that around).
Embeddings come from the loopback server (hashed bag of words), so similarities are exact."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingestion_app.models import MemoryItem
from ingestion_app.services.memory_store import MemoryScope, memory_item_create
from retrieval import display
from retrieval.config import RANKING
from retrieval.search import format_hit, memory_search
from tests.factories import memory_write
from tests.fake_openai import hashed_embedding

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memory/search"


def remember(user, content: str, *, occurred_at=None, **fields) -> MemoryItem:
    return memory_write(
        user, content, occurred_at=occurred_at or datetime(2026, 1, 5, tzinfo=UTC), **fields
    )


def everyday_memories(user, count: int = 20) -> None:
    """A scope of a realistic size (word statistics of a handful of items mean little)."""
    topics = ["breakfast", "weather", "commute", "laundry", "groceries", "music", "sleep"]
    for index in range(count):
        remember(user, f"note {index} about {topics[index % len(topics)]} on a quiet day")


def test_unrelated_query_returns_nothing(api, user, fake_embedder):
    remember(user, "the user keeps bees on the roof of the garage")
    remember(user, "the user plays the cello in a quartet")

    response = api.post(SEARCH, {"query": "quantum chromodynamics lattice"}, format="json")

    assert response.status_code == 200
    assert response.json()["items"] == []
    related = api.post(SEARCH, {"query": "where are the bees kept?"}, format="json").json()
    assert "bees" in related["items"][0]["content"]


def test_each_result_explains_why_it_matched(api, user, fake_embedder):
    remember(user, "the user keeps bees on the roof of the garage")

    body = api.post(SEARCH, {"query": "bees on the roof"}, format="json").json()

    item = body["items"][0]
    assert 0 < item["relevance"] <= 1
    signals = {entry["signal"]: entry for entry in item["why"]}
    assert set(signals) == {"keyword", "vector"}
    assert signals["keyword"]["rank"] == 1 and signals["keyword"]["score"] > 0
    assert signals["vector"]["rank"] == 1 and signals["vector"]["score"] > 0.5
    for entry in item["why"]:
        assert set(entry) == {"signal", "rank", "score"}


def test_recency_signal_is_shown_when_used(user, fake_embedder):
    remember(user, "the user keeps bees on the roof of the garage")

    hit = memory_search(user=user, query="bees on the roof", recency_half_life_days=30).items[0]

    assert "recency" in [entry["signal"] for entry in hit.why]


def test_an_exchange_takes_one_slot(user, fake_embedder):
    remember(user, "User: my dog is called Pixel", metadata={"exchange_key": "x1"})
    remember(user, "Assistant: Pixel is a lovely name for a dog", metadata={"exchange_key": "x1"})
    remember(user, "pair: my dog is called Pixel", source="chunk", source_message_ids=[7, 8])
    remember(user, "my dog Pixel likes the beach", source="chunk", source_message_ids=[8, 9])

    hits = memory_search(user=user, query="what is my dog called, Pixel?").items

    keys = [hit.metadata.get("exchange_key") for hit in hits if hit.metadata.get("exchange_key")]
    assert keys == ["x1"]
    chunk_hits = [hit for hit in hits if hit.source == "chunk"]
    assert len(chunk_hits) == 1  # the two chunks share message 8


def test_statement_ranks_above_the_question_it_answers(user, fake_embedder):
    session_id = None
    question = remember(
        user,
        "what am I allergic to?",
        source="chunk",
        metadata={"granularity": "message", "position": 0},
        source_message_ids=[21],
        chat_session_id=session_id,
    )
    statement = remember(
        user,
        "I am allergic to peanuts",
        source="chunk",
        metadata={"granularity": "message", "position": 1},
        source_message_ids=[22],
    )

    hits = memory_search(user=user, query="what am I allergic to?").items

    ids = [hit.id for hit in hits]
    assert ids.index(statement.id) < ids.index(question.id)


def test_long_item_comes_back_as_its_matching_passage(api, user, fake_embedder):
    filler = " ".join(
        f"Paragraph sentence number {i} talks about gardening tools." for i in range(30)
    )
    content = f"{filler} My passport number ends in 4471 and expires in May. {filler}"
    item = remember(user, content, source="chunk")
    everyday_memories(user)

    body = api.post(SEARCH, {"query": "when does my passport expire?"}, format="json").json()

    hit = next(hit for hit in body["items"] if hit["id"] == item.id)
    assert "passport number ends in 4471" in hit["content"]
    assert len(hit["content"]) <= 2 * RANKING.trim_chars
    assert hit["trimmed"]["length"] == len(content)
    assert content[hit["trimmed"]["start"] : hit["trimmed"]["end"]].strip() in content


@pytest.mark.parametrize("prefix", ["", "İstanbul trip notes. "])
def test_trim_finds_the_sentence_with_the_query_words_not_a_word_that_starts_like_them(prefix):
    """Terms match whole words (and six-letter prefixes of longer ones), so "cat" in a query
    does not pick the sentence about a "category"; a character whose lower case is longer
    ("İ") leaves the offsets right."""
    filler = " ".join(f"Sentence {i} is about the weather and nothing else." for i in range(20))
    content = (
        f"{prefix}{filler} The category list was long. {filler} My cat Miso sleeps on the "
        f"windowsill. {filler}"
    )

    text, trimmed = display.passage_trim(content, "what is my cat called?")

    assert "My cat Miso sleeps" in text
    assert "category" not in text
    assert content[trimmed["start"] : trimmed["end"]].strip() in text


def test_budget_holds_several_memories_not_one_long_one(user, fake_embedder):
    long_one = "garden " + "tomato seedlings need water " * 120
    remember(user, long_one.replace(".", ""), source="chunk")  # no sentences: kept whole
    for index in range(4):
        remember(user, f"tomato fact {index}: the tomato seedlings went out in May")

    result = memory_search(user=user, query="tomato seedlings", max_tokens=200)

    assert len(result.items) >= 4
    assert result.total_tokens_used <= 200


def test_newer_value_first_older_superseded_and_as_of_between(api, user, fake_embedder):
    older = remember(
        user,
        "my home city is now Austin in the state of Texas",
        occurred_at=datetime(2026, 1, 10, tzinfo=UTC),
    )
    newer = remember(
        user,
        "my home city is now Denver in the state of Colorado",
        occurred_at=datetime(2026, 4, 2, tzinfo=UTC),
    )

    body = api.post(SEARCH, {"query": "what is my home city?"}, format="json").json()

    ids = [item["id"] for item in body["items"]]
    assert ids[:2] == [newer.id, older.id]
    superseded = body["items"][1]["superseded"]
    assert superseded["by"] == newer.id
    assert superseded["occurred_at"].startswith("2026-01-10")
    assert superseded["by_occurred_at"].startswith("2026-04-02")
    assert body["items"][0]["superseded"] is None

    between = api.post(
        SEARCH, {"query": "what is my home city?", "as_of": "2026-02-15"}, format="json"
    ).json()
    assert [item["id"] for item in between["items"]][:2] == [older.id, newer.id]
    assert between["items"][0]["superseded"] is None


def test_superseded_memory_says_so_in_the_pack_line(user, fake_embedder):
    remember(
        user,
        "my home city is now Austin in the state of Texas",
        occurred_at=datetime(2026, 1, 10, tzinfo=UTC),
    )
    remember(
        user,
        "my home city is now Denver in the state of Colorado",
        occurred_at=datetime(2026, 4, 2, tzinfo=UTC),
    )

    hits = memory_search(user=user, query="what is my home city?").items

    assert "superseded 2 April 2026" in format_hit(hits[1])
    assert "superseded" not in format_hit(hits[0])


def test_counting_question_brings_pieces_from_several_chats(user, fake_embedder):
    from tests.factories import open_session

    sessions = [open_session(user) for _ in range(3)]
    everyday_memories(user)
    # One chat talks about workshops at length; the others mention one workshop each.
    for index in range(5):
        remember(
            user,
            f"workshop notes part {index}: the pottery workshop cost 120 dollars",
            source="chunk",
            chat_session_id=sessions[0].id,
        )
    other = [
        remember(
            user,
            "I paid 80 dollars for a workshop on photography",
            source="chunk",
            chat_session_id=sessions[1].id,
        ),
        remember(
            user,
            "the writing workshop cost me 45 dollars",
            source="chunk",
            chat_session_id=sessions[2].id,
        ),
    ]

    hits = memory_search(user=user, query="how much did I spend on workshops in total?").items

    top = [hit.id for hit in hits[:3]]
    assert all(item.id in top for item in other)


def test_as_of_is_validated(api, user):
    response = api.post(SEARCH, {"query": "x", "as_of": "last tuesday"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "as_of"


def test_chat_turn_comes_back_without_the_reactions_around_what_it_tells(api, user, fake_embedder):
    content = (
        "Melanie: Wow, Caroline! That's so awesome! I just signed up for a pottery class "
        "yesterday. It's like therapy for me. Thanks, Caroline!"
    )
    item = remember(user, content, source="chunk")
    everyday_memories(user)

    body = api.post(SEARCH, {"query": "pottery class"}, format="json").json()

    hit = next(hit for hit in body["items"] if hit["id"] == item.id)
    assert hit["content"] == (
        "Melanie: … I just signed up for a pottery class yesterday. It's like therapy for me. …"
    )
    assert hit["trimmed"]["length"] == len(content)
    assert content[hit["trimmed"]["start"] : hit["trimmed"]["end"]] == (
        "I just signed up for a pottery class yesterday. It's like therapy for me."
    )


def test_chat_turn_comes_back_without_its_closing_question_to_the_other_person(
    api, user, fake_embedder
):
    content = (
        "Andrew: We adopted a second dog last week and named him Buddy. "
        "Have you always wanted a dog, even living in the city? What do yours enjoy most?"
    )
    item = remember(user, content, source="chunk")
    everyday_memories(user)

    body = api.post(SEARCH, {"query": "second dog Buddy"}, format="json").json()

    hit = next(hit for hit in body["items"] if hit["id"] == item.id)
    assert hit["content"] == "Andrew: We adopted a second dog last week and named him Buddy. …"
    assert hit["trimmed"]["length"] == len(content)


@pytest.mark.parametrize(
    "content",
    [
        "Caroline: Thanks, Mel!",  # all reaction: nothing else to keep
        "Jon: Have you met my sister Ines? She moved to Lisbon.",  # a question that tells
        "Ana: I started rowing. Do you want to join me on Sunday?",  # says the speaker's plan
        "Tim: How was your trip to Rome?",  # only a question: nothing else to keep
        "Jon: Yes, Paris. It was my first time abroad.",  # an answer, not a reaction
        "Gina: Portugal is great! We stayed two weeks.",  # an opinion about a place
        "Maria: I went to the shelter again and met Cindy there.",  # nothing to cut
    ],
)
def test_chatter_trim_keeps_what_tells_something(content):
    assert display.chatter_trim(content) == (content, None)


def test_a_move_said_moments_later_replaces_the_old_home(api, user, fake_embedder):
    """A stated new value replaces the old one as soon as it is said later; only items that
    are merely alike need a day between them."""
    everyday_memories(user)
    older = remember(
        user,
        "User: I live in Austin with my partner Sam.",
        source="chunk",
        occurred_at=datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
    )
    newer = remember(
        user,
        "User: I moved from Austin to Denver last week.",
        source="chunk",
        occurred_at=datetime(2026, 3, 1, 10, 0, 30, tzinfo=UTC),  # half a minute later
    )

    body = api.post(SEARCH, {"query": "Where do I live?"}, format="json").json()

    ids = [item["id"] for item in body["items"]]
    assert ids[:2] == [newer.id, older.id]
    assert body["items"][1]["superseded"]["by"] == newer.id
    # The newer value answers the question at least as well as the one it replaces.
    assert body["items"][0]["relevance"] >= body["items"][1]["relevance"]


def test_a_new_home_does_not_supersede_the_job_said_with_the_old_one(api, user, fake_embedder):
    everyday_memories(user)
    older = remember(
        user,
        "User: I live in Austin and work at Globex as a data analyst.",
        source="chunk",
        occurred_at=datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
    )
    newer = remember(
        user,
        "User: I just moved to Denver last week.",
        source="chunk",
        occurred_at=datetime(2026, 5, 1, 10, 0, tzinfo=UTC),
    )

    home = api.post(SEARCH, {"query": "Where do I live?"}, format="json").json()["items"]
    assert [item["id"] for item in home][:2] == [newer.id, older.id]
    assert home[1]["superseded"]["by"] == newer.id

    work = api.post(SEARCH, {"query": "Where do I work?"}, format="json").json()["items"]
    globex = next(item for item in work if item["id"] == older.id)
    assert globex["superseded"] is None


def test_an_older_session_summary_is_superseded_by_a_newer_one(api, user, fake_embedder):
    everyday_memories(user)
    older = remember(
        user,
        "- The user works at Globex as a data analyst.\n- The user plays the cello.",
        source="summary",
        occurred_at=datetime(2026, 2, 1, tzinfo=UTC),
    )
    newer = remember(
        user,
        "- The user now works at Initech.\n- The user adopted a cat.",
        source="summary",
        occurred_at=datetime(2026, 6, 1, tzinfo=UTC),
    )

    work = api.post(SEARCH, {"query": "Where do I work?"}, format="json").json()["items"]

    assert [item["id"] for item in work][:2] == [newer.id, older.id]
    assert work[1]["superseded"]["by"] == newer.id
    cello = api.post(SEARCH, {"query": "Do I play the cello?"}, format="json").json()["items"]
    assert cello[0]["id"] == older.id and cello[0]["superseded"] is None


def camping_turns(user) -> list[MemoryItem]:
    """Six chat turns, each telling of one camping trip among other news."""
    places = ["the beach", "the mountains", "the forest", "a lake", "the desert", "an island"]
    return [
        remember(
            user,
            f"Melanie: Work has been busy and the kids started school again this month. "
            f"We went camping at {place} last weekend with the whole family. "
            f"Everyone loved the evening by the fire and nobody wanted to go home.",
            source="chunk",
            occurred_at=datetime(2026, 1, 5 + index, tzinfo=UTC),
        )
        for index, place in enumerate(places)
    ]


def test_results_below_the_first_three_come_as_their_gist_so_the_budget_holds_more(
    api, user, fake_embedder
):
    turns = camping_turns(user)
    everyday_memories(user)
    query = {"query": "where did Melanie go camping?", "max_tokens": 200}

    body = api.post(SEARCH, query, format="json").json()
    whole = api.post(SEARCH, {**query, "trim": False}, format="json").json()

    contents = {turn.id: turn.content for turn in turns}
    hits = [hit for hit in body["items"] if hit["id"] in contents]
    assert [hit["trimmed"] for hit in hits[:3]] == [None, None, None]
    assert [hit["content"] for hit in hits[:3]] == [contents[hit["id"]] for hit in hits[:3]]
    gists = hits[3:]
    assert gists, "the budget holds more than the three whole turns"
    for hit in gists:
        assert hit["content"].startswith("Melanie: … We went camping at ")
        assert hit["content"].endswith("last weekend with the whole family. …")
        trimmed = contents[hit["id"]][hit["trimmed"]["start"] : hit["trimmed"]["end"]]
        assert trimmed in hit["content"]
    assert len(hits) == 6
    assert [hit["trimmed"] for hit in whole["items"]] == [None] * len(whole["items"])
    assert len([hit for hit in whole["items"] if hit["id"] in contents]) < 6


@pytest.mark.parametrize(
    ("content", "query"),
    [
        ("Melanie: We went camping at the lake.", "lake"),  # short already
        (
            "Melanie: Wow, that's so awesome, Caroline! Thanks so much for telling me! "
            "I'm so happy for you! Have a great weekend!",
            "camping by the sea",  # no word of the query and nothing but reactions
        ),
        ("Melanie: " + "we went camping at the lake and " * 30, "lake"),  # long: passage_trim's
    ],
)
def test_gist_trim_leaves_what_it_cannot_shorten(content, query):
    assert display.gist_trim(content, query) == (content, None)


def test_gist_of_a_turn_without_the_query_words_is_its_first_sentence_that_tells_something():
    content = (
        "Melanie: Wow, thanks! We spent the whole weekend at a lake in the mountains with the "
        "kids. Everyone loved the evening by the fire and nobody wanted to go home. How about you?"
    )

    text, trimmed = display.gist_trim(content, "Where has Melanie gone camping?")

    assert text == (
        "Melanie: … We spent the whole weekend at a lake in the mountains with the kids. …"
    )
    assert content[trimmed["start"] : trimmed["end"]] in text


def written(user, content: str) -> MemoryItem:
    """A fact stored by the memory store's writer (which computes what the index needs)."""
    return memory_item_create(
        scope=MemoryScope(user_id=user.id, app_id="default"),
        source="fact",
        content=content,
        embedding=hashed_embedding(content, 384),
    )


@pytest.mark.parametrize(
    ("stored", "query", "typed_in_the_browser"),
    [
        ("Last year Zoë moved to São Paulo for her job.", "Where did Zoe move to?", "Sao Paulo"),
        ("My friend Jose from Malaga plays the cello.", "What does José play?", "Málaga"),
    ],
)
def test_keyword_search_finds_words_written_with_or_without_accents(
    api, user, stored, query, typed_in_the_browser
):
    item = written(user, stored)
    everyday_memories(user)

    body = api.post(SEARCH, {"query": query, "mode": "keyword"}, format="json").json()
    listed = api.get("/api/v1/memories", {"q": typed_in_the_browser}).json()

    assert [hit["id"] for hit in body["items"]][:1] == [item.id]
    assert body["items"][0]["why"][0]["signal"] == "keyword"
    assert [memory["id"] for memory in listed["results"]] == [item.id]


def test_a_name_asked_without_its_accent_is_not_taken_for_one_never_mentioned(
    api, user, fake_embedder
):
    item = written(user, "Zoë adopted a grey cat called Pixel.")
    everyday_memories(user)

    body = api.post(SEARCH, {"query": "What is the name of Zoe's cat?"}, format="json").json()

    assert [hit["id"] for hit in body["items"]][:1] == [item.id]


def test_an_edited_memory_is_found_by_its_new_accented_word_written_plain(api, user, fake_embedder):
    item = written(user, "My neighbour Ana makes great bread.")
    everyday_memories(user)

    edited = api.patch(
        f"/api/v1/memories/{item.id}",
        {"content": "My neighbour Inês makes great bread."},
        format="json",
    )
    body = api.post(SEARCH, {"query": "Ines", "mode": "keyword"}, format="json").json()

    assert edited.status_code == 200, edited.json()
    assert [hit["id"] for hit in body["items"]] == [item.id]


@pytest.mark.parametrize("question", ["Where do I live?", "Where did I move to?"])
def test_a_new_users_one_memory_of_a_move_answers_where_they_live(api, user, question):
    """The first thing a new user tries: one stated move, then a question that shares no
    word with it. A store of one item answers it as a store of thousands does."""
    stored = written(user, "User: I moved to Lisbon in March and I'm looking for a climbing gym.")

    body = api.post(SEARCH, {"query": question}, format="json").json()

    assert [item["id"] for item in body["items"]] == [stored.id]
    unrelated = api.post(SEARCH, {"query": "What is my favourite colour?"}, format="json")
    assert unrelated.json()["items"] == []


def turn(user, content: str, role: str) -> MemoryItem:
    """A chat turn of `role` as the message indexer stores it."""
    return remember(
        user,
        content,
        source="chunk",
        metadata={"granularity": "message", "role": role, "speaker": role},
    )


REPLY_ON_REVIEWS = (
    "Code reviews catch bugs early: pair each reviewer with the author of the change."
)
ABOUT_MY_MERGES = "Who reviews my merges?"


def search_without_support_floor(user, query: str):
    """The search with the support floor set to the usual one (the rule off)."""
    config = RANKING.replace(support_relevance_floor=RANKING.relevance_floor)
    return memory_search(user=user, query=query, config=config).items


def test_a_question_about_the_user_is_not_answered_by_a_reply_that_only_shares_a_word(
    user, fake_embedder
):
    everyday_memories(user)
    turn(user, REPLY_ON_REVIEWS, "assistant")

    mine = memory_search(user=user, query=ABOUT_MY_MERGES).items
    general = memory_search(user=user, query="How do code reviews catch bugs?").items
    rule_off = search_without_support_floor(user, ABOUT_MY_MERGES)

    assert mine == []
    assert general and general[0].content.endswith("author of the change.")
    assert rule_off and rule_off[0].content.endswith("author of the change.")


PIPELINE_NOW = "How often does the pipeline run now?"
REPLY_ON_PIPELINES = "Schedule the pipeline with cron and log what it does."


@pytest.mark.parametrize(
    ("reply", "said", "query"),
    [
        (REPLY_ON_REVIEWS, "Dana reviews everything before it lands on main.", ABOUT_MY_MERGES),
        (REPLY_ON_PIPELINES, "We switched the pipeline to run every six hours.", PIPELINE_NOW),
    ],
)
def test_the_users_own_words_answer_a_question_about_them_at_the_usual_floor(
    user, fake_embedder, reply, said, query
):
    everyday_memories(user)
    turn(user, reply, "assistant")
    turn(user, said, "user")

    hits = memory_search(user=user, query=query).items

    assert hits and hits[0].content == said


def test_a_callers_lower_floor_lets_the_reply_through(user, fake_embedder):
    everyday_memories(user)
    turn(user, REPLY_ON_REVIEWS, "assistant")

    hits = memory_search(user=user, query=ABOUT_MY_MERGES, min_relevance=0.1).items

    assert hits and hits[0].content.endswith("author of the change.")


def test_a_chat_exchange_counts_as_the_reply_it_adds_to_the_users_turn(user, fake_embedder):
    from tests.factories import add_message, open_session

    everyday_memories(user)
    session = open_session(user)
    add_message(session, "user", "Our team ships a release every Friday afternoon.")
    add_message(session, "assistant", REPLY_ON_REVIEWS)
    rows = MemoryItem.objects.filter(user=user, content__contains="author of the change")
    assert rows.count() >= 2  # the reply's own item and the exchange's chunk

    mine = memory_search(user=user, query=ABOUT_MY_MERGES).items
    rule_off = search_without_support_floor(user, ABOUT_MY_MERGES)

    assert mine == []
    assert any("author of the change" in hit.content for hit in rule_off)


def test_a_question_naming_no_one_is_not_answered_by_a_reply_that_shares_a_word(
    user, fake_embedder
):
    everyday_memories(user)
    turn(user, REPLY_ON_PIPELINES, "assistant")
    rule_off = RANKING.replace(support_floor_unnamed=False)

    unnamed = memory_search(user=user, query=PIPELINE_NOW).items
    read_as_before = memory_search(user=user, query=PIPELINE_NOW, config=rule_off).items

    assert unnamed == []
    assert read_as_before and read_as_before[0].content == REPLY_ON_PIPELINES


@pytest.mark.parametrize(
    ("query", "about_world"),
    [
        ("How often does the pipeline run now?", True),
        ("Who reviews my merges?", True),
        ("What did Melanie paint last week?", False),
        ("What did you recommend for the pipeline?", False),
    ],
)
def test_which_questions_hold_the_assistants_words_to_the_higher_floor(query, about_world):
    from retrieval.trust import asks_about_users_world, query_names

    assert asks_about_users_world(query, query_names(query)) is about_world


def test_one_rare_word_of_a_longer_question_does_not_pass_the_floor(user, fake_embedder):
    everyday_memories(user)
    remember(user, "Never suggest paid SaaS tools unless I ask for them.")
    query = "Which spelling and answer length did I ask you to use?"
    # A smaller scope's BM25 scores sit lower: half relevance at 3 puts one rare word over the
    # floor, as in a scope of a thousand items at the usual 12.
    sharp = RANKING.replace(keyword_half=3.0)
    whole_score = sharp.replace(keyword_relevance_full_coverage=0.0)

    found = memory_search(user=user, query=query, config=sharp).items
    read_whole = memory_search(user=user, query=query, config=whole_score).items
    asked_fully = memory_search(
        user=user, query="Which paid SaaS tools should I never use?", config=sharp
    ).items

    assert found == []
    assert read_whole and read_whole[0].content.startswith("Never suggest paid SaaS tools")
    assert asked_fully and asked_fully[0].content.startswith("Never suggest paid SaaS tools")


def test_a_chat_message_that_shares_one_rare_word_with_a_memory_still_finds_it(user, fake_embedder):
    everyday_memories(user)
    remember(user, "Booked: cabin by a fjord, July.")
    # What the context pack searches with: the user's whole message, many words long.
    message = (
        "Hey, long days here: work was busy, kids had exams and our car broke down again, "
        "so I am really looking forward to that fjord trip."
    )
    sharp = RANKING.replace(keyword_half=3.0)

    hits = memory_search(user=user, query=message, config=sharp).items
    as_a_question = memory_search(
        user=user, query=message, config=sharp.replace(keyword_relevance_max_terms=100)
    ).items

    assert hits and "fjord" in hits[0].content
    assert as_a_question == []


def test_a_long_item_found_by_meaning_comes_back_as_its_opening_sentences():
    opening = "Our release train leaves every second Thursday."
    content = (
        opening + " " + " ".join(f"Detail {i} of the rollout follows here." for i in range(60))
    )

    text, trimmed = display.passage_trim(content, "what is the shipping cadence?")

    assert text.startswith(opening)
    assert len(text) <= RANKING.trim_chars + len(display.ELLIPSIS) + 1
    assert trimmed == {"start": 0, "end": trimmed["end"], "length": len(content)}


@pytest.mark.parametrize(
    ("query", "about_user"),
    [
        ("Who reviews my merges?", True),
        ("How often does our pipeline run now?", True),
        ("What should we use to monitor the pipeline?", True),
        ("We moved the demo: when is it now?", True),
        ("What did Melanie do in the US?", False),
        ("What did you recommend for my trip?", False),
        ("How do code reviews catch bugs?", False),
    ],
)
def test_which_questions_ask_about_the_users_own_life_or_work(query, about_user):
    from retrieval.trust import asks_about_user

    assert asks_about_user(query, or_their_work=True) is about_user
