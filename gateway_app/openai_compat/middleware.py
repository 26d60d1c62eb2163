"""The OpenAI-compatible API's own middleware (its whole stack: see memory_site.asgi)."""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from gateway_app.openai_compat.errors import OpenAIError, openai_error_response
from memory_site.middleware import INVALID_CHARACTERS, invalid_characters


def _refusal(request):
    problem = invalid_characters(request)
    if problem is None:
        return None
    return openai_error_response(
        OpenAIError(
            400,
            f"{problem}: {INVALID_CHARACTERS}.",
            code="invalid_characters",
            param=problem,
        )
    )


class OpenAIGuardMiddleware:
    """The site's character guard (RequestGuardMiddleware) in OpenAI's error shape, sync and
    async, so the gateway's async views pay no thread hop for it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self._acall(request)
        return _refusal(request) or self.get_response(request)

    async def _acall(self, request):
        return _refusal(request) or await self.get_response(request)
