"""The trim stage: what a result shows, never how it ranks. Long items cut to the passage
that matches the query, chat turns without the reactions and questions around what they tell,
gists of the lower results, the token budget, and the one-line forms a prompt and a page show.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from django.utils import timezone

from memory_site.tokens import count_tokens
from mnemo_text.accents import fold_accents
from mnemo_text.sentences import is_chatter, sentence_spans
from retrieval.config import ranking_config
from retrieval.hits import SearchHit
from retrieval.trust import ELLIPSIS, match_terms

# --------------------------------------------------------------------------------------------
# Passages
# --------------------------------------------------------------------------------------------


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _term_positions(lowered: str, terms: set[str]) -> list[tuple[int, str]]:
    """Where each of `terms` occurs in `lowered` as `match_terms` would find it (a six-letter term
    starts a word, a shorter one is a whole word): str.find per term, ~10x faster on a long
    item than splitting each of its sentences into words."""
    found = []
    for term in terms:
        position = lowered.find(term)
        while position != -1:
            end = position + len(term)
            if (position == 0 or lowered[position - 1] not in _ALNUM) and (
                len(term) >= 6 or end == len(lowered) or lowered[end] not in _ALNUM
            ):
                found.append((position, term))
            position = lowered.find(term, end)
    return found


# A stored text never changes, and the same items come back search after search: what
# display derives from a text alone (its sentences, which of them tell something, its form
# without the chatter around them) is cached by text, as fact_updates.user_statements is. The
# query-dependent part (which sentences match the query) is all that is left to each search.
TEXT_CACHE_ITEMS = 8192


@lru_cache(maxsize=TEXT_CACHE_ITEMS)
def _sentence_spans(content: str, start: int = 0) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence or clause of `content` from `start` on, as display cuts it:
    every line and every ": " ends one too."""
    return tuple(sentence_spans(content, start, lines="every", colons=True))


def _sentence_scores(
    content: str, spans: Sequence[tuple[int, int]], wanted: frozenset[str]
) -> list[float]:
    """How many query words (`match_terms`, longer ones weigh more) each sentence of `spans` holds."""
    lowered = fold_accents(content.lower())
    # Offsets of `lowered` are the content's unless a character's lower case or its folded
    # form is longer ("é" folds to one letter, "ﬁ" to two).
    if len(lowered) != len(content):
        found = [match_terms(content[a:b]) & wanted for a, b in spans]
    else:
        found = [set() for _ in spans]
        starts = [a for a, _ in spans]
        for position, term in _term_positions(lowered, wanted):
            index = bisect.bisect_right(starts, position) - 1
            if index >= 0 and position < spans[index][1]:
                found[index].add(term)
    return [sum(1.0 + math.log(len(t)) for t in terms) for terms in found]


def _query_window(
    content: str, spans: Sequence[tuple[int, int]], query: str, limit: int
) -> tuple[int, int] | None:
    """(first, last) index of the sentences around the one that shares most words with the
    query (ties: the earlier), grown toward the neighbour with more of them (ties: the next)
    while the window is at most `limit` characters; None when no sentence shares a word."""
    wanted = match_terms(query)
    if not wanted or len(spans) < 2:
        return None
    scores = _sentence_scores(content, spans, wanted)
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    if scores[best] <= 0:
        return None
    low = high = best
    while True:
        grow_before = low > 0 and spans[high][1] - spans[low - 1][0] <= limit
        grow_after = high + 1 < len(spans) and spans[high + 1][1] - spans[low][0] <= limit
        if grow_after and (not grow_before or scores[high + 1] >= scores[low - 1]):
            high += 1
        elif grow_before:
            low -= 1
        else:
            break
    return low, high


def _cut(content: str, begin: int, end: int, *, keep: int = 0) -> tuple[str, dict]:
    """content[begin:end] with an ellipsis where text was cut (the first `keep` characters,
    a chat turn's speaker label, stay in front)."""
    text = content[begin:end].strip()
    if begin > keep:
        text = ELLIPSIS + " " + text
    if end < len(content.rstrip()):
        text = text + " " + ELLIPSIS
    return content[:keep] + text, {"start": begin, "end": end, "length": len(content)}


def _leading_window(spans: Sequence[tuple[int, int]], limit: int) -> tuple[int, int] | None:
    """(0, last) index of the first sentences that fit in `limit` characters (at least one);
    None for text of one sentence (nothing to cut between)."""
    if len(spans) < 2:
        return None
    high = 0
    while high + 1 < len(spans) and spans[high + 1][1] - spans[0][0] <= limit:
        high += 1
    return 0, high


def passage_trim(content: str, query: str) -> tuple[str, dict | None]:
    """The sentences of a long item around the one that shares most words with the query,
    about TRIM_CHARS long, with an ellipsis where text was cut; a long item with no word in
    common (found by meaning) comes back as its first sentences, as long: what opens an
    exchange is the user's turn, and a whole reply would take the budget of several results.
    A short item comes back whole. Returns (text, {"start", "end", "length"} or None)."""
    config = ranking_config()
    if len(content) <= config.trim_min_chars:
        return content, None
    spans = _sentence_spans(content)
    window = _query_window(content, spans, query, config.trim_chars) or _leading_window(
        spans, config.trim_chars
    )
    if window is None:
        return content, None
    begin, end = spans[window[0]][0], spans[window[1]][1]
    if end - begin > config.trim_chars * 2:  # one very long sentence: cut around its middle
        end = begin + config.trim_chars * 2
    return _cut(content, begin, end)


# "Melanie: " at the start of a chat turn's text: kept whenever the turn is cut.
_SPEAKER_LABEL = re.compile(r"[^\s:][^:\n]{0,40}: ")


_YOU = re.compile(r"\b(?:you|your|you're|you've|yours)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|our|us)\b", re.IGNORECASE)


def asks_other(content: str, start: int, end: int) -> bool:
    """Whether content[start:end] is a question to the other person about themselves."""
    sentence = content[start:end].rstrip().replace("’", "'")
    asks = sentence.endswith("?") or content[end : end + 1] == "?"
    return asks and bool(_YOU.search(sentence)) and not _FIRST_PERSON.search(sentence)


@lru_cache(maxsize=TEXT_CACHE_ITEMS)
def _telling(content: str, start: int, asks_trim: bool) -> tuple[int, ...]:
    """Indexes of the sentences of `_sentence_spans(content, start)` that tell something: not
    a reaction ("Wow, that's great!", mnemo_text.sentences.is_chatter), nor, with
    `asks_trim`, a question to the other person (`asks_other`)."""
    return tuple(
        index
        for index, (a, b) in enumerate(_sentence_spans(content, start))
        if not is_chatter(content[a:b]) and not (asks_trim and asks_other(content, a, b))
    )


def chatter_trim(content: str) -> tuple[str, dict | None]:
    """A short chat turn without the sentences before its first and after its last one that
    tells something: "Melanie: Wow, Caroline! That's great! I just signed up for a pottery
    class. How are your kids?" -> "Melanie: … I just signed up for a pottery class. …"
    (`_telling`), so the budget holds more memories. A turn that is all chatter comes back
    whole, and so does a long item (passage_trim cuts those). Returns (text, {"start", "end",
    "length"} or None)."""
    config = ranking_config()
    text, trimmed = _chatter_trimmed(content, config.trim_min_chars, config.asks_trim)
    return text, dict(trimmed) if trimmed else None  # the caller's own, not the cache's


@lru_cache(maxsize=TEXT_CACHE_ITEMS)
def _chatter_trimmed(content: str, trim_min_chars: int, asks_trim: bool) -> tuple[str, dict | None]:
    if len(content) > trim_min_chars:
        return content, None
    label = _SPEAKER_LABEL.match(content)
    offset = label.end() if label else 0
    spans = _sentence_spans(content, offset)
    telling = _telling(content, offset, asks_trim)
    if not telling or (telling[0] == 0 and telling[-1] == len(spans) - 1):
        return content, None
    begin, end = spans[telling[0]][0], spans[telling[-1]][1]
    text = content[begin:end].strip()
    if telling[0] > 0:
        text = ELLIPSIS + " " + text
    if telling[-1] < len(spans) - 1:
        text = text + " " + ELLIPSIS
    return content[:offset] + text, {"start": begin, "end": end, "length": len(content)}


def gist_trim(content: str, query: str) -> tuple[str, dict | None]:
    """A chat turn cut to its sentences that share most words with the query, or, when none
    does, its first sentences that tell something (`_telling`), about GIST_CHARS long, its
    speaker label kept: "Caroline: … I also use it to speak up for the LGBTQ+ community and
    push for acceptance. …". A long item (passage_trim's), a turn that short already, or one
    with nothing to cut to comes back whole."""
    config = ranking_config()
    if len(content) > config.trim_min_chars or len(content) <= config.gist_chars:
        return content, None
    label = _SPEAKER_LABEL.match(content)
    offset = label.end() if label else 0
    spans = _sentence_spans(content, offset)
    window = _query_window(content, spans, query, config.gist_chars)
    if window is None and len(spans) > 1:
        telling = _telling(content, offset, config.asks_trim)
        if telling:
            low = high = telling[0]
            while high + 1 < len(spans) and spans[high + 1][1] - spans[low][0] <= config.gist_chars:
                high += 1
            window = (low, high)
    if window is None:
        return content, None
    return _cut(content, spans[window[0]][0], spans[window[1]][1], keep=offset)


def hits_trim(hits: list[SearchHit], query: str, *, gists: bool = True) -> None:
    """Each hit cut to what matters: a long item to its matching passage, a chat turn below
    the first WHOLE_RESULTS to its gist (unless not `gists`), any other chat turn without the
    reactions and questions around what it tells."""
    config = ranking_config()
    for rank, hit in enumerate(hits):
        text, trimmed = passage_trim(hit.content, query)
        if trimmed is None and gists and rank >= config.whole_results:
            text, trimmed = gist_trim(hit.content, query)
        if trimmed is None and config.chatter_trim:
            text, trimmed = chatter_trim(hit.content)
        if trimmed is not None:
            hit.content = text
            hit.trimmed = trimmed
            hit.token_count = _shown_tokens(text)


@lru_cache(maxsize=TEXT_CACHE_ITEMS)
def _shown_tokens(text: str) -> int:
    """The tokens of a trimmed text: the same cut of an item comes back for many queries (its
    chatter trim always, its gist whenever no query word is in it)."""
    return count_tokens(text)


def hits_budget(hits: list[SearchHit], *, max_tokens: int | None) -> tuple[list[SearchHit], int]:
    """The hits in order that fit in max_tokens: one that does not fit is skipped, not the end
    (the budget holds the best material that fits). Returns (hits, tokens used)."""
    kept, used = [], 0
    for hit in hits:
        if max_tokens is not None and used + hit.token_count > max_tokens:
            continue
        kept.append(hit)
        used += hit.token_count
    return kept, used


def superseded_mark(
    hits: list[SearchHit], superseded: dict[int, int], occurred: dict[int, datetime]
) -> None:
    """Marks each superseded hit with what replaces it; the replacing hit is at least as
    relevant as what it replaces (it answers the same question, later)."""
    by_id = {hit.id: hit for hit in hits}
    for hit in hits:
        newer = superseded.get(hit.id)
        if newer in by_id:
            by_id[newer].relevance = max(by_id[newer].relevance, hit.relevance)
        if newer is not None:
            hit.superseded = {
                "by": newer,
                "occurred_at": hit.occurred_at.isoformat() if hit.occurred_at else None,
                "by_occurred_at": occurred[newer].isoformat() if newer in occurred else None,
            }


# --------------------------------------------------------------------------------------------
# Prompt lines
# --------------------------------------------------------------------------------------------


def format_date(moment: datetime | None) -> str:
    if moment is None:
        return ""
    local = timezone.localtime(moment) if timezone.is_aware(moment) else moment
    return f"{local.day} {local:%B %Y}"


def format_hit(hit: SearchHit) -> str:
    """One memory as the pack shows it: `(8 May 2023) "Caroline: text"` (quoted data).

    The date is the one thing a reader cannot infer from the text and temporal questions need
    it; the source is named for everything but conversation messages and their passages, and
    a superseded memory says so with the date of the one that replaces it ("superseded 2 April
    2026"). Kept short because every character of the label comes out of the budget: the full
    provenance ("Chat 'Trip planning', 3 Nov 2026") is on the search result, not in the pack.
    The contextual header is indexed, never shown: a 2-4 sentence header would eat the budget
    of a whole memory.
    """
    parts = [format_date(hit.occurred_at)]
    if (hit.metadata or {}).get("granularity") not in ("message", "passage"):
        parts.append(hit.source)
    if hit.superseded:
        later = hit.superseded.get("by_occurred_at")
        later_date = format_date(datetime.fromisoformat(later)) if later else ""
        parts.append(f"superseded {later_date}" if later_date else "superseded")
    label = ", ".join(part for part in parts if part)
    text = " ".join(hit.content.split())
    return f'({label}) "{text}"' if label else f'"{text}"'


def format_for_prompt(items: list[SearchHit]) -> str:
    """The retrieved-knowledge block of the context pack: quoted data, one line per memory."""
    return "\n".join(format_hit(hit) for hit in items)
