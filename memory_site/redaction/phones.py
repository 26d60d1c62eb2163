"""Phone numbers: international (assigned country code, national length), NANP, trunk-
prefix national formats, and any digit run after a phone word."""

from __future__ import annotations

import re

from memory_site.redaction.findings import Finding
from memory_site.redaction.scanning import _scan

# Assigned ITU-T E.164 country codes; the set is prefix-free, so the first hit is the code.
_COUNTRY_CODES = frozenset(
    """1 7 20 27 30 31 32 33 34 36 39 40 41 43 44 45 46 47 48 49 51 52 53 54 55 56 57 58 60 61
    62 63 64 65 66 81 82 84 86 90 91 92 93 94 95 98 211 212 213 216 218 220 221 222 223 224 225
    226 227 228 229 230 231 232 233 234 235 236 237 238 239 240 241 242 243 244 245 246 247 248
    249 250 251 252 253 254 255 256 257 258 260 261 262 263 264 265 266 267 268 269 290 291 297
    298 299 350 351 352 353 354 355 356 357 358 359 370 371 372 373 374 375 376 377 378 380 381
    382 383 385 386 387 389 420 421 423 500 501 502 503 504 505 506 507 508 509 590 591 592 593
    594 595 596 597 598 599 670 672 673 674 675 676 677 678 679 680 681 682 683 685 686 687 688
    689 690 691 692 800 808 850 852 853 855 856 870 878 880 881 882 883 886 888 960 961 962 963
    964 965 966 967 968 970 971 972 973 974 975 976 977 979 992 993 994 995 996 998""".split()
)
# National significant number lengths (min, max) for common country codes.
_NATIONAL_LENGTHS = {
    "1": (10, 10), "7": (10, 10), "20": (8, 10), "27": (9, 9), "30": (10, 10), "31": (9, 9),
    "32": (8, 9), "33": (9, 9), "34": (9, 9), "36": (8, 9), "39": (6, 11), "40": (9, 9),
    "41": (9, 9), "43": (4, 13), "44": (9, 10), "45": (8, 8), "46": (7, 10), "47": (8, 8),
    "48": (9, 9), "49": (6, 13), "52": (10, 10), "55": (10, 11), "61": (9, 9), "62": (8, 12),
    "63": (8, 10), "64": (8, 10), "65": (8, 8), "81": (9, 10), "82": (8, 10), "86": (10, 11),
    "90": (10, 10), "91": (10, 10), "351": (9, 9), "353": (7, 9), "358": (6, 12),
    "852": (8, 8), "971": (8, 9), "972": (8, 9),
}  # fmt: skip
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


def _split_country_code(digits: str) -> tuple[str, str] | None:
    for size in (1, 2, 3):
        if digits[:size] in _COUNTRY_CODES:
            return digits[:size], digits[size:]
    return None


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
    split = _split_country_code("".join(group for group, _ in groups))
    if split is None:
        return False
    country_code, national = split
    low_length, high_length = _NATIONAL_LENGTHS.get(country_code, (6, 12))
    while len(national) > high_length and len(groups) > 1:
        dropped, _ = groups.pop()
        national = national[: len(national) - len(dropped)]
    if not low_length <= len(national) <= high_length:
        return False
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
