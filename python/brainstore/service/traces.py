"""Traces: bounded, in-process, recent only, and held per namespace (project and environment).

Invariants:
- One tenant can never evict another's traces: every namespace has its own ring, bounded by count
  (``capacity``) and by size (``namespace_bytes``). A request that failed before a valid key named its
  namespace is never held (nobody could read it, and it must not push a tenant's traces out).
- A trace's size is bounded (``trace_bytes``): an oversized one keeps its summary (lanes, budget,
  cost) and drops the per-chunk scores first, then the quoted context, saying so.
- Nothing outlives the data it quotes: forgetting a Record drops every trace that cites it, forgetting a
  Brain drops all of its traces.
- The number of namespaces held is bounded too; the one least recently written is dropped first.
- A restart clears everything (the spec's "bounded in-process buffer").
"""

from __future__ import annotations

import base64
import binascii
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from brainstore.errors import invalid

DEFAULT_TRACE_BYTES = 1 << 20  # a budget of 100,000 tokens quotes about 400 KB of text
DEFAULT_NAMESPACE_BYTES = 64 << 20
DEFAULT_NAMESPACES = 4096


@dataclass
class _Held:
    seq: int
    brain_id: str | None
    trace: dict[str, Any]
    size: int
    record_ids: frozenset[str]


@dataclass
class _Ring:
    items: OrderedDict[str, _Held] = field(default_factory=OrderedDict)
    size: int = 0


def estimated_size(value: Any) -> int:
    """A cheap upper estimate of ``value``'s JSON size: the strings' lengths plus framing per item.

    Run on every Context on the request thread, so it walks the value once and never serializes it.
    """
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 8
        elif isinstance(item, dict):
            size += 4 + 16 * len(item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            size += 4 + 2 * len(item)
            stack.extend(item)
        else:
            size += 24
    return size


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


class Traces:
    def __init__(
        self,
        capacity: int,
        *,
        trace_bytes: int = DEFAULT_TRACE_BYTES,
        namespace_bytes: int = DEFAULT_NAMESPACE_BYTES,
        namespaces: int = DEFAULT_NAMESPACES,
    ) -> None:
        self.capacity = max(1, capacity)
        self.trace_bytes = trace_bytes
        self.namespace_bytes = max(namespace_bytes, trace_bytes)
        self.max_namespaces = max(1, namespaces)
        self._lock = threading.Lock()
        self._rings: OrderedDict[str, _Ring] = OrderedDict()
        self._seq = itertools.count(1)

    def add(
        self,
        trace_id: str,
        namespace: str | None,
        brain_id: str | None,
        trace: dict[str, Any],
        record_ids: frozenset[str] = frozenset(),
    ) -> None:
        if namespace is None:
            return  # failed before a valid key: no tenant may read it, none may lose a trace to it
        trace, size = self._bounded(trace)
        with self._lock:
            ring = self._rings.get(namespace)
            if ring is None:
                ring = self._rings[namespace] = _Ring()
                while len(self._rings) > self.max_namespaces:
                    self._rings.popitem(last=False)
            self._rings.move_to_end(namespace)
            old = ring.items.pop(trace_id, None)
            if old is not None:
                ring.size -= old.size
            ring.items[trace_id] = _Held(next(self._seq), brain_id, trace, size, record_ids)
            ring.size += size
            while len(ring.items) > self.capacity or ring.size > self.namespace_bytes:
                _, evicted = ring.items.popitem(last=False)
                ring.size -= evicted.size

    def _bounded(self, trace: dict[str, Any]) -> tuple[dict[str, Any], int]:
        size = estimated_size(trace)
        if size <= self.trace_bytes:
            return trace, size
        trace = {**trace, "scores": [], "truncated": True}
        size = estimated_size(trace)
        if size > self.trace_bytes and isinstance(trace.get("context"), dict):
            trace["context"] = None
            trace["citations"] = []
            size = estimated_size(trace)
        return trace, size

    def get(self, trace_id: str, namespace: str, brain_id: str) -> dict[str, Any] | None:
        with self._lock:
            ring = self._rings.get(namespace)
            held = ring.items.get(trace_id) if ring is not None else None
        # A failed request made before a Brain was resolved (brain_id None) is readable from any
        # Brain of its namespace; nothing of another namespace is ever readable.
        if held is None or (held.brain_id is not None and held.brain_id != brain_id):
            return None
        return held.trace

    def page(
        self, namespace: str, brain_id: str, limit: int, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A Brain's traces, newest first, and the cursor of the next page (None on the last)."""
        before = _read_cursor(cursor) if cursor is not None else None
        with self._lock:
            ring = self._rings.get(namespace)
            held = list(ring.items.values()) if ring is not None else []
        found: list[_Held] = []
        for item in reversed(held):
            if item.brain_id != brain_id or (before is not None and item.seq >= before):
                continue
            found.append(item)
            if len(found) > limit:
                break
        more = len(found) > limit
        found = found[:limit]
        return [h.trace for h in found], (_cursor(found[-1].seq) if more else None)

    def erase_brain(self, namespace: str, brain_id: str) -> None:
        self._drop(namespace, lambda h: h.brain_id == brain_id)

    def erase_record(self, namespace: str, brain_id: str, record_id: str) -> None:
        """Drop every trace of the Brain that quotes or cites ``record_id``."""
        self._drop(namespace, lambda h: h.brain_id == brain_id and record_id in h.record_ids)

    def _drop(self, namespace: str, doomed: Any) -> None:
        with self._lock:
            ring = self._rings.get(namespace)
            if ring is None:
                return
            for trace_id in [k for k, h in ring.items.items() if doomed(h)]:
                ring.size -= ring.items.pop(trace_id).size
