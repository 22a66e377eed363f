"""Hosted MCP: streamable HTTP at ``/mcp``, served by the gunicorn process next to ``/v1``.

The MCP SDK's HTTP transport is ASGI and our API is WSGI, so :func:`mount_mcp` returns a WSGI callable
that sends ``/mcp`` to the SDK app (on one event loop thread owned by this worker) and everything else
to the Falcon app unchanged.

Invariants:
- Authentication happens here, before the MCP app sees the request, with the same key rules as /v1
  (registry lookup, revocation): no/invalid key is 401 invalid_api_key, and a key not bound to one Brain
  is 403 mcp_brain_unbound (spec Authentication rule 7), both as the spec's Error body.
- The tools call /v1 in-process (:func:`brainstore.client.in_process` on the Falcon app) with the
  caller's own key, so scopes, rate limits and the Brain binding are enforced by the API itself; this
  module never opens the store. The messages themselves are limited per key at the API's rate.
- The bound Brain reaches the tools in the ``X-Brainstore-Brain`` header, which is always overwritten
  here: a client cannot choose it. So is ``X-Brainstore-Arguments-Checked``: the message's text was
  checked here with the API's rule, so a tool call does not walk its arguments again on the one event
  loop all keys share (a megabyte of empty lists walked there held it over a second).
- Stateless, JSON-response mode: only POST has a purpose. GET (the SSE listening stream, which would
  hold a thread forever) and DELETE (sessions) are 405 http_405 with ``Allow: POST``; any other path
  under /mcp is 404 http_404. The body is read and checked here with a /v1 body's rules, its own
  levels above a tool's arguments not counted against the depth limit (server.MESSAGE_DEPTH). A
  message whose answer is a stream (``subscriptions/listen``) is 400 invalid_request_body naming
  ``method``, at once: the SDK answers it with an SSE stream even in JSON-response mode, which held a
  gunicorn thread for ``call_timeout`` and then ended 500.
- A request (any method but ``notifications/...``) without an id, or with an id that is neither a
  string nor an integer, is 400 invalid_request_body naming ``id``: the SDK took it for a notification
  (202, never run, never answered).
- A gunicorn thread waits at most ``call_timeout`` seconds for one MCP call. A tool call that overruns
  is answered with a tool error carrying an internal_error Error body (the call may still complete:
  retry a write with the same idempotency_key, or re-read first); anything else that overruns is a 500 internal_error.
- Every HTTP failure under /mcp, the SDK's own included, is the spec's Error body.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from types import SimpleNamespace
from typing import Any

import anyio.to_thread
import falcon

from brainstore.api.errors import error_body, from_falcon, retry_after
from brainstore.api.middleware import Pipeline
from brainstore.api.resources import MAX_BODY
from brainstore.api.validation import MAX_DEPTH, check_json_value, json_text, load_json, may_be_refused
from brainstore.auth.ratelimit import FixedWindowLimiter
from brainstore.auth.registry import KeyRegistry
from brainstore.client import Client, in_process
from brainstore.config import Config
from brainstore.errors import BrainstoreError, error, invalid
from brainstore.ids import new_id

MCP_PATH = "/mcp"
BRAIN_HEADER = "x-brainstore-brain"
_BRAIN_ENVIRON = "HTTP_X_BRAINSTORE_BRAIN"
_CHECKED_ENVIRON = "HTTP_X_BRAINSTORE_ARGUMENTS_CHECKED"  # server.ARGUMENTS_CHECKED_HEADER
INTERNAL_BASE_URL = "http://internal/v1"
#: Longest a gunicorn thread waits for one MCP call: a thorough Context's synchronous budget is 5 s,
#: so this is slack for a slow machine, not a budget any call is expected to need.
CALL_TIMEOUT = 30.0
#: Methods whose answer is a notification stream, never one JSON body: the SDK takes its SSE path for
#: them whatever the JSON-response setting, and the stream never ends on its own. The server registers
#: no handler for them (``subscriptions=False``); this refusal keeps a later SDK default from holding a
#: thread either.
STREAMING_ONLY = frozenset({"subscriptions/listen"})
#: Every MCP notification's method begins so; a message of any other method is a request and needs an id.
NOTIFICATION_PREFIX = "notifications/"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Exchange = tuple[int, list[tuple[bytes, bytes]], bytes]


class KeyBinding:
    """Per tool call: a Client on the in-process API with the caller's key, and the key's bound Brain."""

    def __init__(self, api: WSGIApp) -> None:
        self.transport = in_process(api)

    @contextmanager
    def open(self, ctx: Any) -> Iterator[tuple[Client, str]]:
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        authorization = headers.get("authorization", "")
        brain = headers.get(BRAIN_HEADER)
        if not brain or not authorization.lower().startswith("bearer "):
            # Unreachable behind McpMount; refuse rather than guess if it ever happens.
            raise error("mcp_brain_unbound", "Authorization: hosted MCP needs a key bound to one Brain")
        key = authorization.split(" ", 1)[1].strip()
        client = Client(INTERNAL_BASE_URL, key, transport=self.transport)
        try:
            yield client, brain
        finally:
            client.close()


class McpMount:
    """The WSGI callable gunicorn serves: /mcp to MCP (after authentication), the rest to Falcon."""

    def __init__(self, api: WSGIApp, config: Config, *, call_timeout: float = CALL_TIMEOUT) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        from brainstore.mcp.server import build_server

        self.api = api
        self.config = config
        self.call_timeout = call_timeout
        registry = KeyRegistry(config.key_registry) if config.key_registry is not None else None
        # The same authenticate() the /v1 pipeline runs: one place decides what a valid key is.
        self._pipeline = Pipeline(SimpleNamespace(registry=registry))
        # Each key's MCP messages, at the API's rate: a key refused 429 by /v1 went on sending
        # messages of a megabyte, each parsed here and by the SDK on the one MCP thread all keys share.
        # A tool call's own /v1 request counts against the API's limit as any other.
        self._limiter = FixedWindowLimiter(config.rate_limit_per_minute)
        self.server = build_server(KeyBinding(api))
        self.asgi = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            # The bearer key is the protection: a browser on a rebinding domain cannot attach it, and
            # behind a reverse proxy the Host is the public name, so Host/Origin pinning would refuse
            # every legitimate call.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._loop = asyncio.new_event_loop()
        self._stopped: asyncio.Event | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._loop.run_forever, name="brainstore-mcp", daemon=True)
        self._thread.start()
        self._running = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        if not self._started.wait(timeout=10):
            raise RuntimeError("the MCP session manager did not start")

    async def _serve(self) -> None:
        # The session manager's task group must live on the loop the requests run on.
        self._stopped = asyncio.Event()
        # The tools run on this loop's thread pool (anyio's, 40 threads by default), which serves its
        # waiters first come, first served: with fewer threads than gunicorn has, one tenant's slow
        # calls took them all, and another's call, whose request thread the fair dispatch had kept
        # free, waited behind them. A request thread waits on one call at a time; the second share is
        # for calls that overran and are still finishing.
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, 2 * self.config.threads)
        async with self.server.session_manager.run():
            self._started.set()
            await self._stopped.wait()

    def close(self) -> None:
        if self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
        try:
            self._running.result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self._loop.close()

    def _respond(
        self, status: int, body: bytes, start_response: Callable[..., Any], headers: Iterable[tuple[str, str]] = ()
    ) -> list[bytes]:
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
        )
        return [body]

    def _refuse(
        self, exc: BrainstoreError, start_response: Callable[..., Any], headers: Iterable[tuple[str, str]] = ()
    ) -> list[bytes]:
        payload = json.dumps(error_body(exc, new_id("trc"), self.config.docs_base)).encode()
        extra = list(headers)
        if exc.status == 401:
            extra.append(("WWW-Authenticate", 'Bearer realm="brainstore"'))
        if (after := retry_after(exc)) is not None:
            extra.append(("Retry-After", after))
        return self._respond(exc.status, payload, start_response, extra)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path != MCP_PATH and not path.startswith(MCP_PATH + "/"):
            return self.api(environ, start_response)
        environ.pop(_BRAIN_ENVIRON, None)
        environ.pop(_CHECKED_ENVIRON, None)
        try:
            principal = self._pipeline.authenticate(environ.get("HTTP_AUTHORIZATION"))
            if principal.bound_brain is None:
                raise error(
                    "mcp_brain_unbound",
                    "Authorization: hosted MCP needs a key bound to one Brain "
                    "(brainstore keys create --project P --brain B); this key is not bound",
                )
            self._limiter.hit(principal.key_hash)
            if path.rstrip("/") != MCP_PATH:
                raise from_falcon(falcon.HTTPNotFound())
            if environ.get("REQUEST_METHOD") != "POST":
                return self._refuse(
                    from_falcon(falcon.HTTPMethodNotAllowed(["POST"])), start_response, [("Allow", "POST")]
                )
            body = _read_body(environ)
            # loaded by __init__ (build_server)
            from brainstore.mcp.server import ARGUMENTS_LEVEL, MESSAGE_DEPTH, is_request_id

            text = json_text(body)
            message = load_json(text, max_depth=MESSAGE_DEPTH)
            # One scan of the text tells both: whether the message needs walking, and whether a tool
            # call's arguments, ARGUMENTS_LEVEL down, hold to MAX_DEPTH as a /v1 body must.
            arguments_checked = not may_be_refused(text, MAX_DEPTH + ARGUMENTS_LEVEL)
            if not arguments_checked:
                check_json_value(message, max_depth=MESSAGE_DEPTH)

            if isinstance(message, dict) and "id" in message and not is_request_id(message["id"]):
                # the SDK took such a request for a notification: 202, not run, and no error for it
                raise invalid("id", "must be a string or an integer (JSON-RPC 2.0; MCP never takes null)")
            method = message.get("method") if isinstance(message, dict) else None
            if isinstance(method, str) and "id" not in message and not method.startswith(NOTIFICATION_PREFIX):
                # the SDK took it for a notification too: 202, and a tools/call so sent never ran
                raise invalid("id", f"is required: {method} is a request (only notifications/* go without an id)")
            if isinstance(method, str) and method in STREAMING_ONLY:
                raise invalid(
                    "method",
                    f"{method} answers with a notification stream; this endpoint is stateless and answers "
                    "each message with one JSON body, so it serves no stream",
                )
        except BrainstoreError as exc:
            return self._refuse(exc, start_response)
        environ[_BRAIN_ENVIRON] = principal.bound_brain
        if arguments_checked:  # else the tool call checks them, naming the member as /v1 would
            environ[_CHECKED_ENVIRON] = "1"
        future = asyncio.run_coroutine_threadsafe(self._exchange(_scope(environ, body), body), self._loop)
        try:
            status, headers, payload = future.result(timeout=self.call_timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return self._overrun(message, start_response)
        if status >= 400:
            return self._refuse(_sdk_failure(status, payload), start_response)
        return self._respond(
            status,
            payload,
            start_response,
            [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in headers
                if name.lower() not in (b"content-type", b"content-length")
            ],
        )

    async def _exchange(self, scope: dict[str, Any], body: bytes) -> Exchange:
        """One request through the SDK's ASGI app, the whole response collected (JSON mode)."""
        finished = asyncio.Event()
        delivered = False
        status, headers, chunks = 500, [], []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(event: dict[str, Any]) -> None:
            nonlocal status, headers
            if event["type"] == "http.response.start":
                status, headers = event["status"], list(event.get("headers", []))
            elif event["type"] == "http.response.body":
                chunks.append(event.get("body", b""))
                if not event.get("more_body", False):
                    finished.set()

        try:
            await self.asgi(scope, receive, send)
        finally:
            finished.set()
        return status, headers, b"".join(chunks)

    def _overrun(self, message: Any, start_response: Callable[..., Any]) -> list[bytes]:
        exc = error(
            "internal_error",
            f"the MCP call did not finish within {self.call_timeout:g} s; it may still complete: "
            "retry a write with the same idempotency_key, or re-read first",
        )
        if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
            from brainstore.mcp.server import tool_error

            result = tool_error(error_body(exc, new_id("trc"), self.config.docs_base))
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            return self._respond(200, json.dumps(reply).encode(), start_response)
        return self._refuse(exc, start_response)


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body, bounded like /v1's: media type first, then size (chunked bodies too)."""
    media = (environ.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()
    if media != "application/json":
        shown = repr(media) if media else "missing"
        raise error("unsupported_media_type", f"Content-Type: {shown}; MCP messages are application/json")
    stream = environ["wsgi.input"]
    length_text = environ.get("CONTENT_LENGTH") or ""
    if length_text:
        if not length_text.isdigit() or int(length_text) > MAX_BODY:
            raise invalid("body", f"must be at most {MAX_BODY} bytes")
        body = stream.read(int(length_text))
    elif "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        parts, size = [], 0
        while size <= MAX_BODY:
            part = stream.read(MAX_BODY + 1 - size)
            if not part:
                break
            parts.append(part)
            size += len(part)
        body = b"".join(parts)
    else:
        body = b""
    if len(body) > MAX_BODY:
        raise invalid("body", f"must be at most {MAX_BODY} bytes")
    if not body.strip():
        raise invalid("body", "is required: send a JSON-RPC 2.0 message")
    return body


def _scope(environ: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The ASGI scope of a WSGI request whose body has been read (it is re-sent with its length)."""
    headers = [
        (key[5:].lower().replace("_", "-").encode("latin-1"), value.encode("latin-1"))
        for key, value in environ.items()
        if key.startswith("HTTP_") and key not in ("HTTP_CONTENT_LENGTH", "HTTP_TRANSFER_ENCODING")
    ]
    headers.append((b"content-type", environ["CONTENT_TYPE"].encode("latin-1")))
    headers.append((b"content-length", str(len(body)).encode()))
    server = (environ.get("SERVER_NAME", "localhost"), int(environ.get("SERVER_PORT") or 80))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").split("/")[-1],
        "method": "POST",
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": MCP_PATH,
        "raw_path": MCP_PATH.encode(),
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "server": server,
        "client": (environ.get("REMOTE_ADDR", ""), int(environ.get("REMOTE_PORT") or 0)),
        "extensions": {},
    }


def _sdk_failure(status: int, payload: bytes) -> BrainstoreError:
    """The SDK answers failures with JSON-RPC text of its own; the caller gets the spec's body."""
    if status == 400:
        # JSON syntax was checked before the SDK saw the body: what it refuses is the message's shape.
        reason = "is not a JSON-RPC 2.0 message this server accepts"
        try:
            sdk_message = str(json.loads(payload)["error"]["message"]).split(":")[0]
        except (ValueError, KeyError, TypeError):
            sdk_message = ""
        if sdk_message and sdk_message != "Validation error":
            reason += f" ({sdk_message[:80]})"
        return invalid("body", reason)
    return from_falcon(falcon.HTTPError(status))


def mount_mcp(app: falcon.App, config: Config) -> McpMount:
    """Serve hosted MCP at /mcp next to the Falcon app: call inside the worker (after the fork)."""
    return McpMount(app, config)
