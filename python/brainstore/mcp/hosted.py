"""Hosted MCP: streamable HTTP at ``/mcp``, served by the gunicorn process next to ``/v1``.

The MCP SDK's HTTP transport is ASGI and our API is WSGI, so :func:`mount_mcp` returns a WSGI callable
that sends ``/mcp`` to the SDK app through ``a2wsgi`` (on one event loop thread owned by this worker)
and everything else to the Falcon app unchanged.

Invariants:
- Authentication happens here, before the MCP app sees the request, with the same key rules as /v1
  (registry lookup, revocation): no/invalid key is 401 invalid_api_key, and a key not bound to one Brain
  is 403 mcp_brain_unbound (spec Authentication rule 7), both as the spec's Error body.
- The tools call /v1 in-process (``httpx.WSGITransport`` on the Falcon app) with the caller's own key,
  so scopes, rate limits and the Brain binding are enforced by the API itself; this module never opens
  the store.
- The bound Brain reaches the tools in the ``X-Brainstore-Brain`` header, which is always overwritten
  here: a client cannot choose it.
- Stateless, JSON-response mode: each POST is answered by one JSON body, so a gthread worker thread is
  held only for the duration of a call and no per-session state lives in the process.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import falcon
import httpx

from brainstore.api.errors import error_body
from brainstore.api.middleware import Pipeline
from brainstore.auth.registry import KeyRegistry
from brainstore.client import Client
from brainstore.config import Config
from brainstore.errors import BrainstoreError, error
from brainstore.ids import new_id

MCP_PATH = "/mcp"
BRAIN_HEADER = "x-brainstore-brain"
_BRAIN_ENVIRON = "HTTP_X_BRAINSTORE_BRAIN"
INTERNAL_BASE_URL = "http://internal/v1"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class KeyBinding:
    """Per tool call: a Client on the in-process API with the caller's key, and the key's bound Brain."""

    def __init__(self, api: falcon.App) -> None:
        self.transport = httpx.WSGITransport(app=api)

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

    def __init__(self, api: falcon.App, config: Config) -> None:
        from a2wsgi import ASGIMiddleware
        from mcp.server.transport_security import TransportSecuritySettings

        from brainstore.mcp.server import build_server

        self.api = api
        self.config = config
        registry = KeyRegistry(config.key_registry) if config.key_registry is not None else None
        # The same authenticate() the /v1 pipeline runs: one place decides what a valid key is.
        self._pipeline = Pipeline(SimpleNamespace(registry=registry))
        self.server = build_server(KeyBinding(api))
        asgi = self.server.streamable_http_app(
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
        self.mcp = ASGIMiddleware(asgi, loop=self._loop)  # type: ignore[arg-type]

    async def _serve(self) -> None:
        # The session manager's task group must live on the loop a2wsgi runs requests on.
        self._stopped = asyncio.Event()
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

    def _refuse(self, exc: BrainstoreError, start_response: Callable[..., Any]) -> list[bytes]:
        payload = json.dumps(error_body(exc, new_id("trc"), self.config.docs_base)).encode()
        status = f"{exc.status} {'Unauthorized' if exc.status == 401 else 'Forbidden' if exc.status == 403 else 'Error'}"
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        if exc.status == 401:
            headers.append(("WWW-Authenticate", 'Bearer realm="brainstore"'))
        start_response(status, headers)
        return [payload]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path != MCP_PATH and not path.startswith(MCP_PATH + "/"):
            return self.api(environ, start_response)
        environ.pop(_BRAIN_ENVIRON, None)
        try:
            principal = self._pipeline.authenticate(environ.get("HTTP_AUTHORIZATION"))
            if principal.bound_brain is None:
                raise error(
                    "mcp_brain_unbound",
                    "Authorization: hosted MCP needs a key bound to one Brain "
                    "(brainstore keys create --project P --brain B); this key is not bound",
                )
        except BrainstoreError as exc:
            return self._refuse(exc, start_response)
        environ[_BRAIN_ENVIRON] = principal.bound_brain
        return self.mcp(environ, start_response)


def mount_mcp(app: falcon.App, config: Config) -> McpMount:
    """Serve hosted MCP at /mcp next to the Falcon app: call inside the worker (after the fork)."""
    return McpMount(app, config)
