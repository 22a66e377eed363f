"""A local stand-in for an OpenAI-compatible chat-completions endpoint, on 127.0.0.1, for the LLM
extractor's tests: it answers each Record from canned memories keyed by the Record's text, and plays a
script of failures first (HTTP statuses, a slow answer, malformed content)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


def proposal(
    quote: str,
    statement: str,
    subject: str,
    owner: str | None,
    *,
    attribute: str | None = None,
    value: str | None = None,
    negated: bool = False,
    change: bool = False,
    corrective: bool = False,
    valid_from: str | None = None,
    valid_to: str | None = None,
) -> dict[str, Any]:
    """One memory as the schema of prompts/extract_v1.schema.json has the model return it."""
    return {
        "statement": statement,
        "subject": subject,
        "owner": owner,
        "quote": quote,
        "attribute": attribute,
        "value": value,
        "negated": negated,
        "change": change,
        "corrective": corrective,
        "valid_from": valid_from,
        "valid_to": valid_to,
    }


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class FakeModel:
    """The WSGI app. ``answers`` maps a Record's text to the memories returned for it (default: none);
    ``script`` holds what the next requests get instead: ``("status", code, headers)``, ``("sleep",
    seconds)`` (then the answer), ``("content", raw string)``."""

    def __init__(self) -> None:
        self.answers: dict[str, list[dict[str, Any]]] = {}
        self.answer: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        self.script: deque[tuple[Any, ...]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.url = ""

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length))
        with self._lock:
            self.requests.append(body)
            self.headers.append({k[5:].lower(): v for k, v in environ.items() if k.startswith("HTTP_")})
            step = self.script.popleft() if self.script else ("answer",)
        if environ["PATH_INFO"] != "/v1/chat/completions" or environ["REQUEST_METHOD"] != "POST":
            start_response("404 Not Found", [("Content-Type", "application/json")])
            return [b'{"error": {"message": "no such route"}}']
        record = json.loads(body["messages"][-1]["content"])
        if step[0] == "status":
            extra = list(step[2].items()) if len(step) > 2 else []
            start_response(f"{step[1]} Scripted", [("Content-Type", "application/json"), *extra])
            return [json.dumps({"error": {"message": "scripted", "code": step[1]}}).encode()]
        if step[0] == "sleep":
            time.sleep(step[1])
        if step[0] == "content":
            content = step[1]
        else:
            memories = self.answer(record) if self.answer else self.answers.get(record["text"], [])
            content = json.dumps({"memories": memories})
        reply = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(reply).encode()]


@contextmanager
def fake_model() -> Iterator[FakeModel]:
    """A FakeModel served on 127.0.0.1 (an ephemeral port); ``.url`` is its base URL (…/v1)."""
    app = FakeModel()
    server = make_server("127.0.0.1", 0, app, server_class=_Server, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    app.url = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        yield app
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
