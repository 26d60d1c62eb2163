"""LoCoMo retrieval benchmark: Mnemo's real write and search path against two baselines.

For each conversation a user is created and every session goes through the real write path:
`session_open`, one `message_append` per turn (speaker_a as "user", speaker_b as "assistant",
the session date as `created_at`, `{"speaker", "dia_id"}` as metadata, an image caption
appended as " [image: <caption>]") so the after-message hooks write the turn-pair chunks and
message items, then `session_close` and the close task run synchronously (summaries). Every
question of categories 1-4 is then asked through `retrieval.search.memory_search` scoped to
that user (hybrid mode, the service defaults); an item covers the `dia_id`s of its
`source_message_ids`, and its text is exactly the line `format_for_prompt` puts in the pack.
The pack carries the user's profile lines first (each covering its source messages' ids), then
the results: recall within the 2,000-character budget and @10 count them in that order
(``--no-profile``: the results alone; @10 of the results alone is printed beside).

LongMemEval-format files (``qa`` entries with ``question_type`` and ``question_date``) run the
same way: figures are also printed per question type, each question is searched `as_of` its
``question_date``, and ``--limit N`` takes N questions round-robin over the types. Also
printed: the budget fill (items and characters inside the 2,000-character budget), the share
of each answer's words that the text inside the budget holds (``answer_words_budget``: a
change that cuts items must not raise recall by counting turns whose answer it cut away), and
``unrelated_empty_rate``, the share of questions that return nothing when asked of a
different conversation's user (the relevance floor's false-positive side).

Run: ``.venv/bin/python bench/locomo.py --data ../shared/bench/locomo-dev.json``
(``--reuse`` keeps an earlier ingest in the same data dir; ``--variants`` compares settings of
the ranking on the same ingest). Uses its own embedded database (``--data-dir``, default
/tmp/locomo_data) so it never touches the project's data.

Past figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

import locomo_data as ld  # noqa: E402
from cpu_clock import CpuClock  # noqa: E402

APP_ID = "locomo"
# Set by main(): "chat" (message_append) or "import" (ChatGPT-format export), and where the
# generated exports are written.
INGEST_MODE = "chat"
# Filled by a chat ingest: the share of new chats whose first message got memory lines.
TURN_ONE: dict[str, float] = {}
EXPORT_DIR = Path("/tmp")
USER_PREFIX = "locomo-"
SEARCH_TOP_K = 50


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="LoCoMo-format JSON file")
    parser.add_argument("--data-dir", default="/tmp/locomo_data", help="embedded database dir")
    parser.add_argument("--reuse", action="store_true", help="keep conversations already ingested")
    parser.add_argument(
        "--limit",
        type=int,
        default=0,
        help="only N conversations (LongMemEval: N questions, round-robin over question types)",
    )
    parser.add_argument(
        "--variants",
        default="",
        help="ranking configs to compare first (retrieval.config.RankingConfig fields), e.g. "
        '"pair_weight=1;vector_weight=0.5,rrf_k=60"',
    )
    parser.add_argument(
        "--set", default="", help='ranking settings for the main run, e.g. "relevance_floor=0"'
    )
    parser.add_argument("--sources", default="", help="comma-separated sources (default: all)")
    parser.add_argument(
        "--dump-relevance",
        default="",
        help="write each question's best candidate (own user and another's) to this JSON file "
        "(calibrating the relevance floor)",
    )
    parser.add_argument(
        "--ingest",
        choices=("auto", "chat", "import"),
        default="auto",
        help="write path: chat (message by message, as a chat client logs turns) or import (a "
        "ChatGPT-format export per conversation, one conversation per session, dated); auto: "
        "import for LongMemEval-format files (assistant chats users import), chat for LoCoMo",
    )
    parser.add_argument("--no-baselines", action="store_true", help="skip the baselines (tuning)")
    parser.add_argument(
        "--no-profile",
        action="store_true",
        help="score the search results alone (without the profile a pack carries first)",
    )
    parser.add_argument(
        "--torch-threads", type=int, default=1, help="torch intra-op threads (0: torch default)"
    )
    return parser.parse_args()


def setup_django(data_dir: str) -> None:
    # Before Django loads: the settings read the data dir (embedded database) and providers.
    os.environ["MNEMO_DATA_DIR"] = data_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ["LLM_PROVIDER"] = "local"
    os.environ["EMBEDDING_PROVIDER"] = "local"
    os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def parse_question_date(question_date: str) -> datetime | None:
    """ "2023/05/30 (Tue) 23:40" -> an aware datetime; None when absent or unreadable."""
    from django.utils import timezone

    text = " ".join(part for part in question_date.split() if not part.startswith("("))
    try:
        parsed = datetime.strptime(text, "%Y/%m/%d %H:%M")
    except ValueError:
        return None
    return timezone.make_aware(parsed, timezone.get_default_timezone())


def question_type_of(question: ld.Question) -> str:
    return question.question_type or ld.CATEGORY_NAMES.get(question.category, "other")


def limit_conversations(conversations: list[ld.Conversation], limit: int) -> list:
    """The first `limit` conversations; for LongMemEval (one question each) round-robin over
    question types, so a quick run still covers every type."""
    if not limit:
        return conversations
    typed = [c for c in conversations if c.questions and c.questions[0].question_type]
    if len(typed) != len(conversations):
        return conversations[:limit]
    by_type: dict[str, list] = {}
    for conversation in conversations:
        by_type.setdefault(conversation.questions[0].question_type, []).append(conversation)
    chosen = []
    while len(chosen) < limit and any(by_type.values()):
        for queue in by_type.values():
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen


def parse_session_date(date_time: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> an aware datetime (UTC)."""
    from django.utils import timezone

    parsed = datetime.strptime(date_time.strip(), "%I:%M %p on %d %B, %Y")
    return timezone.make_aware(parsed, timezone.get_default_timezone())


# --------------------------------------------------------------------------------------------
# Ingest through the real write path
# --------------------------------------------------------------------------------------------


def conversation_ingested(user, conversation: ld.Conversation, mode: str = "chat") -> bool:
    from sessions_app.models import ChatSession, Message

    if mode == "import":
        from imports_app.models import ImportJob

        return ImportJob.objects.filter(user=user, app_id=APP_ID, status="done").exists()

    turns = sum(len(s.turns) for s in conversation.sessions)
    sessions = ChatSession.objects.filter(user=user, app_id=APP_ID)
    return (
        sessions.count() == len(conversation.sessions)
        and not sessions.exclude(status=ChatSession.Status.CLOSED).exists()
        and Message.objects.filter(user=user).count() == turns
    )


def ingest_conversation(conversation: ld.Conversation, timings: dict[str, list[float]]):
    """A fresh user holding the conversation, written as a chat client would write it."""
    from django.contrib.auth import get_user_model

    from context_app.tasks import session_close_task
    from sessions_app.services.messages import message_append
    from sessions_app.services.sessions import session_close, session_open

    User = get_user_model()
    User.objects.filter(username=USER_PREFIX + conversation.sample_id).delete()
    user = User.objects.create_user(username=USER_PREFIX + conversation.sample_id)
    for number, session in enumerate(conversation.sessions):
        opened = session_open(user=user, app_id=APP_ID)
        started_at = parse_session_date(session.date_time)
        first_user_turn = True
        for offset, turn in enumerate(session.turns):
            text = turn.text
            if turn.blip_caption:
                text += f" [image: {turn.blip_caption}]"
            started = time.perf_counter()
            message = message_append(
                user=user,
                session_id=opened.id,
                role="user" if turn.speaker == conversation.speaker_a else "assistant",
                content=text,
                # one second apart: the same session date, a stable order
                created_at=started_at + timedelta(seconds=offset),
                metadata={"speaker": turn.speaker, "dia_id": turn.dia_id},
            )
            timings["message_append_ms"].append((time.perf_counter() - started) * 1000)
            if number and first_user_turn and message.role == "user":
                # The pack of a new chat's first message, with every earlier chat closed.
                timings["turn1_pack"].append(turn_one_pack_has_memories(opened, message))
            first_user_turn = first_user_turn and message.role != "user"
        session_close(user=user, session_id=opened.id)
        started = time.perf_counter()
        outcome = session_close_task(str(opened.id))
        timings["close_task_ms"].append((time.perf_counter() - started) * 1000)
        if outcome != "closed":
            raise RuntimeError(
                f"closing session {session.index} of {conversation.sample_id}: {outcome}"
            )
    vectors_in(user)
    return user


def vectors_in(user) -> None:
    """Every item of the user has its vector before a question is asked: the ones embedded after
    the response (MNEMO_EMBED_AFTER_RESPONSE) are waited for, any the embedding thread left
    (backlog full) are embedded here, as the one-minute schedule would."""
    from ingestion_app.services.deferred_embeddings import (
        memory_items_embed_missing,
        pending_embeddings_wait,
    )

    if not pending_embeddings_wait(600):
        raise RuntimeError("deferred embeddings not done within 600 s")
    memory_items_embed_missing(limit=None, grace_seconds=0, user_id=user.id)


def chatgpt_export(conversation: ld.Conversation) -> list[dict]:
    """The conversation as a ChatGPT `conversations.json`: one conversation per session, dated
    by the session, each message's node id its dia_id (so evidence maps back to stored items)."""
    export = []
    for session in conversation.sessions:
        started = parse_session_date(session.date_time).timestamp()
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for offset, turn in enumerate(session.turns):
            text = turn.text + (f" [image: {turn.blip_caption}]" if turn.blip_caption else "")
            role = "user" if turn.speaker == conversation.speaker_a else "assistant"
            mapping[parent]["children"] = [turn.dia_id]
            mapping[turn.dia_id] = {
                "id": turn.dia_id,
                "parent": parent,
                "children": [],
                "message": {
                    "id": turn.dia_id,
                    "author": {"role": role},
                    "create_time": started + offset,
                    "content": {"content_type": "text", "parts": [text]},
                    "metadata": {},
                },
            }
            parent = turn.dia_id
        export.append(
            {
                "id": f"{conversation.sample_id}-s{session.index}",
                "conversation_id": f"{conversation.sample_id}-s{session.index}",
                "title": f"Session {session.index}",
                "create_time": started,
                "update_time": started + len(session.turns),
                "mapping": mapping,
                "current_node": parent,
            }
        )
    return export


def import_conversation(conversation: ld.Conversation, directory: Path):
    """A fresh user holding the conversation, imported as a dated ChatGPT export."""
    from django.contrib.auth import get_user_model

    from imports_app.services.jobs import import_job_create_from_paths, import_job_run
    from imports_app.services.passage_vectors import import_job_passage_vectors
    from profile_app.services.profile import profile_import_read

    User = get_user_model()
    User.objects.filter(username=USER_PREFIX + conversation.sample_id).delete()
    user = User.objects.create_user(username=USER_PREFIX + conversation.sample_id)
    path = directory / f"{conversation.sample_id}.json"
    path.write_text(json.dumps(chatgpt_export(conversation)))
    job = import_job_create_from_paths(user=user, paths=[path], app_id=APP_ID)
    job = import_job_run(job_id=job.id)
    if job.status != "done":
        raise RuntimeError(f"importing {conversation.sample_id}: {job.status}")
    # The profile's reading of each file, queued on commit like the passage vectors.
    for import_file in job.files.all():
        profile_import_read(import_file_id=import_file.id)
    # The passages' vectors, which a worker embeds after each file (queued on commit; the
    # queue is emptied after the ingest, as no worker runs here).
    import_job_passage_vectors(job=job)
    return user


def import_pairs_dia_ids(conversation: ld.Conversation, directory: Path) -> dict:
    """{(conversation id, pair index): dia ids of the pair} as the importer's parser pairs
    the export's messages (a chunk names its pairs by index)."""
    from ingestion_app.parsers import parse_file

    path = directory / f"{conversation.sample_id}.json"
    if not path.exists():
        path.write_text(json.dumps(chatgpt_export(conversation)))
    pairs = {}
    for parsed in parse_file(path):
        for pair in parsed.pairs:
            pairs[(parsed.conversation_id, pair.index)] = frozenset(pair.message_ids)
    return pairs


def hit_dia_ids(hit, dia_of: dict, pairs: dict) -> frozenset:
    """The evidence ids an item covers: its messages (chat ingest), else its export message
    (an import passage) or the pairs of its chunk (an import chunk)."""
    covered = {dia_of[m] for m in hit.source_message_ids if m in dia_of}
    metadata = hit.metadata or {}
    if isinstance(metadata.get("message_id"), str):
        covered.add(metadata["message_id"])
    conversation_id = metadata.get("conversation_id")
    for key in metadata.get("pair_keys") or ():
        index = int(str(key).split(":", 1)[0])
        covered |= pairs.get((conversation_id, index), frozenset())
    return frozenset(covered)


def pack_profile_items(user, dia_of: dict, pairs: dict, cap_chars: int) -> list:
    """The profile lines a pack carries first, each covering the evidence ids of the message
    (chat ingest) or imported chunk that stated it."""
    from ingestion_app.models import MemoryItem
    from profile_app.selectors import profile_for_pack

    pack = profile_for_pack(user_id=user.id, app_id=APP_ID, cap_chars=cap_chars)
    memory_ids = [entry.source_memory_id for _, entry in pack.lines if entry.source_memory_id]
    memories = {item.id: item for item in MemoryItem.objects.filter(id__in=memory_ids)}
    items = []
    for line, entry in pack.lines:
        covered = {dia_of[m] for m in entry.source_message_ids if m in dia_of}
        memory = memories.get(entry.source_memory_id)
        if memory is not None:
            covered |= hit_dia_ids(memory, dia_of, pairs)
        items.append(ld.RetrievedItem(line, frozenset(covered)))
    return items


def turn_one_pack_has_memories(session, message) -> float:
    """1 when the context pack of a chat's first user message holds memory lines."""
    from context_app.services.context_pack.build import NO_RELEVANT_MEMORIES
    from context_app.services.context_pack.prepare import prepare_context

    pack = prepare_context(session=session, user_message=message)
    return float(
        pack.status in ("built", "reused")
        and any(
            segment.name == "Relevant memories" and NO_RELEVANT_MEMORIES not in segment.text
            for segment in pack.segments
        )
    )


def ingest(conversations: Sequence[ld.Conversation], reuse: bool) -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django_q.models import OrmQ

    User = get_user_model()
    users = {}
    timings: dict[str, list[float]] = {
        "message_append_ms": [],
        "close_task_ms": [],
        "turn1_pack": [],
    }
    from profile_app.services.profile import profile_rebuild

    started = time.perf_counter()
    for conversation in conversations:
        user = User.objects.filter(username=USER_PREFIX + conversation.sample_id).first()
        if reuse and user is not None and conversation_ingested(user, conversation, INGEST_MODE):
            users[conversation.sample_id] = user
            # Read again with today's rules (an earlier ingest may predate them).
            profile_rebuild(user=user, app_id=APP_ID)
            continue
        other_mode = "chat" if INGEST_MODE == "import" else "import"
        if reuse and user is not None and conversation_ingested(user, conversation, other_mode):
            # Ingesting again would delete that ingest: the caller forgot --ingest.
            raise SystemExit(
                f"{conversation.sample_id} was ingested through {other_mode} in this data dir; "
                f"pass --ingest {other_mode} to reuse it, or another --data-dir"
            )
        conversation_started = time.perf_counter()
        if INGEST_MODE == "import":
            users[conversation.sample_id] = import_conversation(conversation, EXPORT_DIR)
        else:
            users[conversation.sample_id] = ingest_conversation(conversation, timings)
        print(
            f"ingested {conversation.sample_id}: {len(conversation.sessions)} sessions, "
            f"{sum(len(s.turns) for s in conversation.sessions)} turns in "
            f"{time.perf_counter() - conversation_started:.1f} s",
            flush=True,
        )
    # The close endpoint queues the task as well; it already ran here, synchronously.
    OrmQ.objects.all().delete()
    if timings["message_append_ms"]:
        append, close = timings["message_append_ms"], timings["close_task_ms"]
        print(
            f"ingest: {time.perf_counter() - started:.1f} s; message_append (with hooks) "
            f"p50 {ld.percentile(append, 50):.1f} ms p95 {ld.percentile(append, 95):.1f} ms "
            f"({len(append)} messages); close task p50 {ld.percentile(close, 50):.1f} ms "
            f"p95 {ld.percentile(close, 95):.1f} ms ({len(close)} sessions)",
            flush=True,
        )
    if timings["turn1_pack"]:
        rate = Scores.mean(timings["turn1_pack"])
        TURN_ONE["pack_rate"] = round(rate, 4)
        print(
            f"pack on turn 1 of a new chat (earlier chats closed): {rate:.3f} of "
            f"{len(timings['turn1_pack'])} chats hold relevant memories",
            flush=True,
        )
    return users


def store_report(users: dict) -> str:
    from django.db.models import Count

    from ingestion_app.models import MemoryItem

    rows = (
        MemoryItem.objects.filter(user__in=users.values(), app_id=APP_ID)
        .values_list("source", "metadata__granularity")
        .annotate(n=Count("id"))
    )
    parts = [f"{source}/{granularity or 'other'}: {n}" for source, granularity, n in rows]
    return "stored items: " + ", ".join(sorted(parts))


# --------------------------------------------------------------------------------------------
# Questions through the retrieval service
# --------------------------------------------------------------------------------------------


class Scores:
    def __init__(self) -> None:
        self.budget: dict[int, list[float]] = {c: [] for c in ld.SCORED_CATEGORIES}
        # The first ten items of the pack (the profile lines it carries first, then results).
        self.at10: dict[int, list[float]] = {c: [] for c in ld.SCORED_CATEGORIES}
        # The first ten search results alone (the figure --no-profile also gives).
        self.at10_results: list[float] = []
        # The same ranking rendered without quotes and source labels (format comparison).
        self.plain: dict[int, list[float]] = {c: [] for c in ld.SCORED_CATEGORIES}
        self.search_ms: list[float] = []
        self.search_ms_by_category: dict[int, list[float]] = {c: [] for c in ld.SCORED_CATEGORIES}
        self.search_cpu_ms: list[float] = []
        # CPU ms (process + database backend) of each search stage (SearchResult.stage_ms).
        self.stage_cpu_ms: dict[str, list[float]] = {}
        self.embed_ms: list[float] = []
        self.chars_used: list[int] = []
        self.items_used: list[int] = []
        # Share of the answer's words in the text inside the budget (see answer_words_shown).
        self.answer_words: list[float] = []
        # Per question type (LongMemEval names, else LoCoMo's category names).
        self.by_type: dict[str, dict[str, list[float]]] = {}
        # 1 when the question asked of another conversation's user returned nothing.
        self.unrelated_empty: list[float] = []
        # Characters of the 2,000-character budget the profile took (0 with --no-profile).
        self.profile_chars: list[int] = []

    def type_add(self, name: str, budget: float, at10: float) -> None:
        entry = self.by_type.setdefault(name, {"budget": [], "at10": []})
        entry["budget"].append(budget)
        entry["at10"].append(at10)

    @staticmethod
    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    def overall(self, metric: str = "budget") -> float:
        return self.mean([v for values in getattr(self, metric).values() for v in values])

    def category(self, category: int, metric: str = "budget") -> float:
        return self.mean(getattr(self, metric)[category])

    def summary_line(self) -> str:
        """One line: budget and @10 recall, unrelated_empty_rate, fill, search p95, per type."""
        types = " ".join(
            f"{name} {self.mean(values['budget']):.3f}"
            for name, values in sorted(self.by_type.items())
        )
        return (
            f"budget {self.overall():.3f} @10 {self.overall('at10'):.3f} "
            f"(results alone {self.mean(self.at10_results):.3f}) "
            f"unrelated_empty_rate {self.mean(self.unrelated_empty):.3f} "
            f"fill {self.mean(self.items_used):.1f} items {self.mean(self.chars_used):.0f} chars "
            f"answer words {self.mean(self.answer_words):.3f} "
            f"profile share {self.mean(self.profile_chars) / ld.BUDGET_CHARS:.3f} "
            f"search p95 {ld.percentile(self.search_ms, 95):.1f} ms [{types}]"
        )

    def questions(self) -> int:
        return sum(len(values) for values in self.budget.values())


def evaluate(
    conversations: Sequence[ld.Conversation],
    users: dict,
    sources: list[str] | None,
    unrelated: bool = True,
    dump: list | None = None,
    profile: bool = True,
    config=None,
) -> Scores:
    from context_app.models import ContextSettings
    from memory_site.providers import get_embedder
    from memory_site.tokens import count_tokens
    from mnemo_text.words import verb_tables_load
    from retrieval.search import (
        SOURCES,
        format_date,
        format_hit,
        memory_search,
        search_vector_text,
    )
    from sessions_app.models import Message

    embedder = get_embedder()
    scores = Scores()
    clock = CpuClock()
    if conversations:
        # The token counter's BPE table, loaded at start-up by `manage.py serve`
        # (MNEMO_WARM_EMBEDDER): the first search that trims a hit would wait ~0.2 s for it.
        count_tokens("warm up")
        # And the verb tables, read at the same start-up (the first statement compared reads
        # them otherwise: ~1 s inside one timed search).
        verb_tables_load()
        # One untimed search first: the process's first one pays one-off costs (imports,
        # regexes, plans) that would otherwise be the p95 of a short run.
        memory_search(
            user=users[conversations[0].sample_id],
            query="How much did I spend on my trip, and where do I live now?",
            app_id=APP_ID,
        )
    for index, conversation in enumerate(conversations):
        user = users[conversation.sample_id]
        # The conversation whose user is asked this one's questions (unrelated_empty_rate).
        stranger = (
            users[conversations[(index + 1) % len(conversations)].sample_id]
            if unrelated and len(conversations) > 1
            else None
        )
        dia_of = dict(
            Message.objects.filter(user=user).values_list("id", "metadata__dia_id").iterator()
        )
        pairs = import_pairs_dia_ids(conversation, EXPORT_DIR) if INGEST_MODE == "import" else {}
        # What every pack for this user carries first, whatever the question.
        profile_items = (
            pack_profile_items(user, dia_of, pairs, ContextSettings.current().profile_cap_chars)
            if profile
            else []
        )
        for question in conversation.questions:
            if question.category not in ld.SCORED_CATEGORIES:
                continue
            as_of = parse_question_date(question.question_date)
            # As a caller that embeds ahead does: the text the vector leg searches with (the
            # question without the one speaker it names), embedded once, timed apart.
            cpu_started = clock.now_ms()
            text = search_vector_text(
                user=user, query=question.question, app_id=APP_ID, sources=sources or SOURCES
            )
            cpu_text = clock.now_ms()
            started = time.perf_counter()
            vector = embedder.embed([text])[0]
            scores.embed_ms.append((time.perf_counter() - started) * 1000)

            def search_as(
                owner, question=question, vector=vector, text=text, as_of=as_of, clock=None
            ):
                return memory_search(
                    user=owner,
                    query=question.question,
                    app_id=APP_ID,
                    top_k=SEARCH_TOP_K,
                    max_tokens=None,
                    sources=sources or SOURCES,
                    mode="hybrid",
                    query_embedding=vector,
                    query_embedding_text=text,
                    as_of=as_of,
                    stage_clock=clock,
                    config=config,
                )

            cpu_search = clock.now_ms()
            result = search_as(user, clock=clock.now_ms)
            for stage, spent in result.stage_ms.items():
                scores.stage_cpu_ms.setdefault(stage, []).append(spent)
            scores.search_ms.append(result.search_ms)
            scores.search_ms_by_category[question.category].append(result.search_ms)
            cpu_ended = clock.now_ms()
            if cpu_started is not None and cpu_ended is not None:
                scores.search_cpu_ms.append(cpu_ended - cpu_search + cpu_text - cpu_started)
            ranked = [
                ld.RetrievedItem(format_hit(hit), hit_dia_ids(hit, dia_of, pairs))
                for hit in result.items
            ]
            # The pack holds the profile first, then the results: the budget and @10 count
            # them in that order; the results alone are kept beside.
            packed = [*profile_items, *ranked]
            budget = ld.recall_within_budget(packed, question.evidence)
            scores.profile_chars.append(sum(len(item.text) for item in profile_items))
            at10 = ld.recall_at_k(packed, question.evidence)
            scores.at10_results.append(ld.recall_at_k(ranked, question.evidence))
            scores.budget[question.category].append(budget)
            scores.at10[question.category].append(at10)
            scores.type_add(question_type_of(question), budget, at10)
            if stranger is not None:
                # The other user's scope has other speakers: its own vector text, as a caller
                # embedding ahead would send.
                foreign_text = search_vector_text(
                    user=stranger,
                    query=question.question,
                    app_id=APP_ID,
                    sources=sources or SOURCES,
                )
                foreign_vector = (
                    vector if foreign_text == text else embedder.embed([foreign_text])[0]
                )
                foreign = search_as(stranger, vector=foreign_vector, text=foreign_text)
                scores.unrelated_empty.append(0.0 if foreign.items else 1.0)
                if dump is not None:
                    dump.append(
                        {
                            "question": question.question,
                            "type": question_type_of(question),
                            "own": [_relevance_row(hit) for hit in result.items[:5]],
                            "foreign": [_relevance_row(hit) for hit in foreign.items[:5]],
                            "recall": budget,
                        }
                    )
            plain = [
                ld.RetrievedItem(f"({format_date(hit.occurred_at)}) {hit.content}", item.dia_ids)
                for hit, item in zip(result.items, ranked, strict=True)
            ]
            scores.plain[question.category].append(
                ld.recall_within_budget(plain, question.evidence)
            )
            used = taken = 0
            for item in ranked:
                if used + len(item.text) > ld.BUDGET_CHARS:
                    break
                used += len(item.text)
                taken += 1
            scores.chars_used.append(used)
            scores.items_used.append(taken)
            shown = answer_words_shown(question.answer, [item.text for item in ranked[:taken]])
            if shown is not None:
                scores.answer_words.append(shown)
    return scores


def answer_words_shown(answer: str, texts: Sequence[str]) -> float | None:
    """Share of the answer's words (stop-words left out) that the budgeted texts hold; None
    for an answer without such words. Recall counts an item's evidence ids whatever part of
    it the pack shows; this guards a change that cuts items from counting turns whose answer
    it cut away (once: one sentence per chat turn read +3 points of recall on LoCoMo
    dev and lost a tenth of the answer words, by a one-off script of the same measure)."""
    wanted = set(ld.tokenize(answer))
    if not wanted:
        return None
    shown = set(ld.tokenize(" ".join(texts)))
    return len(wanted & shown) / len(wanted)


def _relevance_row(hit) -> dict:
    return {
        "relevance": hit.relevance,
        "similarity": hit.similarity,
        "keyword": hit.keyword_rank,
        "source": hit.source,
        "speaker": (hit.metadata or {}).get("speaker", ""),
        "text": hit.content[:200],
    }


def variant_config(spec: str):
    """The ranking config of "name=value,name=value" (RankingConfig's fields, any case)."""
    import dataclasses

    from retrieval.config import RANKING, RankingConfig

    kinds = {f.name: f.type for f in dataclasses.fields(RankingConfig)}
    changes = {}
    for assignment in filter(None, (part.strip() for part in spec.split(","))):
        name, _, value = assignment.partition("=")
        name = name.strip().lower()
        if name not in kinds:
            raise SystemExit(f"unknown setting {name!r}; one of {', '.join(kinds)}")
        kind = {"int": int, "float": float, "bool": lambda v: v.lower() in ("1", "true", "yes")}
        changes[name] = kind[kinds[name]](float(value) if kinds[name] == "int" else value)
    return RANKING.replace(**changes)


def main() -> None:
    args = parse_args()
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    conversations, evidence_report = ld.load_locomo(args.data)
    conversations = limit_conversations(conversations, args.limit)
    print(evidence_report.summary())
    global INGEST_MODE, EXPORT_DIR
    long_mem_eval = any(q.question_type for c in conversations for q in c.questions)
    INGEST_MODE = args.ingest if args.ingest != "auto" else ("import" if long_mem_eval else "chat")
    EXPORT_DIR = Path(args.data_dir) / "exports"
    EXPORT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"ingest path: {INGEST_MODE}")
    setup_django(args.data_dir)
    from memory_site.providers import get_embedder

    get_embedder().embed(["warm up"])
    users = ingest(conversations, reuse=args.reuse)
    print(store_report(users))
    # What the ingest left in this process (an import's parsed conversations, caches) is not
    # in a web process that serves searches: collected and frozen, so no full collection of it
    # lands inside a timed search (one of ~250 ms did, in the pass right after a fresh ingest).
    gc.collect()
    gc.freeze()
    sources = [s for s in args.sources.split(",") if s] or None

    for spec in filter(None, (v.strip() for v in args.variants.split(";"))):
        variant = evaluate(
            conversations,
            users,
            sources,
            profile=not args.no_profile,
            config=variant_config(spec),
        )
        print(f"variant {spec}: {variant.summary_line()}", flush=True)

    dump: list | None = [] if args.dump_relevance else None
    scores = evaluate(
        conversations,
        users,
        sources,
        dump=dump,
        profile=not args.no_profile,
        config=variant_config(args.set),
    )
    print(f"mnemo (before the baselines run): {scores.summary_line()}", flush=True)
    if dump is not None:
        Path(args.dump_relevance).write_text(json.dumps(dump))
    baselines = None
    if not args.no_baselines:
        from memory_site.providers import local

        model = get_embedder()._load() if isinstance(get_embedder(), local.LocalEmbedder) else None
        baselines = ld.run_turn_baselines(conversations, model=model)

    print()
    header = (
        f"{'category':<16}{'questions':>10}{'mnemo@2000':>12}{'mnemo@10':>10}"
        f"{'p50 ms':>8}{'p95 ms':>8}"
    )
    if baselines:
        header += f"{'bm25@2000':>11}{'dense@2000':>12}{'bm25@10':>9}{'dense@10':>10}"
    print(header)
    for category in (*ld.SCORED_CATEGORIES, None):
        if category is None:
            name, count = "overall", scores.questions()
            mnemo = (scores.overall(), scores.overall("at10"))
            latency = scores.search_ms
        else:
            name, count = f"{category} {ld.CATEGORY_NAMES[category]}", len(scores.budget[category])
            mnemo = (scores.category(category), scores.category(category, "at10"))
            latency = scores.search_ms_by_category[category]
        line = (
            f"{name:<16}{count:>10}{mnemo[0]:>12.3f}{mnemo[1]:>10.3f}"
            f"{ld.percentile(latency, 50):>8.1f}{ld.percentile(latency, 95):>8.1f}"
        )
        if baselines:
            bm25, dense = baselines["bm25"], baselines["dense"]

            def figure(result, metric, category=category):
                return (
                    result.overall(metric)
                    if category is None
                    else result.category(category, metric)
                )

            line += (
                f"{figure(bm25, 'recall_budget'):>11.3f}{figure(dense, 'recall_budget'):>12.3f}"
                f"{figure(bm25, 'recall_at_10'):>9.3f}{figure(dense, 'recall_at_10'):>10.3f}"
            )
        print(line)
    print(
        f"\nsearch (database) p50 {ld.percentile(scores.search_ms, 50):.1f} ms, "
        f"p95 {ld.percentile(scores.search_ms, 95):.1f} ms; query embedding p50 "
        f"{ld.percentile(scores.embed_ms, 50):.1f} ms, p95 {ld.percentile(scores.embed_ms, 95):.1f}"
        f" ms; mean budget used {Scores.mean(scores.chars_used):.0f} chars"
    )
    if scores.search_cpu_ms:
        print(
            f"search CPU (this process + database backend, what an idle machine would take): "
            f"p50 {ld.percentile(scores.search_cpu_ms, 50):.1f} ms, "
            f"p95 {ld.percentile(scores.search_cpu_ms, 95):.1f} ms"
        )
    if scores.stage_cpu_ms:
        print(
            "search CPU per stage, mean ms (candidates: the legs' SQL; fuse: fusion and the "
            "candidates' load, text included; rerank: trust rules; floor; pack: one slot per "
            "exchange, supersede, the hits; trim: display): "
            + ", ".join(
                f"{stage} {Scores.mean(values):.2f}"
                for stage, values in scores.stage_cpu_ms.items()
            )
        )
    if any(name not in ld.CATEGORY_NAMES.values() for name in scores.by_type):
        print(f"\n{'question type':<28}{'questions':>10}{'mnemo@2000':>12}{'mnemo@10':>10}")
        for name, values in sorted(scores.by_type.items()):
            print(
                f"{name:<28}{len(values['budget']):>10}{Scores.mean(values['budget']):>12.3f}"
                f"{Scores.mean(values['at10']):>10.3f}"
            )
    unrelated_rate = Scores.mean(scores.unrelated_empty)
    print(
        f"recall_budget {scores.overall():.3f}  unrelated_empty_rate {unrelated_rate:.3f} "
        f"({len(scores.unrelated_empty)} questions asked of another conversation's user)"
    )
    print(
        f"budget fill: {Scores.mean(scores.items_used):.1f} items, "
        f"{Scores.mean(scores.chars_used):.0f} of {ld.BUDGET_CHARS} chars on average "
        f"(p50 {ld.percentile(scores.chars_used, 50):.0f}); answer words inside it "
        f"{Scores.mean(scores.answer_words):.3f}; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    print(
        f"same ranking, items rendered unquoted without source labels: "
        f"{scores.overall('plain'):.3f} within the budget"
    )
    if baselines:
        print(
            f"baseline BM25+dense RRF over single turns: "
            f"{baselines['rrf'].overall('recall_budget'):.3f} within the budget, "
            f"{baselines['rrf'].overall('recall_at_10'):.3f} @10"
        )
        for name in ("bm25", "dense"):
            latency = [
                v for c in baselines[name].per_category.values() for v in c.get("latency_ms", [])
            ]
            print(
                f"baseline {name}: p50 {ld.percentile(latency, 50):.1f} ms, "
                f"p95 {ld.percentile(latency, 95):.1f} ms (in memory"
                f"{', with query embedding' if name == 'dense' else ''})"
            )
    category_keys = {4: "single_hop", 1: "multi_hop", 2: "temporal", 3: "open_domain"}
    summary = {
        "recall_budget": round(scores.overall(), 4),
        "recall_budget_by_category": {
            key: round(scores.category(category), 4) for category, key in category_keys.items()
        },
        "recall_at_10": round(scores.overall("at10"), 4),
        "recall_at_10_results": round(Scores.mean(scores.at10_results), 4),
        "bm25_recall_budget": round(baselines["bm25"].overall("recall_budget"), 4)
        if baselines
        else None,
        "dense_recall_budget": round(baselines["dense"].overall("recall_budget"), 4)
        if baselines
        else None,
        "rrf_recall_budget": round(baselines["rrf"].overall("recall_budget"), 4)
        if baselines
        else None,
        "bm25_recall_budget_by_category": {
            key: round(baselines["bm25"].category(category, "recall_budget"), 4)
            for category, key in category_keys.items()
        }
        if baselines
        else None,
        "dense_recall_budget_by_category": {
            key: round(baselines["dense"].category(category, "recall_budget"), 4)
            for category, key in category_keys.items()
        }
        if baselines
        else None,
        "search_p50_ms": round(ld.percentile(scores.search_ms, 50), 2),
        "search_p95_ms": round(ld.percentile(scores.search_ms, 95), 2),
        "questions": scores.questions(),
        "unrelated_empty_rate": round(unrelated_rate, 4),
        "budget_items_mean": round(Scores.mean(scores.items_used), 2),
        "budget_chars_mean": round(Scores.mean(scores.chars_used), 1),
        "answer_words_budget": round(Scores.mean(scores.answer_words), 4),
        "by_type": {
            name: {
                "questions": len(values["budget"]),
                "recall_budget": round(Scores.mean(values["budget"]), 4),
                "recall_at_10": round(Scores.mean(values["at10"]), 4),
            }
            for name, values in sorted(scores.by_type.items())
        },
        "turn1_pack_rate": TURN_ONE.get("pack_rate"),
        "search_cpu_p95_ms": round(ld.percentile(scores.search_cpu_ms, 95), 2)
        if scores.search_cpu_ms
        else None,
        "stage_cpu_ms": {
            stage: round(Scores.mean(values), 3) for stage, values in scores.stage_cpu_ms.items()
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
