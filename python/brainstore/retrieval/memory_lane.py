"""The memory lane: BM25 over the statements of a Brain's active Memories.

A Memory's statement is self-contained (names and dates resolved: "Caroline went to the LGBTQ support
group on 7 May 2023"), so it matches questions that the raw turn ("I went yesterday") does not. A hit
ranks the chunks of the Records the Memory cites; the caller fuses that ranking with the other lanes.
Validity is checked at query time against as_of, so one lane serves every as_of.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from brainstore import kernels


@dataclass(frozen=True)
class LaneEntry:
    memory_id: str
    cited: tuple[tuple[str, int, int], ...]  # (record id, start, end) of each citation
    valid_from: float
    valid_to: float | None


class MemoryLane:
    def __init__(self) -> None:
        self._lexical = kernels.LexicalIndex()
        self._lock = threading.Lock()
        self._handles: dict[str, int] = {}
        self._entries: dict[int, LaneEntry] = {}
        self._next = 0

    def upsert(self, entry: LaneEntry, statement: str) -> None:
        with self._lock:
            handle = self._handles.get(entry.memory_id)
            if handle is None:
                handle = self._next
                self._next += 1
                self._handles[entry.memory_id] = handle
            self._entries[handle] = entry
        self._lexical.add([handle], [statement])

    def remove(self, memory_id: str) -> None:
        with self._lock:
            handle = self._handles.pop(memory_id, None)
            if handle is None:
                return
            self._entries.pop(handle, None)
        self._lexical.remove([handle])

    def __len__(self) -> int:
        return len(self._handles)

    def search(self, query: str, k: int, at: float) -> list[tuple[LaneEntry, float]]:
        found = []
        for handle, score in self._lexical.search(query, k * 2):
            entry = self._entries.get(handle)
            if entry is None or entry.valid_from > at or (entry.valid_to is not None and entry.valid_to <= at):
                continue
            found.append((entry, score))
            if len(found) == k:
                break
        return found
