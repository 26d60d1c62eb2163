"""Word lists and the tokenizer every text function shares: stop-words, noise removal
(code, URLs, e-mail addresses, placeholders), plural folding and cached word records."""

from __future__ import annotations

import html
import re
import tomllib
import unicodedata
from functools import lru_cache
from pathlib import Path

# Only the head of a huge text is analysed: pasted documents would otherwise dominate the cost
# and the keywords of a conversation.
MAX_TEXT_CHARS = 20_000

_WORD_LISTS = tomllib.loads((Path(__file__).parent / "data" / "words.toml").read_text("utf-8"))


def _word_set(*blobs: str) -> frozenset[str]:
    words: set[str] = set()
    for blob in blobs:
        words.update(blob.split())
    return frozenset(words)


# The one stop-word list, in three parts (data/words.toml says what each holds).
_ENGLISH_STOP = _WORD_LISTS["english_stop"]
_CHAT_STOP = _WORD_LISTS["chat_stop"]
_MULTILINGUAL_STOP = _WORD_LISTS["multilingual_stop"]
STOP_WORDS: frozenset[str] = _word_set(_ENGLISH_STOP, _CHAT_STOP, _MULTILINGUAL_STOP)
# English and chat stop words only: the multilingual list holds first names ("Mia", "Ines"),
# which a reader of names or a query's terms must keep.
ENGLISH_STOP_WORDS: frozenset[str] = _word_set(_ENGLISH_STOP, _CHAT_STOP)

CODE_TOKENS: frozenset[str] = _word_set(_WORD_LISTS["code_tokens"])

_NO_FOLD = _word_set(_WORD_LISTS["no_fold"])

_PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Z0-9_]*(?:[ :_-][A-Z0-9_]+)*\]|<[A-Z][A-Z0-9_]*>")
_MD_LINK_RE = re.compile(r"!?\[([^\]\n]{0,200})\]\([^)\s]{0,500}\)")
_URL_TLDS = (
    r"(?:com|org|net|edu|gov|io|de|uk|fr|es|it|nl|eu|co|"
    r"ai|app|dev|info|me|ch|at|ru|jp|cn|us|ca|au)"
)
_URL_RE = re.compile(
    r"(?:https?://|www\.)\S+|\b(?:[\w-]+\.)+" + _URL_TLDS + r"\b(?:/\S*)?", re.IGNORECASE
)
# Every match of _URL_RE contains "://", "www." or ".<tld>" followed by a word boundary; this
# search is many times cheaper than trying the full pattern at every word boundary.
_URL_HINT_RE = re.compile(r"www\.|\." + _URL_TLDS + r"\b", re.IGNORECASE)
_SCHEME_URL_RE = re.compile(r"(?:https?://|www\.)([\w.-]+)\S*", re.IGNORECASE)
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
_CODE_FENCE_RE = re.compile(r"```[\s\S]*?(?:```|\Z)")
# An HTML/XML tag (with its attributes), a comment, or an entity such as "&nbsp;" / "&#8217;".
_MARKUP_RE = re.compile(
    r"<!--[\s\S]*?(?:-->|\Z)|<![^<>]{0,200}>|</?[A-Za-z][\w:-]*(?:\s[^<>]{0,500})?/?>"
    r"|&(?:[A-Za-z]{2,8}|#\d{1,6});"
)
_BLOCK_TAG_RE = re.compile(
    r"</?(?:p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|blockquote|pre|hr)\b", re.I
)
_FRAGMENT_SPLIT_RE = re.compile(r"[.,;:!?()\[\]{}\"“”„«»…|/\\<>=+*#@&%$^~`\n\r\t]+|\s[-–—]+\s")
_WORD_RE = re.compile(r"\w+(?:['’-]\w+)*")
_HAS_LETTER_RE = re.compile(r"[^\W\d_]")
_JUNK_WORD_RE = re.compile(r"(.)\1\1|^(?:ha|he|hi|lo|ja|xa)+h?l?$|^x+d+$|^_|_$")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE_RE = re.compile(r"\s+")
# "useState", "onClick", "getElementById": two lower-case letters, then a capitalised hump
# ("iPhone", "eBay" and "macOS" are not code).
_CAMEL_CODE_RE = re.compile(r"^[a-z]{2,}[A-Z][a-z]")


def code_and_markup_stripped(text: str) -> str:
    """`text` with code blocks as line breaks, HTML/XML markup as `strip_markup` leaves it and
    Markdown links as their text: the first cleaning of both the tokenizer and the sentence
    splitter. Each pattern runs only when the text holds what every match of it contains."""
    if "```" in text:
        text = _CODE_FENCE_RE.sub("\n", text)
    if "<" in text or "&" in text:
        text = strip_markup(text)
    if "](" in text:
        text = _MD_LINK_RE.sub(r"\1", text)
    return text


def _strip_noise(text: str) -> str:
    """Remove what is never a topic: code blocks, URLs, e-mail addresses and placeholders."""
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
    # Each pattern runs only when the text holds a character it needs (ASCII is already NFKC):
    # most chat text has no code, link or placeholder, and a regex scan per text adds up.
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = code_and_markup_stripped(text)
    if "://" in text or ("." in text and _URL_HINT_RE.search(text)):
        text = _URL_RE.sub(" ", text)
    if "@" in text:
        text = _EMAIL_RE.sub(" ", text)
    if "[" in text or "<" in text:
        text = _PLACEHOLDER_RE.sub(" ", text)
    return text


def strip_markup(text: str) -> str:
    """``text`` without HTML/XML tags, comments and entities (the words between tags stay).

    Runs before any keyword is taken, so attribute names and tag names never become topics.
    A placeholder such as ``<EMAIL>`` (upper case, no attributes) is left for the caller.
    """
    return _MARKUP_RE.sub(_markup_replacement, text)


def _markup_replacement(match: re.Match) -> str:
    token = match.group(0)
    if _PLACEHOLDER_RE.fullmatch(token):
        return token
    if token.startswith("&"):
        return html.unescape(token).replace("\xa0", " ")
    # A block tag ends a sentence; an inline one ("<b>", "<span>") sits inside one.
    return "\n" if _BLOCK_TAG_RE.match(token) else " "


@lru_cache(maxsize=8192)
def verb_lemma(word: str) -> str:
    """The one verb lemmatizer of the text layer: a verb's dictionary form from lemminflect's
    lookup tables, its rules for words not in them ("likes", "liked" -> "like"; "went" -> "go";
    "is", "was" -> "be"). Loaded on first use, so a process that never compares facts never
    reads the tables."""
    from lemminflect import getLemma

    lemmas = getLemma(word, upos="VERB")
    return lemmas[0] if lemmas else word


@lru_cache(maxsize=8192)
def verb_third_person(verb: str) -> str:
    """A lower-case verb's third person singular from lemminflect ("go" -> "goes", "study" ->
    "studies", "have" -> "has"); the verb itself when lemminflect has no such form."""
    from lemminflect import getInflection

    forms = getInflection(verb, tag="VBZ")
    return forms[0] if forms else verb


def verb_tables_load() -> None:
    """Read lemminflect's lemma and inflection tables now (~0.75 s and ~0.35 s): a server calls
    this at start, so the first search that compares what two memories state (or turns a
    user's words into the third person) does not spend them inside the pack's latency budget."""
    verb_lemma("warming")
    verb_third_person("warm")


def plural_fold(word: str) -> str:
    """The one plural rule of the text layer, for matching only (display forms come from the text
    itself): "parties" -> "party", "beaches" -> "beach", "cats" -> "cat"; "news", "this",
    "class", "bus" and words of three letters stay as they are."""
    if len(word) <= 3 or word in _NO_FOLD or not word.endswith("s"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "ics", "oes", "'s")):
        return word
    return word[:-1]


def _is_content(lower: str, surface: str) -> bool:
    if len(lower) > 30 or not _HAS_LETTER_RE.search(lower):
        return False
    if "'" in lower or _JUNK_WORD_RE.search(lower):
        return False
    if lower in CODE_TOKENS or "_" in lower or _CAMEL_CODE_RE.match(surface):
        return False
    digits = sum(ch.isdigit() for ch in lower)
    if digits * 2 > len(lower):
        return False
    if lower in STOP_WORDS or plural_fold(lower) in STOP_WORDS:
        return False
    if len(lower) < 3:
        # Two-letter words only as acronyms ("AI", "EU", "UK").
        return len(lower) == 2 and surface.isupper() and surface.isalpha()
    return True


# A content word right after one of these is most likely a verb...
_VERB_PRECEDERS = frozenset("i you we they he she to i'd i'll we'll you'll don't didn't".split())
# ...and so is one right before one of these.
_DETERMINERS = frozenset(
    "a an the my your his her their our its this that these those some any me him them us it".split()
)
_CJK = "\x00cjk"

# Fields of a cached word (a plain tuple: the tokenizer looks up one per word of every text).
_LOWER, _SURFACE, _KEY, _KEY1, _UPPER, _ED, _PRECEDER, _DETERMINER, _BIGRAMS = range(9)
# Stands between two fragments of a text (and after the last one); built at run time so it is
# never the same object as a word's tuple (the tokenizer tests identity).
_BOUNDARY: tuple = ("",) * 3 + (None, False, False, False, False, ())
# A word, or a run of fragment-splitting punctuation (matched as "", a fragment boundary): one
# scan finds the same words as splitting the text into fragments and then finding the words
# of each, because no word character can start or occur inside a separator.
_TOKEN_RE = re.compile(f"({_WORD_RE.pattern})|{_FRAGMENT_SPLIT_RE.pattern}")


@lru_cache(maxsize=100_000)
def _word(raw: str) -> tuple:
    """Everything the tokenizer needs to know about one raw word, computed once per spelling
    (chat vocabulary is small and this is the hot loop): lowercase, surface, key (the folded
    content word, "" for a non-content word, or the CJK marker), the key as a 1-tuple (the
    candidate key of the word), whether the surface starts upper-case, whether it looks like a
    past participle, whether it makes the next word verb-like ("I", "to") or the previous one
    ("the", "my"), and for CJK text its character bigrams."""
    if not raw:
        return _BOUNDARY
    surface = raw.replace("’", "'").strip("-'")
    lower = surface.lower()
    if lower.endswith("'s"):
        lower, surface = lower[:-2], surface[:-2]
    if not lower:
        return ("", "", "", None, False, False, False, False, ())
    bigrams: tuple[str, ...] = ()
    if _CJK_RE.search(lower):
        key = _CJK
        # No spaces in Chinese/Japanese: character bigrams stand in for words.
        chars = [ch for ch in lower if _CJK_RE.match(ch)]
        bigrams = tuple(chars[index] + chars[index + 1] for index in range(len(chars) - 1))
    elif _is_content(lower, surface):
        key = plural_fold(lower)
    else:
        key = ""
    return (
        lower,
        surface,
        key,
        (key,) if key and key != _CJK else None,
        surface[:1].isupper(),
        lower.endswith("ed") and len(lower) > 4,
        lower in _VERB_PRECEDERS,
        lower in _DETERMINERS,
        bigrams,
    )


def _words_of(text: str) -> list[tuple]:
    """The cached words of ``text`` (noise removed) in order, with ``_BOUNDARY`` between two
    fragments (split at punctuation) and at the end."""
    words = list(map(_word, _TOKEN_RE.findall(_strip_noise(text))))
    words.append(_BOUNDARY)
    return words


def _content_keys(text: str) -> list[str]:
    """The keys of the content words of ``text`` in order (CJK as character bigrams).

    Fragment boundaries do not matter here, so the plain word pattern is enough: it finds the
    same words in the whole text as in each fragment."""
    keys: list[str] = []
    for word in map(_word, _WORD_RE.findall(_strip_noise(text))):
        if word[_KEY1] is not None:
            keys.append(word[_KEY])
        elif word[_BIGRAMS]:
            keys.extend(word[_BIGRAMS])
    return keys
