"""The redaction kinds with their placeholders and priority, and the finding records."""

from __future__ import annotations

from dataclasses import dataclass, field

PLACEHOLDERS: dict[str, str] = {
    "PRIVATE_KEY": "[PRIVATE_KEY]",
    "SECRET": "[SECRET]",
    "PASSWORD": "[PASSWORD]",
    "EMAIL": "[EMAIL]",
    "IBAN": "[IBAN]",
    "CARD": "[CARD]",
    "SSN": "[SSN]",
    "PHONE": "[PHONE]",
    "IP": "[IP]",
}

# Lower value wins an overlap: a password that looks like an e-mail is still a password.
_PRIORITY = {kind: rank for rank, kind in enumerate(PLACEHOLDERS)}
_PLACEHOLDER_VALUES = frozenset(PLACEHOLDERS.values())


@dataclass(frozen=True, slots=True)
class Finding:
    """One redacted span; ``start``/``end`` index the original text."""

    kind: str
    start: int
    end: int


@dataclass(slots=True)
class RedactionResult:
    """The sanitized text and what was taken out of it, in text order."""

    text: str
    findings: list[Finding] = field(default_factory=list)
