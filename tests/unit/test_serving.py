"""The worker (brainstore.serving): a response's head goes out with its body, complete requests are
handed to its threads fairly across tenants (namespaces), and its connections fit its open-file limit."""

from __future__ import annotations

import errno
import logging
import resource
import selectors
import socket
import sys
import time
import types
from collections import deque

import pytest

from brainstore import serving
from brainstore.serving import (
    RESERVED_FDS,
    BufferingWorker,
    Connection,
    FairDispatch,
    Framing,
    SettledConfig,
    _HeadHeld,
    connection_limit,
    key_of,
)


class ScanCounting(bytearray):
    """A receive buffer that counts the bytes its find() and count() calls search."""

    searched = 0

    def find(self, sub: bytes, start: int = 0) -> int:  # type: ignore[override]
        self.searched += len(self) - start
        return super().find(sub, start)

    def count(self, sub: bytes, start: int = 0) -> int:  # type: ignore[override]
        self.searched += len(self) - start
        return super().count(sub, start)


def trickled(data: bytes, step: int = 8) -> tuple[Framing, ScanCounting, int | None]:
    """``data`` read ``step`` bytes at a time, as a client trickling it makes the main loop read it."""
    framing, buf, end = Framing(), ScanCounting(), None
    for i in range(0, len(data), step):
        buf += data[i : i + step]
        if (end := framing.advance(buf)) is not None:
            break
    return framing, buf, end


def test_a_trickled_head_is_searched_once_not_again_on_every_read() -> None:
    head = b"GET /v1/brains/b1 HTTP/1.1\r\nHost: x\r\n" + (b"X-H: " + b"a" * 90 + b"\r\n") * 150
    framing, buf, end = trickled(head)
    assert end is None and framing.head_end is None  # still waiting for the blank line
    assert buf.searched <= 4 * len(head)  # each byte a few times (CRLF CRLF, LF, CRLF), not once per read
    framing, buf, end = trickled(head + b"X-Bare: lf\n")
    assert framing.unsure and end == len(buf)  # a bare LF in the newest bytes is still found at once


def test_a_trickled_chunk_line_and_trailer_section_are_searched_once() -> None:
    head = b"POST /v1/brains/b1/records HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    trailers = (b"X-T: " + b"a" * 90 + b"\r\n") * 40
    request = head + b"2;" + b"e" * 3000 + b"\r\n{}\r\n0\r\n" + trailers + b"\r\n"
    framing, buf, end = trickled(request)
    assert end == len(request) and not framing.unsure
    assert buf.searched <= 3 * len(request)


def test_a_trailer_section_over_its_limit_is_refused_without_waiting_for_its_end() -> None:
    head = b"POST /v1/brains/b1/records HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    trailers = (b"X-T: " + b"a" * 90 + b"\r\n") * (serving.MAX_TRAILERS // 96 + 1)
    framing, buf, end = trickled(head + b"0\r\n" + trailers + b"X-T: never ends")
    assert framing.unsure and end == len(buf) <= len(head) + 3 + serving.MAX_TRAILERS + 8
    framing, buf, end = trickled(head + b"0\r\n" + b"X-T: " + b"a" * serving.MAX_TRAILERS)
    assert framing.unsure and end == len(buf)  # one line, no CRLF, past the limit


CHUNKED_HEAD = b"POST /v1/brains/b1/records HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param(b"2\r\n{}\r\n0\r\n\r\n", id="plain"),
        pytest.param(b"1\r\n{\r\n1;a\r\n}\r\n0\r\n\r\n", id="extension name"),
        pytest.param(b"2 ; a = b ;c=\"q \\\" s\"\r\n{}\r\n0;x=1\r\n\r\n", id="extensions with white space"),
        pytest.param(b"2\r\n{}\r\n0\r\nX-Trace: a b\tc\r\nX-Empty:\r\n\r\n", id="trailers"),
    ],
)
def test_a_chunked_body_is_decoded_as_it_arrives(chunks: bytes) -> None:
    framing, _, end = trickled(CHUNKED_HEAD + chunks + b"GET / HTTP/1.1\r\n", step=3)
    assert end == len(CHUNKED_HEAD + chunks) and not framing.unsure and framing.refusal is None
    assert framing.body == b"{}"


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param(b"2 \r\n{}\r\n0\r\n\r\n", id="space after the size"),
        pytest.param(b"2\t\r\n{}\r\n0\r\n\r\n", id="tab after the size"),
        pytest.param(b"2\r\n{}\r\n0 \r\n\r\n", id="space after the last size"),
        pytest.param(b" 2\r\n{}\r\n0\r\n\r\n", id="space before the size"),
        pytest.param(b"0x2\r\n{}\r\n0\r\n\r\n", id="0x"),
        pytest.param(b"2;=\x01\r\n{}\r\n0\r\n\r\n", id="extension without a name"),
        pytest.param(b"2;a=\x01\r\n{}\r\n0\r\n\r\n", id="control character in an extension"),
        pytest.param(b"2;a=\"b\r\n{}\r\n0\r\n\r\n", id="unterminated quoted extension"),
        pytest.param(b"2;a\rb\r\n{}\r\n0\r\n\r\n", id="bare CR in an extension"),
        pytest.param(b"2\r\n{}\r\n0\r\nBad Trailer: x\r\n\r\n", id="trailer name with a space"),
        pytest.param(b"2\r\n{}\r\n0\r\nX-T x\r\n\r\n", id="trailer without a colon"),
        pytest.param(b"2\r\n{}\r\n0\r\nX-T: a\x00b\r\n\r\n", id="control character in a trailer"),
        pytest.param(b"2\r\n{}\r\n0\r\nX-T: a\r\n b\r\n\r\n", id="folded trailer"),
        pytest.param(b"2\r\n{}\r\n0\r\nContent-Length: 5\r\n\r\n", id="Content-Length trailer"),
        pytest.param(b"2\r\n{}\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n", id="Transfer-Encoding trailer"),
        pytest.param(b"2\r\n{}\r\n0\r\nAuthorization: Bearer x\r\n\r\n", id="Authorization trailer"),
    ],
)
def test_a_broken_chunked_body_is_refused_by_the_front_itself(chunks: bytes) -> None:
    """The front is the one parser of a body: what it takes the app reads, what it refuses is
    http_400 before routing (gunicorn's parser, which refused some of these when the app read the
    body, only ever reads the head)."""
    framing, buf, end = trickled(CHUNKED_HEAD + chunks)
    assert framing.unsure and end == len(buf)


@pytest.mark.parametrize(
    "codings",
    [b"gzip, chunked", b"identity, chunked", b"chunked, chunked", b"chunked,", b"gzip", b"chunked\r\nTransfer-Encoding: chunked"],
)
def test_any_transfer_coding_but_one_chunked_is_refused(codings: bytes) -> None:
    framing = Framing()
    head = b"POST /v1/brains/b1/records HTTP/1.1\r\nTransfer-Encoding: " + codings + b"\r\n\r\n"
    assert framing.advance(bytearray(head + b"2\r\n{}\r\n0\r\n\r\n")) == len(head)
    assert framing.unsure and not framing.chunked


class RecordingSocket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.shut = False

    def sendall(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def shutdown(self, how: int) -> None:
        self.shut = True


HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"


def test_the_head_goes_out_with_the_first_body_bytes_and_the_rest_as_written() -> None:
    sock = RecordingSocket()
    reply = _HeadHeld(sock)  # type: ignore[arg-type]
    reply.sendall(HEAD)
    assert sock.sent == []
    reply.sendall(b"{}")
    reply.sendall(b"more")
    reply.flush()
    assert sock.sent == [HEAD + b"{}", b"more"]


def test_a_head_without_a_body_goes_out_at_flush_once() -> None:
    sock = RecordingSocket()
    reply = _HeadHeld(sock)  # type: ignore[arg-type]
    reply.flush()  # nothing written yet: nothing to send
    reply.sendall(HEAD)
    reply.flush()
    reply.flush()
    assert sock.sent == [HEAD]


def test_any_other_use_of_the_socket_sends_what_is_held_first() -> None:
    sock = RecordingSocket()
    reply = _HeadHeld(sock)  # type: ignore[arg-type]
    reply.sendall(HEAD)
    reply.shutdown(socket.SHUT_WR)  # gunicorn's close after a failure once the head was "sent"
    assert sock.sent == [HEAD] and sock.shut


BULK, QUIET = "sk_test_bulk_0001", "sk_test_quiet_0002"
# the tenants their requests are once accepted: their namespaces
BULK_NS, QUIET_NS = "sk_test_bulk", "sk_test_quiet"


def request(authorization: bytes | None) -> Connection:
    """A connection whose complete request carries ``authorization`` as its Authorization header."""
    conn = Connection(None, None, None)  # type: ignore[arg-type]
    head = b"GET /v1/brains HTTP/1.1\r\nHost: x\r\n"
    if authorization is not None:
        head += b"Authorization: " + authorization + b"\r\n"
    conn.buf += head + b"\r\n"
    assert conn.framing.advance(conn.buf) == len(conn.buf)
    return conn


def keyed(key: str) -> Connection:
    return request(f"Bearer {key}".encode())


def answered(dispatch: FairDispatch, key: str, status: int | None = 200) -> None:
    """One request of ``key`` runs and the app answers it with ``status``."""
    dispatch.add(conn := keyed(key))
    assert dispatch.next() is conn
    conn.status = status
    dispatch.done(conn)


def dispatch_for(slots: int, *accepted: str) -> FairDispatch:
    """A dispatch for ``slots`` threads that has seen the app accept each of ``accepted``."""
    dispatch = FairDispatch(slots)
    for key in accepted:
        answered(dispatch, key)
    return dispatch


def started(dispatch: FairDispatch) -> list[str]:
    """Whose requests the dispatch hands out now, in order."""
    out = []
    while (conn := dispatch.next()) is not None:
        out.append(conn.tenant)
    return out


def test_the_framing_reads_the_first_authorization_header() -> None:
    assert request(b"Bearer sk_test_a_1").framing.authorization == b"Bearer sk_test_a_1"
    assert request(None).framing.authorization is None
    framing = Framing()
    framing.advance(bytearray(b"GET / HTTP/1.1\r\nauthorization:  Bearer b \r\nAUTHORIZATION: Bearer c\r\n\r\n"))
    assert framing.authorization == b"Bearer b"  # the first one


def test_every_spelling_of_one_key_is_one_key() -> None:
    for header in (b"Bearer " + BULK.encode(), b"bEaReR " + BULK.encode(), b"Bearer     " + BULK.encode() + b"  "):
        assert key_of(header) == BULK
    # Whatever the app refuses before routing is one tenant, however it is spelled.
    for refused in (None, b"", b"Basic dXNlcjpwYXNz", b"Bearer not-a-key", b"Bearer sk_prod_p_1", b"\xff\xfe"):
        assert key_of(refused) == ""


def test_a_key_with_many_requests_waiting_does_not_go_before_another() -> None:
    dispatch = dispatch_for(8, BULK, QUIET)
    for _ in range(10):
        dispatch.add(keyed(BULK))
    assert started(dispatch) == [BULK_NS] * 6  # three quarters of the threads at most
    quiet = keyed(QUIET)
    dispatch.add(quiet)
    assert started(dispatch) == [QUIET_NS]  # at once, on a thread the bulk could not take
    dispatch.add(keyed(QUIET))
    for spelling in (b"bearer  " + BULK.encode(), b"Bearer sk_test_bulk_0001 "):
        dispatch.add(request(spelling))  # not a tenant of its own: waits with the bulk
    dispatch.add(request(None))  # no credential is a tenant of its own
    assert started(dispatch) == [""]  # 8 running: every thread is taken
    dispatch.done(quiet)
    assert started(dispatch) == [QUIET_NS]


def test_a_kept_alive_connection_s_next_request_is_whoever_its_header_names() -> None:
    dispatch = dispatch_for(8, BULK)
    conn = keyed(BULK)
    for header, tenant in ((BULK, BULK_NS), (QUIET, ""), (BULK, BULK_NS), (None, ""), (BULK, BULK_NS)):
        conn.next_request()
        del conn.buf[:]
        conn.buf += b"GET /v1/brains HTTP/1.1\r\n" + (f"Authorization: Bearer {header}\r\n".encode() if header else b"")
        conn.buf += b"\r\n"
        assert conn.framing.advance(conn.buf) == len(conn.buf)
        dispatch.add(conn)
        assert dispatch.next() is conn and conn.tenant == tenant and conn.key == (header or "")
        dispatch.done(conn)  # no status: the app did not answer, which accepts no key


def sized(key: str, body_bytes: int) -> Connection:
    """A complete request of ``key`` holding a body of ``body_bytes``."""
    conn = keyed(key)
    conn.request, conn.body = bytes(conn.buf), b"x" * body_bytes
    return conn


def test_a_key_s_large_bodies_run_one_at_a_time_beside_other_keys_requests() -> None:
    dispatch = dispatch_for(8, BULK, QUIET)
    heavy = [sized(BULK, 1024 * 1024) for _ in range(8)]
    for conn in heavy:
        dispatch.add(conn)
    assert started(dispatch) == [BULK_NS]  # one of a megabyte takes the key's whole share
    for _ in range(3):
        dispatch.add(sized(QUIET, 100))
    assert started(dispatch) == [QUIET_NS] * 3
    dispatch.done(heavy[0])
    assert started(dispatch) == [BULK_NS]
    # bodies of 200 KB weigh two each: three at a time
    dispatch = dispatch_for(8, BULK)
    for _ in range(6):
        dispatch.add(sized(BULK, 200 * 1024))
    assert started(dispatch) == [BULK_NS] * 3


def test_a_heavy_request_waiting_does_not_hold_back_a_lighter_key() -> None:
    dispatch = dispatch_for(8, BULK, QUIET)
    dispatch.add(first := sized(BULK, 100))
    assert started(dispatch) == [BULK_NS]
    dispatch.add(sized(BULK, 1024 * 1024))  # BULK runs a request: this one must wait for it
    dispatch.add(sized(QUIET, 100))
    dispatch.add(sized(QUIET, 100))
    assert started(dispatch) == [QUIET_NS, QUIET_NS]
    dispatch.done(first)
    assert started(dispatch) == [BULK_NS]


def test_each_pool_size_keeps_a_thread_from_any_one_key() -> None:
    for slots, per_key in ((1, 1), (2, 1), (3, 2), (4, 3), (8, 6), (16, 12)):
        dispatch = dispatch_for(slots, BULK)
        for _ in range(slots + 1):
            dispatch.add(keyed(BULK))
        assert len(started(dispatch)) == per_key


def test_the_fewest_running_goes_first_and_equals_take_turns() -> None:
    a, b, c = "sk_test_a_1", "sk_test_b_1", "sk_test_c_1"
    dispatch = dispatch_for(8, a, b, c)
    running = []
    for key in (a, a, a, b, c):
        dispatch.add(conn := keyed(key))
        running.append(conn)
    assert started(dispatch) == ["sk_test_a", "sk_test_b", "sk_test_c", "sk_test_a", "sk_test_a"]
    for conn in running:
        dispatch.done(conn)
    for key in (a, a, b, b):
        dispatch.add(keyed(key))
    assert started(dispatch) == ["sk_test_a", "sk_test_b"] * 2


def test_one_thread_serves_every_key_in_turn() -> None:
    a, b = "sk_test_a_1", "sk_test_b_1"
    dispatch = dispatch_for(1, a, b)
    for key in (a, a, b):
        dispatch.add(keyed(key))
    order = []
    while (conn := dispatch.next()) is not None:
        order.append(conn.tenant)
        assert dispatch.next() is None  # the one thread is taken
        dispatch.done(conn)
    assert order == ["sk_test_a", "sk_test_b", "sk_test_a"]


def test_keys_the_app_has_not_accepted_share_one_place_beside_real_tenants() -> None:
    """A flood of invented keys, each new, would otherwise each be a tenant with nothing running and
    go before a paying tenant with requests running, on every thread that frees up."""
    dispatch = dispatch_for(8, BULK)
    for n in range(40):
        dispatch.add(keyed(BULK))
        dispatch.add(keyed(f"sk_test_invented_{n:04d}"))
    running = deque(dispatch.next() for _ in range(8))
    assert dispatch.next() is None
    handed_out = []
    for _ in range(40):  # the longest running finishes; the thread it frees goes to the next request
        conn = running.popleft()
        conn.status = 401 if conn.tenant == "" else 200
        dispatch.done(conn)
        running.append(dispatch.next())
        handed_out.append(running[-1].tenant)
    assert 16 <= handed_out.count(BULK_NS) <= 24  # about half, as for any two tenants


def test_a_key_becomes_a_tenant_once_accepted_and_stops_being_one_at_a_401() -> None:
    dispatch = FairDispatch(8)
    # Each answer in turn, then whose request the key's next one is: a refusal before the app saw it
    # (None) and a failure (an unreadable key registry fails every key) prove nothing either way.
    for status, tenant in ((None, ""), (500, ""), (404, QUIET_NS), (500, QUIET_NS), (None, QUIET_NS), (401, ""), (429, QUIET_NS)):
        answered(dispatch, QUIET, status=status)
        dispatch.add(conn := keyed(QUIET))
        assert started(dispatch) == [tenant], status
        dispatch.done(conn)


def test_the_most_recently_accepted_keys_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving, "MAX_KNOWN_KEYS", 2)
    a, b, c = "sk_test_a_1", "sk_test_b_1", "sk_test_c_1"
    dispatch = dispatch_for(8, a, b, a, c)  # b is the least recently accepted: forgotten
    for key in (a, b, c):
        dispatch.add(keyed(key))
    assert sorted(started(dispatch)) == ["", "sk_test_a", "sk_test_c"]


def test_every_key_of_one_namespace_shares_its_tenant_s_threads() -> None:
    """Shared per key, one project with two keys (two Brain-bound MCP keys, say) took every thread of
    four, 3 + 3, and another project's 4 ms read waited 1.75 s behind Contexts holding a thread 2 s."""
    second, live = "sk_test_bulk_0003", "sk_live_bulk_0004"  # BULK's project; and its live environment
    dispatch = dispatch_for(8, BULK, second, QUIET, live)
    for _ in range(5):
        dispatch.add(keyed(BULK))
        dispatch.add(keyed(second))
    assert started(dispatch) == [BULK_NS] * 6  # three quarters of the threads, both keys together
    dispatch.add(keyed(QUIET))
    dispatch.add(keyed(live))  # another environment is another namespace
    assert started(dispatch) == [QUIET_NS, "sk_live_bulk"]
    dispatch = dispatch_for(4, BULK, second, QUIET)
    for _ in range(3):
        dispatch.add(keyed(BULK))
        dispatch.add(keyed(second))
    assert started(dispatch) == [BULK_NS] * 3
    dispatch.add(keyed(QUIET))
    assert started(dispatch) == [QUIET_NS]  # at once, on the thread the project's keys could not take


def test_keys_invented_with_a_tenant_s_prefix_neither_spend_its_share_nor_unseat_it() -> None:
    """Anyone can write sk_test_bulk_<anything>: a key is accepted on its own, never for its namespace.
    Counted for BULK's namespace, invented keys would spend its share of the threads; and a 401 to one of
    them taking the namespace's place away would send BULK's own requests to wait with the unproven."""
    dispatch = dispatch_for(8, BULK)
    for n in range(20):
        answered(dispatch, f"sk_test_bulk_invented{n:02d}", status=401)
    for n in range(3):
        dispatch.add(keyed(f"sk_test_bulk_invented{n:02d}"))
    for _ in range(10):
        dispatch.add(keyed(BULK))
    # the invented ones wait with the unproven, beside the tenant: every thread runs, 5 of them BULK's
    assert started(dispatch) == ["", BULK_NS, "", BULK_NS, "", BULK_NS, BULK_NS, BULK_NS]
    # one key of a namespace refused (revoked) leaves its other keys where they were
    dispatch = dispatch_for(8, BULK, second := "sk_test_bulk_0003")
    answered(dispatch, second, status=401)
    for key in (BULK, second):
        dispatch.add(keyed(key))
    assert started(dispatch) == [BULK_NS, ""]


def test_the_worker_s_settings_read_once_answer_as_gunicorn_s_config() -> None:
    from gunicorn.config import Config as GunicornConfig

    cfg = GunicornConfig()
    cfg.set("keepalive", 20)
    settled = SettledConfig(cfg)
    for name in cfg.settings.keys() - {"http_parser"}:  # the parser is always the Python one (below)
        assert getattr(settled, name) == getattr(cfg, name), name
    reads: list[str] = []
    keepalive = cfg.settings["keepalive"]
    original = keepalive.get
    keepalive.get = lambda: reads.append("keepalive") or original()  # type: ignore[method-assign]
    assert settled.keepalive == 20 and settled.keepalive == 20 and reads == []  # held since the first read
    assert SettledConfig(cfg).keepalive == 20 and reads == ["keepalive"]
    # what is not a setting is the Config's own, read from it every time
    assert settled.settings is cfg.settings
    assert settled.forwarded_allow_networks() == cfg.forwarded_allow_networks()
    assert settled.is_ssl is cfg.is_ssl
    with pytest.raises(AttributeError):
        settled.no_such_setting  # noqa: B018


def test_the_worker_parses_requests_with_gunicorn_s_python_parser_even_where_the_c_one_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gunicorn.config import Config as GunicornConfig
    from gunicorn.http import message

    class FastParser(types.ModuleType):
        LimitRequestLine = object  # what gunicorn checks for before it uses the C parser

    monkeypatch.setitem(sys.modules, "gunicorn_h1c", FastParser("gunicorn_h1c"))
    monkeypatch.setattr(message, "_fast_parser_available", None)
    cfg = GunicornConfig()
    assert message._check_fast_parser(cfg)  # gunicorn's default would take it
    assert not message._check_fast_parser(SettledConfig(cfg))


def test_the_reply_reads_its_status_line() -> None:
    reply = _HeadHeld(RecordingSocket())  # type: ignore[arg-type]
    assert reply.status is None
    reply.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
    reply.flush()
    assert reply.status == 401


def test_the_connection_limit_fits_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = [1024, 4096]  # soft, hard

    def setrlimit(which: int, value: tuple[int, int]) -> None:
        assert which == resource.RLIMIT_NOFILE
        limits[:] = value

    monkeypatch.setattr(serving.resource, "getrlimit", lambda which: tuple(limits))
    monkeypatch.setattr(serving.resource, "setrlimit", setrlimit)
    assert connection_limit(1000) == 1000
    assert limits == [1000 + RESERVED_FDS, 4096]  # the soft limit raised as far as needed
    limits[:] = [256, 256]
    assert connection_limit(1000) == 256 - RESERVED_FDS
    limits[:] = [64, 64]
    assert connection_limit(1000) == 1
    limits[:] = [1024, resource.RLIM_INFINITY]
    assert connection_limit(1000) == 1000 and limits[0] == 1000 + RESERVED_FDS
    limits[:] = [resource.RLIM_INFINITY, resource.RLIM_INFINITY]
    assert connection_limit(1000) == 1000

    def refuse(which: int, value: tuple[int, int]) -> None:
        raise ValueError("not permitted")

    monkeypatch.setattr(serving.resource, "setrlimit", refuse)
    limits[:] = [1024, 4096]
    assert connection_limit(1000) == 1024 - RESERVED_FDS  # what the soft limit leaves


class OutOfFiles:
    """A listener whose accept() finds no file descriptor free."""

    def accept(self) -> None:
        raise OSError(errno.EMFILE, "Too many open files")


def test_a_worker_out_of_file_descriptors_pauses_accepting_and_closes_an_idle_connection() -> None:
    worker = object.__new__(BufferingWorker)  # the state accept() uses, without gunicorn's arbiter
    worker.log = logging.getLogger("test_serving")
    worker.sockets, worker._accepting, worker._accept_paused_until = [], True, 0.0
    worker.poller = selectors.DefaultSelector()
    worker.worker_connections, worker.client_timeout, worker.held = 8, 10.0, 0
    worker.dispatch = FairDispatch(4)
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        idle, reading, draining = (Connection(ours, None, None) for ours, _ in pairs)
        idle.idle, draining.draining = True, True
        reading.began = time.monotonic()  # its head began just now
        worker.connections = dict.fromkeys((idle, reading, draining))
        worker.nr_conns = 3
        worker.accept(OutOfFiles())  # type: ignore[arg-type]
        assert not worker._accepting
        assert list(worker.connections) == [reading, draining] and worker.nr_conns == 2
        assert idle.sock.fileno() == -1  # closed: it had nothing of a next request
        worker.set_accept_enabled(True)  # what gunicorn's loop asks while connections are under the limit
        assert not worker._accepting
        worker._accept_paused_until = time.monotonic()
        worker.set_accept_enabled(True)
        assert worker._accepting
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        worker.poller.close()


def test_at_the_limit_slow_bodies_without_an_accepted_key_are_closed_before_tenants_idle_ones() -> None:
    """A thousand keyless clients sending slow bodies held every place while only the tenants' idle
    kept-alive connections were closed to make room (a quiet tenant's request waited 21 s)."""
    worker = object.__new__(BufferingWorker)  # the state the sweep at the limit uses
    worker.log = logging.getLogger("test_serving")
    worker.poller = selectors.DefaultSelector()
    worker.worker_connections, worker.held = 8, 0  # closes 8 // EVICT_SHARE = 2 at most
    worker.dispatch = dispatch_for(4, QUIET)
    pairs = [socket.socketpair() for _ in range(6)]
    try:
        tenant_idle, tenant_body, keyless_body, stranger_body, stalled_head, fresh_body = (
            Connection(ours, None, None) for ours, _ in pairs
        )
        tenant_idle.idle, tenant_idle.key = True, QUIET
        body_head = b"POST /v1/brains/b1/records HTTP/1.1\r\nContent-Length: 1000\r\n"
        for conn, auth in (
            (tenant_body, f"Authorization: Bearer {QUIET}\r\n".encode()),
            (keyless_body, b""),
            (stranger_body, b"Authorization: Bearer sk_test_stranger_0003\r\n"),
            (fresh_body, b""),
        ):
            conn.buf += body_head + auth + b"\r\n{"
            assert conn.framing.advance(conn.buf) is None and conn.framing.head_end is not None
        stalled_head.buf += b"GET /v1/brains HTTP/1.1\r\n"
        long_ago = time.monotonic() - 60
        for conn in (tenant_idle, tenant_body, keyless_body, stranger_body, stalled_head):
            conn.began = long_ago
        fresh_body.began = time.monotonic()  # a body begun just now is left to finish
        worker.connections = dict.fromkeys((tenant_idle, tenant_body, keyless_body, stranger_body, stalled_head, fresh_body))
        worker.nr_conns = 6
        worker._evict_unused()
        assert list(worker.connections) == [tenant_idle, tenant_body, stalled_head, fresh_body]  # slow bodies first
        worker._evict_unused()  # then the stalled head, and only then the tenant's idle connection
        assert list(worker.connections) == [tenant_body, fresh_body]
        worker._evict_unused()  # a tenant's stalled request only when nobody holds more
        assert list(worker.connections) == [fresh_body]
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        worker.poller.close()


class Unplugged:
    """A socket stand-in for the sweep at the limit, which only unregisters and closes sockets."""

    closed = False

    def fileno(self) -> int:
        return -1  # never registered: unregistering it is refused, as for one already closed

    def close(self) -> None:
        self.closed = True


LONG_AGO = 1000.0  # what ``began`` the sweep sees as stalled long since (time.monotonic() is far past)


def held(key: str | None, *, idle: bool = False, began: float = LONG_AGO) -> Connection:
    """A connection waiting on the main loop: kept alive after a request of ``key``, or with a complete
    head of ``key`` (None: no Authorization header) declaring a body of which one byte came."""
    conn = Connection(Unplugged(), None, None)  # type: ignore[arg-type]
    conn.began = began
    if idle:
        conn.idle, conn.key = True, key or ""
        return conn
    auth = b"" if key is None else f"Authorization: Bearer {key}\r\n".encode()
    conn.buf += b"POST /v1/brains/b1/records HTTP/1.1\r\nContent-Length: 1048576\r\n" + auth + b"\r\n{"
    assert conn.framing.advance(conn.buf) is None and conn.framing.head_end is not None
    return conn


def sweeping(limit: int, connections: list[Connection], *accepted: str) -> BufferingWorker:
    """A worker at its connection limit holding ``connections``, whose app accepted ``accepted``."""
    worker = object.__new__(BufferingWorker)  # the state the sweep at the limit uses
    worker.poller = selectors.DefaultSelector()
    worker.worker_connections, worker.held, worker.nr_conns = limit, 0, limit
    worker.dispatch = dispatch_for(4, *accepted)
    worker.connections = dict.fromkeys(connections)
    return worker


def test_at_the_limit_one_key_s_stalled_requests_give_way_before_another_tenant_s_idle_connection() -> None:
    """One accepted key held a thousand places with heads declaring 1 MiB and one byte of each: its
    requests were never closed for room, another tenant's kept-alive connection was, and the tenant's
    new connections waited 25 s in the listen backlog for the first of those bodies' deadlines."""
    quiet_idle = held(QUIET, idle=True, began=LONG_AGO - 50)  # idle longer than any of them began
    stalled = [held(BULK, began=LONG_AGO + n) for n in range(36)]
    fresh = held(BULK, began=time.monotonic())  # begun just now: left to finish
    worker = sweeping(40, [quiet_idle, *stalled, fresh], BULK, QUIET)  # closes 40 // 4 = 10 at most
    try:
        worker._evict_unused()
        assert list(worker.connections) == [quiet_idle, *stalled[10:], fresh]  # the oldest ten
        assert all(c.sock.closed for c in stalled[:10]) and worker.nr_conns == 30
        worker._evict_unused()
        worker._evict_unused()
        assert list(worker.connections) == [quiet_idle, *stalled[30:], fresh]
        assert not quiet_idle.sock.closed
    finally:
        worker.poller.close()


def test_the_holder_of_the_most_connections_gives_them_up_first() -> None:
    """Clients without an accepted key are one holder, as in FairDispatch: an idle one of them goes
    first (nothing is lost), then one at a time from whoever holds most, counting its requests begun
    too recently to close, its idle connections before its stalled requests."""
    keyless_idle = held(None, idle=True)
    bulk = [held(BULK, began=LONG_AGO + n) for n in range(10)]
    bulk_fresh = [held(BULK, began=time.monotonic())]
    stranger = held("sk_test_stranger_0003", began=LONG_AGO - 1)  # a key the app never accepted
    keyless = held(None, began=LONG_AGO + 1)
    quiet_idle, quiet_body = held(QUIET, idle=True, began=LONG_AGO + 5), held(QUIET, began=LONG_AGO)
    draining = held(BULK)
    draining.draining = True  # closing already
    tenant = dispatch_for(4, BULK, QUIET).tenant
    everyone = [quiet_body, *bulk_fresh, keyless, keyless_idle, *reversed(bulk), stranger, quiet_idle, draining]
    order = serving.eviction_order(everyone, tenant, stalled_before=LONG_AGO + 100)
    # Bulk holds 11 (10 stalled), the keyless 3 (one idle), the quiet tenant 2. Bulk's go until it holds
    # 2, then all three in turn while they hold as many: the keyless first, then by key.
    assert order == [keyless_idle, *bulk[:9], stranger, bulk[9], quiet_idle, keyless, quiet_body]
    # Bulk holding one more, begun just now: once it is down to its two in use, they are still the
    # most, and nobody else gives a place up for them.
    order = serving.eviction_order([*everyone, held(BULK, began=time.monotonic())], tenant, LONG_AGO + 100)
    assert order == [keyless_idle, *bulk, stranger, quiet_idle]


def test_at_the_limit_the_keys_of_one_namespace_hold_their_connections_together() -> None:
    """Counted per key, a project's connections over two keys were two holders of half as many: another
    tenant holding fewer than the project gave its places up first. A key invented with the project's
    prefix is no key of it: one more client without an accepted key."""
    second = "sk_test_bulk_0003"
    bulk = [held(BULK if n % 2 else second, began=LONG_AGO + n) for n in range(8)]
    quiet = [held(QUIET, began=LONG_AGO - 10 + n) for n in range(5)]  # stalled longer than any of bulk's
    invented = held("sk_test_bulk_invented", began=LONG_AGO + 50)
    tenant = dispatch_for(4, BULK, second, QUIET).tenant
    order = serving.eviction_order([*quiet, *reversed(bulk), invented], tenant, LONG_AGO + 100)
    # the project holds 8, the quiet tenant 5: the project's go until it holds as many, then in turn
    assert order == [
        *bulk[:4], quiet[0], bulk[4], quiet[1], bulk[5], quiet[2], bulk[6], quiet[3],
        invented, bulk[7], quiet[4],
    ]


def main_loop(limit: int = 8) -> BufferingWorker:
    """A worker with the state its main loop's accepting and reading use, without gunicorn's arbiter."""
    worker = object.__new__(BufferingWorker)
    worker.log = logging.getLogger("test_serving")
    worker.poller = selectors.DefaultSelector()
    worker.sockets, worker._accepting, worker._accept_paused_until = [], True, 0.0
    worker.worker_connections, worker.client_timeout, worker.held, worker.nr_conns = limit, 10.0, 0, 0
    worker.dispatch, worker.connections, worker._turn = FairDispatch(4), {}, 0
    return worker


def test_a_readable_listener_gives_up_its_backlog_up_to_the_connection_limit() -> None:
    """gunicorn took one connection each time the listener was readable, once a turn of the main loop:
    behind 900 connections of one key, another tenant's new connection waited 12-19 s in the backlog."""
    worker = main_loop(limit=8)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    clients = [socket.create_connection(listener.getsockname()) for _ in range(5)]
    try:
        worker.accept(listener)
        assert worker.nr_conns == len(worker.connections) == 5  # all that waited, at once
        worker.accept(listener)  # none waiting: nothing happens
        assert worker.nr_conns == 5
        clients += [socket.create_connection(listener.getsockname()) for _ in range(5)]
        worker.accept(listener)
        assert worker.nr_conns == 8  # up to the limit: the rest wait in the backlog
        listener.accept()[0].close()  # the 9th was still there
    finally:
        for conn in worker.connections:
            conn.close()
        for sock in (*clients, listener):
            sock.close()
        worker.poller.close()


def test_a_turn_reads_the_connections_read_least_recently_and_at_most_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each turn read 64 KiB from every readable connection: with hundreds sending bodies, a new
    connection waited a long turn to be read, and the listener (and the threads' callbacks) as long
    for the next one."""
    monkeypatch.setattr(serving, "READS_PER_TURN", 2)
    worker = main_loop()
    pairs = [socket.socketpair() for _ in range(6)]
    try:
        conns = [Connection(ours, None, None) for ours, _ in pairs]
        for conn in conns[:5]:
            worker._wait_for_request(conn)

        def turn() -> list[Connection]:
            """One turn of the main loop with something new from every peer: whom it read."""
            for _, theirs in pairs:
                theirs.send(b"G")
            before = {conn: len(conn.buf) for conn in worker.connections}
            worker.wait_for_and_dispatch_events(timeout=1.0)
            return [conn for conn in worker.connections if len(conn.buf) > before.get(conn, 0)]

        first, second = turn(), turn()
        assert len(first) == len(second) == 2 and not set(first) & set(second)
        [left] = set(conns[:5]) - set(first) - set(second)
        worker._wait_for_request(conns[5])  # a new connection, while the five stay readable
        assert set(turn()) == {left, conns[5]}  # read before those read already
        assert set(turn()) == set(first)  # and every one in turn
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        worker.poller.close()


def test_past_the_buffer_budget_the_requests_begun_longest_ago_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving, "BUFFER_BUDGET", 350)
    worker = object.__new__(BufferingWorker)  # the state the main loop's reading uses
    worker.log = logging.getLogger("test_serving")
    worker.poller = selectors.DefaultSelector()
    worker.client_timeout, worker.held, worker.nr_conns = 10.0, 0, 3
    worker._docs_base = "https://docs.example"
    worker.dispatch = FairDispatch(0)  # complete requests wait: none is handed to a thread here
    worker.connections = {}
    pairs = [socket.socketpair() for _ in range(3)]
    head = b"POST /v1/brains/b1/records HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"
    try:
        conns = [Connection(ours, None, None) for ours, _ in pairs]
        for began, (conn, (_, theirs)) in enumerate(zip(conns, pairs, strict=True)):
            conn.began = float(began)
            worker._wait_for_request(conn)
            theirs.sendall(head + b"x" * (100 - len(head)))
            worker._read(conn)  # 100 bytes each: within the budget
        assert worker.held == 300 and list(worker.connections) == conns
        pairs[2][1].sendall(b"x" * 100)
        worker._read(conns[2])  # 400 held: the request begun first makes room
        assert [c for c in worker.connections if not c.draining] == conns[1:] and worker.held == 300
        [(status, headers, _)] = _responses(pairs[0][1].recv(65536))
        assert status == 429 and headers["retry-after"] == "1"
        assert conns[0].draining  # the rest of its body is read and dropped, briefly
        for conn in conns:
            worker._drop(conn)
        assert worker.held == 0 and worker.nr_conns == 0
    finally:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        worker.poller.close()


def _responses(raw: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    return [(int(lines[0].split()[1]), {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}, body)]
