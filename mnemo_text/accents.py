"""Accent folding for keyword search: "José", "Jose" and "JOSÉ" find each other.

The embedded PostgreSQL has no `unaccent` extension, and folding inside the generated search
vector (normalize(NFKD) in SQL) cost the import ~5 % of its throughput. So each memory stores
the folded form of its words that hold an accented Latin letter (`accented_words_folded`,
computed by the writer, in Python: "Zoë moved to São Paulo" -> "Zoe Sao"), indexed beside
its text, and every query is folded (`fold_accents`) before PostgreSQL parses it: "Zoe" and
"Zoë" both reach the lexeme "zoe".
"""

from __future__ import annotations

import re
import unicodedata

# Latin-1 Supplement to Latin Extended-B (U+00C0-U+024F).
_ACCENTED = re.compile("[\u00c0-\u024f]")
_COMBINING = re.compile("[\u0300-\u036f]")
_WORD = re.compile(r"\w+")


def fold_accents(text: str) -> str:
    """`text` with the accents of its Latin letters dropped: "Zoë in São Paulo" -> "Zoe in Sao
    Paulo" (NFKD, combining marks removed); a text without such a letter as it is."""
    if text.isascii() or not _ACCENTED.search(text):
        return text
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))


def accented_words_folded(*texts: str) -> str:
    """The words of `texts` that hold an accented Latin letter, folded, each once, in order:
    what a memory indexes besides its own text. "" for the common all-ASCII text. Found from
    each accented letter outwards: a regex for such words (or splitting every word) cost an
    import ~75 us per 2 KB chunk, this ~5."""
    words: dict[str, None] = {}
    for text in texts:
        if not text or text.isascii():
            continue
        end = 0
        for letter in _ACCENTED.finditer(text):
            start = letter.start()
            if start < end or not text[start].isalpha():
                continue  # in the word just taken, or a sign of the range ("×", "÷")
            while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                start -= 1
            word = _WORD.match(text, start)
            words[word.group()] = None
            end = word.end()
    return fold_accents(" ".join(words))
