"""Which messages of an imported chunk become passages, and their text (pure: the importer's
worker processes plan them beside the main process's writes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingestion_app.parsers.base import TurnPair
from mnemo_text.categories import TextCues, text_cues
from mnemo_text.indexable import memory_text_indexable
from mnemo_text.passages import PASSAGE_WHOLE_MAX_CHARS, passages_split


@dataclass(frozen=True, slots=True)
class PassageText:
    """One passage of a chunk's message: where it is and what it says."""

    pair_position: int  # the pair's position in the chunk's pairs
    role: str  # "user" | "assistant"
    index: int  # its place among the message's passages
    count: int
    start: int  # offsets into the message text (a split reply: into its section)
    end: int
    content: str  # "User: ..." / "Assistant: ..."
    cues: TextCues  # bucket cue and category words of `content`


def chunk_passage_texts(
    pairs: Sequence[TurnPair], assistant_override: str | None = None
) -> list[PassageText]:
    """The passages of the chunk's long messages (mnemo_text.passages).

    The chunk stays the exchange's record (export, verification, ledger); the passages are
    what search returns from a long reply. A short prompt of a long exchange is one passage
    of its own: inside a 3,000-character chunk the user's "I paid $200 for the workshop"
    ranked under a hundred shorter items (BM25 length normalisation) and would fill the
    budget if found. A short exchange adds nothing (the chunk holds it whole), nor do messages
    that are not memories (memory_text_indexable). A split reply's section is cut on its own,
    so offsets are into that section.
    """
    passages: list[PassageText] = []
    for position, pair in enumerate(pairs):
        reply = pair.assistant_text if assistant_override is None else assistant_override
        long_exchange = len(reply) > PASSAGE_WHOLE_MAX_CHARS
        for role, text in (("user", pair.user_text), ("assistant", reply)):
            if len(text) <= PASSAGE_WHOLE_MAX_CHARS and not (role == "user" and long_exchange):
                continue
            if not text.strip() or not memory_text_indexable(text):
                continue
            spans = passages_split(text)  # one span, the whole text, for a short prompt
            label = role.capitalize()
            for index, (start, end) in enumerate(spans):
                content = f"{label}: {text[start:end]}"
                passages.append(
                    PassageText(
                        pair_position=position,
                        role=role,
                        index=index,
                        count=len(spans),
                        start=start,
                        end=end,
                        content=content,
                        cues=text_cues(content),
                    )
                )
    return passages
