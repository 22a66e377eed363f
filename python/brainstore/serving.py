"""The gunicorn worker of ``brainstore serve``: gthread behind a front that buffers whole requests.

gunicorn's gthread worker hands a connection to a pool thread as soon as it is readable, and the
thread then reads the head and the body from a blocking socket: a client that sends one byte every
few seconds holds that thread for as long as it likes, and a few such clients hold them all. Here the
main loop (gunicorn's poller) reads every request without blocking into a buffer, and only a complete
request (head and body, pipelined keep-alive requests included) is handed to the thread pool, which
parses it from memory. A thread never waits on a client to send.

Guarantees, per connection:
- The head must be complete within ``client_timeout`` seconds of the connection opening (or, on a
  kept-alive connection, of the next request's first byte), and at most :data:`MAX_HEAD` bytes.
- The body must be complete within ``client_timeout`` seconds plus its length at
  :data:`MIN_BODY_RATE` bytes a second after the head, and at most ``MAX_BODY`` bytes (chunked
  bodies too, and at most twice that with their framing). A declared length over the limit is
  refused before the body is read.
- At most :data:`BUFFER_BUDGET` bytes of requests read and not yet answered, over all connections:
  past it, the requests still being read that began longest ago are refused (``http_429`` with
  Retry-After) and their connections closed. Complete requests are never refused for it.
- A connection idle between requests is closed after gunicorn's ``keepalive`` seconds.
- A thread writing a response to a client that does not read gives up after ``client_timeout``
  seconds for any one write.
- A connection that misses a deadline is closed without a reply. Everything refused before routing
  (a malformed request line or header, a head over the limit, a bad chunk) is answered with the
  spec's Error body, ``http_400`` with its generic message, or ``invalid_request_body`` for a body
  over the limit; a failure of the worker itself is ``internal_error``. Never gunicorn's HTML.
- Complete requests wait on the main loop for a thread and go to the threads fairly across tenants,
  a tenant being a namespace (project and environment: every key ``sk_<env>_<project>_…`` of it)
  (:class:`FairDispatch`): a quarter of them stays free of any one tenant's requests, however many
  keys it holds, and requests with a key the app has not accepted yet share one tenant's place.
- At most ``worker_connections`` connections at once, fewer where the open-file limit allows fewer
  (:func:`connection_limit`); at the limit, connections that hold a place unused (idle, or with a
  request stalled a second after it began) are closed to let new ones in, those of clients the app
  has not accepted a key of that are idle first, then those of whoever holds the most connections,
  a tenant (every accepted key of a namespace together) or every client without an accepted key
  (:func:`eviction_order`); running out of file descriptors
  pauses accepting instead of ending the worker.
- A turn of the main loop accepts every connection waiting in the listen backlog (up to the limit)
  and reads from at most :data:`READS_PER_TURN` connections, those read least recently first: a new
  connection is read within a turn or so, however many others are sending.
- Closing after an error half-closes the socket and drains what the client still sends on the main
  loop, bounded in time and bytes, so the reply is not cut off by a reset and no thread lingers.

Plain HTTP/1.x only: TLS and HTTP/2 are the reverse proxy's (see docs/operations.md).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import heapq
import io
import json
import re
import resource
import selectors
import socket
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from http import HTTPStatus
from typing import Any, NamedTuple

import falcon
from gunicorn import http
from gunicorn.http.body import Body
from gunicorn.http.errors import (
    ConfigurationProblem,
    InvalidResponseHeader,
    InvalidResponseHeaderName,
    NoMoreData,
    ParseException,
)
from gunicorn.workers.gthread import ThreadWorker

from brainstore.api.errors import error_body, from_falcon, retry_after
from brainstore.api.resources import MAX_BODY
from brainstore.auth.keys import parse_authorization, parse_key
from brainstore.config import Config
from brainstore.errors import BrainstoreError, invalid
from brainstore.ids import new_id

#: Largest request head (request line and headers). gunicorn's own per-line and per-field limits
#: still apply when the head is parsed; this bounds what a connection may make the front buffer.
MAX_HEAD = 64 * 1024
#: Slowest body accepted, in bytes a second, on top of the base ``client_timeout``: 1 MiB may take
#: 16 s more. A legitimate client, or a proxy relaying one, sends far faster.
MIN_BODY_RATE = 64 * 1024
#: Most raw bytes of one chunked request: the body limit, plus chunk framing of up to the same size.
MAX_CHUNKED_RAW = MAX_HEAD + 2 * MAX_BODY
#: Longest chunk-size line (the size and its extensions), and most bytes of a chunked body's trailer
#: section: no client needs more, and the app never reads trailers.
MAX_CHUNK_LINE = 4096
MAX_TRAILERS = 4096
#: How long a closing connection is drained on the main loop, and how much is read.
DRAIN_SECONDS = 1.0
DRAIN_BYTES = 64 * 1024
#: Deadlines are checked at most this often (seconds): closing late by this much is fine.
SWEEP_INTERVAL = 0.1
RECV_SIZE = 64 * 1024
#: The heartbeat file is touched at most this often (seconds); the arbiter's timeout is far longer.
NOTIFY_INTERVAL = 1.0
#: File descriptors left to all but client connections (database, index and model files, a PostgreSQL
#: pool, the worker's pipes): the connection limit is lowered to fit the process's open-file limit.
RESERVED_FDS = 128
#: How long accepting pauses (seconds) when the process is out of file descriptors all the same.
ACCEPT_PAUSE = 0.5
#: Most connections taken from the listen backlog at once, when a listener is readable (up to the
#: connection limit): see BufferingWorker.accept.
ACCEPT_BATCH = 256
#: Most connections read from in one turn of the main loop, those read least recently first; the
#: others are read in the next turns (see BufferingWorker.wait_for_and_dispatch_events).
READS_PER_TURN = 128
#: At the connection limit, a sweep closes at most this share of it (see BufferingWorker._evict_unused).
EVICT_SHARE = 4
#: At the limit, a connection whose request head is incomplete this long (seconds) after it began
#: may be closed to make room.
STALLED_HEAD = 1.0
#: Bytes of requests the front holds at once, read and not yet answered: past it, the requests still
#: being read that began longest ago are refused (see BufferingWorker._make_room). A connection may
#: hold a 1 MiB body (2 MiB of chunked framing), and a thousand of them would otherwise take gigabytes.
BUFFER_BUDGET = 128 * 1024 * 1024
#: What a request refused for want of buffer space is told to wait before it tries again (seconds).
BUSY_RETRY = 1.0
#: API keys the dispatch remembers as accepted by the app (see FairDispatch): about 250 bytes each
#: (the key, its namespace and the entry; 2.5 MB in all).
MAX_KNOWN_KEYS = 10_000
#: A request counts once against its tenant's share of the threads, and once more for each of these it
#: holds (FairDispatch): its work under the GIL grows with its bytes (parsed, checked, fingerprinted,
#: stored), and eight clients posting nested Objects of 1 MiB took another tenant's fast Context from
#: 8 to 333 ms at the median, six of them at a time. A tenant runs one such request, or three of 200 KB.
HEAVY_REQUEST_BYTES = 128 * 1024
# Container objects allocated (net of those freed) before a young-generation collection; Python's
# default is 700. A fast Context allocates thousands that live until its response is written (its
# candidates, passages and trace), and each collection walks every one of them still alive: at 700, a
# Context on a 17,600-turn Brain set off 0.8 collections and spent 0.23 ms in them on average (3 of
# 500 were full ones), and at 50,000 none in 500. Almost all of those objects are freed by reference
# counting, never by a collection: collecting less often costs a few MB of cyclic garbage held longer
# at most.
YOUNG_COLLECTION_AT = 50_000

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# RFC 9112 section 7.1: chunk-size = 1*HEXDIG, then optional extensions, with white space only around
# their ";" and "=": chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ), the
# name a token and the value a token or quoted-string (RFC 9110 section 5.6).
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
_CHUNK_LINE = re.compile(
    rb"([0-9A-Fa-f]{1,16})(?:[ \t]*;[ \t]*" + _TOKEN + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*"
)
# RFC 9112 section 7.1.2 and RFC 9110 section 5.5: a trailer line is a field line, a token, ":" and a
# value of visible characters, spaces and tabs (no obsolete line folding).
_FIELD_LINE = re.compile(_TOKEN + rb":[\t \x21-\x7e\x80-\xff]*")
# RFC 9110 section 6.5.1: fields that frame, route or authenticate a request have no place in trailers.
_NOT_IN_TRAILERS = frozenset((b"content-length", b"transfer-encoding", b"trailer", b"host", b"authorization", b"te"))


def connection_limit(configured: int) -> int:
    """``configured`` connections at most, within the process's open-file limit: its soft limit is
    raised toward the hard one first (as Go's runtime does when it starts), and :data:`RESERVED_FDS`
    are kept for the rest. gunicorn accepts up to its ``worker_connections`` (1,000) whatever that
    limit is, often 1,024: accept() then failed with EMFILE and the error ended the worker, so a
    client opening enough connections, with no key at all, restarted the service again and again."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = configured + RESERVED_FDS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, soft - RESERVED_FDS))


class Framing:
    """Where the request at the front of a buffer ends, decided incrementally as bytes arrive.

    :meth:`advance` returns the length of the complete request, or None while more is needed. It
    sets ``refusal`` when the request must be refused without reading further (a head or body over
    its limit), and ``unsure`` when the framing is broken (a bare LF, Content-Length with chunked,
    a bad chunk): the parser reads the head as far as it came, its error (a broken head) or a generic
    http_400 (a broken body) is the reply, and the connection closes. For a well-formed head it decides what
    gunicorn's parser decides, and the thread checks that the parser consumed every byte of it.

    The body is the front's alone: a chunked one is decoded here as its chunks arrive (``body``),
    and gunicorn's parser, which only ever reads the head, never reads it. When both read the chunks,
    each by its own rules, a chunk the front took and gunicorn refused ("2 \\r\\n", a bad extension
    or trailer) failed in the app: a 500 with a traceback, or, for a request the app answered without
    reading its body (a 401, a GET), a second unsolicited 400 on the same connection.

    Each call costs in proportion to the bytes that arrived since the last one, never to all that is
    held: a client may trickle a byte at a time after 64 KiB of head or a chunk-size line or trailer
    section, and rescanning it all on every read took the main loop (32 such connections, no key
    needed, made another tenant's fast Context 10 times slower).
    """

    def __init__(self) -> None:
        self.head_end: int | None = None  # index just past the blank line
        self.length: int | None = None  # Content-Length of the body
        self.chunked = False
        self.expects_continue = False
        self.authorization: bytes | None = None  # the first Authorization header: whose request it is
        self.refusal: BrainstoreError | None = None
        self.unsure = False
        self.body = bytearray()  # a chunked body, decoded: the chunks complete so far
        self._scanned = 0  # bytes of the head searched for its end
        self._searched = 0  # bytes of the body searched for the CRLF ending the line being read
        self._chunk_pos = 0  # where the next chunk-size line, or trailer line, starts
        self._trailers: int | None = None  # where the trailer section starts, once the last chunk was read

    def advance(self, buf: bytearray) -> int | None:
        if self.head_end is None and not self._find_head(buf):
            return None
        if self.refusal is not None or self.unsure:
            return self.head_end
        assert self.head_end is not None
        if self.chunked:
            return self._chunks(buf)
        end = self.head_end + (self.length or 0)
        return end if len(buf) >= end else None

    @property
    def wants_body(self) -> bool:
        return self.chunked or bool(self.length)

    def _find_head(self, buf: bytearray) -> bool:
        new = self._scanned  # the bytes from here on arrived since the last call
        index = buf.find(b"\r\n\r\n", max(0, new - 3))
        if index < 0:
            self._scanned = len(buf)
            if len(buf) > MAX_HEAD:
                self.head_end = len(buf)
                self.refusal = from_falcon(falcon.HTTPBadRequest())
                return True
            if buf.count(b"\n", new) != buf.count(b"\r\n", max(0, new - 1)):
                # A bare LF: the parser refuses it at once, so do not wait for a blank line.
                self.head_end, self.unsure = len(buf), True
                return True
            return False
        self.head_end = index + 4
        if self.head_end > MAX_HEAD:
            self.refusal = from_falcon(falcon.HTTPBadRequest())
            return True
        self._read_head(bytes(buf[: self.head_end]))
        return True

    def _read_head(self, head: bytes) -> None:
        lengths: list[bytes] = []
        codings: list[bytes] = []
        for line in head.split(b"\r\n")[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                continue  # the request line after one leading CRLF, or the blank line
            name, value = name.strip().lower(), value.strip(b" \t")
            if name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                codings.extend(c.strip().lower() for c in value.split(b","))
            elif name == b"expect":
                self.expects_continue = value.lower() == b"100-continue"
            elif name == b"authorization" and self.authorization is None:
                self.authorization = value
        if codings:
            # Both framings at once (the parser refuses), or any coding but one chunked: the body
            # would have to be decoded again (gunicorn takes "gzip, chunked" and hands the app gzip).
            if lengths or codings != [b"chunked"]:
                self.unsure = True
                return
            self.chunked = True
            self._chunk_pos = self.head_end or 0
            return
        if not lengths:
            self.length = 0
            return
        if len(set(lengths)) != 1 or not lengths[0].isdigit():
            self.unsure = True
            return
        self.length = int(lengths[0])
        if self.length > MAX_BODY:
            self.refusal = invalid("body", f"must be at most {MAX_BODY} bytes")

    def _chunks(self, buf: bytearray) -> int | None:
        if self._trailers is not None:
            return self._trailer_lines(buf)
        while True:
            pos = self._chunk_pos
            line_end = self._line_end(buf, pos)
            if line_end < 0:
                if len(buf) - pos > MAX_CHUNK_LINE:
                    return self._malformed(buf)
                return None
            line = _CHUNK_LINE.fullmatch(buf, pos, line_end)
            if line is None:
                return self._malformed(buf)
            size = int(line[1], 16)
            if size == 0:
                self._trailers = self._chunk_pos = line_end + 2
                return self._trailer_lines(buf)
            if len(self.body) + size > MAX_BODY:
                self.refusal = invalid("body", f"must be at most {MAX_BODY} bytes")
                return len(buf)
            chunk_end = line_end + 2 + size + 2
            if len(buf) < chunk_end:
                return None
            if buf[chunk_end - 2 : chunk_end] != b"\r\n":
                return self._malformed(buf)
            self.body += buf[line_end + 2 : chunk_end - 2]
            self._chunk_pos = chunk_end
            if chunk_end > MAX_CHUNKED_RAW:
                self.refusal = invalid("body", f"must be at most {MAX_BODY} bytes")
                return len(buf)

    def _trailer_lines(self, buf: bytearray) -> int | None:
        """After the last chunk: the trailer section's lines up to the blank line that ends it."""
        assert self._trailers is not None
        while True:
            pos = self._chunk_pos
            line_end = self._line_end(buf, pos)
            if line_end < 0:
                if len(buf) - self._trailers > MAX_TRAILERS:
                    return self._malformed(buf)
                return None
            if line_end == pos:
                return line_end + 2
            if _FIELD_LINE.fullmatch(buf, pos, line_end) is None:
                return self._malformed(buf)
            if bytes(buf[pos : buf.index(b":", pos)]).lower() in _NOT_IN_TRAILERS:
                return self._malformed(buf)
            self._chunk_pos = line_end + 2
            if self._chunk_pos - self._trailers > MAX_TRAILERS:
                return self._malformed(buf)

    def _line_end(self, buf: bytearray, start: int) -> int:
        """Where the CRLF ending the line that begins at ``start`` is, or -1 while it has not arrived.
        What an earlier call searched of the same line is not searched again (but its last byte, which
        may be the CR)."""
        index = buf.find(b"\r\n", max(start, self._searched - 1))
        if index < 0:
            self._searched = len(buf)
        return index

    def _malformed(self, buf: bytearray) -> int:
        # A broken chunked body: the thread answers http_400 once the parser has read the head.
        self.unsure = True
        return len(buf)


class Connection:
    """One client connection: its socket, what has been read of the next request, and a deadline."""

    def __init__(self, sock: socket.socket, client: Any, server: Any) -> None:
        self.sock = sock
        self.client = client
        self.server = server
        self.buf = bytearray()
        self.framing = Framing()
        self.deadline = 0.0
        self.began = 0.0  # when the first byte of the request being read arrived (time.monotonic)
        self.held = 0  # bytes of buf, request and body the worker counts in its BUFFER_BUDGET
        self.request: bytes = b""  # the complete request's head, all gunicorn's parser reads
        self.body: bytes = b""  # and its body, as the app reads it (a chunked one decoded)
        self.parser: Any = None
        self.continue_sent = False
        self.idle = False  # kept alive with nothing read yet of its next request
        self.draining = False
        self.drained = 0
        self.read_turn = 0  # the main loop's turn that last read from the connection (0: none yet)
        self.key = ""  # the API key the request presents, read as the app reads it (see key_of)
        self.authorization: bytes | None = None  # the Authorization header ``key`` was read from
        self.tenant = ""  # whose request was handed to a thread: its key's namespace, or "" (FairDispatch)
        self.weight = 1  # how much of its tenant's share of the threads the request takes (FairDispatch)
        self.status: int | None = None  # the status the app answered the request with

    def next_request(self) -> None:
        self.framing = Framing()
        self.continue_sent = False
        self.request = self.body = b""
        self.parser = None
        self.status = None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def key_of(authorization: bytes | None) -> str:
    """The API key a request presents, read as the app reads it, so that the many spellings of one
    key's header (the scheme's case, spaces) are one key and not many; "" for every request whose
    header the app refuses (they are one tenant for :class:`FairDispatch`: a flood of them is
    answered 401, never on every thread)."""
    if authorization is None:
        return ""
    try:
        return parse_authorization(authorization.decode("latin-1")).raw
    except BrainstoreError:
        return ""


def namespace_of(key: str) -> str:
    """The tenant an accepted key (as :func:`key_of` reads it) is one of: its namespace, the
    ``sk_<env>_<project>`` its every key begins with."""
    return parse_key(key).prefix


class FairDispatch:
    """Complete requests waiting for a pool thread, handed out by tenant: the tenant with the fewest
    requests running goes first, round robin among equals, and no tenant runs on more than three
    quarters of the threads (all but one of fewer than eight). gunicorn hands requests to its threads
    first come, first served, so one tenant's many requests in flight made every other tenant's request
    wait behind all of them; a request cannot be paused, so the threads a tenant cannot take are what
    lets another tenant's request start at once. (Half the threads did that too, but a tenant's
    concurrent writes then shared smaller group commits: 8 clients' Records became ready about 8%
    slower.) A request weighs more the more bytes it holds (:data:`HEAVY_REQUEST_BYTES`), and "fewest"
    and "three quarters" count weights: a tenant's large bodies run one or a few at a time, as their
    work holds the GIL the other tenants' requests need; a tenant with nothing running may always start
    one. At most ``slots`` requests run at once (the pool's threads), so none waits in the pool's own
    queue.

    A tenant is a namespace (:func:`namespace_of`): every accepted key of one project and environment
    together. Shared per key, one project with two keys (two Brain-bound MCP keys, say) took every
    thread of four, 3 + 3, and another project's 4 ms read waited 1.75 s.

    A key counts for its namespace once the app has accepted it (answered a request of it with neither
    401 nor a 5xx); until then, and after a 401, its requests wait with every other unproven one as the
    tenant "". Otherwise anyone could invent a new well-formed key for each request: each would be a
    tenant with nothing running, and a flood of them would go before every real tenant with a request
    running, each answered 401 but starving the tenants who pay. What is accepted is the key itself,
    never its namespace: keys invented with a real project's prefix are unproven like any other (they
    neither spend that project's share nor, answered 401, take its accepted keys' place from it). The
    :data:`MAX_KNOWN_KEYS` most recently accepted keys are remembered. Used on the worker's main loop
    only."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.per_tenant = max(1, slots - max(1, slots // 4))  # 6 of 8, 3 of 4, 1 of 2
        # only tenants with requests running (a few at most), each by the weight of its requests
        self._running: Counter[str] = Counter()
        self._in_flight = 0
        self._waiting: OrderedDict[str, deque[Connection]] = OrderedDict()
        # each accepted key's namespace, least recently accepted first
        self._accepted: OrderedDict[str, str] = OrderedDict()

    def add(self, conn: Connection) -> None:
        authorization = conn.framing.authorization
        if authorization != conn.authorization:  # a kept-alive connection sends the same header again
            conn.key, conn.authorization = key_of(authorization), authorization
        conn.tenant = self.tenant(conn.key)
        conn.weight = 1 + (len(conn.request) + len(conn.body)) // HEAVY_REQUEST_BYTES
        queue = self._waiting.get(conn.tenant)
        if queue is None:
            queue = self._waiting[conn.tenant] = deque()
        queue.append(conn)

    def next(self) -> Connection | None:
        """The request to run now, or None when every slot is taken or nothing waits."""
        if not self._waiting or self._in_flight >= self.slots:
            return None
        # the first of the least served whose next request fits in its share (one always may run)
        for tenant in sorted(self._waiting, key=self._running.__getitem__):
            queue = self._waiting[tenant]
            running = self._running[tenant]
            if running and running + queue[0].weight > self.per_tenant:
                continue
            conn = queue.popleft()
            if queue:
                self._waiting.move_to_end(tenant)
            else:
                del self._waiting[tenant]
            self._running[tenant] += conn.weight
            self._in_flight += 1
            return conn
        return None

    def tenant(self, key: str) -> str:
        """Whose ``key``'s requests are: its namespace once the app accepted the key itself and has not
        refused it since, else "" (every unproven request together)."""
        return self._accepted.get(key, "") if key else ""

    def done(self, conn: Connection) -> None:
        """``conn``'s request was answered (``conn.status``, None when the app did not answer it)."""
        self._in_flight -= 1
        self._running[conn.tenant] -= conn.weight
        if not self._running[conn.tenant]:
            del self._running[conn.tenant]
        if not conn.key or conn.status is None or conn.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
            return  # a failure proves nothing (a key registry that cannot be read fails every key)
        if conn.status == HTTPStatus.UNAUTHORIZED:
            self._accepted.pop(conn.key, None)  # revoked, or never valid
            return
        self._accepted[conn.key] = self._accepted.get(conn.key) or namespace_of(conn.key)
        self._accepted.move_to_end(conn.key)
        if len(self._accepted) > MAX_KNOWN_KEYS:
            self._accepted.popitem(last=False)


def eviction_order(connections: Iterable[Connection], tenant: Callable[[str], str], stalled_before: float) -> list[Connection]:
    """The connections waiting on the main loop that hold a place without using it, in the order they
    are closed at the connection limit (:meth:`BufferingWorker._evict_unused`).

    First the kept-alive ones of clients without a key the app has accepted, idle longest first: closing
    one loses nothing. Then one at a time from whoever holds the most connections left (a tenant, every
    key of its namespace the app accepted together, or every client without an accepted key together;
    ``tenant`` tells whose a key is, as :meth:`FairDispatch.tenant` does), each time counting all of
    them, used or not: its kept-alive ones, idle longest first, then its requests (head or body) still
    incomplete at ``stalled_before`` (:data:`STALLED_HEAD` after they began), oldest first. A request
    begun since is left to finish, and one that completed is never here (it waits for a thread). Once
    whoever holds the most has nothing left unused, nobody else gives up a place: it would be the one
    of someone holding fewer. Counted per key, a project's connections spread over two keys counted as
    two holders of half as many.

    So the holder of many places gives them up before anyone else gives up one. Before, the requests of
    clients without an accepted key were closed first, the tenants' idle connections next, and a
    tenant's request being read never: one accepted key holding a thousand connections, each with a
    complete head declaring 1 MiB and one byte of it, closed another tenant's kept-alive connection and
    kept its new ones waiting 25 s in the listen backlog (each of those bodies had 26 s to finish)."""
    counts: Counter[str] = Counter()
    unproven_idle: list[Connection] = []
    unused: dict[str, list[Connection]] = {}
    keys: dict[bytes, str] = {}  # each Authorization header read once (many connections send the same)
    for conn in connections:
        if conn.draining:
            continue
        authorization = conn.framing.authorization
        if conn.idle or authorization is None:
            key = conn.key  # a kept-alive connection's last request's key ("" for a new connection)
        elif (key := keys.get(authorization)) is None:
            key = keys[authorization] = key_of(authorization)
        holder = tenant(key)
        counts[holder] += 1
        if conn.idle and not holder:
            unproven_idle.append(conn)
        elif conn.idle or conn.began <= stalled_before:
            unused.setdefault(holder, []).append(conn)
    unproven_idle.sort(key=lambda c: c.began)
    counts[""] -= len(unproven_idle)
    for conns in unused.values():
        conns.sort(key=lambda c: (not c.idle, c.began))
        conns.reverse()  # the first to close last, to pop
    # the holder with the most connections first; among equals, those with one unused, then clients
    # without an accepted key, then by tenant
    most = [(-held, holder not in unused, holder != "", holder) for holder, held in counts.items()]
    heapq.heapify(most)
    order = unproven_idle
    while most:
        held, _, keyed, holder = heapq.heappop(most)
        conns = unused.get(holder)
        if not conns:
            break  # whoever holds the most uses all it holds: nobody else gives up a place for it
        order.append(conns.pop())
        heapq.heappush(most, (held + 1, not conns, keyed, holder))
    return order


class _HeadHeld:
    """The socket a response is written to, as gunicorn's thread sees it: its first write, the status
    line and headers, is held and goes out with the body's first bytes in one send. Two sends cost
    another syscall and, on a socket with a timeout, another poll, each dropping the GIL: a trivial
    app under load took 0.35-0.37 ms of CPU a request this way against 0.41-0.43. Anything still held
    goes out at :meth:`flush`; any other use of the socket sends it first. A streamed body's head
    waits for its first chunk: the event stream of a thorough Context yields its first event at once,
    and /mcp answers no long-lived streams (GET is 405)."""

    __slots__ = ("_head", "_sock", "status")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._head: bytes | None = None  # None until the first write
        self.status: int | None = None  # read from the status line

    def sendall(self, data: bytes) -> None:
        if self._head is None:
            self._head = bytes(data)
            with contextlib.suppress(ValueError):
                self.status = int(self._head[9:12])  # b"HTTP/1.1 200 OK\r\n..."
            return
        head, self._head = self._head, b""
        self._sock.sendall(head + data if head else data)

    def flush(self) -> None:
        head, self._head = self._head, b""
        if head:
            self._sock.sendall(head)

    def __getattr__(self, name: str) -> Any:
        self.flush()
        return getattr(self._sock, name)


class SettledConfig:
    """gunicorn's Config as a worker's requests read it: each setting's value read once, then held.
    Config answers every read of a setting through ``__getattr__`` and the setting's ``get()``, and
    a request reads 27 of them (the parser, the environ, the response): a tenth of the instructions
    of a pool thread's POST of a Record, DuckDB aside. A worker's settings never change (a reload
    starts new workers); what is not a setting (``settings``, ``set``, ``forwarded_allow_networks``,
    properties) is read from the Config itself every time.

    The request parser is always gunicorn's Python one: its default, "auto", silently takes the C
    parser (gunicorn_h1c) wherever that package is installed, and the front's limits and framing
    checks, and the hostile-input tests, are written and run against the Python parser's behaviour."""

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg
        if "http_parser" in cfg.settings:
            self.__dict__["http_parser"] = "python"

    def __getattr__(self, name: str) -> Any:
        cfg = self._cfg
        value = getattr(cfg, name)
        if name in cfg.settings:
            self.__dict__[name] = value
        return value


class _Replying(NamedTuple):
    """What gunicorn's ``handle_request`` reads of a connection, with the response's socket."""

    sock: _HeadHeld
    client: Any
    server: Any


class BufferingWorker(ThreadWorker):
    """gthread whose threads only ever see complete requests (see the module docstring)."""

    #: Seconds for a head, the base of a body's deadline, and the bound of one response write.
    client_timeout = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: dict[Connection, None] = {}  # waiting on the poller: reading or draining
        self.dispatch = FairDispatch(self.cfg.threads)
        self.held = 0  # bytes read of requests not yet answered, over every connection (BUFFER_BUDGET)
        self._accept_paused_until = 0.0  # out of file descriptors: accept nothing until then
        self._next_sweep = 0.0
        self._next_notify = 0.0
        self._turn = 0  # turns of the main loop that read from connections (see READS_PER_TURN)
        self._docs_base = "https://docs.brainstore.dev"

    @classmethod
    def configured(cls, client_timeout: float) -> type[BufferingWorker]:
        """A subclass with these settings, for gunicorn's ``worker_class``."""
        return type(cls.__name__, (cls,), {"client_timeout": float(client_timeout)})

    def init_process(self) -> None:
        self.cfg = SettledConfig(self.cfg)  # in the worker's own process, whose settings are final
        if self.cfg.is_ssl:
            raise RuntimeError("BufferingWorker serves plain HTTP: terminate TLS in the reverse proxy")
        # The CLI validated the configuration; a bad one is reported by the app itself.
        with contextlib.suppress(ValueError):
            self._docs_base = Config.from_env().docs_base
        self.worker_connections = connection_limit(self.cfg.worker_connections)
        if self.worker_connections < self.cfg.worker_connections:
            self.log.warning(
                "Serving at most %d connections at once: the open-file limit (ulimit -n) leaves no room for %d",
                self.worker_connections,
                self.cfg.worker_connections,
            )
        gc.set_threshold(YOUNG_COLLECTION_AT, *gc.get_threshold()[1:])
        super().init_process()

    def notify(self) -> None:
        """The heartbeat, at most every :data:`NOTIFY_INTERVAL` seconds. gunicorn calls it on every
        turn of the main loop, right after a request was handed to a thread: its utime() releases the
        GIL, the request thread takes it, and the main loop then waits for it back before it can block
        in select(), costing the request a forced GIL switch (visible in py-spy as the main thread
        waiting in notify, about 4% of a serving process's samples)."""
        now = time.monotonic()
        if now >= self._next_notify:
            self._next_notify = now + NOTIFY_INTERVAL
            super().notify()

    # --- the main loop: accept, read, hand over ---------------------------------------------------
    def accept(self, listener: socket.socket) -> None:
        """Take the connections waiting in the listen backlog, up to the connection limit and
        :data:`ACCEPT_BATCH`. gunicorn takes one each time the listener is readable, once a turn of
        the main loop: behind the 900 connections one key opened at once, each sending 1 MiB POSTs,
        another tenant's new connection waited 12-19 s in the backlog, one turn (64 KiB read from each
        of hundreds of connections) per connection ahead of it."""
        for _ in range(ACCEPT_BATCH):
            if self._no_room(time.monotonic()) or not self._accept_one(listener):
                return

    def _accept_one(self, listener: socket.socket) -> bool:
        """Take one connection from the backlog: whether there was one."""
        try:
            sock, client = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                self._out_of_descriptors(exc)
                return False
            if exc.errno == errno.ECONNABORTED:
                return True  # that one is gone: the next may be there
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise
            return False
        self.nr_conns += 1
        sock.setblocking(False)
        conn = Connection(sock, client, listener.getsockname())
        conn.began = time.monotonic()
        conn.deadline = conn.began + self.client_timeout
        self._wait_for_request(conn)
        return True

    def _out_of_descriptors(self, exc: OSError) -> None:
        """accept() found no file descriptor free (other files took what the connection limit left):
        accept nothing for :data:`ACCEPT_PAUSE` seconds, the pending connections waiting in the
        listen backlog, and close connections that hold a place unused to make room."""
        self.log.warning("Not accepting connections for %.1f s: %s", ACCEPT_PAUSE, exc)
        self._accept_paused_until = time.monotonic() + ACCEPT_PAUSE
        self.set_accept_enabled(False)
        self._evict_unused()

    def set_accept_enabled(self, enabled: bool) -> None:
        """gunicorn's loop enables accepting whenever connections are under the limit; not while paused."""
        if enabled and time.monotonic() < self._accept_paused_until:
            return
        super().set_accept_enabled(enabled)

    def _evict_unused(self) -> None:
        """Close connections that hold a place without using it, at most 1/:data:`EVICT_SHARE` of
        the limit at once, in :func:`eviction_order`. Anyone can open such connections (no key
        needed, or with one key): they would otherwise keep every new client out for their whole
        keepalive, or request deadline, again and again."""
        order = eviction_order(self.connections, self.dispatch.tenant, time.monotonic() - STALLED_HEAD)
        for conn in order[: max(1, self.worker_connections // EVICT_SHARE)]:
            self._drop(conn)

    def _no_room(self, now: float) -> bool:
        """Whether a new connection cannot be taken now: the limit is reached, or descriptors ran out."""
        return self.nr_conns >= self.worker_connections or now < self._accept_paused_until

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """One turn of the main loop: what is ready is handled, the listeners and the threads'
        callbacks first, then reads from at most :data:`READS_PER_TURN` connections, those read least
        recently first (a new connection, or a kept-alive one's next request, before bodies read in
        the last turns); the rest stay readable and are read in the next turns, each of n within
        n / :data:`READS_PER_TURN` turns, rounded up. gunicorn's ran every callback in turn: with hundreds
        of connections sending bodies, a turn read 64 KiB from each, and a new connection waited one
        such turn to be accepted and another to be read. Waking every sweep while there is no room
        for a connection: the listeners are off then, and nothing else may wake the loop for a
        second."""
        if self._no_room(time.monotonic()):
            timeout = min(timeout, SWEEP_INTERVAL)
        try:
            events = self.poller.select(timeout)
        except InterruptedError:
            return
        readable = []
        for key, _ in events:
            if isinstance(key.data, Connection):
                readable.append(key.data)
            else:
                key.data(key.fileobj)
        if not readable:
            return
        if len(readable) > READS_PER_TURN:
            readable.sort(key=lambda c: c.read_turn)
            del readable[READS_PER_TURN:]
        self._turn += 1
        for conn in readable:
            if conn in self.connections:  # not closed by an earlier callback of this turn
                conn.read_turn = self._turn
                self._on_readable(conn)

    def enqueue_req(self, conn: Connection) -> None:  # type: ignore[override]
        self.dispatch.add(conn)
        self._run_waiting()

    def _run_waiting(self) -> None:
        while (conn := self.dispatch.next()) is not None:
            super().enqueue_req(conn)

    def _wait_for_request(self, conn: Connection) -> None:
        if self._complete(conn):
            self.enqueue_req(conn)
            return
        self.connections[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, conn)

    def _on_readable(self, conn: Connection) -> None:
        # An exception escaping a poller callback would end the worker, and every connection with it.
        try:
            self._read(conn)
        except Exception:
            self.log.exception("Error reading a request: closing the connection")
            self._drop(conn)

    def _read(self, conn: Connection) -> None:
        try:
            data = conn.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if conn.draining:
            conn.drained += len(data)
            if not data or conn.drained >= DRAIN_BYTES:
                self._drop(conn)
            return
        if not data:
            self._drop(conn)
            return
        if conn.idle:
            # The first byte of a kept-alive connection's next request: the head deadline starts.
            conn.idle = False
            conn.began = time.monotonic()
            conn.deadline = conn.began + self.client_timeout
        conn.buf += data
        if self._complete(conn):
            self._unwatch(conn)
            self.enqueue_req(conn)
        if self.held > BUFFER_BUDGET:
            self._make_room()

    def _count(self, conn: Connection) -> None:
        """Count what ``conn`` holds now (its buffer, a chunked body decoded so far, its complete
        request) in the worker's total."""
        held = len(conn.buf) + len(conn.framing.body) + len(conn.request) + len(conn.body)
        self.held += held - conn.held
        conn.held = held

    def _uncount(self, conn: Connection) -> None:
        self.held -= conn.held
        conn.held = 0

    def _make_room(self) -> None:
        """Over :data:`BUFFER_BUDGET`: refuse the requests still being read that began longest ago
        until the rest fit, each with an ``http_429`` reply, and close their connections.
        A complete request is never refused here: a thread takes it soon. Whoever holds the buffer
        with requests it does not finish has to keep sending to hold it (a new request pushes the
        oldest out), and a client or proxy that sends its request at once is the newest."""
        reading = sorted((c for c in self.connections if c.held and not c.idle and not c.draining), key=lambda c: c.began)
        for conn in reading:
            if self.held <= BUFFER_BUDGET:
                return
            self._unwatch(conn)
            with contextlib.suppress(OSError):  # a few hundred bytes into a socket not written to yet
                conn.sock.send(self._error_bytes(self._busy()))
            self._drain_then_close(conn)

    @staticmethod
    def _busy() -> BrainstoreError:
        """The spec's refusal for too many requests below the route layer (nothing interpreted yet)."""
        refusal = from_falcon(falcon.HTTPTooManyRequests())
        refusal.extra["retry_after_seconds"] = BUSY_RETRY
        return refusal

    def _complete(self, conn: Connection) -> bool:
        """Whether the request at the front of the buffer is complete: then it is ``conn.request``
        (its head) and ``conn.body``."""
        framing = conn.framing
        had_head = framing.head_end is not None
        end = framing.advance(conn.buf)
        self._count(conn)
        if not had_head and framing.head_end is not None and framing.refusal is None:
            body_seconds = (framing.length or (MAX_BODY if framing.chunked else 0)) / MIN_BODY_RATE
            conn.deadline = time.monotonic() + self.client_timeout + body_seconds
        if end is None:
            if framing.expects_continue and framing.wants_body and not conn.continue_sent:
                conn.continue_sent = True
                with contextlib.suppress(OSError):
                    conn.sock.send(_CONTINUE)  # a few bytes into an empty send buffer
            return False
        head_end = min(framing.head_end or end, end)
        conn.request = bytes(conn.buf[:head_end])
        if framing.chunked:
            conn.body = bytes(framing.body)
            framing.body.clear()
        else:
            conn.body = bytes(conn.buf[head_end:end])
        del conn.buf[:end]
        self._count(conn)
        return True

    def _unwatch(self, conn: Connection) -> None:
        self.connections.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)

    def _drop(self, conn: Connection) -> None:
        self._unwatch(conn)
        self._uncount(conn)
        self.nr_conns -= 1
        conn.close()

    def _drain_then_close(self, conn: Connection) -> None:
        """Half-close and read what the client still sends, on the poller, briefly."""
        self._uncount(conn)
        try:
            conn.sock.setblocking(False)
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._drop(conn)
            return
        conn.draining = True
        conn.deadline = time.monotonic() + DRAIN_SECONDS
        self.connections[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, conn)

    def finish_request(self, conn: Connection, fs: Future[Any]) -> None:  # type: ignore[override]
        """Back on the main loop after a thread answered: next request, or close; and the request
        waiting next, on the thread this one freed."""
        self.dispatch.done(conn)
        try:
            keepalive = bool(fs.result()) if not fs.cancelled() else False
        except Exception:
            keepalive = False
        try:
            self._after_response(conn, keepalive)
        except Exception:
            self.log.exception("Error after a response: closing the connection")
            self._drop(conn)
        self._run_waiting()

    def _after_response(self, conn: Connection, keepalive: bool) -> None:
        if keepalive and self.alive:
            try:
                conn.sock.setblocking(False)
            except OSError:
                self._drop(conn)
                return
            conn.next_request()
            conn.idle = not conn.buf
            conn.began = time.monotonic()
            conn.deadline = conn.began + (self.cfg.keepalive if conn.idle else self.client_timeout)
            self._wait_for_request(conn)
        else:
            self._drain_then_close(conn)

    def murder_keepalived(self, force: bool = False) -> None:
        """Close every waiting connection past its deadline (all of them when forced)."""
        now = time.monotonic()
        if not force and now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL
        for conn in [c for c in self.connections if force or c.deadline <= now]:
            self._drop(conn)
        if self._no_room(now):
            self._evict_unused()

    def _cap_keepalive(self, deadline: float) -> None:
        """Stopping: idle connections (nothing read of a next request) close by ``deadline``."""
        for conn in self.connections:
            if conn.idle:
                conn.deadline = min(conn.deadline, deadline)

    # --- a pool thread: parse from memory, run the app, write -------------------------------------
    def handle(self, conn: Connection) -> bool:  # type: ignore[override]
        req = None
        reply: _HeadHeld | None = None
        try:
            conn.sock.settimeout(self.client_timeout)  # blocking, each operation bounded
            if conn.framing.refusal is not None:
                self._write_error(conn.sock, conn.framing.refusal)
                return False
            # The parser reads the buffered head, never the socket: it cannot block on the client.
            conn.parser = http.get_parser(self.cfg, [conn.request], conn.client)
            req = next(conn.parser)
            if conn.framing.unsure:
                # The parser took the head, but the body's framing is broken (a bad chunk): refused
                # here, before routing, like a bad head.
                self._write_error(conn.sock, from_falcon(falcon.HTTPBadRequest()))
                return False
            # The body the front read (see Framing), in place of the reader the parser set up.
            req.body = Body(io.BytesIO(conn.body))
            # The front already answered an Expect: 100-continue while it read the body.
            req._expected_100_continue = False
            reply = _HeadHeld(conn.sock)
            try:
                answered = self.handle_request(req, _Replying(reply, conn.client, conn.server))
            finally:
                conn.status = reply.status
                reply.flush()
            if not answered:
                return False
            if not conn.parser.finish_body():
                return False
            # A request the parser ended earlier than the front did leaves bytes unread: the next
            # request's start is then unknown, so the connection closes.
            return not conn.parser.unreader.buf.getvalue()
        except (NoMoreData, StopIteration):
            return False
        except TimeoutError:
            self.log.debug("A client did not read its response in %.0f s: closing", self.client_timeout)
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
            return False
        except Exception as exc:
            if reply is not None and reply.status is not None:
                # A response has begun: another one after it would be read as the reply to the next
                # request on the connection. Closing is all that is left.
                self.log.exception("Error after a response began: closing the connection")
                return False
            self.handle_error(req, conn.sock, conn.client, exc)
            return False

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        """gunicorn's refusals and failures as the spec's Error body, never its HTML page."""
        client_error = isinstance(exc, ParseException) and not isinstance(
            exc, InvalidResponseHeader | InvalidResponseHeaderName | ConfigurationProblem
        )
        if client_error:
            self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
            refusal = from_falcon(falcon.HTTPBadRequest())
        else:
            self.log.exception("Error handling request")
            refusal = from_falcon(falcon.HTTPInternalServerError())
        with contextlib.suppress(OSError):
            self._write_error(client, refusal)

    def _write_error(self, sock: socket.socket, exc: BrainstoreError) -> None:
        sock.sendall(self._error_bytes(exc))

    def _error_bytes(self, exc: BrainstoreError) -> bytes:
        """A whole response carrying ``exc`` as the spec's Error body, closing the connection."""
        body = json.dumps(error_body(exc, new_id("trc"), self._docs_base)).encode()
        after = retry_after(exc)
        head = (
            f"HTTP/1.1 {exc.status} {HTTPStatus(exc.status).phrase}\r\nConnection: close\r\n"
            + (f"Retry-After: {after}\r\n" if after is not None else "")
            + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        return head + body
