"""Bank and card numbers: IBANs (python-stdnum's registry lengths, BBAN formats and mod-97 check)
and payment cards (python-stdnum's Luhn check and an issuer prefix that fits the length)."""

from __future__ import annotations

import re

from stdnum import iban, luhn

from mnemo_text.redaction.findings import Finding
from mnemo_text.redaction.scanning import _scan

# Norway's 15 characters are the shortest IBAN in the registry.
_IBAN_MIN_CHARS = 15
_IBAN = re.compile(r"(?<![A-Za-z0-9\]])[A-Z]{2}[0-9]{2}(?:[ \-]?[A-Z0-9]){11,30}")


def _find_ibans(text: str, low: int, high: int, out: list[Finding]) -> None:
    """IBANs that python-stdnum accepts (the country's registry length and BBAN format, and the
    ISO 7064 mod-97 check), ending where the number ends, not inside a longer code."""
    position = low
    while (match := _IBAN.search(text, position, high)) is not None:
        position = match.start() + 1
        compact: list[str] = []
        for offset, char in enumerate(match.group()):
            if char in " -":
                continue
            compact.append(char)
            stop = match.start() + offset + 1
            if len(compact) < _IBAN_MIN_CHARS or (
                stop < len(text) and (text[stop].isalnum() or text[stop] == "[")
            ):
                continue
            if iban.is_valid("".join(compact), check_country=False):
                out.append(Finding("IBAN", match.start(), stop))
                position = stop
                break


_CARD = re.compile(
    r"(?<![0-9A-Za-z.,+\]])(?:"
    r"[0-9]{13,19}"
    r"|[0-9]{4}(?P<sep>[ \-])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{1,4}(?:(?P=sep)[0-9]{3})?"
    r"|[0-9]{4}(?P<sep2>[ \-])[0-9]{6}(?P=sep2)[0-9]{4,5}"
    r")(?![0-9A-Za-z\[]|[.,][0-9])"
)


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
        if 13 <= len(digits) <= 19 and _issuer_fits(digits) and luhn.is_valid(digits):
            out.append(Finding("CARD", match.start(), match.end()))
            return True
        return False

    _scan(_CARD, text, low, high, accept)
