"""US Social Security numbers and IRS ITINs."""

from __future__ import annotations

import re

from mnemo_text.redaction.findings import Finding

# SSA rules for SSNs, plus IRS ITINs (9xx with the groups the IRS assigns).
_SSN = re.compile(
    r"(?<![0-9\-\]])(?:(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}"
    r"|9[0-9]{2}-(?:5[0-9]|6[0-5]|7[0-9]|8[0-8]|9[0-24-9]))"
    r"-(?!0000)[0-9]{4}(?![0-9\[]|-[0-9])"
)
_SSN_CONTEXT = re.compile(
    r"(?<![\[\]])(?i:\bssn\b|\bsocial[ \-]security\b|\bss#)[^0-9\n\[\]]{0,25}"
    r"(?P<ssn>(?!000|666|9)[0-9]{3}(?P<sep>[ \-]?)(?!00)[0-9]{2}(?P=sep)(?!0000)[0-9]{4})"
    r"(?![0-9\[])"
)


def _find_ssns(text: str, blob_start: int, low: int, high: int, out: list[Finding]) -> None:
    for match in _SSN.finditer(text, low, high):
        out.append(Finding("SSN", match.start(), match.end()))
    window_start = max(blob_start - 40, 0)
    window = text[window_start:blob_start].lower()
    if "ssn" in window or "social" in window or "ss#" in window:
        for match in _SSN_CONTEXT.finditer(text, window_start, high):
            out.append(Finding("SSN", match.start("ssn"), match.end("ssn")))
