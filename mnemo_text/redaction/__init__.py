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

Modules: ``engine`` (``redact``, ``redact_with_findings``: runs the detectors, resolves overlaps,
substitutes, re-checks), ``findings`` (kinds, placeholders, priority, ``Finding``), ``scanning``
(helpers the detectors share), and one module per detector family: ``credentials`` (private
keys, provider tokens, Authorization), ``assignments`` (password- and secret-named keys, URL
passwords), ``emails``, ``numbers`` (the digit-run windows that feed ``financial`` (IBAN, card),
``ssn``, ``phones`` and ``ip_addresses``).  Names with a leading underscore are shared inside this
package only; callers import the public names from ``mnemo_text.redaction``.
"""

from __future__ import annotations

from mnemo_text.redaction.engine import redact, redact_with_findings
from mnemo_text.redaction.findings import PLACEHOLDERS, Finding, RedactionResult

__all__ = [
    "PLACEHOLDERS",
    "Finding",
    "RedactionResult",
    "redact",
    "redact_with_findings",
]
