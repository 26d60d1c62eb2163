"""E-mail addresses, plain and obfuscated (``bob [at] example [dot] com``)."""

from __future__ import annotations

import re

from mnemo_text.redaction.findings import Finding

# The local part is ASCII or Latin-script so that it never swallows CJK text written right before
# it; domain labels may be in any script ("例え.jp"), the TLD is ASCII.
_EMAIL_LOCAL_CHAR = r"A-Za-z0-9\u00C0-\u024F"
_EMAIL = re.compile(
    rf"(?<![{_EMAIL_LOCAL_CHAR}._%+\-\]])[{_EMAIL_LOCAL_CHAR}_%+\-]"
    # An apostrophe only between letters (o'connor), so "2024'bob@x.io" starts at "bob".
    rf"(?:[{_EMAIL_LOCAL_CHAR}._%+\-]|(?<=[A-Za-z])'(?=[A-Za-z])){{0,63}}"
    r"@(?:[^\W_](?:[\w\-]{0,61}[^\W_])?\.){1,8}"
    r"(?P<tld>[A-Za-z]{2,24})(?![A-Za-z0-9\-\[])"
)
_NOT_TLD = frozenset("png jpg jpeg gif svg webp bmp ico tif tiff avif heic".split())
_SSH_REMOTE_TAIL = re.compile(r":[\w~./\-]")
# "bob [at] example [dot] com", "bob(at)example.com", "bob at example dot com".
_AT_WORD = r"(?:[ \t]*[\[({<][ \t]*at[ \t]*[\])}>][ \t]*|[ \t]+at[ \t]+)"
_DOT_WORD = r"(?:[ \t]*[\[({<][ \t]*dot[ \t]*[\])}>][ \t]*|[ \t]+dot[ \t]+|\.)"
_OBFUSCATED_EMAIL = re.compile(
    rf"(?<![A-Za-z0-9._%+\-\]])[A-Za-z0-9._%+\-]{{1,64}}(?P<at>{_AT_WORD})"
    rf"[A-Za-z0-9\-]{{1,63}}(?:{_DOT_WORD}[A-Za-z0-9\-]{{1,63}}){{0,3}}"
    rf"(?P<dot>{_DOT_WORD})(?P<tld>[A-Za-z]{{2,24}})(?![A-Za-z0-9\-\[])",
    re.IGNORECASE,
)
# With only the words " at " and " dot ", "look at numpy dot product" would be an address.
_COMMON_TLDS = frozenset(
    """com org net edu gov io co ai app dev info biz me us uk de fr es it nl be ch at se no dk
    fi pl pt ie ru jp cn in br au ca mx""".split()
)


def _find_emails(text: str, out: list[Finding]) -> None:
    length = len(text)
    if text.count("@") > 16:  # many "@": one linear scan beats a window per "@"
        windows = [(0, length, -1)]
    else:
        windows = []
        at = text.find("@")
        while at != -1:
            windows.append((max(at - 65, 0), min(at + 256, length), at))
            at = text.find("@", at + 1)
    for low, high, at in windows:
        for match in _EMAIL.finditer(text, low, high):
            if at != -1 and not match.start() < at < match.end():
                continue
            if match.group("tld").lower() in _NOT_TLD:
                continue
            if _SSH_REMOTE_TAIL.match(text, match.end()):
                continue
            out.append(Finding("EMAIL", match.start(), match.end()))


def _find_obfuscated_emails(text: str, out: list[Finding]) -> None:
    for match in _OBFUSCATED_EMAIL.finditer(text):
        at, dot = match.group("at").strip(), match.group("dot").strip()
        if at.lower() == "at" and dot.lower() in ("dot", ""):
            # Plain words only: demand a real TLD and at least one " dot ".
            if match.group("tld").lower() not in _COMMON_TLDS or " dot " not in (
                match.group().lower()
            ):
                continue
        out.append(Finding("EMAIL", match.start(), match.end()))
