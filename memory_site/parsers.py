"""Request body parsers that refuse text PostgreSQL cannot store, naming the field.

A NUL character or a lone surrogate (`"\\u0000"`, `"\\ud800"` in JSON, or in a form field) would
reach a query and fail there as a 500. The parsers check every key and value once, so every
endpoint answers 400 `invalid_characters` with the field's path (`messages[0].content`).
Only JSON is parsed by default: a body sent as a form or without a Content-Type is a 415, not
an empty form that passes validation.
"""

from __future__ import annotations

from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from memory_site.errors import InvalidInput

# JSON nested deeper than this is refused before any serializer walks it.
MAX_DEPTH = 64


def is_unstorable(text: str) -> bool:
    """True when the text holds a NUL character or a lone surrogate."""
    return "\x00" in text or any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def _join(prefix: str, key) -> str:
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else str(key)


def unstorable_field(value, prefix: str = "", depth: int = 0) -> str | None:
    """The path of the first key or string holding a NUL or lone surrogate, or None.

    Recursion stops at MAX_DEPTH, so a hostile document cannot exhaust the stack here.
    """
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        return (prefix or "body") if is_unstorable(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and is_unstorable(key):
                return prefix or "body"
            found = unstorable_field(item, _join(prefix, key), depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = unstorable_field(item, _join(prefix, index), depth + 1)
            if found:
                return found
    return None


class GuardedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        raise_if_unstorable(data)
        return data


def _invalid_characters(field: str) -> InvalidInput:
    return InvalidInput(
        f"{field}: must not contain NUL characters or lone surrogates.",
        code="invalid_characters",
        field=field,
    )


def raise_if_unstorable(value, prefix: str = "") -> None:
    """Raise InvalidInput (`invalid_characters`, 400) naming the first bad field."""
    field = unstorable_field(value, prefix)
    if field:
        raise _invalid_characters(field)


def _check_form(data_and_files):
    """Form fields and uploaded file names, named by their form field."""
    data = getattr(data_and_files, "data", data_and_files)
    files = getattr(data_and_files, "files", None) or {}
    fields = [(key, data.getlist(key)) for key in data]
    fields += [(key, [upload.name or "" for upload in files.getlist(key)]) for key in files]
    for key, values in fields:
        if is_unstorable(key):
            raise _invalid_characters("form")
        if any(isinstance(value, str) and is_unstorable(value) for value in values):
            raise _invalid_characters(key)
    return data_and_files


class GuardedMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        return _check_form(super().parse(stream, media_type, parser_context))


class GuardedFormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        return _check_form(super().parse(stream, media_type, parser_context))
