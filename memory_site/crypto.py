"""Encryption at rest for original (unredacted) text.

Fernet with several keys (MultiFernet): the first key encrypts, every key decrypts, so keys
rotate by prepending a new one and running `manage.py rotate_keys`.
"""

from __future__ import annotations

from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in keys])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.MNEMO_ENCRYPTION_KEYS))


def encrypt_text(text: str) -> str:
    return fernet().encrypt(text.encode("utf-8")).decode("ascii")


def decrypt_text(token: str) -> str:
    try:
        return fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise ValueError("stored ciphertext cannot be decrypted with the configured keys") from exc


def rotate_token(token: str) -> str:
    """Re-encrypt a stored token under the primary key."""
    return fernet().rotate(token.encode("ascii")).decode("ascii")


class EncryptedTextField(models.TextField):
    """A text column stored as a Fernet token; reads decrypt transparently. Not searchable."""

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return decrypt_text(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt_text(value)
