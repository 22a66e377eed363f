"""The HTTP edge against real gunicorn on loopback: slow clients, malformed requests, framing.

`brainstore serve` runs gunicorn with brainstore.serving.BufferingWorker: requests are read on the
main loop and only complete ones reach the (here 4) threads. These tests open far more slow
connections than there are threads and check that other callers are still served, that the slow
ones are closed by their deadline, and that everything gunicorn refuses is the spec's Error body.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from brainstore.serving import RESERVED_FDS
from tests.conftest import KEY, OTHER_PROJECT_KEY
from tests.contract.openapi import validate_schema
from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow

CLIENT_TIMEOUT = 3.0
SLOW_CONNECTIONS = 48
AUTH = f"Authorization: Bearer {KEY}\r\n".encode()


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("edge") / "data",
        "--client-timeout",
        str(CLIENT_TIMEOUT),
        engine="memory",
        env={"BRAINSTORE_RATE_LIMIT": "0"},  # the tests count on answers, not on the per-key limit
    ).start()
    httpx.post(srv.base_url + "/brains", json={"id": "b1"}, headers={"Authorization": f"Bearer {KEY}"})
    yield srv
    srv.stop()


def exchange(server: Server, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def responses(raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Split a byte stream of HTTP/1.1 responses with Content-Length bodies."""
    parsed = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        parsed.append((int(lines[0].split()[1]), headers, rest[:length]))
        raw = rest[length:]
    return parsed


def assert_error_response(raw: bytes, status: int, code: str) -> dict:
    [(got, headers, body)] = responses(raw)
    assert got == status, raw[:300]
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    validate_schema("Error", error)
    assert error["code"] == code and error["request_id"].startswith("trc_")
    return error


# --- slow clients ----------------------------------------------------------------------------------
class Trickler(threading.Thread):
    """Sends ``data`` one byte every ``interval`` seconds; records when the server closed on it."""

    def __init__(self, server: Server, data: bytes, interval: float, prefix: bytes = b"") -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", server.port))
        self.sock.sendall(prefix)
        self.opened = time.monotonic()
        self.data, self.interval = data, interval
        self.closed_after: float | None = None
        self.received = b""
        self.stop = threading.Event()

    def run(self) -> None:
        self.sock.settimeout(self.interval)
        try:
            for byte in self.data:
                if self.stop.is_set():
                    return
                self.sock.send(bytes([byte]))
                try:
                    chunk = self.sock.recv(4096)
                except TimeoutError:
                    continue
                self.received += chunk
                if not chunk:
                    break
        except OSError:
            pass
        self.closed_after = time.monotonic() - self.opened
        self.sock.close()


def test_dozens_of_slow_connections_do_not_deny_service(edge: Server) -> None:
    head = b"GET /v1/brains/b1 HTTP/1.1\r\nHost: x\r\n" + AUTH + b"X-Padding: " + b"p" * 200 + b"\r\n\r\n"
    body_head = (
        b"POST /v1/brains/b1/objects HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n"
    )
    slow = [
        Trickler(edge, head, 0.5) if i % 2 == 0 else Trickler(edge, b"{" + b" " * 999, 0.5, prefix=body_head)
        for i in range(SLOW_CONNECTIONS)
    ]
    for trickler in slow:
        trickler.start()
    try:
        time.sleep(0.5)
        latencies = []
        with httpx.Client(base_url=edge.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=5) as client:
            # All 48 are still open (their deadline is CLIENT_TIMEOUT), far more than the 4 threads.
            while time.monotonic() - slow[-1].opened < CLIENT_TIMEOUT - 1.0:
                started = time.monotonic()
                assert client.get("/brains/b1").status_code == 200
                put = client.post("/brains/b1/objects", json={"type": "t", "key": "k", "value": 1})
                assert put.status_code == 201
                latencies.append(time.monotonic() - started)
        assert len(latencies) >= 5
        assert all(t.closed_after is None for t in slow), "a slow connection was closed before its deadline"
        for trickler in slow:
            trickler.join(timeout=CLIENT_TIMEOUT + 5)
        # Closed by the server at their deadline, without a reply: the head deadline, or the body's
        # (CLIENT_TIMEOUT plus 1000 bytes at the minimum rate) after a complete head.
        for trickler in slow:
            assert trickler.closed_after is not None, "a slow connection was never closed"
            assert CLIENT_TIMEOUT - 0.5 <= trickler.closed_after <= CLIENT_TIMEOUT + 2.0
            assert trickler.received == b""
    finally:
        for trickler in slow:
            trickler.stop.set()


def test_a_complete_head_then_silence_is_closed_at_the_body_deadline(edge: Server) -> None:
    with socket.create_connection(("127.0.0.1", edge.port), timeout=CLIENT_TIMEOUT + 5) as sock:
        sock.sendall(
            b"POST /v1/brains/b1/objects HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Content-Length: 10\r\n\r\n{"
        )
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert CLIENT_TIMEOUT - 0.5 <= time.monotonic() - started <= CLIENT_TIMEOUT + 2.0


def test_an_idle_connection_is_closed_and_a_new_one_is_served(edge: Server) -> None:
    with socket.create_connection(("127.0.0.1", edge.port), timeout=CLIENT_TIMEOUT + 5) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""  # nothing sent at all: the head deadline
        assert time.monotonic() - started <= CLIENT_TIMEOUT + 2.0
    assert httpx.get(edge.base_url + "/brains/b1", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_clients_that_do_not_read_their_responses_hold_a_thread_only_until_the_write_timeout(
    edge: Server,
) -> None:
    # A ~900 KB Object, asked for 20 times in a row by each of 4 clients (as many as the server has
    # threads) that never read: far more than the socket buffers hold, so every thread blocks writing.
    big = {"type": "t", "key": "big", "value": "v" * 900_000}
    auth = {"Authorization": f"Bearer {KEY}"}
    assert httpx.post(edge.base_url + "/brains/b1/objects", json=big, headers=auth).status_code == 201
    request = b"GET /v1/brains/b1/objects/t/big HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n"
    readers = []
    opened = time.monotonic()
    for _ in range(4):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", edge.port))
        sock.sendall(request * 20)
        readers.append(sock)
    try:
        time.sleep(1.0)
        # The key may hold three of the four threads: another tenant is answered at once.
        started = time.monotonic()
        other = {"Authorization": f"Bearer {OTHER_PROJECT_KEY}"}
        assert httpx.get(edge.base_url + "/brains/b1", headers=other, timeout=CLIENT_TIMEOUT).status_code == 404
        assert time.monotonic() - started <= 1.0
        # The key's own next request is answered once the first three blocked writes give up (it then
        # runs beside the fourth): within the write bound, not never.
        reply = httpx.get(edge.base_url + "/brains/b1", headers=auth, timeout=CLIENT_TIMEOUT * 3)
        assert reply.status_code == 200
        assert time.monotonic() - started <= CLIENT_TIMEOUT + 2.0
        # Start reading only once every blocked write has given up, the fourth's a round after the
        # first three's (reading earlier lets it finish).
        time.sleep(max(0.0, opened + 2 * CLIENT_TIMEOUT + 2.0 - time.monotonic()))
        for sock in readers:  # the server gave up on each of them: the stream ends early
            sock.settimeout(CLIENT_TIMEOUT + 5)
            received = 0
            try:
                while chunk := sock.recv(1 << 20):
                    received += len(chunk)
            except ConnectionResetError:
                pass
            assert received < 20 * 900_000
    finally:
        for sock in readers:
            sock.close()


def test_one_tenants_requests_in_flight_leave_threads_for_another(tmp_path: Path) -> None:
    """Two threads. One tenant's Contexts each hold a thread for 2 s (waiting for a Brain-Watermark
    that a long document's derivation reaches much later); another tenant, asking meanwhile, is
    answered at once instead of behind them."""
    srv = Server(tmp_path / "data", "--threads", "2", engine="memory", env={"BRAINSTORE_RATE_LIMIT": "0"}).start()
    try:
        bulk, quiet = {"Authorization": f"Bearer {KEY}"}, {"Authorization": f"Bearer {OTHER_PROJECT_KEY}"}
        assert httpx.post(srv.base_url + "/brains", json={"id": "docs"}, headers=bulk).status_code == 201
        assert httpx.post(srv.base_url + "/brains", json={"id": "notes"}, headers=quiet).status_code == 201
        document = {"content": "Alice moved to Lisbon in March and works at a bakery. " * 3_500}
        written = httpx.post(srv.base_url + "/brains/docs/records", json=document, headers=bulk, timeout=30)
        assert written.status_code == 202
        waiting = {**bulk, "Brain-Watermark": written.headers["Brain-Watermark"]}
        body = {"query": "Where does Alice work?", "budget": {"ms": 60_000}}  # waits 2 s inline, then 202
        statuses: list[int] = []

        def ask() -> None:
            reply = httpx.post(srv.base_url + "/brains/docs/context", json=body, headers=waiting, timeout=30)
            statuses.append(reply.status_code)

        askers = [threading.Thread(target=ask) for _ in range(3)]
        for asker in askers:
            asker.start()
        time.sleep(0.5)
        started = time.monotonic()
        assert httpx.get(srv.base_url + "/brains/notes", headers=quiet, timeout=30).status_code == 200
        assert time.monotonic() - started < 1.0  # not behind the 2 s waits
        for asker in askers:
            asker.join(30)
        # The first was still waiting for the document's derivation when the other tenant asked; the
        # last may find it derived (the key's requests run one at a time on two threads).
        assert statuses[0] == 202 and set(statuses) <= {200, 202} and len(statuses) == 3
    finally:
        srv.stop()


def test_connections_held_open_keep_no_new_client_out_and_never_end_the_worker(tmp_path: Path) -> None:
    """An open-file limit of 256 leaves room for 128 connections. Twice that many are held open, no
    key needed: 128 kept alive after one request each, then 128 that send nothing. A new client is
    answered at once all the same, by the same worker (the memory engine's Brain is still there):
    before, the kept-alive ones held every place for their 20 s keepalive, and without the limit,
    accept() ran out of file descriptors and the error ended the worker."""
    srv = Server(tmp_path / "data", engine="memory", env={"BRAINSTORE_RATE_LIMIT": "0"}, open_files=256).start()
    held: list[socket.socket] = []
    try:
        auth = {"Authorization": f"Bearer {KEY}"}
        assert httpx.post(srv.base_url + "/brains", json={"id": "b1"}, headers=auth).status_code == 201
        request = b"GET /v1/brains/b1 HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n"
        for _ in range(128):
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            sock.sendall(request)
            held.append(sock)
        for sock in held:
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")  # and kept alive, idle
        for _ in range(128):
            held.append(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        time.sleep(1.5)
        started = time.monotonic()
        assert httpx.get(srv.base_url + "/brains/b1", headers=auth, timeout=10).status_code == 200
        assert time.monotonic() - started < 3.0
    finally:
        for sock in held:
            sock.close()
        srv.stop()


def _status(sock: socket.socket) -> int:
    """The status of the next response on ``sock``, read whole (0 when the server closed it instead)."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        if not (chunk := sock.recv(65536)):
            return 0
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    [(status, headers, _)] = responses(head + b"\r\n\r\n")
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return status


def test_one_key_s_stalled_bodies_give_way_to_another_tenant_at_the_connection_limit(tmp_path: Path) -> None:
    """An open-file limit leaving room for 32 connections. One key the app has accepted opens 48, each
    sending a head declaring 1 MiB and one byte of it: they hold every place but the one of another
    tenant's kept-alive connection, and the rest wait in the listen backlog. That connection is still
    answered, and so is the tenant's new one, well before those bodies' deadline (CLIENT_TIMEOUT + 16 s):
    the key's stalled requests give way at the limit. Before, they never did, the tenant's idle connection
    was closed instead, and its new connections waited for the bodies' deadline (25 s by default)."""
    srv = Server(
        tmp_path / "data", "--client-timeout", str(CLIENT_TIMEOUT), engine="memory",
        env={"BRAINSTORE_RATE_LIMIT": "0"}, open_files=RESERVED_FDS + 32,
    ).start()  # fmt: skip
    stalled: list[socket.socket] = []
    try:
        assert httpx.post(srv.base_url + "/brains", json={"id": "b1"}, headers={"Authorization": f"Bearer {KEY}"}).status_code == 201
        quiet = f"Authorization: Bearer {OTHER_PROJECT_KEY}\r\n".encode()
        ask = b"GET /v1/brains/b1 HTTP/1.1\r\nHost: x\r\n" + quiet + b"\r\n"
        kept = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        stalled.append(kept)
        kept.sendall(ask)
        assert _status(kept) == 404  # answered (not its Brain): the app accepted its key
        head = b"POST /v1/brains/b1/records HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Length: 1048576\r\n\r\n{"
        for _ in range(48):
            stalled.append(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
            stalled[-1].sendall(head)
        time.sleep(1.5)  # the places held for a second: stalled
        kept.sendall(ask)
        assert _status(kept) == 404
        other = httpx.get(srv.base_url + "/brains/b1", headers={"Authorization": f"Bearer {OTHER_PROJECT_KEY}"}, timeout=CLIENT_TIMEOUT + 5)
        assert other.status_code == 404
    finally:
        for sock in stalled:
            sock.close()
        srv.stop()


# --- what gunicorn refuses before routing ----------------------------------------------------------
@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"GARBAGE\r\n\r\n", id="bad request line"),
        pytest.param(b"GET / HTTP/9.9\r\n\r\n", id="bad version"),
        pytest.param(b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n", id="request line too long (414)"),
        pytest.param(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", id="header too large (431)"),
        pytest.param(
            b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"a" * 800) for i in range(90)),
            id="head over the front's limit",
        ),
        pytest.param(b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", id="invalid header name"),
        pytest.param(b"GET / HTTP/1.1\r\nX-A: a\x00b\r\n\r\n", id="invalid header value"),
        pytest.param(b"GET / HTTP/1.1\nHost: a\n\n", id="bare LF"),
        pytest.param(
            b"POST /v1/brains HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            id="Content-Length with chunked",
        ),
        pytest.param(b"POST /v1/brains HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", id="unsupported coding"),
        pytest.param(
            b"POST /v1/brains/b1/objects HTTP/1.1\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            id="a coding before chunked",
        ),
        pytest.param(
            b"POST /v1/brains HTTP/1.1\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
            id="bad chunk size",
        ),
        pytest.param(
            b"POST /v1/brains HTTP/1.1\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
            id="chunk without its CRLF",
        ),
        # The front took these chunks and gunicorn's parser refused them when the app read the body:
        # a 500 with a traceback, or, answered without reading the body, a second response (a 400).
        pytest.param(
            b"POST /v1/brains/b1/records HTTP/1.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n2 \r\n{}\r\n0\r\n\r\n",
            id="space after a chunk size, no key",
        ),
        pytest.param(
            b"GET /v1/brains/b1 HTTP/1.1\r\n" + AUTH + b"Transfer-Encoding: chunked\r\n\r\n0 \r\n\r\n",
            id="space after the last chunk size, a GET",
        ),
        pytest.param(
            b"POST /v1/brains/b1/objects HTTP/1.1\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n2;=\x01\r\n{}\r\n0\r\n\r\n",
            id="invalid chunk extension",
        ),
        pytest.param(
            b"POST /v1/brains/b1/objects HTTP/1.1\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nBad Trailer: x\r\n\r\n",
            id="invalid trailer",
        ),
        pytest.param(
            b"POST /v1/brains/b1/records HTTP/1.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nContent-Length: 2\r\n\r\n",
            id="Content-Length in a trailer, no key",
        ),
    ],
)
def test_refusals_before_routing_are_http_400_error_bodies(edge: Server, request_bytes: bytes) -> None:
    error = assert_error_response(exchange(edge, request_bytes), 400, "http_400")
    assert error["message"] == "the request could not be understood"


def test_requests_left_unfinished_past_the_buffer_budget_are_refused_oldest_first(edge: Server) -> None:
    """140 connections each send a head declaring 1 MiB and then all but 48 KiB of it: 140 MB held
    unfinished, past the 128 MiB the front holds. The oldest are refused (http_429, the spec's Error body,
    Retry-After) as the newer ones arrive; a client that sends its request at once is answered."""
    declared, sent = 1 << 20, (1 << 20) - 48 * 1024
    head = (
        b"POST /v1/brains/b1/records HTTP/1.1\r\nHost: x\r\n" + AUTH
        + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % declared
    )
    hogs = []
    try:
        for _ in range(140):
            sock = socket.create_connection(("127.0.0.1", edge.port), timeout=10)
            hogs.append(sock)
            with contextlib.suppress(OSError):  # refused while still sending: the server stopped reading it
                sock.sendall(head + b" " * sent)
        answered = httpx.post(
            edge.base_url + "/brains/b1/records", json={"content": "Tea with Sam."},
            headers={"Authorization": f"Bearer {KEY}"}, timeout=10,
        )
        assert answered.status_code == 202
        # Each refusal is sent when a newer request needs its room: while the front still reads what
        # the hogs sent, which may go on after that POST was answered (it is read first, not last).
        with selectors.DefaultSelector() as poller:  # select() refuses descriptors past 1024
            for n, sock in enumerate(hogs):
                poller.register(sock, selectors.EVENT_READ, n)
            refused: list[int] = []
            wait = 10.0  # for the first refusal; then until none came for a second
            while ready := poller.select(wait):
                wait = 1.0
                for key, _ in ready:
                    poller.unregister(key.fileobj)
                    refused.append(key.data)
            refused.sort()
        for n in refused:
            hogs[n].settimeout(3.0)
            raw = b""
            with contextlib.suppress(OSError):
                while chunk := hogs[n].recv(65536):
                    raw += chunk
            error = assert_error_response(raw, 429, "http_429")
            assert error["retry_after_seconds"] > 0
            assert responses(raw)[0][1]["retry-after"] == "1"
        assert refused and refused[0] == 0  # the oldest first
        assert len(refused) <= 20 and 139 not in refused  # only as many as room was needed for
    finally:
        for sock in hogs:
            sock.close()


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(edge: Server) -> None:
    raw = exchange(
        edge,
        b"POST /v1/brains/b1/records HTTP/1.1\r\n" + AUTH + b"Content-Type: application/json\r\n"
        b"Content-Length: 2000000\r\n\r\n{",
    )
    error = assert_error_response(raw, 400, "invalid_request_body")
    assert error["message"].startswith("body: must be at most")


# --- framing that must work ------------------------------------------------------------------------
def _chunked(payload: bytes, size: int) -> bytes:
    parts = [payload[i : i + size] for i in range(0, len(payload), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_a_chunked_body_is_read_and_an_oversized_one_refused(edge: Server) -> None:
    payload = json.dumps({"type": "t", "key": "chunked", "value": "x" * 5000}).encode()
    head = (
        b"POST /v1/brains/b1/objects HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    [(status, _, body)] = responses(exchange(edge, head + _chunked(payload, 1000)))
    assert status == 201, body
    assert json.loads(body)["value"] == "x" * 5000
    big = json.dumps({"type": "t", "key": "big", "value": "x" * (1024 * 1024)}).encode()
    error = assert_error_response(exchange(edge, head + _chunked(big, 64 * 1024)), 400, "invalid_request_body")
    assert error["message"].startswith("body: must be at most")


def test_a_chunked_body_s_extensions_and_trailers_never_reach_the_app(edge: Server) -> None:
    payload = json.dumps({"type": "t", "key": "ext", "value": 4}).encode()
    chunks = b"".join(b"%x ; n=\"v\"\r\n%s\r\n" % (len(p), p) for p in (payload[:5], payload[5:]))
    stream = (
        b"POST /v1/brains/b1/objects HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0;last\r\nX-Checksum: 1\r\n\r\n"
        + b"GET /v1/brains/b1/objects/t/ext HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Connection: close\r\n\r\n"
    )  # fmt: skip
    got = responses(exchange(edge, stream))
    assert [status for status, _, _ in got] == [201, 200], got
    assert json.loads(got[1][2])["value"] == 4


def test_pipelined_keep_alive_requests_are_answered_in_order(edge: Server) -> None:
    def get(path: str, close: bool = False) -> bytes:
        return f"GET /v1{path} HTTP/1.1\r\nHost: x\r\n".encode() + AUTH + (b"Connection: close\r\n" if close else b"") + b"\r\n"

    post = json.dumps({"type": "t", "key": "pipe", "value": 2}).encode()
    stream = (
        get("/brains/b1")
        + b"POST /v1/brains/b1/objects HTTP/1.1\r\nHost: x\r\n" + AUTH
        + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(post) + post
        + get("/brains/nope")
        + get("/brains/b1/objects/t/pipe", close=True)
    )  # fmt: skip
    got = responses(exchange(edge, stream))
    assert [status for status, _, _ in got] == [200, 201, 404, 200]
    assert json.loads(got[3][2])["value"] == 2


def test_expect_100_continue_is_answered_before_the_body(edge: Server) -> None:
    payload = json.dumps({"type": "t", "key": "expect", "value": 3}).encode()
    with socket.create_connection(("127.0.0.1", edge.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/brains/b1/objects HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Type: application/json\r\n"
            b"Expect: 100-continue\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(payload)
        )
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(payload)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    [(status, _, body)] = responses(received)
    assert status == 201, body


# --- bytes no decoder turns into a lone surrogate ---------------------------------------------------
def test_encoded_surrogates_in_query_header_and_path_never_fail_the_server(edge: Server, tmp_path: Path) -> None:
    def get(target: bytes, extra: bytes = b"") -> int:
        raw = exchange(edge, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + AUTH + extra + b"Connection: close\r\n\r\n")
        [(status, _, body)] = responses(raw)
        if status >= 400:
            validate_schema("Error", json.loads(body))
        return status

    assert get(b"/v1/brains/b1/memories?subject=%ED%A0%80") == 200
    assert get(b"/v1/brains/b1/memories?as_of=%ED%A0%80") == 400
    assert get(b"/v1/brains/b1/memories?x%ED%A0%80=1") == 400
    assert get(b"/v1/brains/%ED%A0%80") == 404
    assert get(b"/v1/brains/b1/memories", b"Idempotency-Key: \xed\xa0\x80\r\n") == 200
    with httpx.Client(base_url=edge.base_url, headers={"Authorization": f"Bearer {KEY}"}) as client:
        context = client.post(
            "/brains/b1/context", content=b'{"query": "\\ud800"}', headers={"Content-Type": "application/json"}
        )
        assert context.status_code == 400 and context.json()["code"] == "invalid_request_body"
        assert client.get("/brains/b1/traces").status_code == 200


def _dechunked(raw: bytes) -> tuple[bytes, bytes]:
    """A chunked body at the start of ``raw``, and what follows its last chunk."""
    body = b""
    while True:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert raw.startswith(b"\r\n")
            return body, raw[2:]
        body, raw = body + raw[:size], raw[size + 2 :]


def test_a_streamed_reply_is_whole_and_the_connection_serves_the_next_request(edge: Server) -> None:
    """The worker holds a response's head until its first body bytes: a chunked event stream still
    arrives whole, head first, and the kept-alive connection then answers the next request."""
    payload = json.dumps({"query": "what happened", "mode": "thorough"}).encode()
    stream = (
        b"POST /v1/brains/b1/context HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Accept: text/event-stream\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload
        + b"GET /v1/brains/b1 HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Connection: close\r\n\r\n"
    )  # fmt: skip
    raw = exchange(edge, stream)
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b"text/event-stream" in head.lower()
    assert b"transfer-encoding: chunked" in head.lower()
    events, after = _dechunked(rest)
    names = [block.split(b"\n")[0] for block in events.strip().split(b"\n\n")]
    assert names[0] == b"event: context.started" and names[-1] == b"event: context.completed"
    [(status, _, body)] = responses(after)
    assert status == 200 and json.loads(body)["id"] == "b1"
