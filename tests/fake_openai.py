"""A real OpenAI-compatible HTTP server on loopback for tests (no client patching).

Serves /v1/chat/completions (plain, streamed with usage, JSON-mode) and /v1/embeddings, records
every request body so tests can assert on exactly what a model was sent, and can be told to
fail (HTTP 500), to stall (for timeouts) or to answer with scripted text or JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def _encoded(vector: list[float], encoding_format: str | None) -> list[float] | str:
    """As OpenAI answers: base64 of little-endian float32 when asked (the openai client asks by
    default), a list of floats otherwise."""
    if encoding_format == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
    return vector


def hashed_embedding(text: str, dimensions: int) -> list[float]:
    """Deterministic unit vector from the text's words, so similar texts share components."""
    vector = np.zeros(dimensions)
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0
    norm = np.linalg.norm(vector)
    if norm == 0:
        vector[0] = 1.0
        norm = 1.0
    return (vector / norm).tolist()


class FakeOpenAIServer:
    def __init__(self, *, dimensions: int = 384):
        self.dimensions = dimensions
        self.requests: list[dict] = []
        self.reply_text = "Hello from the fake model."
        # Called with the request body when response_format asks for JSON; returns a dict.
        self.json_responder: Callable[[dict], dict] | None = None
        # Called with the request body for a plain chat call; returns the assistant message
        # ({"content": ..., "tool_calls": [...]}) instead of `reply_text`.
        self.message_responder: Callable[[dict], dict] | None = None
        self.models = ["fake-model", "fake-model-large"]
        self.set_cookie = ""  # a Set-Cookie header value sent with every response when set
        self.fail_count = 0
        self.fail_status = 500
        self.delay_seconds = 0.0
        self.stream_delay_seconds = 0.0
        # While set and not released, chat completions wait for it (up to 60 s): a model that
        # answers only when the test says so, so "did not wait" is an ordering, not a timing.
        self.gate: threading.Event | None = None
        self.answered: list[str] = []  # paths of the requests answered, in order
        # While set, a streamed reply stops after `stream_gate_after_words` words until the test
        # releases it (up to 30 s); `stream_gate_released` then says whether it was released.
        self.stream_gate: threading.Event | None = None
        self.stream_gate_after_words = 1
        self.stream_gate_released: bool | None = None
        # A streamed reply that breaks off after this many words (no finish_reason, no [DONE]).
        self.stream_cut_after_words = 0
        # A streamed call answered with this body as application/json (an upstream that
        # ignores `stream: true`, or a broken one).
        self.stream_answer_body: bytes | None = None
        # Embeddings as float lists even when base64 is asked for (servers that ignore
        # encoding_format).
        self.embeddings_as_floats = False
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                with server._lock:
                    server.requests.append({"path": self.path, "body": None})
                if self.path.endswith("/models"):
                    data = [
                        {"id": name, "object": "model", "created": 0, "owned_by": "fake"}
                        for name in server.models
                    ]
                    return self._json(200, {"object": "list", "data": data})
                return self._json(404, {"error": {"message": "unknown path"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "body": body, "cookie": self.headers.get("Cookie")}
                    )
                    failing = server.fail_count > 0
                    if failing:
                        server.fail_count -= 1
                if server.delay_seconds:
                    time.sleep(server.delay_seconds)
                if server.gate is not None and self.path.endswith("/chat/completions"):
                    server.gate.wait(timeout=60)
                with server._lock:
                    server.answered.append(self.path)
                if failing:
                    return self._json(
                        server.fail_status,
                        {"error": {"message": "injected failure", "type": "server_error"}},
                    )
                if self.path.endswith("/embeddings"):
                    return self._embeddings(body)
                if self.path.endswith("/chat/completions"):
                    if body.get("stream"):
                        return self._stream(body)
                    return self._chat(body)
                return self._json(404, {"error": {"message": "unknown path"}})

            def end_headers(self):
                if server.set_cookie:
                    self.send_header("Set-Cookie", server.set_cookie)
                super().end_headers()

            def _json(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _embeddings(self, body):
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": _encoded(
                            hashed_embedding(text, server.dimensions),
                            None if server.embeddings_as_floats else body.get("encoding_format"),
                        ),
                    }
                    for i, text in enumerate(inputs)
                ]
                tokens = sum(len(t.split()) for t in inputs)
                self._json(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model"),
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    },
                )

            def _content_for(self, body) -> str:
                if body.get("response_format", {}).get("type") in ("json_schema", "json_object"):
                    payload = server.json_responder(body) if server.json_responder else {}
                    return json.dumps(payload)
                return server.reply_text

            def _message_for(self, body) -> dict:
                if server.message_responder is not None and not body.get("response_format"):
                    return {"role": "assistant", **server.message_responder(body)}
                return {"role": "assistant", "content": self._content_for(body)}

            def _chat(self, body):
                message = self._message_for(body)
                content = message.get("content") or ""
                prompt_tokens = sum(
                    len(str(m.get("content", "")).split()) for m in body.get("messages", [])
                )
                self._json(
                    200,
                    {
                        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "fake-model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "tool_calls"
                                if message.get("tool_calls")
                                else "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": len(content.split()),
                            "total_tokens": prompt_tokens + len(content.split()),
                        },
                    },
                )

            def _stream(self, body):
                if server.stream_answer_body is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(server.stream_answer_body)))
                    self.end_headers()
                    self.wfile.write(server.stream_answer_body)
                    return
                message = self._message_for(body)
                content = message.get("content") or ""
                response_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
                model = body.get("model", "fake-model")
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                words = content.split(" ")
                try:
                    for i, word in enumerate(words):
                        piece = word if i == 0 else " " + word
                        chunk = {
                            "id": response_id,
                            "object": "chat.completion.chunk",
                            "created": int(time.time()),
                            "model": model,
                            "choices": [
                                {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                            ],
                        }
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if i + 1 == server.stream_cut_after_words:
                            self.close_connection = True
                            return
                        if server.stream_delay_seconds:
                            time.sleep(server.stream_delay_seconds)
                        gate = server.stream_gate
                        if gate is not None and i + 1 == server.stream_gate_after_words:
                            server.stream_gate_released = gate.wait(timeout=30)
                    last = {
                        "id": response_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "delta": (
                                    {
                                        "tool_calls": [
                                            {"index": i, **call}
                                            for i, call in enumerate(message["tool_calls"])
                                        ]
                                    }
                                    if message.get("tool_calls")
                                    else {}
                                ),
                                "finish_reason": "tool_calls"
                                if message.get("tool_calls")
                                else "stop",
                            }
                        ],
                    }
                    self.wfile.write(f"data: {json.dumps(last)}\n\n".encode())
                    prompt_tokens = sum(
                        len(str(m.get("content", "")).split()) for m in body.get("messages", [])
                    )
                    final = {
                        "id": response_id,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": len(words),
                            "total_tokens": prompt_tokens + len(words),
                        },
                    }
                    self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # serve_forever polls for shutdown every poll_interval (0.5 s by default), which every
        # test using this server paid at teardown.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self, path_suffix: str) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"].endswith(path_suffix)]

    def all_text_sent(self) -> str:
        """Every string any request carried, for asserting nothing sensitive left the service."""
        return json.dumps([r["body"] for r in self.requests], ensure_ascii=False)
