"""MCP with the SDK's own client: local stdio (a spawned `brainstore mcp`) and hosted (/mcp in gunicorn)."""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.contract.openapi import validate_schema

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TOOLS = {
    "remember",
    "context",
    "get_memory",
    "list_memories",
    "accept_object",
    "get_object",
    "forget_record",
    "get_profile",
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINSTORE_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def _docs_json_blocks() -> list[dict[str, Any]]:
    text = (ROOT / "docs" / "operations.md").read_text()
    return [
        json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", text, re.S) if "mcpServers" in block
    ]


def _error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    validate_schema("Error", body)
    return body


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    return body


# --- local stdio ---------------------------------------------------------------------------------
def test_stdio_documented_config_lists_tools_remembers_and_reads_profile(tmp_path: Path) -> None:
    # The desktop-agent snippet of docs/operations.md, run verbatim (embedded, DuckDB in the cwd).
    config = _docs_json_blocks()[0]["mcpServers"]["brainstore"]
    assert config == {"command": "brainstore", "args": ["mcp", "--project", "acme", "--brain", "alice"]}
    params = StdioServerParameters(
        command=str(BIN / config["command"]), args=config["args"], env=_env(), cwd=str(tmp_path)
    )

    async def session() -> None:
        async with Client(params) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            assert all(len(tool.description or "") > 60 for tool in tools.values())

            record = _ok(await client.call_tool("remember", {"content": "I moved to Lisbon in 2021."}))
            assert record["object"] == "record" and record["id"].startswith("rec_")
            assert record["origin"] == "api"
            validate_schema("Record", record)

            profile = _ok(await client.call_tool("get_profile", {}))
            assert profile["object"] == "profile" and profile["brain_id"] == "alice"
            assert profile["self"] == {"type": "person", "name": "alice"}  # created on first use

            accepted = _ok(
                await client.call_tool(
                    "accept_object", {"type": "prefs", "key": "drink", "value": {"is": "tea"}}
                )
            )
            assert accepted["version"] == 1
            got = _ok(await client.call_tool("get_object", {"type": "prefs", "key": "drink"}))
            assert got["value"] == {"is": "tea"}
            # true is not 1: refused with the API's validation error, and nothing is written.
            flag = {"type": "prefs", "key": "drink", "value": "x", "if_version": True}
            refused = _error_of(await client.call_tool("accept_object", flag))
            assert refused["code"] == "invalid_request_body" and refused["message"].startswith("if_version: ")
            assert _ok(await client.call_tool("get_object", {"type": "prefs", "key": "drink"}))["version"] == 1

            # Failures are tool errors carrying the API's Error body.
            missing = _error_of(await client.call_tool("get_memory", {"memory_id": "mem_nope"}))
            assert missing["code"] == "memory_not_found"
            bad = _error_of(await client.call_tool("remember", {"content": {"kind": "poem", "text": "x"}}))
            assert bad["code"] == "unknown_kind"
            context = await client.call_tool("context", {"query": "Where does Alice live?"})
            if context.is_error:  # createContext may still answer 501 on this engine
                assert _error_of(context)["code"] == "not_implemented"
            else:
                assert _ok(context)["object"] == "context"

    anyio.run(session)
    assert (tmp_path / "brainstore-data" / "brainstore.duckdb").exists()


def test_stdio_answers_the_requests_running_when_stdin_ends(tmp_path: Path) -> None:
    """A client that wrote six `remember` calls and closed its end got no answer (or some) while all six
    Records were stored: the end of stdin ended the requests still running. They are answered first."""
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "remember", "arguments": {"content": f"note {i}"}}}
          for i in range(1, 7)),
        # one cancelled: it is not waited for (the SDK does not answer it)
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "brainstore.cli", "mcp", "--project", "acme", "--brain", "bob", "--data-dir", str(tmp_path / "data")],
        input="".join(json.dumps(m) + "\n" for m in messages),
        env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    answers = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [0, 1, 2, 3, 4, 5, 6]
    for i in range(1, 7):
        assert json.loads(answers[i]["result"]["content"][0]["text"])["object"] == "record"


def test_the_embedded_engine_is_warm_before_it_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`brainstore mcp` without --url (and `bench --data-dir`) served at once, where `brainstore serve`
    makes its embedder ready first: the first `context` of every session loaded the model inside its
    250 ms and came back empty (1.6-2.1 s used, every lane cut). The embedded engine now prepares the
    embedder, embeds one question and lets the saved indexes load before its first request."""
    from brainstore import app
    from brainstore.mcp.stdio import StdioSettings
    from brainstore.retrieval import embedder as embedder_module
    from brainstore.service.evidence import EvidenceIndexes

    events: list[str] = []
    services: list[Any] = []
    real_prepare, real_embed, real_build = (
        embedder_module.prepare_embedder, EvidenceIndexes.embed_query, app.build_service
    )  # fmt: skip

    def prepare(spec: str | None = None) -> None:
        events.append("prepare_embedder")
        real_prepare(spec)

    def embed(self: EvidenceIndexes, text: str) -> Any:
        events.append(f"embed_query {text}")
        return real_embed(self, text)

    def build(config: Any) -> Any:
        services.append(real_build(config))
        events.append("built")
        return services[-1]

    monkeypatch.setattr(embedder_module, "prepare_embedder", prepare)
    monkeypatch.setattr(EvidenceIndexes, "embed_query", embed)
    monkeypatch.setattr(app, "build_service", build)
    client, stop = app.stdio_engine(StdioSettings(project="acme", brain="bob", data_dir=tmp_path), "http://embedded/v1", "sk_test_acme_local")
    try:
        served = list(events)
        preloader = services[0].contexts._preloader
        client.create_brain("bob")
        assert client.create_context("bob", "Where did I move?")["object"] == "context"
    finally:
        client.close()
        stop()
    assert served[:3] == ["prepare_embedder", "built", "embed_query warm up"]
    assert preloader is not None and not preloader.is_alive()  # the saved indexes were loaded


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["mcp"], ["--project", "--brain"]),
        (["mcp", "--project", "acme"], ["--brain"]),
        (["mcp", "--brain", "alice", "--engine", "memory"], ["--project"]),
        # a project no key can name crashed with a traceback (the embedded Client refused its local key);
        # a Brain id that is no Slug started, and every tool answered 400 about an "id"
        (["mcp", "--project", "ac me", "--brain", "alice", "--engine", "memory"], ["project: 'ac me' is not"]),
        (["mcp", "--project", "ac_me", "--brain", "alice", "--engine", "memory"], ["project: 'ac_me' is not"]),
        (["mcp", "--project", "acme", "--brain", "My Brain", "--engine", "memory"], ["brain: 'My Brain' is not"]),
        (
            ["mcp", "--project", "acme", "--brain", ".b", "--url", "http://127.0.0.1:9/v1", "--key", "sk_test_acme_s"],
            ["brain: '.b' is not a Brain id"],
        ),
    ],
)
def test_stdio_refuses_without_explicit_project_and_brain(args: list[str], missing: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "brainstore.cli", *args],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert done.stdout == ""  # stdout is the protocol channel
    body = json.loads(done.stderr.strip().splitlines()[-1])
    validate_schema("Error", body)
    assert (body["code"], body["type"]) == ("mcp_identity_unconfigured", "authentication")
    for flag in missing:
        assert flag in body["message"]


def test_stdio_identity_from_environment_variables(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "brainstore.cli", "mcp"],
        env=_env(BRAINSTORE_MCP_PROJECT="acme", BRAINSTORE_MCP_BRAIN="bob", BRAINSTORE_ENGINE="memory"),
        cwd=str(tmp_path),
    )

    async def session() -> None:
        async with Client(params) as client:
            profile = _ok(await client.call_tool("get_profile", {}))
            assert profile["brain_id"] == "bob"

    anyio.run(session)
    assert not (tmp_path / "brainstore-data").exists()  # memory engine: nothing on disk


def test_stdio_answers_every_line_it_cannot_run_and_goes_on(tmp_path: Path) -> None:
    # The SDK's reader dropped these (the client waited for ever), read invalid UTF-8 as U+FFFD (a
    # remembered text stored changed) and took a request with a null id for a notification.
    server = subprocess.Popen(
        [sys.executable, "-m", "brainstore.cli", "mcp", "--project", "acme", "--brain", "bob", "--engine", "memory"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=str(tmp_path),
    )
    assert server.stdin is not None and server.stdout is not None
    replies: list[dict[str, Any]] = []

    def send(line: bytes) -> None:
        server.stdin.write(line + b"\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]

    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()  # type: ignore[union-attr]

    def reply() -> dict[str, Any]:
        line = lines.get(timeout=30)  # queue.Empty: a line went unanswered
        replies.append(json.loads(line))
        return replies[-1]

    def call(request_id: Any, name: str, arguments: str) -> bytes:
        params = f'{{"name": "{name}", "arguments": {arguments}}}'
        return f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'.encode()

    try:
        initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}).encode())
        assert reply()["id"] == 1
        send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        send(b"")  # no message, no answer
        unreadable = {
            b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"': -32700,
            call(3, "remember", '{"content": "\\ud800"}'): -32700,
            call(3, "accept_object", '{"type": "t", "key": "k", "value": 1' + "0" * 400 + "}"): -32700,
            call(4, "remember", '{"content": "caf?"}').replace(b"?", b"\xe9"): -32700,
            b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}': -32600,
            b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}': -32600,
            b"[1, 2]": -32600,
        }
        for line, code in unreadable.items():
            send(line)
            answer = reply()
            assert answer["id"] is None and answer["error"]["code"] == code, (line, answer)
        send(b'{"jsonrpc": "2.0", "id": 5}')  # an id can be read: the answer names it
        answer = reply()
        assert (answer["id"], answer["error"]["code"]) == (5, -32600)

        send(call(6, "remember", '{"content": "caf\u00e9 at noon"}'))
        assert reply()["id"] == 6
        send(call(7, "list_memories", "{}"))
        send(b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}')
        answered = {reply()["id"], reply()["id"]}
        assert answered == {7, 8}
    finally:
        server.kill()
        server.wait(timeout=30)
        server.stdin.close()
        server.stdout.close()
    for answer in replies:
        assert answer["jsonrpc"] == "2.0" and ("result" in answer) != ("error" in answer)


# --- hosted: /mcp in the gunicorn process --------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _create_key(registry: Path, *extra: str) -> str:
    done = subprocess.run(
        [
            str(BIN / "brainstore"),
            "keys",
            "--key-registry",
            str(registry),
            "create",
            "--project",
            "acme",
            *extra,
        ],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


class Hosted:
    def __init__(self, base: str, bound: str, unbound: str, revoked: str) -> None:
        self.base, self.bound, self.unbound, self.revoked = base, bound, unbound, revoked

    def v1(self, method: str, path: str, key: str, **kw: Any) -> httpx.Response:
        return httpx.request(
            method, f"{self.base}/v1{path}", headers={"Authorization": f"Bearer {key}"}, **kw
        )


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosted]:
    data = tmp_path_factory.mktemp("hosted")
    registry = data / "keys.json"
    bound = _create_key(registry, "--brain", "alice")
    unbound = _create_key(registry)
    revoked = _create_key(registry, "--brain", "alice")
    key_id = json.loads(registry.read_text())["keys"][2]["id"]
    subprocess.run(
        [str(BIN / "brainstore"), "keys", "--key-registry", str(registry), "revoke", key_id],
        env=_env(),
        check=True,
        capture_output=True,
        timeout=60,
    )
    port = _free_port()
    env = _env(
        BRAINSTORE_ENGINE="duckdb",
        BRAINSTORE_DATA_DIR=str(data),
        BRAINSTORE_DEPLOYMENT="hosted",
        BRAINSTORE_KEY_REGISTRY=str(registry),
    )
    # `brainstore serve` mounts /mcp next to /v1: the deployment the docs describe.
    server = subprocess.Popen(
        [str(BIN / "brainstore"), "serve", "--port", str(port), "--threads", "4"],
        env={**env, "HOME": str(data)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/v1/brains/x", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)
        hosted = Hosted(base, bound, unbound, revoked)
        for brain in ("alice", "bob"):
            body = {"id": brain, "self": {"type": "person", "name": brain.title()}}
            assert hosted.v1("POST", "/brains", unbound, json=body).status_code == 201
        yield hosted
    finally:
        server.terminate()
        server.wait(timeout=30)


def _mcp_post(hosted: Hosted, key: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx.post(f"{hosted.base}/mcp", json=message, headers=headers)


@pytest.mark.slow
def test_hosted_refuses_unbound_missing_unknown_and_revoked_keys(hosted: Hosted) -> None:
    cases = [
        (hosted.unbound, 403, "mcp_brain_unbound", "permission"),
        (None, 401, "invalid_api_key", "authentication"),
        ("sk_test_acme_notissued0000", 401, "invalid_api_key", "authentication"),
        ("not-a-key", 401, "invalid_api_key", "authentication"),
        (hosted.revoked, 401, "key_revoked", "authentication"),
    ]
    for key, status, code, type_ in cases:
        response = _mcp_post(hosted, key)
        assert response.status_code == status, response.text
        body = response.json()
        validate_schema("Error", body)
        assert (body["code"], body["type"]) == (code, type_)
        assert body["docs_url"].endswith(f"/errors/{code}")
    # The unbound key still works on /v1, where the Brain is in the URL.
    assert hosted.v1("GET", "/brains/alice", hosted.unbound).status_code == 200


@pytest.mark.slow
def test_hosted_bound_key_reaches_only_its_brain(hosted: Hosted) -> None:
    # Something in bob that alice's key must never see.
    secret = {"type": "prefs", "key": "pin", "value": "1234"}
    assert hosted.v1("POST", "/brains/bob/objects", hosted.unbound, json=secret).status_code == 201

    remembered: list[str] = []

    async def session() -> None:
        headers = {"Authorization": f"Bearer {hosted.bound}", "X-Brainstore-Brain": "bob"}  # spoof attempt
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{hosted.base}/mcp", http_client=http)) as client,
        ):
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            record = _ok(await client.call_tool("remember", {"content": "I moved to Lisbon in 2021."}))
            assert record["id"].startswith("rec_")
            remembered.append(record["id"])
            profile = _ok(await client.call_tool("get_profile", {}))
            assert profile["brain_id"] == "alice"
            missing = _error_of(await client.call_tool("get_object", {"type": "prefs", "key": "pin"}))
            assert missing["code"] == "object_not_found"

    anyio.run(session)
    # The Record landed in alice, read back over /v1 with the unbound key.
    assert hosted.v1("GET", f"/brains/alice/records/{remembered[0]}", hosted.unbound).status_code == 200
    # And on /v1 the bound key is confined to alice too.
    bob = hosted.v1("GET", "/brains/bob", hosted.bound)
    assert bob.status_code == 404 and bob.json()["code"] == "brain_not_found"


@pytest.mark.slow
def test_stdio_against_a_running_server_with_url_and_key(hosted: Hosted, tmp_path: Path) -> None:
    # The second snippet of docs/operations.md, pointed at the test server.
    config = _docs_json_blocks()[1]["mcpServers"]["brainstore"]
    args = [hosted.base + "/v1" if arg.startswith("https://") else arg for arg in config["args"]]
    assert args == ["mcp", "--project", "acme", "--brain", "alice", "--url", hosted.base + "/v1"]
    assert set(config["env"]) == {"BRAINSTORE_API_KEY"}
    params = StdioServerParameters(
        command=str(BIN / config["command"]),
        args=args,
        env=_env(BRAINSTORE_API_KEY=hosted.bound),
        cwd=str(tmp_path),
    )

    async def session() -> None:
        async with Client(params) as client:
            record = _ok(await client.call_tool("remember", {"content": "Remote hello."}))
            assert record["origin"] == "api"
            assert _ok(await client.call_tool("get_profile", {}))["brain_id"] == "alice"
            assert _error_of(await client.call_tool("get_object", {"type": "prefs", "key": "pin"}))[
                "code"
            ] == ("object_not_found")
            flag = {"type": "prefs", "key": "flag", "value": 1, "if_version": True}
            refused = _error_of(await client.call_tool("accept_object", flag))
            assert refused["code"] == "invalid_request_body" and refused["message"].startswith("if_version: ")

    anyio.run(session)
    assert not (tmp_path / "brainstore-data").exists()  # nothing embedded


def test_stdio_url_mode_refuses_a_key_of_another_project() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "brainstore.cli",
            "mcp",
            "--project",
            "acme",
            "--brain",
            "alice",
            "--url",
            "http://127.0.0.1:9/v1",
            "--key",
            "sk_test_globex_secret",
        ],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    body = json.loads(done.stderr.strip().splitlines()[-1])
    validate_schema("Error", body)
    assert body["code"] == "mcp_identity_unconfigured" and "globex" in body["message"]


@pytest.mark.slow
def test_hosted_get_and_delete_hold_no_thread(hosted: Hosted) -> None:
    # In stateless mode GET was the SDK's SSE listening stream: it never ended, and 8 of them took
    # every thread. Now each is answered at once, many more than the 4 threads, in parallel.
    headers = {"Authorization": f"Bearer {hosted.bound}", "Accept": "text/event-stream"}

    def call(method: str) -> httpx.Response:
        return httpx.request(method, f"{hosted.base}/mcp", headers=headers, timeout=10)

    with ThreadPoolExecutor(max_workers=16) as pool:
        replies = list(pool.map(call, ["GET"] * 12 + ["DELETE"] * 4))
    for reply in replies:
        assert reply.status_code == 405 and reply.headers["allow"] == "POST"
        body = reply.json()
        validate_schema("Error", body)
        assert body["code"] == "http_405"
    assert hosted.v1("GET", "/brains/alice", hosted.bound).status_code == 200
