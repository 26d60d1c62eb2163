"""Passages: a long message cut into runs of a few sentences, with offsets into the original.

Why passages: assistant replies in real chats run 1,000-3,000 characters, so a whole
reply stored as one memory fills a 2,000-character budget by itself and the sentence that
answers a question sits inside text about something else. A passage of a few sentences is
found by the words and the meaning of that sentence alone, and several fit in one budget.

The rule (measured with bench/locomo.py, see ingestion_app.services.message_index):

- a message up to PASSAGE_WHOLE_MAX_CHARS (700) stays whole: LoCoMo turns (~120 characters)
  and most user turns are never cut, so their figures do not move;
- a longer message is cut at sentence and line ends into passages of about
  PASSAGE_TARGET_CHARS (450), never above PASSAGE_MAX_CHARS (800) unless one sentence is (then
  it is cut at a word boundary); a heading or a line ending in ":" goes with what follows it;
  a last passage shorter than PASSAGE_MIN_CHARS is merged into the one before.

Offsets are character offsets into the text given, so a passage points back into its message.
"""

from __future__ import annotations

from mnemo_text.sentences import sentence_spans

PASSAGE_WHOLE_MAX_CHARS = 700
PASSAGE_TARGET_CHARS = 450
PASSAGE_MAX_CHARS = 800
PASSAGE_MIN_CHARS = 150


def _is_lead_in(text: str) -> bool:
    """A heading or a lead-in line ("Here are the options:") belongs to what follows it."""
    stripped = text.strip()
    return len(stripped) <= 120 and (stripped.startswith("#") or stripped.endswith(":"))


def _cut_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A single over-long sentence cut at word boundaries into pieces of at most MAX chars."""
    pieces = []
    while end - start > PASSAGE_MAX_CHARS:
        cut = text.rfind(" ", start + PASSAGE_TARGET_CHARS, start + PASSAGE_MAX_CHARS)
        if cut <= start:
            cut = start + PASSAGE_MAX_CHARS
        pieces.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        pieces.append((start, end))
    return pieces


def passages_split(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the passages of `text`; one span for a short text.

    Spans cover the text's content in order without overlap (whitespace between them is left
    out). An empty or blank text gives [].
    """
    if not text.strip():
        return []
    if len(text) <= PASSAGE_WHOLE_MAX_CHARS:
        start = len(text) - len(text.lstrip())
        return [(start, len(text.rstrip()))]
    segments: list[tuple[int, int]] = []
    for start, end in sentence_spans(text, lines="every"):
        segments.extend(_cut_long(text, start, end))
    passages: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    for segment in segments:
        if current:
            size = segment[1] - current[0][0]
            if size > PASSAGE_MAX_CHARS or (current[-1][1] - current[0][0]) >= PASSAGE_TARGET_CHARS:
                carried = []
                while current and _is_lead_in(text[current[-1][0] : current[-1][1]]):
                    carried.insert(0, current.pop())
                if current:
                    passages.append(current)
                current = carried
        current.append(segment)
    if current:
        if passages and current[-1][1] - current[0][0] < PASSAGE_MIN_CHARS:
            passages[-1].extend(current)
        else:
            passages.append(current)
    return [(group[0][0], group[-1][1]) for group in passages]
