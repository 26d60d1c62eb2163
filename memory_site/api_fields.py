"""Serializer fields that refuse wrong JSON types instead of coercing them.

DRF's CharField turns 123 into "123" and BooleanField accepts "yes"; a hostile or buggy
client should instead get a 400 naming the field.
"""

from __future__ import annotations

import json

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictUUIDField(serializers.UUIDField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


def _has_unstorable_text(value, depth: int = 0) -> bool:
    """NUL characters and lone surrogates cannot be stored in PostgreSQL JSON; deep nesting is refused."""
    if depth > 32:
        return True
    if isinstance(value, str):
        return "\x00" in value or any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(
            _has_unstorable_text(k, depth + 1) or _has_unstorable_text(v, depth + 1)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_has_unstorable_text(v, depth + 1) for v in value)
    return False


class JSONObjectField(serializers.JSONField):
    """A JSON object (dict) of bounded size and depth, with text PostgreSQL can store."""

    default_error_messages = {
        "not_object": "Must be a JSON object.",
        "too_large": "Must be at most {max} bytes.",
        "unstorable": "Must not contain NUL characters or lone surrogates, or nest deeper than 32 levels.",
    }

    def __init__(self, *args, max_bytes: int = 16384, **kwargs):
        self.max_bytes = max_bytes
        super().__init__(*args, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_object")
        if _has_unstorable_text(data):
            self.fail("unstorable")
        if len(json.dumps(data)) > self.max_bytes:
            self.fail("too_large", max=self.max_bytes)
        return data


class FieldAliasMixin:
    """Accept older names for fields: `field_aliases = {"chat_session_id": "session_id"}`.

    The alias is moved to the field's name before validation; sending both with different
    values is a 400 naming the alias.
    """

    field_aliases: dict[str, str] = {}

    def to_internal_value(self, data):
        used = {}
        if isinstance(data, dict) or hasattr(data, "dict"):
            data = data.dict() if hasattr(data, "dict") else dict(data)
            for alias, name in self.field_aliases.items():
                if alias not in data:
                    continue
                value = data.pop(alias)
                if name in data and data[name] != value:
                    raise serializers.ValidationError(
                        {alias: f"An alias of {name}; send one of them."}
                    )
                data[name] = value
                used[name] = alias
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if used and isinstance(exc.detail, dict):
                # Errors name the field as the client sent it.
                exc.detail = {used.get(key, key): value for key, value in exc.detail.items()}
            raise
