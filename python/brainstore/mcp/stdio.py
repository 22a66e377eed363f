"""Local MCP over stdio: ``brainstore mcp --project P --brain B``.

Two ways to reach the API, both through :class:`brainstore.client.Client`:

- ``--url URL --key KEY``: a running brainstore server, with that key.
- no ``--url`` (embedded): the service is built in this process on ``--data-dir`` and the Client talks to
  it through ``httpx.WSGITransport``, with the local key ``sk_test_<project>_local`` (no key registry).
  Embedded mode is for when NO server runs on that data directory: a DuckDB file admits one process,
  so if a server holds it the open fails and we refuse with a clear message instead of waiting.

stdout is the protocol channel: nothing else may be printed there.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR, JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter

from brainstore.errors import BrainstoreError, error
from brainstore.ids import new_id

EMBEDDED_BASE_URL = "http://embedded/v1"


def local_key(project: str) -> str:
    return f"sk_test_{project}_local"


@dataclass(frozen=True)
class StdioSettings:
    project: str | None
    brain: str | None
    url: str | None = None
    key: str | None = None
    engine: str = "duckdb"
    data_dir: Path = Path("brainstore-data")
    self_name: str | None = None
    docs_base: str = "https://docs.brainstore.dev"


def refusal(exc: BrainstoreError, docs_base: str) -> dict[str, Any]:
    """The spec's Error body for a refusal that happens before any request is made."""
    return {
        "type": exc.type,
        "code": exc.code,
        "message": exc.message,
        "request_id": new_id("trc"),
        "docs_url": f"{docs_base}/errors/{exc.code}",
    }


def check_identity(settings: StdioSettings) -> None:
    """Rule 7: local stdio MCP needs an explicit project and an explicit Brain, else 401."""
    missing = [
        hint
        for value, hint in (
            (settings.project, "--project (or BRAINSTORE_MCP_PROJECT)"),
            (settings.brain, "--brain (or BRAINSTORE_MCP_BRAIN)"),
        )
        if not value
    ]
    if missing:
        raise error(
            "mcp_identity_unconfigured",
            f"local MCP needs an explicit project and Brain; set {' and '.join(missing)}",
        )
    assert settings.project is not None and settings.brain is not None
    from brainstore.api.validation import SLUG
    from brainstore.auth.keys import PROJECT_RULE, named_project

    # A project no key can name crashed the embedded Client ("ac me"); a Brain id that is no Slug started
    # and then failed every tool call with a 400 about an "id" the agent never sent.
    if not named_project(settings.project):
        raise error(
            "mcp_identity_unconfigured",
            f"project: {settings.project!r} is not a project an API key can name: it {PROJECT_RULE}",
        )
    if not SLUG.fullmatch(settings.brain):
        raise error(
            "mcp_identity_unconfigured",
            f"brain: {settings.brain!r} is not a Brain id: a Slug, 1-64 letters, digits, '_', '-', '.', "
            "starting with a letter or digit",
        )
    if settings.url:
        if not settings.key:
            raise error("invalid_api_key", "Authorization: --url needs --key (or BRAINSTORE_API_KEY)")
        from brainstore.auth.keys import parse_key

        key = parse_key(settings.key)
        if key.project != settings.project:
            raise error(
                "mcp_identity_unconfigured",
                f"project: --project {settings.project!r} does not match the key's project {key.project!r}",
            )


def unreadable(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error answering a line that is no request the SDK would answer, or None.

    The SDK's reader drops a line it cannot read (the client then waits for ever), reads invalid UTF-8
    as U+FFFD (a remembered text would be stored changed), and takes a request whose id is null, a
    boolean or a float for a notification: never run, never answered. JSON-RPC 2.0 answers each with an
    error whose id is null when none could be read; the API's strict JSON rules apply, as on /mcp."""
    from brainstore.api.validation import parse_json_text
    from brainstore.mcp.server import MESSAGE_DEPTH, is_request_id

    try:
        # the message's own levels do not count against a tool's arguments (checked by the tool call)
        message = parse_json_text(line.decode("utf-8"), "message", max_depth=MESSAGE_DEPTH)
    except (UnicodeDecodeError, BrainstoreError) as exc:
        reason = exc.message if isinstance(exc, BrainstoreError) else "message: is not UTF-8"
        return _jsonrpc_error(None, PARSE_ERROR, f"Parse error: {reason}")
    if not isinstance(message, dict):
        return _jsonrpc_error(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if "id" in message and not is_request_id(message["id"]):
        return _jsonrpc_error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError:
        shape = "not a JSON-RPC 2.0 request, notification or response"
        return _jsonrpc_error(message.get("id"), INVALID_REQUEST, f"Invalid Request: {shape}")
    return None


def _jsonrpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


#: At the end of stdin, the longest the requests still running are waited for, so that their answers
#: are written before the server closes.
IN_FLIGHT_WAIT_SECONDS = 30.0


def _request_key(message: Any) -> str:
    return json.dumps(message, sort_keys=True)


class _AnsweredStream:
    """The server's write stream, noting the id of each answer (a response or an error) it sends."""

    def __init__(self, inner: Any, answered: Callable[[Any], None]) -> None:
        self._inner = inner
        self._answered = answered

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError) and item.message.id is not None:
            self._answered(item.message.id)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnsweredStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (an MCPServer) on stdin and stdout, answering the lines the SDK would drop.

    At the end of stdin the requests still running are waited for (IN_FLIGHT_WAIT_SECONDS at most) and
    answered before the server closes: the SDK ended them with the input, so a client that wrote six
    `remember` calls and closed its end got no answer while all six Records were stored."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    replies: Any = None
    ready = anyio.Event()
    running: dict[str, int] = {}  # the requests read and not yet answered, by id

    def started(request_id: Any) -> None:
        key = _request_key(request_id)
        running[key] = running.get(key, 0) + 1

    def answered(request_id: Any) -> None:
        key = _request_key(request_id)
        if running.get(key, 0) > 1:
            running[key] -= 1
        else:
            running.pop(key, None)

    async def lines() -> Any:
        await ready.wait()
        async with anyio.wrap_file(sys.stdin.buffer) as stdin:
            async for line in stdin:
                if not line.strip():  # no message: nothing to answer
                    continue
                if (reply := unreadable(line)) is None:
                    try:
                        message = json.loads(line)  # a JSON-RPC message: unreadable() read it
                    except ValueError:
                        message = {}
                    if "method" in message and "id" in message:
                        started(message["id"])
                    elif message.get("method") == "notifications/cancelled":  # a cancelled one is not answered
                        params = message.get("params")
                        if isinstance(params, dict) and "requestId" in params:
                            answered(params["requestId"])
                    yield line.decode("utf-8")
                else:
                    await replies.send(SessionMessage(jsonrpc_message_adapter.validate_python(reply)))
        # the input ends the session: answer what is still running first
        with anyio.move_on_after(IN_FLIGHT_WAIT_SECONDS):
            while running:
                await anyio.sleep(0.02)

    async with stdio_server(stdin=lines()) as (read_stream, write_stream):
        replies = write_stream
        ready.set()
        # MCPServer serves streams it is given only through its low-level server (the SDK 2.x internals
        # this module leans on, like server.py's; the stdio test fails if a release moves them)
        lowlevel = server._lowlevel_server
        await lowlevel.run(
            read_stream, _AnsweredStream(write_stream, answered), lowlevel.create_initialization_options()
        )


class DataDirectoryBusy(RuntimeError):
    """Embedded mode cannot open the data directory: a running server holds it."""


# Builds the embedded engine (the composition root lends it: brainstore.app.stdio_engine):
# (settings, base_url, key) -> the Client on it and a callable that stops it.
Embedded = Callable[[StdioSettings, str, str], tuple[Any, Callable[[], None]]]


def run(settings: StdioSettings, *, embedded: Embedded | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes it. Returns the process exit code."""
    try:
        check_identity(settings)
    except BrainstoreError as exc:
        print(json.dumps(refusal(exc, settings.docs_base)), file=sys.stderr)
        return 2
    assert settings.project is not None and settings.brain is not None

    import logging

    # Request lines from the client library would be noise on the agent's stderr log.
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from brainstore.client import Client
    from brainstore.mcp.server import FixedBinding, build_server

    stop: Callable[[], None] = lambda: None  # noqa: E731
    if settings.url:
        client = Client(settings.url, settings.key or "")
    else:
        if embedded is None:
            raise ValueError("embedded mode needs the engine factory (brainstore.app.stdio_engine)")
        try:
            client, stop = embedded(settings, EMBEDDED_BASE_URL, local_key(settings.project))
        except DataDirectoryBusy:
            print(
                f"brainstore mcp: {settings.data_dir}/brainstore.duckdb is in use (is `brainstore serve` "
                "running on it?). Embedded mode is only for when no server runs: pass --url and --key to "
                "talk to the running server instead.",
                file=sys.stderr,
            )
            return 2
    binding = FixedBinding(client, settings.brain, create_brain=True, self_name=settings.self_name)
    try:
        import anyio

        anyio.run(serve_stdio, build_server(binding))
    finally:
        client.close()
        stop()
    return 0
