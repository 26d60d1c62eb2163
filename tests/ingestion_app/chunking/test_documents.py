"""Document chunking: the four strategies, exact offsets, overlap, option checks."""

from __future__ import annotations

import pytest

from ingestion_app.chunking.documents import ChunkingOptions, chunk_document

# ---------------------------------------------------------------------------------- documents

DOCUMENT = (
    "Sourdough basics. A starter is flour and water fermented by wild yeast. "
    "Feed the starter daily with equal weights of flour and water.\n\n"
    "Baking day. Mix the dough, rest it, fold it, and shape it before the final proof. "
    "Bake in a hot Dutch oven for forty minutes.\n\n"
    "Tax filing. Freelancers in the Netherlands file VAT returns every quarter. "
    "Income tax is filed once a year before the first of May.\n\n"
    "Deductions. Keep receipts for equipment, because business costs lower the taxable income."
)


@pytest.mark.parametrize("strategy", ["paragraph", "sentence", "fixed", "semantic"])
def test_document_chunks_have_exact_offsets_and_respect_the_size(strategy):
    options = ChunkingOptions(strategy=strategy, max_chunk_size=200, min_chunk_size=40, overlap=20)

    chunks = chunk_document(DOCUMENT, options)

    assert len(chunks) >= 2
    for index, chunk in enumerate(chunks):
        assert DOCUMENT[chunk.start_offset : chunk.end_offset] == chunk.text
        assert chunk.index == index and chunk.total == len(chunks)
        assert chunk.strategy == strategy
        assert len(chunk.text) <= 200 + 20
    # nothing is lost: every word of the document is in some chunk
    covered = " ".join(c.text for c in chunks)
    assert all(word in covered for word in DOCUMENT.split())


def test_paragraph_strategy_cuts_at_blank_lines():
    options = ChunkingOptions(
        strategy="paragraph", max_chunk_size=200, min_chunk_size=10, overlap=0
    )

    chunks = chunk_document(DOCUMENT, options)

    assert [c.text.split(".")[0] for c in chunks] == [
        "Sourdough basics",
        "Baking day",
        "Tax filing",
        "Deductions",
    ]


def test_semantic_strategy_separates_the_baking_and_tax_topics():
    options = ChunkingOptions(
        strategy="semantic", max_chunk_size=1000, min_chunk_size=50, overlap=0
    )

    chunks = chunk_document(DOCUMENT, options)

    assert len(chunks) >= 2
    assert not any("starter" in c.text and "VAT" in c.text for c in chunks)


def test_overlap_repeats_the_end_of_the_previous_chunk():
    options = ChunkingOptions(strategy="fixed", max_chunk_size=120, min_chunk_size=10, overlap=30)

    chunks = chunk_document(DOCUMENT, options)

    for previous, current in zip(chunks, chunks[1:], strict=False):
        assert current.start_offset < previous.end_offset
        assert previous.end_offset - current.start_offset <= 30


def test_invalid_options_are_refused():
    with pytest.raises(ValueError, match="strategy"):
        ChunkingOptions(strategy="random")
    with pytest.raises(ValueError, match="overlap"):
        ChunkingOptions(max_chunk_size=100, overlap=100)
