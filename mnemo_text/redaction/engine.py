"""The redaction driver: run the detectors, resolve overlaps by priority, substitute the
placeholders, and re-check the result so ``redact`` is idempotent."""

from __future__ import annotations

import bisect

from mnemo_text.redaction.assignments import (
    _find_passwords,
    _find_secret_assignments,
    _find_url_passwords,
)
from mnemo_text.redaction.credentials import (
    _find_authorization,
    _find_private_keys,
    _find_secret_tokens,
)
from mnemo_text.redaction.emails import _find_emails, _find_obfuscated_emails
from mnemo_text.redaction.findings import _PRIORITY, PLACEHOLDERS, Finding, RedactionResult
from mnemo_text.redaction.ip_addresses import _find_ipv6
from mnemo_text.redaction.numbers import _find_numeric


def _collect(text: str) -> list[Finding]:
    found: list[Finding] = []
    lowered: str | None = text.lower()
    if len(lowered) != len(text):  # e.g. "İ" lower-cases to two code points
        lowered = None
    if "-----BEGIN" in text:
        _find_private_keys(text, found)
    _find_secret_tokens(text, found)
    if lowered is None or "bearer" in lowered or "authorization" in lowered:
        _find_authorization(text, lowered, found)
    _find_secret_assignments(text, lowered, found)
    _find_passwords(text, lowered, found)
    if "@" in text:
        if "://" in text:
            _find_url_passwords(text, found)
        _find_emails(text, found)
    folded = lowered if lowered is not None else text.lower()
    if " dot " in folded or "(at)" in folded or "[at]" in folded:
        _find_obfuscated_emails(text, found)
    _find_numeric(text, found)
    if "::" in text or text.count(":") >= 7:
        _find_ipv6(text, found)
    return found


def _resolve_overlaps(found: list[Finding]) -> list[Finding]:
    """Keep the highest-priority, then longest, detection of each region, in text order."""
    if len(found) < 2:
        return found
    found.sort(key=lambda finding: (_PRIORITY[finding.kind], finding.start - finding.end))
    kept: list[Finding] = []
    starts: list[int] = []  # of ``kept``, which stays sorted and non-overlapping
    for finding in found:
        index = bisect.bisect_right(starts, finding.start)
        if index and kept[index - 1].end > finding.start:
            continue
        if index < len(kept) and kept[index].start < finding.end:
            continue
        kept.insert(index, finding)
        starts.insert(index, finding.start)
    return kept


def _substitute(text: str, findings: list[Finding]) -> str:
    pieces: list[str] = []
    position = 0
    for finding in findings:
        pieces.append(text[position : finding.start])
        pieces.append(PLACEHOLDERS[finding.kind])
        position = finding.end
    pieces.append(text[position:])
    return "".join(pieces)


def _to_original(findings: list[Finding], later: list[Finding]) -> list[Finding]:
    """Map findings made on the redacted text back to offsets in the original text.

    A span that starts or ends inside a placeholder widens to the whole original finding.
    """
    placeholder_starts: list[int] = []
    placeholder_ends: list[int] = []
    shift = 0  # redacted offset minus original offset after the previous finding
    for finding in findings:
        start = finding.start + shift
        placeholder_starts.append(start)
        placeholder_ends.append(start + len(PLACEHOLDERS[finding.kind]))
        shift = placeholder_ends[-1] - finding.end
    mapped = []
    for finding in later:
        index = bisect.bisect_right(placeholder_starts, finding.start) - 1
        if index < 0:
            start = finding.start
        elif finding.start < placeholder_ends[index]:
            start = findings[index].start
        else:
            start = finding.start - (placeholder_ends[index] - findings[index].end)
        index = bisect.bisect_left(placeholder_starts, finding.end) - 1
        if index < 0:
            end = finding.end
        elif finding.end <= placeholder_ends[index]:
            end = findings[index].end
        else:
            end = finding.end - (placeholder_ends[index] - findings[index].end)
        mapped.append(Finding(finding.kind, start, end))
    return mapped


def redact_with_findings(text: str) -> RedactionResult:
    """Return the sanitized text and the findings (offsets into ``text``).

    Idempotent: the redacted text is checked once more, because removing a span can put two
    pieces of text side by side that no rule saw together ("+39 06 1234 5678user@x.io": the
    e-mail takes "5678", leaving "+39 06 1234" for a second look).  Anything found then is
    mapped back onto the original text, so running ``redact`` on its own output finds nothing.
    Never raises on any str.
    """
    if not text:
        return RedactionResult(text, [])
    findings = _resolve_overlaps(_collect(text))
    if not findings:
        return RedactionResult(text, [])
    redacted = _substitute(text, findings)
    for _ in range(3):  # each round only adds coverage; real text needs none
        later = _resolve_overlaps(_collect(redacted))
        if not later:
            break
        mapped = _to_original(findings, later)
        kept = [
            finding
            for finding in findings
            if all(finding.end <= new.start or finding.start >= new.end for new in mapped)
        ]
        findings = _resolve_overlaps(kept + mapped)
        redacted = _substitute(text, findings)
    return RedactionResult(redacted, findings)


def redact(text: str) -> str:
    """Return ``text`` with every detected PII or secret span replaced by its placeholder."""
    return redact_with_findings(text).text
