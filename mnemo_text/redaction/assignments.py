"""Values assigned to password- and secret-named keys (``password=x``, ``api_key: y``,
"the password is z"), and the password of ``scheme://user:pw@host``."""

from __future__ import annotations

import re

from mnemo_text.redaction.findings import _PLACEHOLDER_VALUES, Finding
from mnemo_text.redaction.scanning import _keyword_hits, _words_pattern

# "pass" stands for password, passwd, passphrase, passcode and "mot de passe" (checked below).
_PASSWORD_WORDS_ASCII = (
    "pass", "pwd", "pw", "kennwort", "contrasena", "senha", "wachtwoord", "haslo", "losenord",
    "salasana", "sifre",
)  # fmt: skip
_PASSWORD_WORDS_OTHER = (
    "contraseña",
    "hasło",
    "lösenord",
    "şifre",
    "пароль",
    "パスワード",
    "密码",
    "密碼",
)
_PASSWORD_WORD = _words_pattern(_PASSWORD_WORDS_ASCII + _PASSWORD_WORDS_OTHER)
_PASS_CONTINUATIONS = ("passw", "passphrase", "passcode")


def _is_password_key(text: str, start: int) -> bool:
    """Whether the "pass" at ``start`` begins a password key rather than "passed", "compass"."""
    head = text[start : start + 10].lower()
    if head.startswith(_PASS_CONTINUATIONS):
        return True
    if text[max(start - 7, 0) : start + 5].lower() == "mot de passe":
        return True
    # A bare "pass=" (no spaces) in a query string or a CLI line.
    return head.startswith("pass=") and (start == 0 or not text[start - 1].isalpha())


_SECRET_WORDS = ("secret", "token", "credential", "key")
_SECRET_WORD = _words_pattern(_SECRET_WORDS)
# "key" alone is everyday English; only these compounds name a credential.
_KEY_COMPOUNDS = ("api", "access", "auth", "private", "signing", "encryption")
# What follows a key word: the rest of the key, an optional closing quote, then an assignment
# operator ("op"), a prose connector ("verb" / "cjk") or the space after a CLI flag ("cli").
_VALUE = (
    r"(?P<value>\"(?:[^\"\\\n]|\\.){1,512}\"|'[^'\n]{1,512}'|`[^`\n]{1,512}`"
    r"|(?:[^\s\"'`;,<&]|&(?![\w.\-]+=)){1,256})"
)
_PASSWORD_TAIL = re.compile(
    r"(?P<key>[A-Za-z0-9_.\-]{0,64})(?:"
    # "password for the VPN: ...", "Passwort für das WLAN ist ..."
    r"(?:[ \t]+(?:for|für|pour|para|per|voor|dla|för|of)(?:[ \t]+[^\s:=\"'`]{1,40}){1,3}?)?"
    r"[\"']?(?:"
    r"[ \t]*(?P<op>:=|=>|==|=|:|：)[ \t]*"
    r"|(?:[ \t]+(?P<verb>is|was|to|ist|war|est|es|era|é|er|är|on|jest)\b:?"
    r"|[ \t]*(?P<cjk>は|是|为|為))[ \t]*"
    r")"
    r"|(?P<cli>[ \t]+)"
    r")" + _VALUE,
    re.IGNORECASE,
)
_SECRET_TAIL = re.compile(
    r"(?P<key>[A-Za-z0-9_.\-]{0,64})(?:[\"']?[ \t]*(?P<op>:=|=>|=|:)[ \t]*"
    r"|[ \t]+(?:is|was|ist|lautet|est|es|é|:)[ \t]+)" + _VALUE
)
# Keys that name something about the secret rather than the secret itself.
_KEY_NOT_SECRET_SUFFIXES = tuple(
    """url uri path file dir name id type len length count size limit ttl expiry expires days
    timeout version header endpoint prefix env var policy hint hash hasher validator reset field
    label input placeholder min max rule strength attempt s""".split()
)
_NOT_A_VALUE = frozenset(
    "none null nil undefined true false empty required optional str string bytes int text "
    "secret secretstr password char varchar any hidden redacted omitted".split()
)
# Code references rather than literals: env lookups, templates, calls, subscripts, variables
# named after the key (db_password, self.password), SQL parameters, paths and URLs.
_CODE_VALUE = re.compile(
    r"\$[{(]|\$[A-Za-z_]\w*$|%\(|%s$|\{\{|\{[A-Za-z_]\w*\}$|<[^>]*>$|\?$|[:@][A-Za-z_]\w*$"
    r"|[A-Za-z_][\w.]*[\[(](?:$|[)\]\"'A-Za-z_])"
    r"|~?/[\w.\-]*/|[a-z][a-z0-9+.\-]*://",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_.]*")
_KEY_WORDS_IN_NAMES = ("passw", "pwd", "pass", "secret", "token", "key")
_MASK = re.compile(r"[*xX•·.\-_#]+$")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HAS_SPACE = re.compile(r"\s")
_TRAILING_PUNCTUATION = ".,?:"


def _clean_value(value: str, start: int) -> tuple[str, int, bool] | None:
    """Strip quotes and sentence punctuation; None when the value is not a literal."""
    quoted = value[0] in "\"'`"
    if quoted:
        value, start = value[1:-1], start + 1
    else:
        while len(value) > 1 and value[-1] in _TRAILING_PUNCTUATION:
            value = value[:-1]
        for opener, closer in ("()", "[]", "{}"):
            if value.endswith(closer) and value.count(opener) < value.count(closer):
                value = value[:-1]
    if not value or _MASK.match(value):
        return None
    # Already redacted (possibly with text around it, e.g. "[PRIVATE_KEY]\n"): keeps redact
    # idempotent.
    if "[" in value and any(placeholder in value for placeholder in _PLACEHOLDER_VALUES):
        return None
    folded = value.lower()
    if folded in _NOT_A_VALUE or _CODE_VALUE.match(value):
        return None
    if _IDENTIFIER.fullmatch(value) and any(word in folded for word in _KEY_WORDS_IN_NAMES):
        return None  # a variable named after the key: password=db_password, self.api_key
    return value, start, quoted


def _ends_line(text: str, position: int) -> bool:
    while position < len(text) and text[position] in " \t.,;!?)":
        position += 1
    return position >= len(text) or text[position] in "\r\n"


def _find_passwords(text: str, lowered: str | None, out: list[Finding]) -> None:
    words = (
        _PASSWORD_WORDS_ASCII if text.isascii() else _PASSWORD_WORDS_ASCII + _PASSWORD_WORDS_OTHER
    )
    for word_start, word_end in _keyword_hits(text, lowered, words, _PASSWORD_WORD):
        if word_start and text[word_start - 1] == "[":
            continue
        word = text[word_start:word_end].lower()
        if word == "pw":  # only as a word of its own
            if (word_start and text[word_start - 1].isalpha()) or (
                word_end < len(text) and text[word_end].isalnum()
            ):
                continue
        if word == "pass":
            if not _is_password_key(text, word_start):
                continue
            if text[max(word_start - 7, 0) : word_start + 5].lower() == "mot de passe":
                word_end += 1
        tail = _PASSWORD_TAIL.match(text, word_end)
        if tail is None or tail.group("key").lower().endswith(_KEY_NOT_SECRET_SUFFIXES):
            continue
        cleaned = _clean_value(tail.group("value"), tail.start("value"))
        if cleaned is None:
            continue
        value, start, quoted = cleaned
        if tail.group("cli") is not None:
            if not text.startswith("--", max(word_start - 2, 0)) or value[0] == "-":
                continue
        elif tail.group("op") is not None:
            if tail.group("op") in ":：" and not quoted:
                if len(value) < 3:
                    continue
                spaced = tail.start("value") > tail.end("op")
                if spaced and value.isalpha() and not _ends_line(text, start + len(value)):
                    continue
        elif not quoted and (len(value) < 4 or value.isalpha()):
            continue
        out.append(Finding("PASSWORD", start, start + len(value)))


_URL_CREDENTIALS = re.compile(r"://[^\s:/@]{0,256}:([^\s@/]{1,256})@[A-Za-z0-9\[]")


def _find_url_passwords(text: str, out: list[Finding]) -> None:
    position = text.find("://")
    while position != -1:
        match = _URL_CREDENTIALS.match(text, position)
        if match is not None:
            value = match.group(1)
            if value not in _PLACEHOLDER_VALUES and not value.startswith(("$", "{", "%", "<")):
                out.append(Finding("PASSWORD", match.start(1), match.end(1)))
        position = text.find("://", position + 3)


def _find_secret_assignments(text: str, lowered: str | None, out: list[Finding]) -> None:
    for word_start, word_end in _keyword_hits(text, lowered, _SECRET_WORDS, _SECRET_WORD):
        # "tokens", "tokenizer", "secretary", "credentials", "keyboard" name other things.
        if word_end < len(text) and text[word_end].islower():
            continue
        word = text[word_start:word_end].lower()
        if word == "key":
            before = text[max(word_start - 11, 0) : word_start].lower().rstrip(" _-")
            if not before.endswith(_KEY_COMPOUNDS):
                continue
        tail = _SECRET_TAIL.match(text, word_end)
        if tail is None or (word + tail.group("key").lower()).endswith(_KEY_NOT_SECRET_SUFFIXES):
            continue
        cleaned = _clean_value(tail.group("value"), tail.start("value"))
        if cleaned is None:
            continue
        value, start, _ = cleaned
        if (
            len(value) < 12
            or "://" in value
            or value[0] in "/.~"
            or _HAS_DIGIT.search(value) is None
            or _HAS_LETTER.search(value) is None
            or _HAS_SPACE.search(value) is not None
        ):
            continue
        out.append(Finding("SECRET", start, start + len(value)))
