"""Phone numbers: international (a possible number in libphonenumber's metadata), NANP, trunk-
prefix national formats, and any digit run after a phone word."""

from __future__ import annotations

import re

import phonenumbers

from mnemo_text.redaction.findings import Finding
from mnemo_text.redaction.scanning import _scan

_PHONE_SEPARATOR = r"[ .\-\u00a0]"
_INTERNATIONAL_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+\]])(?:\+|00(?=[1-9]))[1-9][0-9]{0,2}"
    r"(?:" + _PHONE_SEPARATOR + r"?\(0\))?"
    # Atomic: the groups are re-split in Python, so backtracking into them only costs time.
    r"(?>(?:" + _PHONE_SEPARATOR + r"?\(?[0-9]{1,5}\)?){1,7})"
    r"(?![0-9\[])"
)
_PHONE_GROUP = re.compile(r"[0-9]+")
# A number, a code ending in digits, or a placeholder right before a candidate ("128 256 512 1024",
# UPS "AA1 01 2345", "[CARD] 020 ..." on a second pass).
_NUMBER_BEFORE = re.compile(r"(?:[0-9][A-Za-z0-9]{0,3}|\]) $")
_NUMBER_AFTER = re.compile(r" [0-9]")
_NANP_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+.\-\]])(?:1[ .\-])?(?:\([2-9][0-9]{2}\)[ .\-]?|[2-9][0-9]{2}(?P<sep>[ .\-]))"
    r"[2-9][0-9]{2}(?(sep)(?P=sep)|[ .\-])[0-9]{4}(?![0-9\[]|[.\-][0-9])"
)
_TRUNK_PHONE = re.compile(
    r"(?<![A-Za-z0-9_+.,/\-\]])(?:\(0[1-9][0-9]{0,4}\) ?|0[1-9][0-9]{0,4}[ \-/.\u00a0])"
    r"[0-9]{2,8}(?:[ \-.\u00a0]?[0-9]{2,8}){0,3}"
    r"(?![0-9\[]|[.,/\-][0-9])"
)
_DATE_PREFIX = re.compile(
    r"(?:0?[1-9]|[12][0-9]|3[01])([\-/.])(?:0?[1-9]|1[0-2])\1(?:19|20)[0-9]{2}(?![0-9])"
    r"|(?:19|20)[0-9]{2}([\-/.])[0-9]{1,2}\2[0-9]{1,2}(?![0-9])"
)
_PHONE_WORDS = (
    "phone", "tel", "call", "mobile", "cell", "whatsapp", "sms", "text me", "fax", "ring",
    "reach me", "handy", "portable", "móvil", "movil", "celular", "телефон", "тел", "電話",
    "电话", "手机", "携帯",
)  # fmt: skip
_PHONE_CONTEXT = re.compile(
    # Not the word inside a "[PHONE]" placeholder: that would make a second pass find more.
    r"(?<![\[\]])(?i:\b(?:phone|tel|telephone|call|mobile|cell|whatsapp|sms|text me|fax|ring|reach me"
    r"|telefon|handy|téléphone|portable|teléfono|móvil|movil|celular|telefone|telefono"
    r"|cellulare|телефон|тел)\b\.?|電話|电话|手机|携帯)"
    r"[^0-9\n\[\]]{0,25}?(?P<number>\+?\(?[0-9][0-9 ().\-\u00a0]{5,22}[0-9])(?![0-9\[])"
)


def _possible_international(digits: str) -> bool:
    """Whether "+digits" is a possible number for its country code in libphonenumber's metadata
    (an assigned code, a national number of a length that country dials)."""
    try:
        number = phonenumbers.parse("+" + digits, None)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_possible_number(number)


def _accept_international_phone(match: re.Match[str], out: list[Finding]) -> bool:
    candidate = match.group()
    body_offset = 1 if candidate[0] == "+" else 2
    if body_offset == 2 and candidate.isdigit():
        return False  # "0042095024134977" is a reference number, not a dialled "00" number
    groups = [
        (group.group(), group.end()) for group in _PHONE_GROUP.finditer(candidate, body_offset)
    ]
    # "(0)" is the trunk prefix shown for domestic callers, not part of the number.
    if "(0)" in candidate:
        groups = [group for group in groups if group[0] != "0"]
    # A trailing group that makes the number too long is the text going on, not the number.
    while not _possible_international("".join(group for group, _ in groups)):
        if len(groups) == 1:
            return False
        groups.pop()
    out.append(Finding("PHONE", match.start(), match.start() + groups[-1][1]))
    return True


def _follows_number(text: str, start: int) -> bool:
    return _NUMBER_BEFORE.search(text, max(start - 13, 0), start) is not None


def _find_phones(text: str, blob_start: int, low: int, high: int, out: list[Finding]) -> None:
    def accept_nanp(match: re.Match[str]) -> bool:
        # "shape 128 256 512 1024": space-separated groups inside a list of numbers.
        if match.group("sep") == " " and (
            _follows_number(text, match.start()) or _NUMBER_AFTER.match(text, match.end())
        ):
            return False
        out.append(Finding("PHONE", match.start(), match.end()))
        return True

    def accept_trunk(match: re.Match[str]) -> bool:
        candidate = match.group()
        digit_count = sum(char.isdigit() for char in candidate)
        if not 9 <= digit_count <= 12 or _DATE_PREFIX.match(candidate):
            return False
        if _follows_number(text, match.start()):
            return False
        out.append(Finding("PHONE", match.start(), match.end()))
        return True

    def accept_context(match: re.Match[str]) -> bool:
        number = match.group("number")
        digit_count = sum(char.isdigit() for char in number)
        if not 7 <= digit_count <= 15 or _DATE_PREFIX.match(number):
            return False
        out.append(Finding("PHONE", match.start("number"), match.end("number")))
        return True

    if "+" in text[low:blob_start] or text.startswith("00", blob_start):
        _scan(
            _INTERNATIONAL_PHONE,
            text,
            low,
            high,
            lambda match: _accept_international_phone(match, out),
        )
    _scan(_NANP_PHONE, text, low, high, accept_nanp)
    _scan(_TRUNK_PHONE, text, low, high, accept_trunk)
    window_start = max(blob_start - 40, 0)
    window = text[window_start:blob_start].lower()
    if any(word in window for word in _PHONE_WORDS):
        _scan(_PHONE_CONTEXT, text, window_start, high, accept_context)
