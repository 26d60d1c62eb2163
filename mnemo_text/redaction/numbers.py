"""The digit-run windows every numeric detector looks at (IBAN, card, SSN, phone, IPv4),
so a text without a long enough digit run costs one scan."""

from __future__ import annotations

import re

from mnemo_text.redaction.financial import _find_cards, _find_ibans
from mnemo_text.redaction.findings import Finding
from mnemo_text.redaction.ip_addresses import _find_ipv4
from mnemo_text.redaction.phones import _find_phones
from mnemo_text.redaction.ssn import _find_ssns

# Digit runs (with the separators numbers are written with) that hold at least four digits:
# every numeric kind contains one, so the numeric rules only ever look at these windows.
_DIGIT_RUN = re.compile(r"[0-9](?:[ ().\-/\u00a0]{0,2}[0-9]){3,}")
_DROP_SEPARATORS = str.maketrans("", "", " ().-/\u00a0")
_IBAN_HEAD = re.compile(r"[A-Z][A-Z][0-9][0-9]")
_DATE = re.compile(
    r"(?:19|20)[0-9]{2}-[01][0-9]-[0-3][0-9]|[0-3]?[0-9]([./\-])[01]?[0-9]\1(?:19|20)[0-9]{2}"
)


def _find_numeric(text: str, out: list[Finding]) -> None:
    length = len(text)
    may_hold_iban = _IBAN_HEAD.search(text) is not None
    for run in _DIGIT_RUN.finditer(text):
        value = run.group()
        dots = value.count(".")
        if len(value) < 6 and dots < 3:  # prices, years, times: nothing to find
            continue
        digits = len(value.translate(_DROP_SEPARATORS))
        if digits <= 8 and _DATE.fullmatch(value):
            continue
        start, end = run.span()
        low, high = max(start - 3, 0), min(end + 3, length)
        if dots >= 3:
            _find_ipv4(text, low, high, out)
        if digits >= 6 and may_hold_iban:
            # An IBAN's country code and check digits may sit up to ~12 chars before its
            # first long digit run, and letters of the BBAN may follow it.
            _find_ibans(text, max(start - 16, 0), min(end + 34, length), out)
        if digits >= 7:
            _find_phones(text, start, low, high, out)
        if digits >= 9:
            _find_ssns(text, start, low, high, out)
        if digits >= 13:
            _find_cards(text, low, high, out)
