"""Private keys and provider tokens: PEM private-key blocks, keys recognised by their
documented prefixes, and the credentials of ``Bearer`` / ``Authorization: Basic``."""

from __future__ import annotations

import re

from mnemo_text.redaction.findings import Finding
from mnemo_text.redaction.scanning import _keyword_hits, _words_pattern

_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# Body lines of a truncated block: base64, legacy headers ("Proc-Type: 4,ENCRYPTED"), escapes.
_PEM_BODY_LINE = re.compile(r"(?:\r?\n|\\n)[A-Za-z0-9+/=:,\- ]*[A-Za-z0-9+/=]")


def _find_private_keys(text: str, out: list[Finding]) -> None:
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        end = _PEM_END.search(text, begin.end())
        if end is not None:
            stop = end.end()
        else:
            stop = begin.end()
            while (line := _PEM_BODY_LINE.match(text, stop)) is not None:
                stop = line.end()
        out.append(Finding("PRIVATE_KEY", begin.start(), stop))
        position = stop


_SECRET_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-\]])(?:"
    r"(?P<free>sk-(?:ant-(?:api|admin)[0-9]{2}-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,512}"
    r"|hf_[A-Za-z0-9]{30,512}"
    r"|glpat-[A-Za-z0-9_\-]{20,512}"
    r"|xox[abposre]-[A-Za-z0-9\-]{10,512}"
    r"|xapp-[0-9]-[A-Za-z0-9\-]{10,512})"
    r"|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{36,255}"
    r"|github_pat_[A-Za-z0-9_]{22,255}"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,512}"
    r"|whsec_[A-Za-z0-9]{24,512}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|ya29\.[0-9A-Za-z_\-]{20,2048}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,1024}"
    r"|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"
    r"|eyJ[A-Za-z0-9_\-]{8,4096}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{0,4096}"
    r"|https://hooks\.slack\.com/services/T[A-Z0-9]{6,32}/B[A-Z0-9]{6,32}/[A-Za-z0-9]{16,64}"
    r")(?![A-Za-z0-9_\-\[])"
)
# Literals that occur in a token, and how far before the literal the token starts.  Grouped by
# a character the literal contains so prose without "_" or "-" skips most of the lookups.
_SECRET_LITERALS_UNDERSCORE = (
    ("hf_", 0), ("ghp_", 0), ("gho_", 0), ("ghu_", 0), ("ghs_", 0), ("ghr_", 0),
    ("github_pat_", 0), ("_live_", 2), ("_test_", 2), ("whsec_", 0), ("npm_", 0),
)  # fmt: skip
_SECRET_LITERALS_DASH = (("sk-", 0), ("glpat-", 0), ("xox", 0), ("xapp-", 0), ("pypi-", 0))
_SECRET_LITERALS_OTHER = (("eyJ", 0), ("ya29.", 0), ("SG.", 0), ("hooks.slack.com", 8))
_SECRET_A_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AIza")
_BEARER_TOKEN = re.compile(r"[ \t]+([A-Za-z0-9._~+/\-]{16,8192}=*)(?![A-Za-z0-9._~+/\-])")
_BASIC_CREDENTIALS = re.compile(
    r"[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+([A-Za-z0-9+/]{8,1024}={0,2})(?![\w+/=])"
)


def _looks_random(token: str) -> bool:
    """True for strings that carry entropy: a digit, or both letter cases."""
    has_lower = has_upper = False
    for char in token:
        if char.isdigit():
            return True
        if char.islower():
            has_lower = True
        elif char.isupper():
            has_upper = True
    return has_lower and has_upper


def _find_secret_tokens(text: str, out: list[Finding]) -> None:
    starts = set()
    position = text.find("A")
    while position != -1:
        if text.startswith(_SECRET_A_PREFIXES, position):
            starts.add(position)
        position = text.find("A", position + 1)
    groups = [_SECRET_LITERALS_OTHER]
    if "_" in text:
        groups.append(_SECRET_LITERALS_UNDERSCORE)
    if "-" in text:
        groups.append(_SECRET_LITERALS_DASH)
    for group in groups:
        for literal, back in group:
            position = text.find(literal)
            while position != -1:
                if position >= back:
                    starts.add(position - back)
                position = text.find(literal, position + 1)
    for start in starts:
        match = _SECRET_TOKEN.match(text, start)
        if match is None:
            continue
        free = match.group("free")
        if free is not None and not _looks_random(free[3:]):
            continue
        out.append(Finding("SECRET", match.start(), match.end()))


def _find_authorization(text: str, lowered: str | None, out: list[Finding]) -> None:
    for start, end in _keyword_hits(text, lowered, ("bearer",), _BEARER_WORD):
        if start and text[start - 1].isalnum():
            continue
        token = _BEARER_TOKEN.match(text, end)
        if token is not None and _looks_random(token.group(1)):
            out.append(Finding("SECRET", token.start(1), token.end(1)))
    for _, end in _keyword_hits(text, lowered, ("authorization",), _AUTHORIZATION_WORD):
        credentials = _BASIC_CREDENTIALS.match(text, end)
        if credentials is not None:
            out.append(Finding("SECRET", credentials.start(1), credentials.end(1)))


_BEARER_WORD = _words_pattern(("bearer",))
_AUTHORIZATION_WORD = _words_pattern(("authorization",))
