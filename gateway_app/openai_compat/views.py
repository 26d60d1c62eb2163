"""`POST /v1/chat/completions` and `GET /v1/models`: OpenAI's wire protocol in front of the
configured upstream, with Mnemo's memory added.

Plain async Django views rather than DRF: the errors on these paths are OpenAI's shape, and
the upstream's stream is relayed from the event loop without a thread per chunk. Everything
that can fail with a 4xx (auth, input, the explicit session, the upstream's own 4xx) is
answered before the first byte of a stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from gateway_app.auth import token_from_header, user_for_token
from gateway_app.openai_compat.errors import OpenAIError, openai_error_body, openai_error_response
from gateway_app.openai_compat.upstream import (
    upstream_base_url,
    upstream_error,
    upstream_models,
    upstream_open,
)
from gateway_app.services.end_users import EndUserRefused, acting_user, lower_headers
from gateway_app.services.turns import (
    ProxyTurn,
    proxy_turn_failed,
    proxy_turn_finish,
    proxy_turn_hooks,
    proxy_turn_record,
    proxy_turn_start,
)
from ingestion_app.services.deferred_embeddings import EmbeddingsHold, embeddings_hold
from memory_site.errors import DomainError
from memory_site.parsers import unstorable_field

logger = logging.getLogger(__name__)

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
MAX_MESSAGES = 1000
SESSION_HEADER = "X-Mnemo-Session-Id"
MEMORY_HEADER = "X-Mnemo-Memory"
# A side task of the chat app (Open WebUI's {{TASK}} placeholder: title_generation, ...).
TASK_HEADER = "X-Mnemo-Task"
MAX_CHAT_ID = 200
_OFF = {"off", "0", "false", "no"}


_INVALID_KEY = OpenAIError(
    401,
    "Missing or invalid API key: send your Mnemo API token as `Authorization: Bearer <token>` "
    "(the openai SDK's api_key).",
    code="invalid_api_key",
)


def _api_key(request: HttpRequest) -> str:
    key = token_from_header(request.headers.get("Authorization", ""))
    if not key:
        raise _INVALID_KEY
    return key


def _user(key: str):
    user = user_for_token(key)
    if user is None:
        raise _INVALID_KEY
    return user


async def _authenticate(request: HttpRequest):
    return await sync_to_async(_user)(_api_key(request))


def _acting(user, headers: dict, openai_user=None):
    """The key owner or the end user the call names (gateway_app.services.end_users)."""
    try:
        return acting_user(user, headers, openai_user)
    except EndUserRefused as exc:
        raise OpenAIError(401, str(exc), code="invalid_end_user") from None


def _chat_id(headers: dict) -> str:
    """The app's own id of the chat, from the first of MNEMO_GATEWAY_CHAT_ID_HEADERS sent."""
    for name in settings.MNEMO_GATEWAY_CHAT_ID_HEADERS:
        value = headers.get(name.lower(), "").strip()
        if value:
            if len(value) > MAX_CHAT_ID or "\x00" in value:
                raise OpenAIError(
                    400,
                    f"`{name}` must be at most {MAX_CHAT_ID} characters.",
                    code="invalid_value",
                    param=name,
                )
            return value
    return ""


def _is_task(headers: dict) -> bool:
    value = headers.get(TASK_HEADER.lower(), "").strip().lower()
    return bool(value) and value not in _OFF | {"none", "null"}


def _turn_start(
    *, key: str, raw_body: bytes, session_header: str, memory: bool, headers: dict
) -> ProxyTurn:
    """Authenticate, check the request and start the turn in one trip to the worker thread
    (one DB connection). The key comes first: a caller without a valid one learns nothing
    about its request or the configuration (401, as OpenAI answers); then the end user it
    names, if its key may act for one."""
    user = _user(key)
    body = chat_request_check(raw_body)
    user = _acting(user, headers, body.get("user"))
    session_id = _session_id(session_header)
    upstream_base_url()  # 503 before anything is stored when no upstream is configured
    try:
        return proxy_turn_start(
            user=user,
            body=body,
            session_id=session_id,
            memory=memory,
            task=_is_task(headers),
            chat_id=_chat_id(headers),
        )
    except DomainError as exc:
        param = SESSION_HEADER if exc.code.startswith("session_") else None
        raise OpenAIError.from_domain(exc, param=param) from exc


def chat_request_check(raw: bytes) -> dict:
    """The parsed request body, or OpenAIError 400 naming the offending parameter.

    Only what Mnemo itself relies on is checked; every other field is the upstream's to judge.
    """
    try:
        body = json.loads(raw or b"")
    except (ValueError, UnicodeDecodeError):
        raise OpenAIError(400, "The request body is not valid JSON.", code="invalid_json") from None
    if not isinstance(body, dict):
        raise OpenAIError(400, "The request body must be a JSON object.", code="invalid_json")
    # PostgreSQL cannot store either; unchecked, the turn's insert fails as a 500.
    unstorable = unstorable_field(body)
    if unstorable:
        raise OpenAIError(
            400,
            f"`{unstorable}` must not contain NUL characters or lone surrogates.",
            code="invalid_characters",
            param=unstorable,
        )
    model = body.get("model", "")
    if not isinstance(model, str):
        raise OpenAIError(400, "`model` must be a string.", code="invalid_type", param="model")
    if len(model) > 256:
        raise OpenAIError(
            400, "`model` must be at most 256 characters.", code="invalid_value", param="model"
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise OpenAIError(
            400, "`messages` must be a non-empty array.", code="invalid_type", param="messages"
        )
    if len(messages) > MAX_MESSAGES:
        raise OpenAIError(
            400, f"At most {MAX_MESSAGES} messages per request.", code="too_many", param="messages"
        )
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict):
            raise OpenAIError(
                400, f"`{param}` must be an object.", code="invalid_type", param=param
            )
        if message.get("role") not in ROLES:
            raise OpenAIError(
                400,
                f"`{param}.role` must be one of {', '.join(sorted(ROLES))}.",
                code="invalid_value",
                param=f"{param}.role",
            )
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise OpenAIError(
                400,
                f"`{param}.content` must be a string, an array of parts or null.",
                code="invalid_type",
                param=f"{param}.content",
            )
    if body.get("n", 1) not in (1, None):
        raise OpenAIError(
            400,
            "Only n=1 is supported (one reply is stored per turn).",
            code="invalid_value",
            param="n",
        )
    if not isinstance(body.get("stream", False), bool | None):
        raise OpenAIError(400, "`stream` must be a boolean.", code="invalid_type", param="stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise OpenAIError(
            400, "`stream_options` must be an object.", code="invalid_type", param="stream_options"
        )
    return body


def _session_id(header: str) -> uuid.UUID | None:
    value = header.strip()
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise OpenAIError(
            400,
            f"{SESSION_HEADER} is not a session id.",
            code="invalid_value",
            param=SESSION_HEADER,
        ) from None


def _with_headers(response: HttpResponse, turn: ProxyTurn) -> HttpResponse:
    for name, value in turn.headers().items():
        response[name] = value
    return response


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponse:
    """The after-response embedding thread is held back while the pack is built and, for a
    stream, until its first token is relayed (`embeddings_hold`): on 2 cores the previous
    reply's vectors would otherwise take the CPU from this call's first token."""
    hold = embeddings_hold()
    try:
        response = await _chat_completions(request, hold)
    except BaseException:
        hold.release()
        raise
    if not response.streaming:
        hold.release()  # a stream's relay lets go at its first token
    return response


async def _chat_completions(request: HttpRequest, hold: EmbeddingsHold) -> HttpResponse:
    turn = None
    try:
        if request.method != "POST":
            raise OpenAIError(405, "Use POST.", code="method_not_allowed")
        turn = await sync_to_async(_turn_start)(
            key=_api_key(request),
            raw_body=request.body,
            session_header=request.headers.get(SESSION_HEADER, ""),
            memory=request.headers.get(MEMORY_HEADER, "").strip().lower() not in _OFF,
            headers=lower_headers(request.headers.items()),
        )
        # A non-streamed reply: the pack is recorded and the new messages are indexed while the
        # upstream works on it. A stream: the pack is recorded once the first line is relayed,
        # the messages indexed after the stream (both would compete for the CPU with relaying
        # the first tokens).
        stream = bool(turn.upstream_body.get("stream"))
        if not stream:
            hold.release()  # the pack is built; a reply read whole gives no first token
        # The first call of a new session indexes nothing before the upstream has answered:
        # a failed call then leaves no session behind (proxy_turn_failed).
        hooks = (
            _done()
            if stream or turn.logged.new_session
            else asyncio.ensure_future(sync_to_async(proxy_turn_hooks)(turn))
        )
        try:
            upstream = await upstream_open(turn.upstream_body, stream=stream)
            if upstream.status_code >= 400:
                error = await upstream_error(upstream)
                await upstream.aclose()
                raise error
            if stream and not upstream.headers.get("content-type", "").startswith(
                "text/event-stream"
            ):
                upstream = await _whole_reply_as_stream(upstream)
        except BaseException:
            # A turn that continued its session stays stored and indexed; one that opened its
            # session is forgotten with it (proxy_turn_failed).
            await _settle(hooks)
            if await asyncio.shield(sync_to_async(proxy_turn_failed)(turn)):
                turn = None
            raise
        if stream:
            response = StreamingHttpResponse(
                _relay(turn, upstream, hooks, hold), content_type="text/event-stream"
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            return _with_headers(response, turn)
        return _with_headers(await _complete(turn, upstream, hooks), turn)
    except OpenAIError as exc:
        response = openai_error_response(exc)
        # The turn was logged before the upstream failed: the client may close or reuse it.
        return _with_headers(response, turn) if turn is not None else response


def _done() -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(None)
    return future


async def _settle(hooks: asyncio.Future) -> None:
    try:
        await asyncio.shield(hooks)
    except Exception:  # noqa: BLE001 - hooks log their own failures; never fail the reply
        logger.exception("gateway: after-message hooks failed")


async def _complete(turn: ProxyTurn, upstream, hooks: asyncio.Future) -> HttpResponse:
    try:
        payload = upstream.json()
    except ValueError:
        await _settle(hooks)
        raise OpenAIError(
            502, "The upstream model server answered with invalid JSON.", code="upstream_error"
        ) from None
    choice = (payload.get("choices") or [{}])[0] if isinstance(payload, dict) else {}
    message = choice.get("message") or {}
    usage = payload.get("usage") or {}
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    await _settle(hooks)
    await sync_to_async(proxy_turn_finish)(
        turn,
        text=content,
        model=str(payload.get("model") or ""),
        tokens_in=int(usage.get("prompt_tokens") or 0),
        tokens_out=int(usage.get("completion_tokens") or 0),
        finish_reason=str(choice.get("finish_reason") or ""),
        response_id=str(payload.get("id") or ""),
    )
    await sync_to_async(proxy_turn_hooks)(turn)
    return JsonResponse(payload, status=200, json_dumps_params={"ensure_ascii": False})


class _WholeReplyStream:
    """A whole JSON reply to a streamed call, read as the stream it should have been: one
    chunk with the message, then [DONE] (an upstream that ignores `stream: true`)."""

    def __init__(self, payload: dict):
        choices = payload.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        chunk = {
            "id": payload.get("id", ""),
            "object": "chat.completion.chunk",
            "created": payload.get("created", int(time.time())),
            "model": payload.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "delta": {k: v for k, v in message.items() if k in ("role", "content")},
                    "finish_reason": choice.get("finish_reason") or "stop",
                }
            ],
        }
        self.lines = [f"data: {json.dumps(chunk)}", ""]
        if isinstance(payload.get("usage"), dict):
            usage = {**chunk, "choices": [], "usage": payload["usage"]}
            self.lines += [f"data: {json.dumps(usage)}", ""]
        self.lines += ["data: [DONE]", ""]

    async def aiter_lines(self):
        for line in self.lines:
            yield line

    async def aclose(self) -> None:
        return None


async def _whole_reply_as_stream(upstream) -> _WholeReplyStream:
    """A streamed call the upstream answered with one JSON body: that body as a stream, or a
    502 when it is not a chat completion."""
    body = await upstream.aread()
    await upstream.aclose()
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list):
        raise OpenAIError(
            502,
            "The upstream model server answered a streamed call with invalid JSON, not a stream.",
            code="upstream_error",
        )
    return _WholeReplyStream(payload)


class _StreamState:
    def __init__(self):
        self.parts: list[str] = []
        self.model = ""
        self.response_id = ""
        self.finish_reason = ""
        self.tokens_in = 0
        self.tokens_out = 0
        self.stored = False
        self.answering = False  # a chunk carried the reply's first content or tool call

    def read(self, chunk: dict) -> bool:
        """Take what the reply needs from one chunk; True when the chunk only carries usage."""
        self.model = chunk.get("model") or self.model
        self.response_id = chunk.get("id") or self.response_id
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.tokens_in = int(usage.get("prompt_tokens") or 0)
            self.tokens_out = int(usage.get("completion_tokens") or 0)
        choices = chunk.get("choices") or []
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                self.answering = True
            if isinstance(delta.get("content"), str):
                self.parts.append(delta["content"])
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return not choices and isinstance(usage, dict)


async def _relay(turn: ProxyTurn, upstream, hooks: asyncio.Future, hold: EmbeddingsHold):
    """The upstream's SSE lines, passed on as they arrive. The embedding hold is released and
    the pack recorded once the first token is relayed; the reply is stored before
    `data: [DONE]` is relayed (so the next turn finds it), its hooks run after. A client that
    goes away mid-reply still gets the text so far stored."""
    state = _StreamState()
    recording = False

    async def store(finish: str, *, incomplete: bool = False) -> None:
        state.stored = True
        await _settle(hooks)
        await sync_to_async(proxy_turn_finish)(
            turn,
            text="".join(state.parts),
            model=state.model,
            tokens_in=state.tokens_in,
            tokens_out=state.tokens_out,
            finish_reason=finish,
            response_id=state.response_id,
            incomplete=incomplete,
        )

    try:
        async for line in upstream.aiter_lines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if data == "[DONE]":
                    await asyncio.shield(store(state.finish_reason))
                    yield b"data: [DONE]\n\n"
                    continue
                try:
                    chunk = json.loads(data)
                except ValueError:
                    chunk = None
                if isinstance(chunk, dict) and state.read(chunk) and not turn.caller_wants_usage:
                    continue
            yield (line + "\n").encode()
            if state.answering and not recording:
                # The first token is out: now the pack's audit row (see proxy_turn_record).
                recording = True
                hold.release()
                hooks = asyncio.ensure_future(sync_to_async(proxy_turn_record)(turn))
        if not state.stored and state.finish_reason:  # ended without [DONE], but finished
            await asyncio.shield(store(state.finish_reason))
            yield b"data: [DONE]\n\n"
        elif not state.stored:  # cut off: no finish_reason, no [DONE]
            await asyncio.shield(store("incomplete", incomplete=True))
            body = openai_error_body(
                502,
                "The upstream stream ended before the reply was complete.",
                code="upstream_error",
            )
            yield f"data: {json.dumps(body)}\n\n".encode()
    except Exception as exc:  # noqa: BLE001 - after the first byte an error is a stream frame
        logger.warning("gateway: upstream stream failed for session %s: %s", turn.session_id, exc)
        body = openai_error_body(502, f"The upstream stream failed: {exc}", code="upstream_error")
        yield f"data: {json.dumps(body)}\n\n".encode()
    finally:
        hold.release()
        await upstream.aclose()
        if not state.stored:
            await asyncio.shield(store("disconnected", incomplete=True))
        await asyncio.shield(sync_to_async(proxy_turn_hooks)(turn))


# The upstream's model list as last seen: served while the upstream is down, so a chat app's
# model picker keeps its models instead of being handed another one. Kept in the shared
# "tasks" cache (the database, or Redis), so every web process and a restart see it.
UPSTREAM_MODELS_CACHE_KEY = "mnemo:gateway:upstream-models"
UPSTREAM_MODELS_CACHE = "tasks"


def _configured_models() -> dict:
    created = int(time.time())
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": created, "owned_by": "mnemo"}
            for name in settings.MNEMO_GATEWAY_MODELS
        ],
    }


async def _upstream_models_or_last_seen() -> dict:
    """The upstream's models, remembered; the last list seen when it cannot answer now; a
    503 naming the fix when it never answered (never a model the upstream may not serve)."""
    payload = await upstream_models()
    if payload is not None:
        await caches[UPSTREAM_MODELS_CACHE].aset(UPSTREAM_MODELS_CACHE_KEY, payload, None)
        return payload
    remembered = await caches[UPSTREAM_MODELS_CACHE].aget(UPSTREAM_MODELS_CACHE_KEY)
    if remembered is not None:
        return remembered
    raise OpenAIError(
        503,
        "The upstream model server did not list its models and none were seen before; set "
        "MNEMO_GATEWAY_MODELS to the models to offer.",
        code="upstream_unavailable",
    )


@csrf_exempt
async def models(request: HttpRequest) -> HttpResponse:
    """MNEMO_GATEWAY_MODELS when set, else the upstream's own list (see above)."""
    try:
        if request.method != "GET":
            raise OpenAIError(405, "Use GET.", code="method_not_allowed")
        await _authenticate(request)
        if settings.MNEMO_GATEWAY_MODELS:
            return JsonResponse(_configured_models())
        return JsonResponse(await _upstream_models_or_last_seen())
    except OpenAIError as exc:
        return openai_error_response(exc)


@csrf_exempt
async def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return openai_error_response(
        OpenAIError(404, f"Unknown endpoint /v1/{rest}.", code="unknown_url")
    )
