"""Redaction of personal data and secrets before text leaves the write path.

Every message, imported turn and document is stored with a sanitized copy, and only that copy
reaches an LLM, the embedder, the full-text index or a context pack.  This module produces it:
detected spans are replaced by typed placeholders (``PLACEHOLDERS``) so the surrounding text
still reads naturally ("write to [EMAIL]") and downstream models know what was there.

Rule set (kind -> placeholder, in the priority used when two detections overlap):

``PRIVATE_KEY`` -> ``[PRIVATE_KEY]``
    A whole PEM block ``-----BEGIN ... PRIVATE KEY-----`` .. ``-----END ... PRIVATE KEY-----``
    (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ``PRIVATE KEY BLOCK``), also with JSON-escaped ``\\n``.
    A block with no END line is redacted up to its last base64-looking line.  Public keys and
    certificates are kept.
``SECRET`` -> ``[SECRET]``
    Provider keys by their documented prefixes: OpenAI ``sk-`` / ``sk-proj-`` / ``sk-svcacct-``,
    Anthropic ``sk-ant-api03-`` / ``sk-ant-admin01-``, AWS access key ids (``AKIA``/``ASIA``/
    ``ABIA``/``ACCA`` + 16), GitHub ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``, Slack
    ``xox[abposre]-``, ``xapp-`` and webhook URLs, Stripe ``sk_``/``rk_`` ``live``/``test`` and
    ``whsec_``, Google ``AIza`` + 35 and OAuth ``ya29.``, Hugging Face ``hf_``, GitLab
    ``glpat-``, npm ``npm_``, PyPI ``pypi-AgEIcHlwaS5vcmc``, SendGrid ``SG.x.y``, JWTs
    (``eyJ..eyJ..sig``), the token after ``Bearer`` and the credentials after
    ``Authorization: Basic``.  Keys with a free-form body (``sk-``, ``hf_``, ``glpat-``,
    ``xox``) need a digit or mixed case, so ``sk-learn`` is not a key.  Values assigned to
    secret-named keys (``api_key=``, ``X-API-Key:``, ``SECRET_KEY = '...'``,
    ``"client_secret": "..."``, ``aws_secret_access_key``, ``?token=``, "the token is ...") are
    redacted when they are 12+ characters with letters and digits and no whitespace; the key is
    kept (``api_key=[SECRET]``).  Keys naming something else (``*_id``, ``*_url``, ``*_path``,
    ``max_tokens``, ``tokenizer``, ``cache_key``) are ignored.
``PASSWORD`` -> ``[PASSWORD]``
    The value after a key containing password / passwd / pwd / passphrase / passcode, the word
    ``pw``, a bare ``pass=``, or a translation (Passwort, Kennwort, mot de passe, contraseña,
    senha, wachtwoord, hasło, lösenord, salasana, şifre, пароль, パスワード, 密码/密碼), joined by
    ``=`` ``:`` ``:=`` ``=>`` (``DB_PASSWORD=x``, ``"password": "x"``, ``passwd: x``), the space
    of a ``--password x`` flag, or a connector (is / to / ist / est / es / é / は / 是, also after
    "for the VPN": "password for the VPN: x").  Also the password of ``scheme://user:pw@host``.
    The key is kept (``password=[PASSWORD]``).  Unquoted prose values need a digit or a
    symbol, and after a colon a plain word counts only at the end of a line, so "password:
    reset it tomorrow" and "the password is at least 8 characters" are left alone.  Values that
    are code, not secrets, are skipped: ``None``/``null``, ``${VAR}``, ``{{ var }}``,
    ``os.environ[...]``, ``getpass()``, ``%s``, type names (``password: str``), variables named
    like the key (``password=db_password``), masks (``****``), paths and URLs; so are keys
    about passwords (``*_length``, ``*_hash``, ``*_reset_timeout``, ``PASSWORD_VALIDATORS``).
``EMAIL`` -> ``[EMAIL]``
    ``local@domain.tld``: the local part ASCII or Latin-script (``jörg@``), domain labels in any
    script (``例え.jp``), an ASCII TLD; adjacent CJK text is not swallowed.  Obfuscated forms
    ``bob [at] example [dot] com``, ``info(at)firma.de`` and ``bob at example dot com`` (plain
    words only with a common TLD).  Not matched: SSH remotes (``git@github.com:org/repo``),
    retina assets (``logo@2x.png``), ``pkg@1.2.3``, ``user@localhost``.
``IBAN`` -> ``[IBAN]``
    Upper-case IBANs, compact or grouped with spaces or hyphens, whose length matches the
    country's entry in the SWIFT registry (89 countries) and whose ISO 7064 mod-97 check is 1.
``CARD`` -> ``[CARD]``
    13-19 digits, compact or grouped 4-4-4-4(-3), 4-6-5 or 4-6-4 with one consistent separator
    (space or hyphen), that pass Luhn and start with an issuer prefix whose length fits (Visa,
    Mastercard incl. 2221-2720, Amex, Discover, Diners, JCB, UnionPay, Maestro, Mir).
``SSN`` -> ``[SSN]``
    US Social Security numbers ``AAA-GG-SSSS`` under the SSA rules (area not 000, 666 or 9xx;
    group not 00; serial not 0000) and IRS ITINs (9xx with the assigned groups).  Space-
    separated or unseparated nine digits only within 25 characters after "SSN", "SS#" or
    "social security".
``PHONE`` -> ``[PHONE]``
    International ``+CC ...`` numbers (and ``00CC`` with separators): the country code must be
    an assigned ITU code and the national part must fit that country's length (a table for
    common countries, 6-12 digits otherwise; surplus trailing groups are dropped).  NANP formats
    ``(415) 555-0132``, ``415-555-0132``, ``415.555.0132``, ``1-800-555-0199`` with valid area
    and exchange codes.  Trunk-prefix national formats with separators and 9-12 digits
    (``020 7946 0958``, ``07700 900123``, ``030/1234567``, ``01 23 45 67 89``, ``03-1234-5678``).
    Any 7-15 digit run within 25 characters after a phone word (phone, call, tel, mobile,
    cell, WhatsApp, SMS, fax, Telefon, Handy, téléphone, portable, teléfono, celular, телефон,
    電話, 电话, 手机, 携帯).  Dates, numbers inside a list of numbers ("128 256 512 1024") or
    right after a code with digits (UPS "1Z 999 AA1 01 2345 6784") are rejected.
``IP`` -> ``[IP]``
    Dotted-quad IPv4 (octets 0-255, no leading zeros) that is not part of a longer dotted
    number and does not follow "version", "v", "build", "release", "kernel" and similar; IPv6
    in any form ``ipaddress.IPv6Address`` accepts (zone index, embedded IPv4) that contains a
    digit.  ``0.0.0.0``, ``127.x.x.x``, ``::``, ``::1`` and netmasks (``255.x``) identify no one
    and are kept.

Guarantees: ``redact`` is idempotent: placeholders never match a rule, a value that already
holds a placeholder is skipped, and because removing a span can glue text together that no rule
saw before, every text with findings gets one more pass whose findings are mapped back onto the
original.  Non-ASCII text outside the replaced spans is untouched; findings carry offsets into
the original text.  Cost is a few substring checks and one scan for digit runs when nothing is
found (about 20-30 us for 500 characters), regex windows around the triggers otherwise; every
repetition is bounded, so adversarial input stays linear.

Known limits (``bench/redaction.py`` prints the measured figures): a plain word as a password
("the password is tuesday") and passwords with no key ("login root / toor", "pass: hunter2");
secrets with no provider prefix and no secret-named key; lower-case IBANs; 7-digit local
numbers and trunk-less national numbers (Spain "612 34 56 78") without a country code or a
phone word; full-width digits and numbers split across lines; numbers of the right shape and
checksum that are something else (about 3.5% of random 16-digit references pass Luhn with an
issuer prefix and read as cards; 1 in 97 IBAN-shaped strings passes mod-97; a four-part
version after a product name, "cuDNN 8.9.2.26", reads as an IPv4 address); government ids
other than US SSN/ITIN.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "PLACEHOLDERS",
    "Finding",
    "RedactionResult",
    "redact",
    "redact_with_findings",
]

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


# --------------------------------------------------------------------------- keyword lookup


def _keyword_hits(
    text: str, lowered: str | None, words: tuple[str, ...], fallback: re.Pattern[str]
) -> list[tuple[int, int]]:
    """Offsets of every case-insensitive occurrence of ``words``.

    ``str.find`` on the lower-cased text is an order of magnitude faster than an IGNORECASE
    alternation; the regex is only used when lower-casing changed the text's length.
    """
    if lowered is None:
        return [match.span() for match in fallback.finditer(text)]
    hits = []
    for word in words:
        position = lowered.find(word)
        while position != -1:
            hits.append((position, position + len(word)))
            position = lowered.find(word, position + 1)
    return hits


def _words_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(word) for word in words), re.IGNORECASE)


def _scan(
    pattern: re.Pattern[str],
    text: str,
    low: int,
    high: int,
    accept: Callable[[re.Match[str]], bool],
) -> None:
    """Run ``accept`` on each match in ``text[low:high]``; after a rejected match, look again
    one character later, so that a long candidate failing validation (a 16-digit run starting
    one group early) does not hide a valid one inside it."""
    position = low
    while (match := pattern.search(text, position, high)) is not None:
        position = match.end() if accept(match) else match.start() + 1


# --------------------------------------------------------------------------- private keys

_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# Body lines of a truncated block: base64, legacy headers ("Proc-Type: 4,ENCRYPTED"), escapes.
_PEM_BODY_LINE = re.compile(r"(?:\r?\n|\\n)[A-Za-z0-9+/=:,\- ]*[A-Za-z0-9+/=]")


def _find_private_keys(text: str, out: list[Finding]) -> None:
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        end = _PEM_END.search(text, begin.end())
        if end is not None:
            stop = end.end()
        else:
            stop = begin.end()
            while (line := _PEM_BODY_LINE.match(text, stop)) is not None:
                stop = line.end()
        out.append(Finding("PRIVATE_KEY", begin.start(), stop))
        position = stop


# --------------------------------------------------------------------------- secrets

_SECRET_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_\-\]])(?:"
    r"(?P<free>sk-(?:ant-(?:api|admin)[0-9]{2}-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,512}"
    r"|hf_[A-Za-z0-9]{30,512}"
    r"|glpat-[A-Za-z0-9_\-]{20,512}"
    r"|xox[abposre]-[A-Za-z0-9\-]{10,512}"
    r"|xapp-[0-9]-[A-Za-z0-9\-]{10,512})"
    r"|(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{36,255}"
    r"|github_pat_[A-Za-z0-9_]{22,255}"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,512}"
    r"|whsec_[A-Za-z0-9]{24,512}"
    r"|AIza[0-9A-Za-z_\-]{35}"
    r"|ya29\.[0-9A-Za-z_\-]{20,2048}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,1024}"
    r"|SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"
    r"|eyJ[A-Za-z0-9_\-]{8,4096}\.eyJ[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{0,4096}"
    r"|https://hooks\.slack\.com/services/T[A-Z0-9]{6,32}/B[A-Z0-9]{6,32}/[A-Za-z0-9]{16,64}"
    r")(?![A-Za-z0-9_\-\[])"
)
# Literals that occur in a token, and how far before the literal the token starts.  Grouped by
# a character the literal contains so prose without "_" or "-" skips most of the lookups.
_SECRET_LITERALS_UNDERSCORE = (
    ("hf_", 0), ("ghp_", 0), ("gho_", 0), ("ghu_", 0), ("ghs_", 0), ("ghr_", 0),
    ("github_pat_", 0), ("_live_", 2), ("_test_", 2), ("whsec_", 0), ("npm_", 0),
)  # fmt: skip
_SECRET_LITERALS_DASH = (("sk-", 0), ("glpat-", 0), ("xox", 0), ("xapp-", 0), ("pypi-", 0))
_SECRET_LITERALS_OTHER = (("eyJ", 0), ("ya29.", 0), ("SG.", 0), ("hooks.slack.com", 8))
_SECRET_A_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AIza")
_BEARER_TOKEN = re.compile(r"[ \t]+([A-Za-z0-9._~+/\-]{16,8192}=*)(?![A-Za-z0-9._~+/\-])")
_BASIC_CREDENTIALS = re.compile(
    r"[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+([A-Za-z0-9+/]{8,1024}={0,2})(?![\w+/=])"
)


def _looks_random(token: str) -> bool:
    """True for strings that carry entropy: a digit, or both letter cases."""
    has_lower = has_upper = False
    for char in token:
        if char.isdigit():
            return True
        if char.islower():
            has_lower = True
        elif char.isupper():
            has_upper = True
    return has_lower and has_upper


def _find_secret_tokens(text: str, out: list[Finding]) -> None:
    starts = set()
    position = text.find("A")
    while position != -1:
        if text.startswith(_SECRET_A_PREFIXES, position):
            starts.add(position)
        position = text.find("A", position + 1)
    groups = [_SECRET_LITERALS_OTHER]
    if "_" in text:
        groups.append(_SECRET_LITERALS_UNDERSCORE)
    if "-" in text:
        groups.append(_SECRET_LITERALS_DASH)
    for group in groups:
        for literal, back in group:
            position = text.find(literal)
            while position != -1:
                if position >= back:
                    starts.add(position - back)
                position = text.find(literal, position + 1)
    for start in starts:
        match = _SECRET_TOKEN.match(text, start)
        if match is None:
            continue
        free = match.group("free")
        if free is not None and not _looks_random(free[3:]):
            continue
        out.append(Finding("SECRET", match.start(), match.end()))


def _find_authorization(text: str, lowered: str | None, out: list[Finding]) -> None:
    for start, end in _keyword_hits(text, lowered, ("bearer",), _BEARER_WORD):
        if start and text[start - 1].isalnum():
            continue
        token = _BEARER_TOKEN.match(text, end)
        if token is not None and _looks_random(token.group(1)):
            out.append(Finding("SECRET", token.start(1), token.end(1)))
    for _, end in _keyword_hits(text, lowered, ("authorization",), _AUTHORIZATION_WORD):
        credentials = _BASIC_CREDENTIALS.match(text, end)
        if credentials is not None:
            out.append(Finding("SECRET", credentials.start(1), credentials.end(1)))


_BEARER_WORD = _words_pattern(("bearer",))
_AUTHORIZATION_WORD = _words_pattern(("authorization",))


# --------------------------------------------------------------------------- assignments

# "pass" stands for password, passwd, passphrase, passcode and "mot de passe" (checked below).
_PASSWORD_WORDS_ASCII = (
    "pass", "pwd", "pw", "kennwort", "contrasena", "senha", "wachtwoord", "haslo", "losenord",
    "salasana", "sifre",
)  # fmt: skip
_PASSWORD_WORDS_OTHER = (
    "contraseña",
    "hasło",
    "lösenord",
    "şifre",
    "пароль",
    "パスワード",
    "密码",
    "密碼",
)
_PASSWORD_WORD = _words_pattern(_PASSWORD_WORDS_ASCII + _PASSWORD_WORDS_OTHER)
_PASS_CONTINUATIONS = ("passw", "passphrase", "passcode")


def _is_password_key(text: str, start: int) -> bool:
    """Whether the "pass" at ``start`` begins a password key rather than "passed", "compass"."""
    head = text[start : start + 10].lower()
    if head.startswith(_PASS_CONTINUATIONS):
        return True
    if text[max(start - 7, 0) : start + 5].lower() == "mot de passe":
        return True
    # A bare "pass=" (no spaces) in a query string or a CLI line.
    return head.startswith("pass=") and (start == 0 or not text[start - 1].isalpha())


_SECRET_WORDS = ("secret", "token", "credential", "key")
_SECRET_WORD = _words_pattern(_SECRET_WORDS)
# "key" alone is everyday English; only these compounds name a credential.
_KEY_COMPOUNDS = ("api", "access", "auth", "private", "signing", "encryption")
# What follows a key word: the rest of the key, an optional closing quote, then an assignment
# operator ("op"), a prose connector ("verb" / "cjk") or the space after a CLI flag ("cli").
_VALUE = (
    r"(?P<value>\"(?:[^\"\\\n]|\\.){1,512}\"|'[^'\n]{1,512}'|`[^`\n]{1,512}`"
    r"|(?:[^\s\"'`;,<&]|&(?![\w.\-]+=)){1,256})"
)
_PASSWORD_TAIL = re.compile(
    r"(?P<key>[A-Za-z0-9_.\-]{0,64})(?:"
    # "password for the VPN: ...", "Passwort für das WLAN ist ..."
    r"(?:[ \t]+(?:for|für|pour|para|per|voor|dla|för|of)(?:[ \t]+[^\s:=\"'`]{1,40}){1,3}?)?"
    r"[\"']?(?:"
    r"[ \t]*(?P<op>:=|=>|==|=|:|：)[ \t]*"
    r"|(?:[ \t]+(?P<verb>is|was|to|ist|war|est|es|era|é|er|är|on|jest)\b:?"
    r"|[ \t]*(?P<cjk>は|是|为|為))[ \t]*"
    r")"
    r"|(?P<cli>[ \t]+)"
    r")" + _VALUE,
    re.IGNORECASE,
)
_SECRET_TAIL = re.compile(
    r"(?P<key>[A-Za-z0-9_.\-]{0,64})(?:[\"']?[ \t]*(?P<op>:=|=>|=|:)[ \t]*"
    r"|[ \t]+(?:is|was|ist|lautet|est|es|é|:)[ \t]+)" + _VALUE
)
# Keys that name something about the secret rather than the secret itself.
_KEY_NOT_SECRET_SUFFIXES = tuple(
    """url uri path file dir name id type len length count size limit ttl expiry expires days
    timeout version header endpoint prefix env var policy hint hash hasher validator reset field
    label input placeholder min max rule strength attempt s""".split()
)
_NOT_A_VALUE = frozenset(
    "none null nil undefined true false empty required optional str string bytes int text "
    "secret secretstr password char varchar any hidden redacted omitted".split()
)
# Code references rather than literals: env lookups, templates, calls, subscripts, variables
# named after the key (db_password, self.password), SQL parameters, paths and URLs.
_CODE_VALUE = re.compile(
    r"\$[{(]|\$[A-Za-z_]\w*$|%\(|%s$|\{\{|\{[A-Za-z_]\w*\}$|<[^>]*>$|\?$|[:@][A-Za-z_]\w*$"
    r"|[A-Za-z_][\w.]*[\[(](?:$|[)\]\"'A-Za-z_])"
    r"|~?/[\w.\-]*/|[a-z][a-z0-9+.\-]*://",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_.]*")
_KEY_WORDS_IN_NAMES = ("passw", "pwd", "pass", "secret", "token", "key")
_MASK = re.compile(r"[*xX•·.\-_#]+$")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HAS_SPACE = re.compile(r"\s")
_TRAILING_PUNCTUATION = ".,?:"


def _clean_value(value: str, start: int) -> tuple[str, int, bool] | None:
    """Strip quotes and sentence punctuation; None when the value is not a literal."""
    quoted = value[0] in "\"'`"
    if quoted:
        value, start = value[1:-1], start + 1
    else:
        while len(value) > 1 and value[-1] in _TRAILING_PUNCTUATION:
            value = value[:-1]
        for opener, closer in ("()", "[]", "{}"):
            if value.endswith(closer) and value.count(opener) < value.count(closer):
                value = value[:-1]
    if not value or _MASK.match(value):
        return None
    # Already redacted (possibly with text around it, e.g. "[PRIVATE_KEY]\n"): keeps redact
    # idempotent.
    if "[" in value and any(placeholder in value for placeholder in _PLACEHOLDER_VALUES):
        return None
    folded = value.lower()
    if folded in _NOT_A_VALUE or _CODE_VALUE.match(value):
        return None
    if _IDENTIFIER.fullmatch(value) and any(word in folded for word in _KEY_WORDS_IN_NAMES):
        return None  # a variable named after the key: password=db_password, self.api_key
    return value, start, quoted


def _ends_line(text: str, position: int) -> bool:
    while position < len(text) and text[position] in " \t.,;!?)":
        position += 1
    return position >= len(text) or text[position] in "\r\n"


def _find_passwords(text: str, lowered: str | None, out: list[Finding]) -> None:
    words = (
        _PASSWORD_WORDS_ASCII if text.isascii() else _PASSWORD_WORDS_ASCII + _PASSWORD_WORDS_OTHER
    )
    for word_start, word_end in _keyword_hits(text, lowered, words, _PASSWORD_WORD):
        if word_start and text[word_start - 1] == "[":
            continue
        word = text[word_start:word_end].lower()
        if word == "pw":  # only as a word of its own
            if (word_start and text[word_start - 1].isalpha()) or (
                word_end < len(text) and text[word_end].isalnum()
            ):
                continue
        if word == "pass":
            if not _is_password_key(text, word_start):
                continue
            if text[max(word_start - 7, 0) : word_start + 5].lower() == "mot de passe":
                word_end += 1
        tail = _PASSWORD_TAIL.match(text, word_end)
        if tail is None or tail.group("key").lower().endswith(_KEY_NOT_SECRET_SUFFIXES):
            continue
        cleaned = _clean_value(tail.group("value"), tail.start("value"))
        if cleaned is None:
            continue
        value, start, quoted = cleaned
        if tail.group("cli") is not None:
            if not text.startswith("--", max(word_start - 2, 0)) or value[0] == "-":
                continue
        elif tail.group("op") is not None:
            if tail.group("op") in ":：" and not quoted:
                if len(value) < 3:
                    continue
                spaced = tail.start("value") > tail.end("op")
                if spaced and value.isalpha() and not _ends_line(text, start + len(value)):
                    continue
        elif not quoted and (len(value) < 4 or value.isalpha()):
            continue
        out.append(Finding("PASSWORD", start, start + len(value)))


_URL_CREDENTIALS = re.compile(r"://[^\s:/@]{0,256}:([^\s@/]{1,256})@[A-Za-z0-9\[]")


def _find_url_passwords(text: str, out: list[Finding]) -> None:
    position = text.find("://")
    while position != -1:
        match = _URL_CREDENTIALS.match(text, position)
        if match is not None:
            value = match.group(1)
            if value not in _PLACEHOLDER_VALUES and not value.startswith(("$", "{", "%", "<")):
                out.append(Finding("PASSWORD", match.start(1), match.end(1)))
        position = text.find("://", position + 3)


def _find_secret_assignments(text: str, lowered: str | None, out: list[Finding]) -> None:
    for word_start, word_end in _keyword_hits(text, lowered, _SECRET_WORDS, _SECRET_WORD):
        # "tokens", "tokenizer", "secretary", "credentials", "keyboard" name other things.
        if word_end < len(text) and text[word_end].islower():
            continue
        word = text[word_start:word_end].lower()
        if word == "key":
            before = text[max(word_start - 11, 0) : word_start].lower().rstrip(" _-")
            if not before.endswith(_KEY_COMPOUNDS):
                continue
        tail = _SECRET_TAIL.match(text, word_end)
        if tail is None or (word + tail.group("key").lower()).endswith(_KEY_NOT_SECRET_SUFFIXES):
            continue
        cleaned = _clean_value(tail.group("value"), tail.start("value"))
        if cleaned is None:
            continue
        value, start, _ = cleaned
        if (
            len(value) < 12
            or "://" in value
            or value[0] in "/.~"
            or _HAS_DIGIT.search(value) is None
            or _HAS_LETTER.search(value) is None
            or _HAS_SPACE.search(value) is not None
        ):
            continue
        out.append(Finding("SECRET", start, start + len(value)))


# --------------------------------------------------------------------------- e-mail

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


# --------------------------------------------------------------------------- IBAN

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


# --------------------------------------------------------------------------- cards

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


# --------------------------------------------------------------------------- SSN

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


# --------------------------------------------------------------------------- phones

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


# --------------------------------------------------------------------------- IP addresses

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


# --------------------------------------------------------------------------- numbers

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


# --------------------------------------------------------------------------- driver


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
