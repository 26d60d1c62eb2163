"""Document chunking: the rag-pipeline strategies with character offsets into the source."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mnemo_text.sentences import sentence_spans
from mnemo_text.words import STOP_WORDS

# --------------------------------------------------------------------------------------------
# Document chunking (rag-pipeline.txt)
# --------------------------------------------------------------------------------------------

STRATEGIES = ("paragraph", "sentence", "fixed", "semantic")


@dataclass(slots=True)
class DocumentChunk:
    """A slice of a document: ``text == source[start_offset:end_offset]``."""

    index: int
    text: str
    start_offset: int
    end_offset: int
    strategy: str
    total: int = 0

    def metadata(self) -> dict:
        return {
            "chunk_index": self.index,
            "total_chunks": self.total,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "strategy": self.strategy,
        }


@dataclass(frozen=True, slots=True)
class ChunkingOptions:
    strategy: str = "paragraph"
    max_chunk_size: int = 1000
    min_chunk_size: int = 100
    overlap: int = 50

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
        if self.max_chunk_size < 1:
            raise ValueError("max_chunk_size must be positive")
        if not 0 <= self.min_chunk_size <= self.max_chunk_size:
            raise ValueError("min_chunk_size must be between 0 and max_chunk_size")
        if not 0 <= self.overlap < self.max_chunk_size:
            raise ValueError("overlap must be between 0 and max_chunk_size - 1")


def chunk_document(
    text: str,
    options: ChunkingOptions | None = None,
    *,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
) -> list[DocumentChunk]:
    """Split ``text`` into chunks of at most ``max_chunk_size`` characters (plus overlap).

    paragraph: blank-line separated blocks; sentence: sentence boundaries; fixed: windows of
    ``max_chunk_size``; semantic: sentences grouped until the topic shifts (lexical similarity
    of neighbouring sentences, or ``embed`` similarity when given). Units too large are cut at
    word boundaries; pieces under ``min_chunk_size`` are merged into a neighbour. Each chunk
    after the first starts up to ``overlap`` characters early (on a word boundary) so context
    is not lost at the cut.
    """
    options = options or ChunkingOptions()
    if not text.strip():
        return []
    if options.strategy == "fixed":
        spans = _fixed_spans(text, 0, len(text), options.max_chunk_size)
    else:
        if options.strategy == "paragraph":
            units = _paragraph_units(text)
        else:
            units = sentence_spans(text, lines="blocks")
        if options.strategy == "semantic":
            spans = _semantic_spans(text, units, options, embed)
        else:
            spans = _pack(text, units, options.max_chunk_size)
    spans = _merge_small(text, spans, options)
    spans = _with_overlap(text, spans, options.overlap)
    chunks = [
        DocumentChunk(
            index=i, text=text[a:b], start_offset=a, end_offset=b, strategy=options.strategy
        )
        for i, (a, b) in enumerate(spans)
    ]
    for chunk in chunks:
        chunk.total = len(chunks)
    return chunks


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _paragraph_units(text: str) -> list[tuple[int, int]]:
    units: list[tuple[int, int]] = []
    position = 0
    for match in re.finditer(r"\n[ \t]*\n", text):
        units.append(_trim(text, position, match.start()))
        position = match.end()
    units.append(_trim(text, position, len(text)))
    return [(a, b) for a, b in units if b > a]


def _fixed_spans(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """Windows of at most ``size`` characters, cut at the last whitespace when there is one."""
    spans: list[tuple[int, int]] = []
    position = start
    while position < end:
        stop = min(position + size, end)
        if stop < end:
            cut = text.rfind(" ", position + size // 2, stop)
            cut = max(cut, text.rfind("\n", position + size // 2, stop))
            if cut > position:
                stop = cut
        a, b = _trim(text, position, stop)
        if b > a:
            spans.append((a, b))
        position = stop
    return spans


def _pack(text: str, units: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """Greedy packing of consecutive units into spans of at most ``size`` characters."""
    spans: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for a, b in units:
        if b - a > size:
            if current:
                spans.append(current)
                current = None
            spans.extend(_fixed_spans(text, a, b, size))
            continue
        if current and b - current[0] <= size:
            current = (current[0], b)
        else:
            if current:
                spans.append(current)
            current = (a, b)
    if current:
        spans.append(current)
    return spans


_TOKEN = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def _bag(text: str) -> Counter:
    return Counter(w for w in (t.lower() for t in _TOKEN.findall(text)) if w not in STOP_WORDS)


def _cosine(a: Sequence[float] | Counter, b: Sequence[float] | Counter) -> float:
    if isinstance(a, Counter):
        dot = sum(count * b.get(word, 0) for word, count in a.items())
        norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    else:
        dot = sum(x * y for x, y in zip(a, b, strict=False))
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _semantic_spans(
    text: str,
    units: list[tuple[int, int]],
    options: ChunkingOptions,
    embed: Callable[[list[str]], list[list[float]]] | None,
) -> list[tuple[int, int]]:
    """Sentences grouped until similarity to the running group drops below its typical level."""
    if len(units) <= 1:
        return _pack(text, units, options.max_chunk_size)
    sentences = [text[a:b] for a, b in units]
    vectors: list = embed(sentences) if embed else [_bag(s) for s in sentences]
    # Similarity of each sentence to a window of the previous two (one sentence is too noisy).
    similarities: list[float] = []
    for i in range(1, len(units)):
        if embed:
            window = [sum(vals) for vals in zip(*vectors[max(0, i - 2) : i], strict=False)]
        else:
            window = sum((vectors[j] for j in range(max(0, i - 2), i)), Counter())
        similarities.append(_cosine(vectors[i], window))
    mean = sum(similarities) / len(similarities)
    spread = math.sqrt(sum((s - mean) ** 2 for s in similarities) / len(similarities))
    threshold = mean - 0.5 * spread
    spans: list[tuple[int, int]] = []
    current = units[0]
    for i, (a, b) in enumerate(units[1:], start=1):
        shift = similarities[i - 1] < threshold and current[1] - current[0] >= (
            options.min_chunk_size
        )
        paragraph_break = "\n\n" in text[current[1] : a]
        too_big = b - current[0] > options.max_chunk_size
        if too_big or (shift and (paragraph_break or similarities[i - 1] < threshold / 2)):
            spans.append(current)
            current = (a, b)
        else:
            current = (current[0], b)
    spans.append(current)
    final: list[tuple[int, int]] = []
    for a, b in spans:
        final.extend(
            _fixed_spans(text, a, b, options.max_chunk_size)
            if b - a > options.max_chunk_size
            else [(a, b)]
        )
    return final


def _merge_small(
    text: str, spans: list[tuple[int, int]], options: ChunkingOptions
) -> list[tuple[int, int]]:
    """Fold spans shorter than min_chunk_size into a neighbour when the result still fits."""
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and (
            (
                b - a < options.min_chunk_size
                or merged[-1][1] - merged[-1][0] < options.min_chunk_size
            )
            and b - merged[-1][0] <= options.max_chunk_size
        ):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def _with_overlap(text: str, spans: list[tuple[int, int]], overlap: int) -> list[tuple[int, int]]:
    if overlap <= 0:
        return spans
    result = spans[:1]
    for a, b in spans[1:]:
        start = max(0, a - overlap)
        # begin the overlap on a word boundary so no chunk starts mid-word
        space = text.find(" ", start, a)
        if space != -1 and space + 1 < a:
            start = space + 1
        elif start > 0 and not text[start - 1].isspace():
            start = a
        result.append(_trim(text, start, b))
    return result
