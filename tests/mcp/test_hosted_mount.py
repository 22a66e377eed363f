"""The hosted /mcp mount as a WSGI app (no server): methods, paths, bodies, the SDK's failures, overruns.

Every HTTP failure under /mcp is the spec's Error body, and a call never holds the calling thread
longer than the mount's call_timeout. The tools' argument validation is the API's too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client as McpClient

from brainstore.api import validation
from brainstore.api.app import create_app
from brainstore.api.validation import MAX_DEPTH
from brainstore.auth.registry import KeyRegistry
from brainstore.client import Client, in_process
from brainstore.config import Config
from brainstore.errors import BrainstoreError
from brainstore.mcp.hosted import McpMount, _scope
from brainstore.mcp.server import FixedBinding, build_server
from brainstore.mcp.stdio import unreadable
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.contract.openapi import validate_schema

ACCEPT = "application/json, text/event-stream"
#: The stateless protocol revision: the era is in every message and in its headers.
MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def listen(era: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A subscriptions/listen request of ``era`` and the headers it is sent with."""
    params: dict[str, Any] = {"notifications": {"toolsListChanged": True}}
    if era == "legacy":
        return {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}, {}
    params["_meta"] = MODERN_META
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}
    return {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}, headers


class Mounted:
    def __init__(self, mount: McpMount, bound: str, gate: threading.Event) -> None:
        self.mount, self.bound, self.gate = mount, bound, gate
        self.http = httpx.Client(transport=httpx.WSGITransport(app=mount), base_url="http://mcp.test")

    def post(self, body: Any = None, *, raw: bytes | None = None, **headers: str) -> httpx.Response:
        sent = {"Authorization": f"Bearer {self.bound}", "Accept": ACCEPT, "Content-Type": "application/json"}
        sent.update({k.replace("_", "-"): v for k, v in headers.items()})
        content = raw if raw is not None else json.dumps(body).encode()
        return self.http.post("/mcp", content=content, headers=sent)

    def call(self, name: str, arguments: dict[str, Any], request_id: int = 1) -> httpx.Response:
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        return self.post(message)


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Mounted]:
    registry = tmp_path / "keys.json"
    bound, _ = KeyRegistry(registry).create("test", "acme", brain="alice")
    config = Config(engine="memory", key_registry=registry)
    service = Service(MemoryStore(), config=config)
    service.start()
    api = create_app(service)
    gate = threading.Event()
    gate.set()

    def gated_api(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        gate.wait()  # a test clears the gate to make the API (and so a tool call) hang
        return api(environ, start_response)

    mount = McpMount(gated_api, config, call_timeout=1.0)
    mounted = Mounted(mount, bound, gate)
    assert mounted.http.post(
        "/v1/brains", json={"id": "alice"}, headers={"Authorization": f"Bearer {bound}"}
    ).status_code == 201
    yield mounted
    gate.set()
    mounted.http.close()
    mount.close()
    service.stop()


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    validate_schema("Error", body)
    assert body["code"] == code
    return body


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_only_post_has_a_purpose_in_stateless_mode(mounted: Mounted, method: str) -> None:
    started = time.monotonic()
    response = mounted.http.request(
        method, "/mcp", headers={"Authorization": f"Bearer {mounted.bound}", "Accept": "text/event-stream"}
    )
    error_of(response, 405, "http_405")
    assert response.headers["allow"] == "POST"
    assert time.monotonic() - started < mounted.mount.call_timeout  # never the SDK's endless stream


def test_unknown_paths_under_mcp_are_http_404(mounted: Mounted) -> None:
    headers = {"Authorization": f"Bearer {mounted.bound}"}
    for path in ("/mcp/x", "/mcp/sessions/1", "/mcp/"):
        if path == "/mcp/":
            continue  # a trailing slash is /mcp
        error_of(mounted.http.post(path, json={}, headers=headers), 404, "http_404")


def test_authentication_comes_first(mounted: Mounted) -> None:
    error_of(mounted.http.get("/mcp"), 401, "invalid_api_key")
    error_of(mounted.http.post("/mcp/x", json={}), 401, "invalid_api_key")


@pytest.mark.parametrize(
    ("content_type", "raw", "status", "code", "message"),
    [
        ("text/plain", b"{}", 415, "unsupported_media_type", "Content-Type: "),
        ("", b"{}", 415, "unsupported_media_type", "Content-Type: "),
        ("application/json", b"", 400, "invalid_request_body", "body: is required"),
        ("application/json", b"{not json", 400, "invalid_request_body", "body: is not valid JSON"),
        ("application/json", b'{"jsonrpc": "2.0", "id": 1, "method": NaN}', 400, "invalid_request_body", "body: "),
        ("application/json", b"[" * 100_000, 400, "invalid_request_body", "body: nests"),
        ("application/json", b'{"jsonrpc": "2.0", "id": 1, "method": "x\\ud800"}', 400, "invalid_request_body", "method: "),
        ("application/json", b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"n": 1' + b"0" * 400 + b"}}", 400,
         "invalid_request_body", "params.n: is an integer out of range of a double"),
        ("application/json", b'{"a": 1}', 400, "invalid_request_body", "body: is not a JSON-RPC 2.0 message"),
        ("application/json", b"[1, 2]", 400, "invalid_request_body", "body: is not a JSON-RPC 2.0 message"),
        # a request whose id is no string or integer, which the SDK took for a notification and ran not
        *[
            ("application/json", b'{"jsonrpc": "2.0", "id": ' + bad + b', "method": "tools/list"}', 400,
             "invalid_request_body", "id: must be a string or an integer")
            for bad in (b"null", b"true", b"1.5", b'{"a": 1}', b"[1]")
        ],
    ],
)
def test_bad_bodies_are_error_bodies(
    mounted: Mounted, content_type: str, raw: bytes, status: int, code: str, message: str
) -> None:
    body = error_of(mounted.post(raw=raw, Content_Type=content_type), status, code)
    assert body["message"].startswith(message)


@pytest.mark.parametrize("method", ["tools/call", "tools/list", "ping", "foo/bar"])
def test_a_request_without_an_id_is_refused_not_dropped(mounted: Mounted, method: str) -> None:
    """The SDK took a request sent without its id for a notification: 202 Accepted, and a tools/call
    so sent was never run, nor answered (a write the client took for accepted was not made)."""
    params = {"name": "accept_object", "arguments": {"type": "t", "key": "k", "value": 1}}
    body = error_of(mounted.post({"jsonrpc": "2.0", "method": method, "params": params}), 400, "invalid_request_body")
    assert body["message"].startswith(f"id: is required: {method} is a request")
    assert mounted.call("get_object", {"type": "t", "key": "k"}).json()["result"]["structuredContent"]["code"] == "object_not_found"
    for notification in ("notifications/initialized", "notifications/cancelled"):  # MCP's notifications
        assert mounted.post({"jsonrpc": "2.0", "method": notification, "params": {"requestId": 1}}).status_code == 202

def test_the_sdks_own_refusals_become_error_bodies(mounted: Mounted) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    error_of(mounted.post(message, Accept="text/html"), 406, "http_406")


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_method_answered_by_a_stream_is_refused_at_once(mounted: Mounted, era: str) -> None:
    """subscriptions/listen took the SDK's SSE path even in JSON-response mode: its stream never ended,
    so each one held a gunicorn thread for call_timeout (30 s) and then ended 500 internal_error."""
    message, headers = listen(era)
    started = time.monotonic()
    response = mounted.post(message, **headers)
    elapsed = time.monotonic() - started
    body = error_of(response, 400, "invalid_request_body")
    assert body["message"].startswith("method: subscriptions/listen answers with a notification stream")
    assert elapsed < mounted.mount.call_timeout
    assert mounted.call("get_profile", {}).json()["result"]["isError"] is False


def test_the_server_itself_serves_no_listen_stream(mounted: Mounted) -> None:
    """Behind the mount's refusal, the SDK app answers listen at once (the handler is not registered)."""
    message, headers = listen("modern")
    body = json.dumps(message).encode()
    environ = {"CONTENT_TYPE": "application/json", "HTTP_ACCEPT": ACCEPT}
    environ.update({f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()})
    mount = mounted.mount
    future = asyncio.run_coroutine_threadsafe(mount._exchange(_scope(environ, body), body), mount._loop)
    try:
        status, _, payload = future.result(timeout=mount.call_timeout)
    finally:
        future.cancel()
    assert status != 200
    assert json.loads(payload)["error"]["message"] == "Method not found"


def test_a_body_over_the_limit_is_refused(mounted: Mounted) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x" * (1024 * 1024)}}
    body = error_of(mounted.post(message), 400, "invalid_request_body")
    assert body["message"].startswith("body: must be at most")


def test_calls_notifications_and_tools_still_work(mounted: Mounted) -> None:
    listed = mounted.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 8
    notified = mounted.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notified.status_code == 202
    profile = mounted.call("get_profile", {})
    assert profile.status_code == 200
    assert profile.json()["result"]["structuredContent"]["brain_id"] == "alice"


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_an_unknown_prompt_is_invalid_params_and_logs_no_error(
    mounted: Mounted, caplog: pytest.LogCaptureFixture, era: str
) -> None:
    """The SDK raised a ValueError for a prompt it does not have: every such message, from any key,
    logged an ERROR with its whole traceback and was answered with JSON-RPC code 0."""
    params: dict[str, Any] = {"name": "x", "arguments": {"a": "b"}}
    headers = {}
    if era == "modern":
        params["_meta"] = MODERN_META
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/get", "Mcp-Name": "x"}
    with caplog.at_level(logging.WARNING):
        response = mounted.post({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": params}, **headers)
    if era == "modern":  # the SDK answers invalid params 400 in this era: the spec's Error body
        assert error_of(response, 400, "invalid_request_body")["message"].endswith("(Unknown prompt)")
    else:
        assert response.status_code == 200
        assert response.json()["error"]["code"] == -32602  # invalid params, as an unknown resource is
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []

def test_a_tool_call_that_overruns_is_a_tool_error_and_frees_the_thread(mounted: Mounted) -> None:
    mounted.gate.clear()
    started = time.monotonic()
    response = mounted.call("get_profile", {}, request_id=7)
    elapsed = time.monotonic() - started
    mounted.gate.set()
    assert elapsed < mounted.mount.call_timeout + 1.0
    assert response.status_code == 200
    reply = response.json()
    assert reply["id"] == 7 and reply["result"]["isError"] is True
    error = reply["result"]["structuredContent"]
    validate_schema("Error", error)
    assert error["code"] == "internal_error" and "did not finish within" in error["message"]
    # The mount is still serving.
    assert mounted.call("get_profile", {}).json()["result"]["isError"] is False


def test_any_other_call_that_overruns_is_a_500_error_body(mounted: Mounted, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    original = mounted.mount.asgi

    async def stuck(scope: Any, receive: Any, send: Any) -> None:
        await anyio.to_thread.run_sync(release.wait)
        await original(scope, receive, send)

    monkeypatch.setattr(mounted.mount, "asgi", stuck)
    try:
        response = mounted.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    finally:
        release.set()
    error_of(response, 500, "internal_error")


# --- tool arguments: strict, and refused with the API's Error body ---------------------------------
@pytest.fixture
def tools(tmp_path: Path) -> Iterator[McpClient]:
    service = Service(MemoryStore(), config=Config(engine="memory"))
    service.start()
    client = Client("http://internal/v1", "sk_test_acme_tools", transport=in_process(create_app(service)))
    yield McpClient(build_server(FixedBinding(client, "alice")))
    service.stop()


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("accept_object", {"type": "t", "key": "k", "value": 1, "if_version": True}, "if_version"),
        ("accept_object", {"type": "t", "key": "k", "value": 1, "if_version": False}, "if_version"),
        ("accept_object", {"type": "t", "key": "k", "value": 1, "if_version": 1.5}, "if_version"),
        ("accept_object", {"type": "t", "key": "k", "value": 1, "if_version": "one"}, "if_version"),
        ("accept_object", {"type": "t", "key": "k"}, "value"),
        ("list_memories", {"limit": True}, "limit"),
        ("get_profile", {"limit": True}, "limit"),
        ("context", {"query": "x", "budget_tokens": True}, "budget_tokens"),
        ("context", {"query": "x", "budget_ms": True}, "budget_ms"),
        ("context", {"query": "x", "budget_ms": 2.5}, "budget_ms"),
        ("context", {"query": "x", "budget_ms": 0}, "budget.ms"),
        ("context", {"query": "x", "mode": "slow"}, "mode"),
        ("context", {"query": "x", "include": ["evidence", "nope"]}, "include[1]"),
        ("remember", {"content": "x\ud800"}, "content"),
        ("accept_object", {"type": "t", "key": "k", "value": {"deep": [[["\udfff"]]]}}, "value.deep[0][0][0]"),
        ("accept_object", {"type": "t", "key": "k", "value": {"n": [1, 10**400]}}, "value.n[1]"),
    ],
)
def test_invalid_arguments_are_invalid_request_body_error_bodies(
    tools: McpClient, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async def session() -> Any:
        async with tools as client:
            result = await client.call_tool(tool, arguments)
            after = await client.call_tool("get_object", {"type": "t", "key": "k"})
            return result, after

    result, after = anyio.run(session)
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    validate_schema("Error", body)
    assert body["code"] == "invalid_request_body"
    assert body["message"].startswith(f"{field}: "), body["message"]
    assert json.loads(after.content[0].text)["code"] == "object_not_found"  # nothing was written


def test_the_context_tool_takes_the_ms_budget(tools: McpClient) -> None:
    """The context tool took budget_tokens only: an agent could not give a Context more than 250 ms
    (the first one of an embedded session came back empty, its every lane cut)."""
    listed: list[Any] = []

    async def session() -> Any:
        async with tools as client:
            listed.extend((await client.list_tools()).tools)
            return await client.call_tool("context", {"query": "x", "budget_ms": 1500, "budget_tokens": 300})

    body = _body(anyio.run(session))
    assert body["object"] == "context"
    assert body["budget"]["ms"]["limit"] == 1500 and body["budget"]["tokens"]["limit"] == 300
    schema = next(tool for tool in listed if tool.name == "context").input_schema
    assert list(schema["properties"]) == ["query", "budget_tokens", "budget_ms", "include", "as_of", "mode", "purpose"]
    assert schema["required"] == ["query"]


def test_integer_arguments_still_accept_integers(tools: McpClient) -> None:
    async def session() -> Any:
        async with tools as client:
            first = await client.call_tool("accept_object", {"type": "t", "key": "k", "value": 1, "if_version": 0})
            second = await client.call_tool("accept_object", {"type": "t", "key": "k", "value": 2, "if_version": 1})
            page = await client.call_tool("list_memories", {"limit": 5})
            return first, second, page

    first, second, page = anyio.run(session)
    assert not first.is_error and not second.is_error and not page.is_error
    assert json.loads(second.content[0].text)["version"] == 2


def _call(tools: McpClient, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    async def session() -> list[Any]:
        async with tools as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(session)


def _body(result: Any) -> dict[str, Any]:
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    if result.is_error:
        validate_schema("Error", body)
    return body


def walks(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    """The arguments the MCP server screens by their text from now on, and every value walked (by the
    API or the MCP server)."""
    import brainstore.mcp.server as server_module

    screened: list[Any] = []
    walked: list[Any] = []
    real_walk = validation.check_json_value

    def walk(value: Any, *args: Any, **kwargs: Any) -> None:
        walked.append(value)
        real_walk(value, *args, **kwargs)

    def screen(value: Any, *args: Any, **kwargs: Any) -> None:
        screened.append(value)
        validation.check_parsed_json(value, *args, **kwargs)

    monkeypatch.setattr(validation, "check_json_value", walk)
    monkeypatch.setattr(server_module, "check_json_value", walk, raising=False)  # as the server imported it
    monkeypatch.setattr(server_module, "check_parsed_json", screen, raising=False)
    return screened, walked


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_hosted_tool_call_walks_no_argument_the_mount_has_checked(
    mounted: Mounted, monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    """The walk runs in Python on the event loop every hosted key shares: a megabyte of empty lists
    walked again there, after the mount had checked the message, held it over a second (other keys'
    pings waited up to 0.9 s)."""
    screened, walked = walks(monkeypatch)
    arguments = {"type": "t", "key": "many", "value": [[] for _ in range(2_000)]}
    params: dict[str, Any] = {"name": "accept_object", "arguments": arguments}
    headers = {}
    if era == "modern":
        params["_meta"] = MODERN_META
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "accept_object"}
    response = mounted.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, **headers)
    assert response.json()["result"]["structuredContent"]["version"] == 1
    assert screened == [] and walked == []
    lone = mounted.call("accept_object", {"type": "t", "key": "lone", "value": ["x\udc00"]})
    body = error_of(lone, 400, "invalid_request_body")  # the mount's own check
    assert body["message"].startswith("params.arguments.value[0]: contains a lone UTF-16 surrogate")


def test_arguments_are_walked_only_when_their_text_may_be_refused(
    tools: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no mount checked the message (stdio, in process), the walk is gated as a /v1 body's is."""
    screened, walked = walks(monkeypatch)
    many = {"type": "t", "key": "many", "value": [[] for _ in range(2_000)]}
    lone = {"type": "t", "key": "lone", "value": [[]] * 100 + [{"a": "x\udc00"}]}
    accepted, refused = _call(tools, ("accept_object", many), ("accept_object", lone))
    assert not accepted.is_error and _body(accepted)["version"] == 1
    assert refused.is_error and _body(refused)["message"].startswith("value[100].a: contains a lone UTF-16")
    assert screened == [many, lone]
    assert walked == [lone]  # the API's own parse found nothing to walk in the /v1 body it was sent


def test_an_unknown_tool_is_an_error_body_naming_the_tools(tools: McpClient) -> None:
    """The SDK answered a tool name it does not have with the plain text "Unknown tool: x"."""
    unknown, misspelt = _call(tools, ("forget_brain", {"brain_id": "alice"}), ("Remember", {"content": "x"}))
    for result in (unknown, misspelt):
        body = _body(result)
        assert result.is_error and body["code"] == "invalid_request_body"
        assert body["message"] == (
            "name: unknown tool; allowed: remember, context, get_memory, list_memories, accept_object, "
            "get_object, forget_record, get_profile"
        )


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_hosted_call_of_an_unknown_tool_is_an_error_body(mounted: Mounted, era: str) -> None:
    params: dict[str, Any] = {"name": "forget_brain", "arguments": {"brain_id": "alice"}}
    headers = {}
    if era == "modern":
        params["_meta"] = MODERN_META
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "forget_brain"}
    response = mounted.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}, **headers)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    validate_schema("Error", result["structuredContent"])
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["structuredContent"]["message"].startswith("name: unknown tool; allowed: remember, ")


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# A /v1 body is level 1, so an Object's value may nest MAX_DEPTH - 1 levels (test_hostile_input).
DEEPEST, TOO_DEEP = nested(MAX_DEPTH - 1), nested(MAX_DEPTH)
TOO_DEEP_MESSAGE = "value" + "[0]" * (MAX_DEPTH - 1) + ": nests arrays or objects deeper than 64 levels"


def test_an_object_value_is_as_deep_over_mcp_as_over_v1(mounted: Mounted) -> None:
    """The message's own levels (params.arguments.value) counted against MAX_DEPTH: a value /v1 accepts
    at 62-64 levels was refused by accept_object with 400 "params.arguments.value[0]...". """
    headers = {"Authorization": f"Bearer {mounted.bound}"}
    for key, value, status in (("rest", DEEPEST, 201), ("rest-deep", TOO_DEEP, 400)):
        stored = mounted.http.post("/v1/brains/alice/objects", json={"type": "t", "key": key, "value": value}, headers=headers)
        assert stored.status_code == status, stored.text
    rest_refusal = stored.json()
    assert rest_refusal["message"] == TOO_DEEP_MESSAGE

    accepted = mounted.call("accept_object", {"type": "t", "key": "mcp", "value": DEEPEST})
    assert accepted.status_code == 200 and accepted.json()["result"]["isError"] is False, accepted.text
    read = mounted.http.get("/v1/brains/alice/objects/t/mcp", headers=headers).json()
    assert read["value"] == DEEPEST
    refused = mounted.call("accept_object", {"type": "t", "key": "mcp-deep", "value": TOO_DEEP}).json()["result"]
    assert refused["isError"] is True
    validate_schema("Error", refused["structuredContent"])
    assert refused["structuredContent"]["code"] == "invalid_request_body"
    assert refused["structuredContent"]["message"] == TOO_DEEP_MESSAGE  # the member named as /v1 names it
    # deeper still, the message itself is refused, the member named in it
    deeper = mounted.call("accept_object", {"type": "t", "key": "mcp-deeper", "value": nested(MAX_DEPTH + 1)})
    body = error_of(deeper, 400, "invalid_request_body")
    assert body["message"].startswith("params.arguments.value[0][0][0]")
    assert mounted.http.get("/v1/brains/alice/objects/t/mcp-deep", headers=headers).status_code == 404


def test_a_client_cannot_tell_the_server_its_arguments_were_checked(
    mounted: Mounted, monkeypatch: pytest.MonkeyPatch
) -> None:
    screened, _ = walks(monkeypatch)
    arguments = {"type": "t", "key": "k", "value": TOO_DEEP}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "accept_object", "arguments": arguments}}
    refused = mounted.post(message, X_Brainstore_Arguments_Checked="1").json()["result"]
    assert refused["isError"] is True and refused["structuredContent"]["message"] == TOO_DEEP_MESSAGE
    assert screened == [arguments]  # by the tool call, not left to the API


def test_arguments_the_mount_could_not_clear_are_checked_off_the_event_loop(
    mounted: Mounted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value one level deeper than /v1 takes passes the message's limit and is left to the tool call:
    its walk must not run on the event loop every key shares."""
    import brainstore.mcp.server as server_module

    threads: list[threading.Thread] = []

    def screen(value: Any, *args: Any, **kwargs: Any) -> None:
        threads.append(threading.current_thread())
        validation.check_parsed_json(value, *args, **kwargs)

    monkeypatch.setattr(server_module, "check_parsed_json", screen)
    refused = mounted.call("accept_object", {"type": "t", "key": "k", "value": TOO_DEEP}).json()["result"]
    assert refused["structuredContent"]["message"] == TOO_DEEP_MESSAGE
    assert len(threads) == 1 and threads[0] is not mounted.mount._thread


def test_an_object_value_is_as_deep_over_stdio_and_in_process_as_over_v1(tools: McpClient) -> None:
    def line(value: Any) -> bytes:
        arguments = {"type": "t", "key": "k", "value": value}
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "accept_object", "arguments": arguments}}
        return json.dumps(message).encode()

    assert unreadable(line(DEEPEST)) is None and unreadable(line(TOO_DEEP)) is None  # the tool call decides
    refused = unreadable(line(nested(MAX_DEPTH + 1)))
    assert refused is not None and refused["error"]["message"].startswith("Parse error: message.params.arguments")
    accepted, too_deep, read = _call(
        tools,
        ("accept_object", {"type": "t", "key": "k", "value": DEEPEST}),
        ("accept_object", {"type": "t", "key": "deep", "value": TOO_DEEP}),
        ("get_object", {"type": "t", "key": "k"}),
    )
    assert not accepted.is_error and _body(read)["value"] == DEEPEST
    assert too_deep.is_error and _body(too_deep)["message"] == TOO_DEEP_MESSAGE


@pytest.mark.parametrize("segment", ["..", ".", ""])
def test_an_id_that_a_url_path_would_resolve_is_refused_and_the_brain_stays(tools: McpClient, segment: str) -> None:
    """forget_record("..") was DELETE brains/alice/records/.., which the URL resolved to forgetBrain."""
    kept, forgot, memory, after = _call(
        tools,
        ("remember", {"content": "I live in Oslo."}),
        ("forget_record", {"record_id": segment}),
        ("get_memory", {"memory_id": segment}),
        ("get_object", {"type": "t", "key": "k"}),
    )
    for result, field in ((forgot, "record_id"), (memory, "memory_id")):
        assert result.is_error and _body(result)["message"] == f"{field}: must not be {segment!r}"
    assert _body(after)["code"] == "object_not_found"  # the Brain is there: only the Object is not
    with pytest.raises(BrainstoreError) as refused:
        Client("http://internal/v1", "sk_test_acme_tools").forget_record("alice", segment)
    assert refused.value.code == "invalid_request_body"
    assert not kept.is_error


def test_an_unknown_argument_is_refused_as_the_api_refuses_an_unknown_member(tools: McpClient) -> None:
    misspelt, listed = _call(
        tools,
        ("remember", {"content": "my passport number is X123", "visibilty": "local_only"}),
        ("get_profile", {}),
    )
    body = _body(misspelt)
    assert misspelt.is_error and body["code"] == "invalid_request_body"
    assert body["message"].startswith("visibilty: unknown argument; allowed: ")
    assert not listed.is_error


def test_a_string_argument_is_taken_as_the_string_sent_never_read_as_json(tools: McpClient) -> None:
    """The SDK read a string given where something else may go as JSON: text shaped like a correction
    became one, an Object's value '[1, 2]' a list, and a filter 'null' no filter."""
    correction = json.dumps({"kind": "correction", "corrects": "mem_x", "text": "I live in Bergen."})
    stored, accepted, read, filtered = _call(
        tools,
        ("remember", {"content": correction}),
        ("accept_object", {"type": "t", "key": "k", "value": "[1, 2]"}),
        ("get_object", {"type": "t", "key": "k"}),
        ("list_memories", {"subject": "null"}),
    )
    assert not stored.is_error and not accepted.is_error and not filtered.is_error
    assert _body(read)["value"] == "[1, 2]"
    assert _body(filtered)["data"] == []  # no Memory is about "null"


@pytest.mark.parametrize("memory_id", ["mem_日本", "mem_😀", "mem_\u202e", "mem_é"])
def test_an_id_beyond_latin_1_is_looked_up_like_any_other(tools: McpClient, memory_id: str) -> None:
    [result] = _call(tools, ("get_memory", {"memory_id": memory_id}))
    assert result.is_error and _body(result)["code"] == "memory_not_found"


def test_an_id_longer_than_a_url_may_be_is_an_error_body(tools: McpClient) -> None:
    [result] = _call(tools, ("forget_record", {"record_id": "rec_" + "x" * 70_000}))
    assert result.is_error and _body(result)["code"] == "invalid_request_body"


def test_each_key_s_mcp_messages_are_limited_at_the_api_s_rate(tmp_path: Path) -> None:
    registry = tmp_path / "keys.json"
    noisy, _ = KeyRegistry(registry).create("test", "acme", brain="alice")
    quiet, _ = KeyRegistry(registry).create("test", "acme", brain="bob")
    config = Config(engine="memory", key_registry=registry, rate_limit_per_minute=3)
    service = Service(MemoryStore(), config=config)
    service.start()
    mount = McpMount(create_app(service), config)
    http = httpx.Client(transport=httpx.WSGITransport(app=mount), base_url="http://mcp.test")
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()

    def post(key: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}", "Accept": ACCEPT, "Content-Type": "application/json"}
        return http.post("/mcp", content=ping, headers=headers)

    try:
        assert [post(noisy).status_code for _ in range(3)] == [200, 200, 200]
        refused = post(noisy)
        error_of(refused, 429, "too_many_requests")
        assert int(refused.headers["Retry-After"]) >= 1
        assert post(quiet).status_code == 200  # another key's messages are its own
    finally:
        http.close()
        mount.close()
        service.stop()


def test_the_context_tool_serves_only_the_components_the_key_may_read(tmp_path: Path) -> None:
    """The tool calls /v1 with the caller's key: a key with context:read alone read Objects through it."""
    registry = KeyRegistry(tmp_path / "keys.json")
    admin, _ = registry.create("test", "acme")
    narrow, _ = registry.create("test", "acme", frozenset({"context:read"}), brain="alice")
    config = Config(engine="memory", key_registry=tmp_path / "keys.json")
    service = Service(MemoryStore(), config=config)
    service.start()
    mount = McpMount(create_app(service), config)
    gate = threading.Event()
    gate.set()
    mounted = Mounted(mount, narrow, gate)
    headers = {"Authorization": f"Bearer {admin}"}
    try:
        assert mounted.http.post("/v1/brains", json={"id": "alice"}, headers=headers).status_code == 201
        stored = mounted.http.post(
            "/v1/brains/alice/objects", json={"type": "payroll", "key": "alice", "value": {"salary": 250000}}, headers=headers
        )
        assert stored.status_code == 201, stored.text
        for include, scope in ((["objects"], "objects:read"), (["memories"], "memories:read"), (["profile"], "memories:read")):
            result = mounted.call("context", {"query": "salary", "include": include}).json()["result"]
            assert result["isError"] is True, result
            validate_schema("Error", result["structuredContent"])
            assert result["structuredContent"]["code"] == "missing_scope"
            assert scope in result["structuredContent"]["message"]
            assert "250000" not in json.dumps(result)
        served = mounted.call("context", {"query": "salary", "include": ["evidence"]}).json()["result"]
        assert served["isError"] is False, served
    finally:
        mounted.http.close()
        mount.close()
        service.stop()


def test_a_write_retried_with_its_idempotency_key_is_made_once(tools: McpClient) -> None:
    """A write tool took no Idempotency-Key: an agent retrying remember after a timeout (the overrun
    error says it may still complete) stored the Record twice, and could not re-read to find out."""
    remembered = {"content": "I moved to Oslo.", "idempotency_key": "turn-41"}
    accepted = {"type": "t", "key": "k", "value": 1, "idempotency_key": "turn-42"}
    first, again, other, object_first, object_again, conflict, unencodable, read = _call(
        tools,
        ("remember", remembered),
        ("remember", remembered),
        ("remember", {"content": "I moved to Oslo."}),
        ("accept_object", accepted),
        ("accept_object", accepted),
        ("remember", {"content": "something else", "idempotency_key": "turn-41"}),
        ("remember", {"content": "x", "idempotency_key": "tour-é"}),
        ("get_object", {"type": "t", "key": "k"}),
    )
    assert not first.is_error and _body(again) == _body(first)
    assert _body(other)["id"] != _body(first)["id"]  # no key: a new Record, as over /v1
    assert not object_first.is_error and _body(object_again) == _body(object_first)
    assert _body(read)["version"] == 1
    assert conflict.is_error and _body(conflict)["code"] == "idempotency_conflict"
    assert unencodable.is_error and _body(unencodable)["code"] == "invalid_request_body"
    assert _body(unencodable)["message"].startswith("idempotency_key: ")


def test_every_request_thread_may_have_a_tool_call_running(tmp_path: Path) -> None:
    """The tools ran on the event loop's default thread pool, 40 threads, first come first served: past
    40 request threads the calls queued there, behind the fair dispatch's back (at --threads 64, one
    tenant's 48 slow calls took all 40, and another tenant's call waited behind them until it overran)."""
    threads = 48
    registry = tmp_path / "keys.json"
    key, _ = KeyRegistry(registry).create("test", "acme", brain="alice")
    config = Config(engine="memory", key_registry=registry, threads=threads, rate_limit_per_minute=0)
    service = Service(MemoryStore(), config=config)
    service.start()
    api = create_app(service)
    arrived = threading.Semaphore(0)
    gate = threading.Event()

    def gated_api(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        arrived.release()
        gate.wait()
        return api(environ, start_response)

    mount = McpMount(gated_api, config, call_timeout=20.0)
    mounted = Mounted(mount, key, gate)
    callers = [threading.Thread(target=mounted.call, args=("get_profile", {})) for _ in range(threads)]
    try:
        for caller in callers:
            caller.start()
        reached = 0
        while reached < threads and arrived.acquire(timeout=3):
            reached += 1
        assert reached == threads  # every waiting request thread's call is running
    finally:
        gate.set()
        for caller in callers:
            caller.join(timeout=30)
        mounted.http.close()
        mount.close()
        service.stop()
