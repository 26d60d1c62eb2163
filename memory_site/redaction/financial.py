"""Bank and card numbers: IBANs (registry length and mod-97 check) and payment cards
(Luhn check and an issuer prefix that fits the length)."""

from __future__ import annotations

import re

from memory_site.redaction.findings import Finding
from memory_site.redaction.scanning import _scan

_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HN": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28,
    "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22,
    "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}  # fmt: skip
_IBAN = re.compile(r"(?<![A-Za-z0-9\]])[A-Z]{2}[0-9]{2}(?:[ \-]?[A-Z0-9]){11,30}")


def _iban_checksum_ok(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    digits = "".join(str(int(char, 36)) for char in rearranged)
    return int(digits) % 97 == 1


def _find_ibans(text: str, low: int, high: int, out: list[Finding]) -> None:
    position = low
    while (match := _IBAN.search(text, position, high)) is not None:
        position = match.start() + 1
        candidate = match.group()
        length = _IBAN_LENGTHS.get(candidate[:2])
        if length is None:
            continue
        compact_chars = 0
        stop = match.start()
        for offset, char in enumerate(candidate):
            if char not in " -":
                compact_chars += 1
                if compact_chars == length:
                    stop = match.start() + offset + 1
                    break
        if compact_chars < length or (
            stop < len(text) and (text[stop].isalnum() or text[stop] == "[")
        ):
            continue
        if _iban_checksum_ok(text[match.start() : stop].replace(" ", "").replace("-", "")):
            out.append(Finding("IBAN", match.start(), stop))
            position = stop


_CARD = re.compile(
    r"(?<![0-9A-Za-z.,+\]])(?:"
    r"[0-9]{13,19}"
    r"|[0-9]{4}(?P<sep>[ \-])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{1,4}(?:(?P=sep)[0-9]{3})?"
    r"|[0-9]{4}(?P<sep2>[ \-])[0-9]{6}(?P=sep2)[0-9]{4,5}"
    r")(?![0-9A-Za-z\[]|[.,][0-9])"
)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _issuer_fits(digits: str) -> bool:
    """Whether the number starts with a known issuer range that issues this length."""
    length = len(digits)
    two, three, four = int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":
        return length in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return length == 16
    if two in (34, 37):
        return length == 15
    if 2200 <= four <= 2204:
        return 16 <= length <= 19
    if four == 6011 or two == 65 or 644 <= three <= 649:
        return 16 <= length <= 19
    if 300 <= three <= 305 or two in (36, 38, 39):
        return 14 <= length <= 19
    if 3528 <= four <= 3589 or two == 62:
        return 16 <= length <= 19
    if two in (50, 56, 57, 58, 63, 67):
        return 13 <= length <= 19
    return False


def _find_cards(text: str, low: int, high: int, out: list[Finding]) -> None:
    def accept(match: re.Match[str]) -> bool:
        digits = match.group().replace(" ", "").replace("-", "")
        if 13 <= len(digits) <= 19 and _issuer_fits(digits) and _luhn_ok(digits):
            out.append(Finding("CARD", match.start(), match.end()))
            return True
        return False

    _scan(_CARD, text, low, high, accept)
