"""The bounded, in-process trace ring. Recent only: a restart clears it, eviction is oldest first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class TraceBuffer:
    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[str | None, str | None, dict[str, Any]]] = OrderedDict()

    def add(self, trace_id: str, namespace: str | None, brain_id: str | None, trace: dict[str, Any]) -> None:
        with self._lock:
            self._items[trace_id] = (namespace, brain_id, trace)
            self._items.move_to_end(trace_id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def get(self, trace_id: str, namespace: str, brain_id: str) -> dict[str, Any] | None:
        with self._lock:
            held = self._items.get(trace_id)
        if held is None:
            return None
        ns, bid, trace = held
        # A failed request made before a Brain was resolved (bid None) is readable from any Brain of its
        # project; nothing of another project is ever readable.
        if ns != namespace or (bid is not None and bid != brain_id):
            return None
        return trace

    def newest(self, namespace: str, brain_id: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
        with self._lock:
            items = list(self._items.values())
        found = [t for ns, bid, t in reversed(items) if ns == namespace and bid == brain_id]
        return found[:limit], len(found) > limit

    def clear(self, namespace: str, brain_id: str) -> None:
        with self._lock:
            for key in [k for k, (ns, bid, _) in self._items.items() if ns == namespace and bid == brain_id]:
                del self._items[key]
