"""Traces: bounded, in-process, recent only, and held per namespace (project and environment).

Invariants:
- One tenant can never evict another's traces: every namespace has its own ring, bounded by count
  (``capacity``) and by size (``namespace_bytes``). A request that failed before a valid key named its
  namespace is never held (nobody could read it, and it must not push a tenant's traces out). Within a
  ring, the Brain holding the most gives up its oldest trace first: keys bound to one Brain are
  tenants too.
- A trace is of one Brain, read only through it (getTrace, listTraces) and dropped with it. A failed
  request's is of the Brain it names (its path's, createBrain's body's; a bound key's own Brain when
  it named another); one that named none (an unknown route, a body that is not JSON) is never held:
  no Brain may read a trace it is not of.
- A trace's size is bounded (``trace_bytes``, its JSON): an oversized one keeps its summary (lanes,
  budget, cost) and drops the per-chunk scores first, then the quoted context, saying so.
- A trace is held as its JSON bytes, one object the garbage collector never walks. Held as dicts, a
  Context's trace on a Brain of 100,000 chunks was about 3,000 small objects for every collection to
  walk, and estimating its size walked them again on the request thread.
- Nothing outlives the data it quotes: forgetting a Record drops every trace that cites it, forgetting a
  Brain drops all of its traces.
- The number of namespaces held is bounded too; the one least recently written is dropped first.
- Nothing a tenant reads depends on another's traffic: listTraces' cursors count the traces of their
  own namespace only (one count for every namespace told a tenant how many requests the others made
  between two of its pages).
- A fast Context's trace is written after its response, its place reserved before (``reserve``,
  ``write``): a reader waits for it, a delete drops the place, and what is written to a dropped place
  is dropped with it.
- A Context takes a mark (``mark``) before it reads anything it may quote; a trace held with that mark
  (``add``, ``reserve``) is not held when a delete of its Brain or of a Record it names came after the
  mark, so a delete between the quoting and the holding leaves nothing behind either. Recent deletes
  are kept for this as hashes of what they deleted (Python's keyed string hash: no id is kept), at most
  ``RECENT_ERASURES``; a mark older than all of them holds nothing, nor does a colliding hash.
- Other processes on a shared database delete too: a Context's trace holds its Brain's uid (a Brain
  forgotten elsewhere and made again under its id is another Brain) and the change sequence it read,
  and :meth:`Traces.catch_up` drops the traces quoting a Record erased after it. It runs before a
  Brain's traces are read, so none is served once the erase committed, and at every scan of the
  shared queue for all of them, so none stays in memory either. A failed request's trace holds the
  uid of the Brain it resolved, if it got that far, and goes with that Brain's forget the same way
  (as does a Context's that names no Record); one that failed before quotes only the request.
- A restart clears everything (the spec's "bounded in-process buffer").
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from brainstore.errors import invalid

DEFAULT_TRACE_BYTES = 1 << 20  # a budget of 100,000 tokens quotes about 400 KB of text
DEFAULT_NAMESPACE_BYTES = 64 << 20
DEFAULT_NAMESPACES = 4096
# Deletes remembered for the traces of Contexts still being assembled (see Traces.mark): a Context takes
# milliseconds, so only a flood of deletes during one makes its mark older than all of them.
RECENT_ERASURES = 4096
# Seconds a reader waits for a reserved trace: it is written right after its response, in well under
# a millisecond, so only a stuck writer would make anyone wait this long.
RESERVED_WAIT = 2.0
# A followed Brain's point of no Record erasures to check: its traces name none, only its forget concerns
# them (the largest change sequence a store holds).
NOTHING_NAMED = (1 << 63) - 1

#: For each Brain uid asked about: None when the Brain no longer exists, else its change sequence now
#: and the Records erased after the number asked (SharedStore.erasures_since).
ErasuresSince = Callable[[Mapping[str, int]], Mapping[str, "tuple[int, Collection[str]] | None"]]


@dataclass(frozen=True)
class _Held:
    seq: int
    brain_id: str
    trace: bytes | None  # JSON; None while reserved (see Traces.reserve)
    record_ids: frozenset[str]
    written: threading.Event | None = None  # set once a reserved trace is written or dropped
    brain_uid: str | None = None  # the Brain a Context read, or a failed request resolved
    head: int = 0  # a Context's: the Brain's change sequence it read at

    @property
    def size(self) -> int:
        return len(self.trace) if self.trace is not None else 0

    @property
    def follows(self) -> bool:
        """Whether a forget elsewhere can concern it: a trace of a known Brain."""
        return self.brain_uid is not None

    @property
    def checked_from(self) -> int:
        """The change sequence after which its Brain's Record erasures concern it."""
        return self.head if self.record_ids else NOTHING_NAMED


@dataclass
class _Followed:
    """A Brain the held traces are of: how many, and the change sequence after which its erasures
    have not all been checked against them (NOTHING_NAMED: none names a Record)."""

    namespace: str
    traces: int
    since: int


@dataclass
class _Ring:
    """A namespace's traces, oldest first, with what each of its Brains holds of them."""

    items: OrderedDict[str, _Held] = field(default_factory=OrderedDict)
    size: int = 0
    # Each Brain's newest trace's number: the order listTraces' cursors name. A Brain's own, so that a
    # key bound to one Brain cannot count, from two of its cursors, the requests made to another.
    seqs: dict[str, int] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)  # by Brain id
    sizes: Counter[str] = field(default_factory=Counter)

    def next_seq(self, brain_id: str) -> int:
        seq = self.seqs[brain_id] = self.seqs.get(brain_id, 0) + 1
        return seq

    def put(self, trace_id: str, held: _Held) -> None:
        """``held`` as ``trace_id``: the newest, or in the place of the one it fills (same Brain)."""
        old = self.items.get(trace_id)
        if old is not None:
            self._uncount(old)
        self.items[trace_id] = held
        self.size += held.size
        self.counts[held.brain_id] += 1
        self.sizes[held.brain_id] += held.size

    def pop(self, trace_id: str) -> _Held:
        held = self.items.pop(trace_id)
        self._uncount(held)
        return held

    def _uncount(self, held: _Held) -> None:
        self.size -= held.size
        self.counts[held.brain_id] -= 1
        self.sizes[held.brain_id] -= held.size
        if not self.counts[held.brain_id]:
            del self.counts[held.brain_id], self.sizes[held.brain_id]

    def victim(self, over_count: bool, newest: str) -> str:
        """The trace to give up: the oldest of the Brain that holds the most of what is over (traces,
        or bytes), between equals the Brain of the ``newest`` trace. One Brain's traffic, a bound key's
        failed requests among it, then pushes out its own traces, not the other Brains'."""
        heaviest = self.counts if over_count else self.sizes
        brain_id = max(heaviest, key=lambda b: (heaviest[b], b == newest))
        return next(trace_id for trace_id, held in self.items.items() if held.brain_id == brain_id)


class _WrittenByJson(bytes):
    """A trace's JSON as json wrote it (:func:`encoded`'s last resort), read back by json too: orjson
    reads an integer beyond 64 bits as a float (2**70 came back as 1.1805916207174113e+21), and one
    beyond a double not at all (every read of its Brain's traces answered 500)."""


def encoded(trace: dict[str, Any]) -> bytes:
    """A trace as the JSON its reader gets (keys that are not strings become strings, as json does).
    Never raises: an unexpected type is held as its ``str``, and a lone surrogate (requests with one
    are refused, but a trace must never turn a 400 into a 500) as ``?``. :func:`decoded` reads it back
    as it was: an integer beyond 64 bits (an Object's value may hold one), which orjson does not
    write, is written by json and read back by json."""
    try:
        # Keys are strings but in rare traces; checking every key costs about half of an encoding.
        return orjson.dumps(trace, default=str)
    except TypeError:
        pass
    try:
        return orjson.dumps(trace, option=orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:
        return _WrittenByJson(json.dumps(trace, ensure_ascii=False, default=str).encode("utf-8", "replace"))


def decoded(data: bytes) -> dict[str, Any]:
    """A trace :func:`encoded` wrote, as it was written."""
    return json.loads(data) if isinstance(data, _WrittenByJson) else orjson.loads(data)  # type: ignore[no-any-return]


def _cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"t{seq}".encode()).decode().rstrip("=")


def _read_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        if not raw.startswith("t") or not raw[1:].isdigit() or len(raw) > 24 or _cursor(int(raw[1:])) != cursor:
            raise ValueError  # only the exact form this endpoint issues
        return int(raw[1:])
    except (ValueError, UnicodeError, binascii.Error):
        raise invalid("cursor", "is not a cursor this endpoint issued") from None


def _wait_written(held: _Held, seconds: float) -> None:
    """Until the reserved ``held`` is written or dropped, at most ``seconds``."""
    if held.written is not None:
        held.written.wait(max(0.0, seconds))


class Traces:
    def __init__(
        self,
        capacity: int,
        *,
        trace_bytes: int = DEFAULT_TRACE_BYTES,
        namespace_bytes: int = DEFAULT_NAMESPACE_BYTES,
        namespaces: int = DEFAULT_NAMESPACES,
        erasures_since: ErasuresSince | None = None,
    ) -> None:
        self.capacity = max(1, capacity)
        self.trace_bytes = trace_bytes
        self.namespace_bytes = max(namespace_bytes, trace_bytes)
        self.max_namespaces = max(1, namespaces)
        self._lock = threading.Lock()
        self._rings: OrderedDict[str, _Ring] = OrderedDict()
        # (mark, hash of (namespace, brain_id) or of (namespace, brain_id, record_id), whole Brain), oldest first
        self._erasures: deque[tuple[int, int, bool]] = deque(maxlen=RECENT_ERASURES)
        self._erased = 0  # the mark of the newest erasure
        self._erasures_since = erasures_since  # None: no other process deletes
        self._followed: dict[str, _Followed] = {}

    def mark(self) -> int:
        """Taken before a Context reads what it may quote: pass it to :meth:`add` or :meth:`reserve`."""
        with self._lock:
            return self._erased

    def _erased_since(self, mark: int, namespace: str, brain_id: str | None, record_ids: frozenset[str]) -> bool:
        """Under the lock: whether a delete after ``mark`` took this Brain or a Record of ``record_ids``
        (or may have: ``mark`` is older than every delete kept)."""
        if mark >= self._erased:
            return False
        if mark + 1 < self._erasures[0][0]:  # deletes after the mark were pushed out: maybe
            return True
        brain = hash((namespace, brain_id))
        named: set[int] | None = None
        for at, erased, whole_brain in reversed(self._erasures):
            if at <= mark:
                return False
            if whole_brain:
                if erased == brain:
                    return True
                continue
            if named is None:
                named = {hash((namespace, brain_id, record_id)) for record_id in record_ids}
            if erased in named:
                return True
        return False

    def add(
        self,
        trace_id: str,
        namespace: str | None,
        brain_id: str | None,
        trace: dict[str, Any],
        record_ids: frozenset[str] = frozenset(),
        mark: int | None = None,
        *,
        brain_uid: str | None = None,
        head: int = 0,
        replace: bool = True,
    ) -> bool:
        """Hold a trace; with the ``mark`` its Context took first, only if nothing it names was deleted
        since. A Context's names its Brain's uid and the change sequence it read at. Without
        ``replace``, not in the place of a trace held under ``trace_id`` already. Whether it is held."""
        if namespace is None or brain_id is None:
            return False  # failed before a valid key or a Brain was named: nobody may read it
        data = self._bounded(trace)  # encoded outside the lock
        with self._lock:
            if mark is not None and self._erased_since(mark, namespace, brain_id, record_ids):
                return False
            if not replace and trace_id in (self._rings.get(namespace) or _Ring()).items:
                return False
            ring = self._ring(namespace)
            self._hold(trace_id, namespace, ring, _Held(ring.next_seq(brain_id), brain_id, data, record_ids, None, brain_uid, head))
        return True

    def reserve(
        self,
        trace_id: str,
        namespace: str,
        brain_id: str,
        record_ids: frozenset[str],
        mark: int,
        *,
        brain_uid: str | None = None,
        head: int = 0,
    ) -> None:
        """Hold a trace's place before it is written (:meth:`write`): readers of it wait for it, and
        forgetting what it will quote drops the place, so the trace written later is dropped too. A
        Context's trace is written after its response (the API runs it then), and a client that reads
        it at once must still find it. Nothing is held when what it names was deleted since ``mark``."""
        with self._lock:
            if self._erased_since(mark, namespace, brain_id, record_ids):
                return
            ring = self._ring(namespace)
            place = _Held(ring.next_seq(brain_id), brain_id, None, record_ids, threading.Event(), brain_uid, head)
            self._hold(trace_id, namespace, ring, place)

    def write(self, trace_id: str, namespace: str, trace: dict[str, Any] | None) -> None:
        """Fill the place :meth:`reserve` held (``None``: give it up); nothing when it was dropped
        meanwhile (its Records or Brain forgotten, or pushed out of the ring)."""
        place = self._place(trace_id, namespace)
        if place is None:
            return
        data = None
        try:
            data = self._bounded(trace) if trace is not None else None
        finally:
            self._release(trace_id, namespace, place, data)

    def _place(self, trace_id: str, namespace: str) -> _Held | None:
        with self._lock:
            ring = self._rings.get(namespace)
            held = ring.items.get(trace_id) if ring is not None else None
        return held if held is not None and held.trace is None else None

    def _release(self, trace_id: str, namespace: str, place: _Held, data: bytes | None) -> None:
        """The reserved ``place`` becomes ``data`` (None: it goes), if it is still held."""
        assert place.written is not None
        with self._lock:
            ring = self._rings.get(namespace)
            if ring is not None and ring.items.get(trace_id) is place:
                if data is None:
                    ring.pop(trace_id)
                    self._gone([place])
                else:
                    # in its place, so the ring's order stays the order the Contexts were answered in
                    ring.put(trace_id, dataclasses.replace(place, trace=data, written=None))
                    self._evict(ring, place.brain_id)
        place.written.set()

    def _ring(self, namespace: str) -> _Ring:
        """Under the lock: the namespace's ring, made if need be, now the most recently written."""
        ring = self._rings.get(namespace)
        if ring is None:
            ring = self._rings[namespace] = _Ring()
            while len(self._rings) > self.max_namespaces:
                _, dropped = self._rings.popitem(last=False)
                self._gone(dropped.items.values())
        self._rings.move_to_end(namespace)
        return ring

    def _hold(self, trace_id: str, namespace: str, ring: _Ring, held: _Held) -> None:
        """Under the lock: ``held`` as ``trace_id``, newest, in ``namespace``'s ``ring``."""
        old = ring.pop(trace_id) if trace_id in ring.items else None
        if old is not None:
            self._gone([old])
        ring.put(trace_id, held)
        if held.follows:
            assert held.brain_uid is not None
            followed = self._followed.get(held.brain_uid)
            if followed is None:
                self._followed[held.brain_uid] = _Followed(namespace, 1, held.checked_from)
            else:
                followed.traces += 1
                followed.since = min(followed.since, held.checked_from)
        self._evict(ring, held.brain_id)

    def _evict(self, ring: _Ring, newest: str) -> None:
        while len(ring.items) > self.capacity or ring.size > self.namespace_bytes:
            self._gone([ring.pop(ring.victim(len(ring.items) > self.capacity, newest))])

    def _gone(self, items: Iterable[_Held]) -> None:
        """Under the lock, for what left the rings: wake whoever waits for these places, and stop
        following the Brains no held trace quotes any more."""
        for held in items:
            if held.written is not None:
                held.written.set()
            if held.follows:
                assert held.brain_uid is not None
                followed = self._followed[held.brain_uid]
                followed.traces -= 1
                if not followed.traces:
                    del self._followed[held.brain_uid]

    def _bounded(self, trace: dict[str, Any]) -> bytes:
        data = encoded(trace)
        if len(data) <= self.trace_bytes:
            return data
        trace = {**trace, "scores": [], "truncated": True}
        data = encoded(trace)
        if len(data) > self.trace_bytes and isinstance(trace.get("context"), dict):
            trace["context"] = None
            trace["citations"] = []
            data = encoded(trace)
        return data

    def get(self, trace_id: str, namespace: str, brain_id: str, brain_uid: str | None = None) -> dict[str, Any] | None:
        held = self._lookup(trace_id, namespace)
        if held is not None and held.trace is None:
            _wait_written(held, RESERVED_WAIT)
            held = self._lookup(trace_id, namespace)
            if held is not None and held.trace is None:
                return None
        if held is None or not _of(held, brain_id, brain_uid):
            return None
        return decoded(held.trace)

    def page(
        self,
        namespace: str,
        brain_id: str,
        limit: int,
        cursor: str | None = None,
        brain_uid: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A Brain's traces, newest first, and the cursor of the next page (None on the last)."""
        before = _read_cursor(cursor) if cursor is not None else None
        held = self._listed(namespace)
        reserved = [item for item in held if item.trace is None and _of(item, brain_id, brain_uid)]
        if reserved:
            deadline = time.monotonic() + RESERVED_WAIT
            for item in reserved:
                _wait_written(item, deadline - time.monotonic())
            held = self._listed(namespace)
        found: list[tuple[int, bytes]] = []  # (seq, trace) of written traces
        for item in reversed(held):
            if not _of(item, brain_id, brain_uid):
                continue
            if item.trace is None or (before is not None and item.seq >= before):
                continue
            found.append((item.seq, item.trace))
            if len(found) > limit:
                break
        more = len(found) > limit
        found = found[:limit]
        return [decoded(trace) for _, trace in found], (_cursor(found[-1][0]) if more else None)

    def _lookup(self, trace_id: str, namespace: str) -> _Held | None:
        with self._lock:
            ring = self._rings.get(namespace)
            return ring.items.get(trace_id) if ring is not None else None

    def _listed(self, namespace: str) -> list[_Held]:
        with self._lock:
            ring = self._rings.get(namespace)
            return list(ring.items.values()) if ring is not None else []

    def erase_brain(self, namespace: str, brain_id: str) -> None:
        self._drop(namespace, brain_id, None, lambda h: h.brain_id == brain_id)
        with self._lock:
            ring = self._rings.get(namespace)
            if ring is not None:
                ring.seqs.pop(brain_id, None)  # how many requests it had is the forgotten Brain's too

    def erase_record(self, namespace: str, brain_id: str, record_id: str) -> None:
        """Drop every trace of the Brain that quotes or cites ``record_id``."""
        self._drop(namespace, brain_id, record_id, lambda h: h.brain_id == brain_id and record_id in h.record_ids)

    def _drop(self, namespace: str, brain_id: str, record_id: str | None, doomed: Any) -> None:
        erased = hash((namespace, brain_id)) if record_id is None else hash((namespace, brain_id, record_id))
        with self._lock:
            self._erased += 1
            self._erasures.append((self._erased, erased, record_id is None))
            ring = self._rings.get(namespace)
            if ring is None:
                return
            self._drop_where(ring, doomed)

    def _drop_where(self, ring: _Ring, doomed: Callable[[_Held], bool]) -> None:
        """Under the lock."""
        for trace_id in [k for k, h in ring.items.items() if doomed(h)]:
            self._gone([ring.pop(trace_id)])

    # --- following other processes' deletes (a shared store) ---------------------------------------------
    def catch_up(self, brain_uid: str | None = None) -> None:
        """Drop the traces of what another process erased: of the Brain ``brain_uid`` (before its traces
        are read: the Records erased), or of every Brain (the shared queue's scan: the Records, and the
        Brains forgotten). One store read, and none when no held trace names a Record of ``brain_uid``."""
        if self._erasures_since is None:
            return
        with self._lock:
            if brain_uid is None:
                since = {uid: followed.since for uid, followed in self._followed.items()}
            else:
                followed = self._followed.get(brain_uid)
                if followed is None or followed.since == NOTHING_NAMED:
                    return
                since = {brain_uid: followed.since}
        if not since:
            return
        found = self._erasures_since(since)
        with self._lock:
            for uid, erasures in found.items():
                self._forget_erased(uid, erasures, since[uid])

    def _forget_erased(self, brain_uid: str, erasures: tuple[int, Collection[str]] | None, since: int) -> None:
        """Under the lock: drop the Brain's traces that quote a Record erased after ``since`` (all of them
        when ``erasures`` is None: the Brain was forgotten)."""
        followed = self._followed.get(brain_uid)
        if followed is None:
            return  # its traces all left meanwhile
        ring = self._rings.get(followed.namespace)
        if erasures is None:
            if ring is not None:
                self._drop_where(ring, lambda h: h.brain_uid == brain_uid)
            return
        head, erased = erasures
        if erased and ring is not None:
            self._drop_where(ring, lambda h: h.brain_uid == brain_uid and not h.record_ids.isdisjoint(erased))
        followed = self._followed.get(brain_uid)
        # A trace held meanwhile that read the Brain before ``since`` moved it back: not past it then.
        if followed is not None and followed.since == since:
            followed.since = max(since, head)


def _of(held: _Held, brain_id: str, brain_uid: str | None) -> bool:
    """Whether ``held`` is a trace of this Brain: a Context's, or a failed request's that resolved a
    Brain, of this very Brain (not of one forgotten before it under its id); another failed request's
    made on its id."""
    if held.brain_id != brain_id:
        return False
    return held.brain_uid is None or brain_uid is None or held.brain_uid == brain_uid
