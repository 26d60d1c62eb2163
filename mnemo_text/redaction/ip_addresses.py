"""IP addresses that identify someone: public or private IPv4 and IPv6 (loopback,
unspecified and netmasks are kept)."""

from __future__ import annotations

import ipaddress
import re

from mnemo_text.redaction.findings import Finding

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = re.compile(
    rf"(?<![0-9A-Za-z_.\-\]]){_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}(?![0-9A-Za-z_\[]|\.[0-9])"
)
_VERSION_CONTEXT = re.compile(
    r"(?i:\b(?:version|ver|v|release|build|firmware|fw|kernel|patch|rev|revision|sdk|"
    r"update|upgrade|python|node|chrome|ios|android|macos|windows)[ \t]*[:#]?[ \t]*)$"
)
_IPV6 = re.compile(
    r"(?<![0-9A-Za-z_:.\]])(?:[0-9A-Fa-f]{0,4}:){2,7}"
    r"(?:(?:[0-9]{1,3}\.){3}[0-9]{1,3}|[0-9A-Fa-f]{1,4})?"
    r"(?:%[0-9A-Za-z]+)?(?![0-9A-Za-z_\[]|:[0-9A-Fa-f]|\.[0-9])"
)


def _find_ipv4(text: str, low: int, high: int, out: list[Finding]) -> None:
    for match in _IPV4.finditer(text, low, high):
        address = match.group()
        if address == "0.0.0.0" or address.startswith(("127.", "255.")):
            continue
        if _VERSION_CONTEXT.search(text, max(match.start() - 20, 0), match.start()):
            continue
        out.append(Finding("IP", match.start(), match.end()))


def _ipv6_candidates(text: str) -> list[re.Match[str]]:
    if text.count(":") >= 7:
        return list(_IPV6.finditer(text))
    # Only compressed forms are possible: look around each "::".
    matches = []
    position = text.find("::")
    while position != -1:
        for match in _IPV6.finditer(text, max(position - 40, 0), min(position + 50, len(text))):
            if match.start() <= position < match.end():
                matches.append(match)
        position = text.find("::", position + 2)
    return matches


def _find_ipv6(text: str, out: list[Finding]) -> None:
    for match in _ipv6_candidates(text):
        candidate = match.group()
        if not any(char.isdigit() for char in candidate):
            continue
        try:
            address = ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
        if address.is_loopback or address.is_unspecified:
            continue
        out.append(Finding("IP", match.start(), match.end()))
