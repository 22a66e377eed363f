"""The evidence index of one Brain: a lexical lane (BM25 in Rust) and a vector lane over the same
chunks, kept in step. The vector lane of a Brain of at most FLAT_MAX chunks is a matrix scored exactly;
past that it is hnswlib's graph (an hnswlib index costs 2.5 MiB however small, and a tenant may hold
many small Brains), built off the lock while the matrix answers (:meth:`BrainIndex.build_graph`). Its
files are a graph either way.

A leaf module: it knows chunks, not Records, stores or services. The caller embeds
``embedding_text(draft)`` with the Brain's embedder and hands the vectors in; :meth:`BrainIndex.add`
gives the chunks their ids. :meth:`BrainIndex.save` writes the hnsw graph and the chunk metadata;
:meth:`BrainIndex.load` reads them back, or returns ``None`` when the files are missing, corrupt or
were made with another embedding model (the caller then rebuilds from its stored embeddings).

Thread safety: writes (add, remove_record) are exclusive; searches and :meth:`BrainIndex.save` share a
read lock and run concurrently (BM25 and hnswlib both release the GIL while they work).

Erasure: no removed chunk's vector stays in memory or in a file. A small Brain's matrix zeroes its
row. hnswlib cannot take an element out of its graph, and marked deleted (never returned again) an
element keeps its vector until its slot is reused by a later chunk: so a removed chunk's vector is
first overwritten with zeros in place (hnswlib's update, which also links its neighbours past it; 1.4-2.3
ms an element in a graph of 60,000), then marked deleted. :meth:`BrainIndex.save` zeroes every deleted
element's vector in the file before it replaces the previous save, and :meth:`BrainIndex.load` zeroes
them in a file an older version saved, which kept them. A small Brain's save builds a graph of its live
vectors for the file (up to 0.23 s of CPU at FLAT_MAX).
"""

from __future__ import annotations

import bisect
import itertools
import logging
import mmap
import os
import re
import struct
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import hnswlib
import numpy as np
import orjson

from brainstore import kernels

from .chunking import TRUST_MULTIPLIER, Chunk, ChunkDraft, first_name, line, token_counts

log = logging.getLogger("brainstore.index")

__all__ = ["BrainIndex", "ChunkFilter", "ChunkTally", "Selection"]

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
HNSW_EF_SEARCH = 64
_INITIAL_CAPACITY = 1024
# A Brain of at most this many chunks keeps its vectors in a plain matrix and scores them all; a graph
# is built once it grows past it (BrainIndex.build_graph). An hnswlib index costs 2.5 MiB however small
# (its 65,536 label locks): one tenant making Brains of a Record each took 2.5 MiB of the server a Brain.
# Scoring 2,048 vectors takes about as long as walking a graph, and is exact.
FLAT_MAX = 2048
# 2: each chunk's lead; 3: its undated line's token count (a format 2 file's are counted on load); 4: the
# chunks as columns, not rows (see load)
_FORMAT = 4
# A format 4 file's columns: a format 2 or 3 file's rows hold the same, in this order (format 2 without
# the last).
_COLUMNS = (
    "id", "record_id", "start", "end", "text", "index_text", "occurred_at", "speaker", "source_name", "trust",
    "visibility", "tokens", "lead", "line_tokens",
)  # fmt: skip
_META_FILE = "chunks.json"
_HNSW_FILE = "vectors.hnsw"
# Below this many allowed ids a filtered vector search scores the allowed vectors directly instead of
# walking the graph with a Python filter callback.
_BRUTE_FORCE_MAX = 2048
# Vectors :meth:`BrainIndex.build_graph` adds to a graph between two looks at what was removed meanwhile
# (about 1 s of one core).
_GRAPH_SLICE = 2048
_COLUMN_BATCH = 4096  # chunk additions or removals the filter columns take in at once, at most
# The header hnswlib 0.8's saveIndex writes before the elements: offsetLevel0, max_elements, element
# count, bytes per element, label offset, data offset (size_t), max level (int), entry point (uint32),
# maxM, maxM0, M (size_t), mult (double), ef_construction (size_t).
_HNSW_HEADER = struct.Struct("<6Q i I 3Q d Q")
# A name used to address someone: after a greeting or thanks at the start of a turn ("Hey Audrey!",
# "Thanks, Mel") or set off by a comma before an exclamation at its end ("That's great, Audrey!").
# ("(?:\s*,)?\s+", not "\s*,?\s+": the two runs of spaces of the latter can split one run in as many
# ways as it is long, which was quadratic in a run of spaces a chunk can hold.)
_GREETING = r"(?i:hey|hi|hiya|hello|thanks|thank you|bye|good morning|morning|congrats|congratulations|wow|oh|aw|yo|sorry)"
_VOCATIVE = re.compile(
    rf"^\W*{_GREETING}(?:\s*,)?\s+([A-Z][\w'\u2019-]*)(?=\s*[!,.?]|$)|,\s+([A-Z][\w'\u2019-]*)\s*!"
)
# How often a name must address one speaker before it names that speaker in queries.
_ALIAS_MIN = 2
# The share of a speaker's turn changes another speaker must take part in to be one they talk with.
_KIN_SHARE = 0.1
# The words of a speaker's name ("caroline", "o'neil", "anne-marie").
_NAME_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")


def _ints(held: int | tuple[int, ...]) -> tuple[int, ...]:
    """The chunk ids of a ``_talk_before`` entry: one, or a tuple of several."""
    return held if isinstance(held, tuple) else (held,)


def _uncount(held: dict[str, Counter[str]], key: str, other: str) -> None:
    """Take back one count of ``other`` under ``key``, dropping what reaches zero: no name of a
    forgotten speaker stays."""
    counts = held[key]
    counts[other] -= 1
    if not counts[other]:
        del counts[other]
    if not counts:
        del held[key]


@dataclass(frozen=True)
class ChunkFilter:
    """What a filtered Context may draw on: chunks said at or after ``since`` and at or before
    ``until`` (POSIX seconds), from one of ``sources``; ``None`` leaves that condition out."""

    since: float | None = None
    until: float | None = None
    sources: frozenset[str] | None = None


class Selection:
    """The chunk ids a filter admits: an id array for the lanes and a membership test for hnswlib's
    filter callback and the pipeline, a mask over the ids' range (for 50,000 ids a Python set took
    1.7 ms to build, the mask 0.15 ms). Ids are unique in the process, so the range also spans ids of
    other Brains created in between: one byte per id issued in that span."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        self._offset = int(self.ids.min()) if len(self.ids) else 0
        self._mask = np.zeros(int(self.ids.max()) - self._offset + 1 if len(self.ids) else 0, dtype=bool)
        self._mask[self.ids - self._offset] = True

    def __contains__(self, chunk_id: int) -> bool:
        i = chunk_id - self._offset
        return 0 <= i < len(self._mask) and bool(self._mask[i])

    def __len__(self) -> int:
        return len(self.ids)

    def holds(self, ids: np.ndarray) -> np.ndarray:
        """For each of ``ids``, whether it is admitted (``in``, for an array at once)."""
        at = np.asarray(ids, dtype=np.int64) - self._offset
        inside = (at >= 0) & (at < len(self._mask))
        held = np.zeros(len(at), dtype=bool)
        held[inside] = self._mask[at[inside]]
        return held


class ChunkTally:
    """The chunks held by every index that counts into it (:meth:`BrainIndex.count_into`), kept as they
    come and go: their sum without visiting each index (1.7 ms with 20,000 indexes held, growing with them)."""

    __slots__ = ("_chunks", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # indexes of different Brains change at once
        self._chunks = 0

    def __int__(self) -> int:
        return self._chunks

    def add(self, chunks: int) -> None:
        with self._lock:
            self._chunks += chunks


class _Columns:
    """Every live chunk's id, time and source code as arrays, for :meth:`BrainIndex.select`. Kept
    current by appending and dropping in batches when a filtered search needs them: rebuilding them
    from the index's dicts took about 19 ms at 100,000 chunks, as long as the Python filter they
    replace, and a Brain that is being written would have paid it on each filtered Context.

    A source's name is held while a live chunk has it: its code leaves ``source_codes`` with its last
    chunk (a forgotten Record's source name stays nowhere), and a later new name takes the freed code.
    That is safe while a dropped chunk's row still carries the code (pending in ``_dropped``): readers
    see the columns only through :meth:`current`, which applies the drops first, and no write runs
    meanwhile (the index's write lock). Codes are of this process only: a saved file holds names."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, dtype=np.int64)
        self.ts = np.zeros(0, dtype=np.float64)
        self.source = np.zeros(0, dtype=np.int32)
        self.source_codes: dict[str | None, int] = {}
        self._source_live: list[int] = []  # code -> live chunks of that source (0: the code is free)
        self._free_codes: list[int] = []
        self._added_ids: list[int] = []
        self._added_ts: list[float] = []
        self._added_source: list[int] = []
        self._dropped: list[int] = []
        self._lock = threading.Lock()  # searches share the index's read lock; one of them catches up

    def add(self, chunk_id: int, ts: float, source_name: str | None) -> None:
        self._added_ids.append(chunk_id)
        self._added_ts.append(ts)
        code = self.source_codes.get(source_name)
        if code is None:
            if self._free_codes:
                code = self._free_codes.pop()
            else:
                code = len(self._source_live)
                self._source_live.append(0)
            self.source_codes[source_name] = code
        self._source_live[code] += 1
        self._added_source.append(code)
        if len(self._added_ids) >= _COLUMN_BATCH:  # pending Python lists cost several times the arrays
            self.current()

    def drop(self, chunk_id: int, source_name: str | None) -> None:
        """Drop a chunk added with ``source_name``; the name goes with its last chunk."""
        code = self.source_codes[source_name]
        self._source_live[code] -= 1
        if not self._source_live[code]:
            del self.source_codes[source_name]
            self._free_codes.append(code)
        self._dropped.append(chunk_id)
        if len(self._dropped) >= _COLUMN_BATCH:
            self.current()

    def current(self) -> _Columns:
        with self._lock:
            if self._added_ids:
                self.ids = np.concatenate([self.ids, np.array(self._added_ids, dtype=np.int64)])
                self.ts = np.concatenate([self.ts, np.array(self._added_ts, dtype=np.float64)])
                self.source = np.concatenate([self.source, np.array(self._added_source, dtype=np.int32)])
                self._added_ids, self._added_ts, self._added_source = [], [], []
            if self._dropped:
                keep = ~np.isin(self.ids, np.asarray(self._dropped, dtype=np.int64))
                self.ids, self.ts, self.source = self.ids[keep], self.ts[keep], self.source[keep]
                self._dropped.clear()
            return self


# Chunk ids are unique in the process: every index draws new ids from this counter, and a loaded
# index moves it past the ids it holds.
_ids = itertools.count(1)
_ids_lock = threading.Lock()
_ids_floor = 0


def _chunks_of(columns: list[list[Any]]) -> tuple[list[Chunk], list[int], list[str | None], list[int] | None]:
    """The chunks in a saved file's columns (see _COLUMNS), with their token counts, their leads and
    their lines' token counts (None from a format 2 file, which has none).

    A value chunks repeat (a Record's id and time, a speaker, a source, a trust level, a visibility) is
    made one object for all that hold it. Read as rows with every value its own object, an index of
    100,000 chunks took 4.34 KB a chunk, read from columns 3.87: the values kept were scattered among
    the rows' freed ones, memory the process does not give back."""
    (ids, record_ids, starts, ends, texts, index_texts, times, speakers, sources, trusts, visibilities, tokens,
     leads, *line_tokens) = columns  # fmt: skip
    if any(len(column) != len(ids) for column in columns):
        raise ValueError("a saved file's columns differ in length")
    shared: dict[Any, Any] = {None: None}
    parsed: dict[str, datetime] = {}
    chunks: list[Chunk] = []
    for i, chunk_id in enumerate(ids):
        at = parsed.get(times[i])
        if at is None:
            at = parsed[times[i]] = datetime.fromisoformat(times[i])
        chunks.append(
            Chunk(
                shared.setdefault(record_ids[i], record_ids[i]), int(starts[i]), int(ends[i]), texts[i],
                index_texts[i], at, shared.setdefault(speakers[i], speakers[i]),
                shared.setdefault(sources[i], sources[i]), shared.setdefault(trusts[i], trusts[i]),
                shared.setdefault(visibilities[i], visibilities[i]), id=int(chunk_id),
            )
        )  # fmt: skip
    return chunks, [int(n) for n in tokens], list(leads), [int(n) for n in line_tokens[0]] if line_tokens else None


def _private(path: Path) -> None:
    """Make a saved file readable by its owner only: it holds Record text. (Files saved by versions that
    wrote them with the shell's umask, 0644 under the usual 022, are made private when next loaded.) A
    file this process may read but not change (another owner, a read-only mount) still loads."""
    try:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError as exc:
        log.warning("%s is readable by other users and cannot be made private: %s", path, exc)


def _scrub_deleted(path: Path, dimension: int) -> int:
    """Zero, in a graph file hnswlib saved, the vector of every element marked deleted; returns how
    many. Raises ValueError when the file is not laid out as expected (then nothing may trust it)."""
    with path.open("r+b") as fh:
        head = fh.read(_HNSW_HEADER.size)
        if len(head) < _HNSW_HEADER.size:
            raise ValueError(f"{path}: no hnsw header")
        level0, _, count, size, label_at, data_at = _HNSW_HEADER.unpack(head)[:6]
        if count == 0:
            return 0
        if not (level0 + 4 <= data_at and data_at + 4 * dimension <= label_at and label_at + 8 <= size):
            raise ValueError(f"{path}: unexpected hnsw element layout")
        with mmap.mmap(fh.fileno(), 0) as mapped:
            if len(mapped) < _HNSW_HEADER.size + count * size:
                raise ValueError(f"{path}: truncated hnsw file")
            rows = np.frombuffer(mapped, dtype=np.uint8, count=count * size, offset=_HNSW_HEADER.size)
            rows = rows.reshape(count, size)
            deleted = np.flatnonzero(rows[:, level0 + 2] & 1)  # hnswlib's DELETE_MARK, in the links' header
            if len(deleted):
                rows[deleted, data_at : data_at + 4 * dimension] = 0
                mapped.flush()
            del rows  # the map cannot close while an array still points into it
        os.fsync(fh.fileno())
        return len(deleted)


def _new_graph(dimension: int, capacity: int) -> hnswlib.Index:
    """An empty hnswlib graph of this index's parameters, room for ``capacity`` elements."""
    graph = hnswlib.Index(space="ip", dim=dimension)
    graph.init_index(max_elements=capacity, M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION, allow_replace_deleted=True)
    graph.set_ef(HNSW_EF_SEARCH)
    return graph


def _erase_from_graph(graph: hnswlib.Index, ids: Sequence[int], dimension: int) -> None:
    """Overwrite the elements' vectors with zeros in place, then mark them deleted (see the module
    docstring): hnswlib alone would keep a deleted element's vector."""
    # one thread: the caller's core, not the one a Context runs on
    zeros = np.zeros((len(ids), dimension), dtype=np.float32)
    graph.add_items(zeros, np.asarray(ids, dtype=np.uint64), num_threads=1)
    for chunk_id in ids:
        graph.mark_deleted(chunk_id)


def _new_ids(n: int) -> list[int]:
    with _ids_lock:
        return [next(_ids) for _ in range(n)]


def _reserve_below(max_id: int) -> None:
    """Make sure later ids are greater than ``max_id``."""
    global _ids, _ids_floor
    with _ids_lock:
        probe = next(_ids)
        _ids = itertools.count(max(probe, max_id + 1))
        _ids_floor = max(_ids_floor, max_id)


_get_ident = threading.get_ident


class _RWLock:
    """Many readers or one writer; the writer may re-enter, and read its own index."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._readers = 0
        self._writer: int | None = None
        self._depth = 0
        self._waiting = 0  # threads waiting on _cond: the last reader out wakes them only when there are
        self._reading = _Reading(self)

    def read(self) -> _Reading:
        return self._reading

    @contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if self._writer != me:
                while self._writer is not None or self._readers:
                    self._wait()
                self._writer = me
            self._depth += 1
        try:
            yield
        finally:
            with self._cond:
                self._depth -= 1
                if not self._depth:
                    self._writer = None
                    self._cond.notify_all()

    def _wait(self) -> None:
        """Wait on _cond (held) to be woken."""
        self._waiting += 1
        try:
            self._cond.wait()
        finally:
            self._waiting -= 1


class _Reading:
    """``with lock.read():``, as an object rather than a generator: a fast Context reads a Brain's
    index a few hundred times (2.2 us each as a @contextmanager with a Condition, 0.8 this way)."""

    __slots__ = ("_lock",)

    def __init__(self, lock: _RWLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        lock = self._lock
        # only this thread sets _writer to its own ident, so no other thread's write can make this true
        if lock._writer == _get_ident():  # a writer reading its own index
            return
        with lock._mutex:
            while lock._writer is not None:
                lock._wait()
            lock._readers += 1

    def __exit__(self, *exc_info: object) -> None:
        lock = self._lock
        if lock._writer == _get_ident():  # entered as the writer (a reader cannot become one)
            return
        with lock._mutex:
            lock._readers -= 1
            if not lock._readers and lock._waiting:
                lock._cond.notify_all()


class _FlatVectors:
    """The vectors of a small Brain in a matrix, scored exactly: the part of hnswlib's interface
    :class:`BrainIndex` uses, with the same inner-product distances (1 - cosine). A removed vector is
    zeroed at once (hnswlib keeps it until its slot is reused)."""

    def __init__(self, dimension: int) -> None:
        self._matrix = np.zeros((16, dimension), dtype=np.float32)
        self._ids = np.full(16, -1, dtype=np.int64)  # row -> chunk id, -1 for a free row
        self._rows: dict[int, int] = {}
        self._free: list[int] = list(range(15, -1, -1))

    def __len__(self) -> int:
        return len(self._rows)

    def add_items(self, vectors: np.ndarray, ids: np.ndarray, replace_deleted: bool = True) -> None:
        if len(self._free) < len(ids):
            grown = max(2 * len(self._ids), len(self._rows) + len(ids))
            start = len(self._ids)
            self._matrix = np.concatenate([self._matrix, np.zeros((grown - start, self._matrix.shape[1]), np.float32)])
            self._ids = np.concatenate([self._ids, np.full(grown - start, -1, dtype=np.int64)])
            self._free = list(range(grown - 1, start - 1, -1)) + self._free
        rows = []
        for chunk_id in ids.tolist():
            row = self._rows.get(chunk_id)
            if row is None:
                row = self._rows[chunk_id] = self._free.pop()
            rows.append(row)
        # one assignment for all the rows: 100,000 took 0.14 s a row at a time, 0.12 s so
        self._matrix[rows] = vectors
        self._ids[rows] = ids

    def mark_deleted(self, chunk_id: int) -> None:
        row = self._rows.pop(chunk_id)
        self._matrix[row] = 0.0
        self._ids[row] = -1
        self._free.append(row)

    def get_items(self, ids: Sequence[int]) -> np.ndarray:
        return self._matrix[[self._rows[i] for i in ids]]

    def get_ids_list(self) -> list[int]:
        return list(self._rows)

    def knn_query(
        self, query: np.ndarray, k: int, num_threads: int = 1, filter: Callable[[int], bool] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        sims = self._matrix @ query
        sims[self._ids < 0] = -np.inf
        if filter is None:
            return self._best(sims, k)
        order = np.lexsort((self._ids, -sims))[: len(self._rows)]  # best first, ties by id
        admitted: list[int] = []
        for row in order.tolist():
            if filter(int(self._ids[row])):
                admitted.append(row)
                if len(admitted) == k:
                    break
        order = np.asarray(admitted, dtype=np.int64)
        return self._ids[order][None, :], (1.0 - sims[order])[None, :]

    def knn_among(
        self, query: np.ndarray, k: int, admits: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`knn_query` with a filter that tests every row's id at once (``admits`` maps an id
        array to a bool array): a callback asked row by row, after every row was sorted, took 19 ms
        at 100,000 rows where few were admitted."""
        sims = self._matrix @ query
        sims[(self._ids < 0) | ~admits(self._ids)] = -np.inf
        return self._best(sims, k)

    def _best(self, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k rows of highest ``sims`` (``-inf``: not a candidate), best first, ties by id."""
        k = min(k, int(np.count_nonzero(sims != -np.inf)))
        if k <= 0:
            return np.zeros((1, 0), dtype=np.int64), np.zeros((1, 0), dtype=np.float32)
        # Sorting only the rows that can be among the k best (every tie with the k-th included): a
        # matrix of 100,000 rows, held while its graph is built, sorted whole in 15 ms.
        kth = np.partition(sims, len(sims) - k)[len(sims) - k]
        rows = np.flatnonzero(sims >= kth)
        order = rows[np.lexsort((self._ids[rows], -sims[rows]))][:k]
        return self._ids[order][None, :], (1.0 - sims[order])[None, :]

    def graph(self, capacity: int) -> hnswlib.Index:
        """An hnswlib index of these vectors: what a save of a small Brain writes."""
        index = _new_graph(self._matrix.shape[1], capacity)
        if self._rows:
            rows = np.fromiter(self._rows.values(), dtype=np.int64, count=len(self._rows))
            index.add_items(self._matrix[rows], self._ids[rows].astype(np.uint64))
        return index


class BrainIndex:
    """Chunks of one Brain, searchable by words (BM25) and by meaning (cosine over hnswlib).

    ``model_name`` is the embedding model of every vector in it: a Brain never mixes two models in one
    index. ``dimension`` is that model's vector size.
    """

    def __init__(self, dimension: int, model_name: str) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if not model_name:
            raise ValueError("model_name is required")
        self.dimension = dimension
        self.model_name = model_name
        self._lock = _RWLock()
        self._chunks: dict[int, Chunk] = {}
        # What ranking reads of each chunk (kernels.ChunkTable): when it was said, source, speaker,
        # trust, token counts, the chunk before it in its Record, and the chunks of its source right
        # before and after it: a list per source by time, then by id, the order chunks came in (a
        # conversation's order, however it was posted and whatever other sources add between). Ids are
        # unique in the process, so a Brain's ids are not consecutive while other Brains take ids in
        # between: id - 1 is not the neighbour.
        self._table = kernels.ChunkTable()
        self._lead: dict[int, str | None] = {}  # the whitespace before it in its Record, if known
        self._by_record: dict[str, list[int]] = {}
        self._speakers: Counter[str] = Counter()  # lowercased speaker -> live chunks they said
        self._labels: dict[str, str] = {}  # lowercased speaker -> their label as their Records first wrote it
        # word -> the speakers whose names of several words hold it ("caroline" -> "caroline reyes")
        self._name_words: dict[str, set[str]] = {}
        # lowercased name -> lowercased speakers it addressed (the speaker of the turn before), and
        # what each chunk added there, to take back when it is removed
        self._addressed: dict[str, Counter[str]] = {}
        self._vocatives: dict[int, list[tuple[str, str]]] = {}
        # lowercased speaker -> the speakers whose turn came right before or after one of theirs in a
        # source (who they talk with); each count is a pair of chunks, taken back when either goes, so
        # nothing of a forgotten speaker stays: the chunk after -> (the chunk before, the two speakers),
        # and the chunk before -> the chunk after it in a pair (a tuple of them in the rare case of
        # several: a chunk that came later was said between); plain ints and tuples, which Python's
        # collector does not track, not a set a chunk
        self._talks: dict[str, Counter[str]] = {}
        self._talk_pairs: dict[int, tuple[int, str, str]] = {}
        self._talk_before: dict[int, int | tuple[int, ...]] = {}
        self._local_only: set[int] = set()  # ids of local_only chunks (absent from hosted Contexts)
        self._columns = _Columns()
        self._lexical = kernels.LexicalIndex()
        # the vector lane: a matrix while the Brain is small (FLAT_MAX), then hnswlib's graph
        self._hnsw: hnswlib.Index | _FlatVectors = _FlatVectors(dimension)
        self._capacity = _INITIAL_CAPACITY
        # While build_graph runs: the ids removed since it began, for it to erase from the graph it builds.
        self._building = threading.Lock()
        self._removed_while_building: list[int] | None = None
        # Changes made, and how many of them its files hold (see ``unsaved``).
        self._changes = 0
        self._saved_changes = -1  # never saved: what it holds is in no file
        self._tally: ChunkTally | None = None

    # ------------------------------------------------------------------------------------ internals

    def _check_vectors(self, vectors: np.ndarray, n: int) -> np.ndarray:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim == 1 and n == 1:
            vectors = vectors[None, :]
        if vectors.shape != (n, self.dimension):
            raise ValueError(f"expected embeddings of shape ({n}, {self.dimension}), got {vectors.shape}")
        if not np.isfinite(vectors).all():
            raise ValueError("embeddings contain non-finite values")
        return vectors

    # ---------------------------------------------------------------------------------------- writes

    def add(
        self, drafts: Sequence[ChunkDraft], embeddings: np.ndarray, leads: Sequence[str | None] | None = None
    ) -> list[Chunk]:
        """Index ``drafts`` with their embeddings (row i belongs to draft i) and the whitespace before
        each in its Record (:func:`chunking.leads`; unknown when not given); returns the chunks, ids
        assigned, in input order."""
        drafts = list(drafts)
        if not drafts:
            return []
        leads = list(leads) if leads is not None else [None] * len(drafts)
        if len(leads) != len(drafts):
            raise ValueError(f"expected {len(drafts)} leads, got {len(leads)}")
        vectors = self._check_vectors(embeddings, len(drafts))
        chunks = [Chunk.from_draft(i, d) for i, d in zip(_new_ids(len(drafts)), drafts, strict=True)]
        tokens, joined, lines = token_counts(chunks)
        ids = [c.id for c in chunks]
        with self._lock.write():
            live = len(self._chunks)
            needed = live + len(chunks)
            if needed > self._capacity:
                self._capacity = max(needed, self._capacity * 2)
                if not isinstance(self._hnsw, _FlatVectors):
                    self._hnsw.resize_index(self._capacity)
            # past FLAT_MAX the matrix stays until build_graph replaces it, off this lock
            self._hnsw.add_items(vectors, np.asarray(ids, dtype=np.uint64), replace_deleted=True)
            self._lexical.add(ids, [c.index_text for c in chunks])
            self._register_all(chunks, tokens, joined, leads, lines)
            self._changes += 1
        return chunks

    def _link(self, record_ids: set[str]) -> None:
        """Point each chunk of these Records at the chunk right before it in its turn of the Record's
        text, and at that turn's first and last chunk ids: ranking's turn is the Record, and a passage
        joins only chunks of one turn."""
        for record_id in record_ids:
            ordered = sorted(self._by_record[record_id], key=lambda i: (self._chunks[i].start, i))
            self._by_record[record_id] = ordered
            for turn in self._turns_of(ordered):
                self._table.link(turn)

    def _turns_of(self, ordered: list[int]) -> Iterator[list[int]]:
        """A Record's chunks (in text order) cut into its turns: the Record itself, unless several
        people speak in it (a transcript, see :func:`brainstore.derive.transcript_parts`), whose turns
        part where the speaker changes or more than whitespace parts two chunks (the next line's
        "Name: ", or a lead not known)."""
        speakers = {self._chunks[i].speaker for i in ordered}
        if len(speakers) < 2:
            yield ordered
            return
        turn = [ordered[0]]
        for previous, chunk_id in itertools.pairwise(ordered):
            spoken_by_another = self._chunks[chunk_id].speaker != self._chunks[previous].speaker
            if spoken_by_another or self._lead[chunk_id] is None:
                yield turn
                turn = []
            turn.append(chunk_id)
        yield turn

    def _register_all(
        self,
        chunks: list[Chunk],
        tokens: list[int],
        joined: list[int],
        leads: Sequence[str | None],
        lines: list[int],
    ) -> None:
        """Take in new chunks (in the order they were added), then link their Records."""
        ts = [c.occurred_at.timestamp() for c in chunks]
        self._table.add(
            [c.id for c in chunks],
            ts,
            [c.source_name for c in chunks],
            [None if c.speaker is None else c.speaker.lower() for c in chunks],
            [TRUST_MULTIPLIER.get(c.trust, 1.0) for c in chunks],
            tokens,
            [min(j, n) for j, n in zip(joined, tokens, strict=True)],
            lines,
        )
        for chunk, when, lead in zip(chunks, ts, leads, strict=True):
            self._register(chunk, when, lead)
        if self._tally is not None:
            self._tally.add(len(chunks))
        self._link({c.record_id for c in chunks})

    def _register(self, chunk: Chunk, ts: float, lead: str | None) -> None:
        self._chunks[chunk.id] = chunk
        self._lead[chunk.id] = lead
        self._columns.add(chunk.id, ts, chunk.source_name)
        self._by_record.setdefault(chunk.record_id, []).append(chunk.id)
        if chunk.speaker:
            name = chunk.speaker.lower()
            if name not in self._speakers:
                self._file_name_words(name, add=True)
                self._labels[name] = chunk.speaker
            self._speakers[name] += 1
            self._note_vocatives(chunk)
            self._note_talk(chunk)
        if chunk.visibility == "local_only":
            self._local_only.add(chunk.id)

    def _note_vocatives(self, chunk: Chunk) -> None:
        """Count the names ``chunk`` addresses as names of the speaker of the turn before it (a reply
        addresses whoever spoke last), when that is someone else in the same source."""
        names = [a or b for a, b in _VOCATIVE.findall(chunk.text)]
        if not names:
            return
        other = self._chunks.get(self._table.previous(chunk.id))  # type: ignore[arg-type]
        # past the chunks of its own turn (a transcript's other speakers' turns are in its Record)
        while other is not None and other.record_id == chunk.record_id and other.speaker == chunk.speaker:
            other = self._chunks.get(self._table.previous(other.id))  # type: ignore[arg-type]
        if other is None or not other.speaker or other.source_name != chunk.source_name:
            return
        addressee = other.speaker.lower()
        if addressee == chunk.speaker.lower():  # type: ignore[union-attr]
            return
        noted = [(name.lower().replace("\u2019", "'"), addressee) for name in names]
        for name, speaker in noted:
            self._addressed.setdefault(name, Counter())[speaker] += 1
        self._vocatives[chunk.id] = noted

    def _note_talk(self, chunk: Chunk) -> None:
        """Count that ``chunk``'s speaker and the speaker of the chunk right before it in its source
        talk with each other, when they are two people."""
        other = self._chunks.get(self._table.previous(chunk.id))  # type: ignore[arg-type]
        if other is None or not other.speaker or other.source_name != chunk.source_name:
            return
        one, two = chunk.speaker.lower(), other.speaker.lower()  # type: ignore[union-attr]
        if one == two:
            return
        self._talks.setdefault(one, Counter())[two] += 1
        self._talks.setdefault(two, Counter())[one] += 1
        self._talk_pairs[chunk.id] = (other.id, one, two)
        held = self._talk_before.get(other.id)
        self._talk_before[other.id] = chunk.id if held is None else (*_ints(held), chunk.id)

    def _forget_talk(self, chunk_id: int) -> None:
        afters = _ints(self._talk_before.pop(chunk_id, ()))
        if chunk_id in self._talk_pairs:
            afters += (chunk_id,)
        for after in afters:
            before, one, two = self._talk_pairs.pop(after)
            if before != chunk_id:
                rest = tuple(a for a in _ints(self._talk_before.pop(before)) if a != after)
                if rest:
                    self._talk_before[before] = rest[0] if len(rest) == 1 else rest
            _uncount(self._talks, one, two)
            _uncount(self._talks, two, one)

    def _unregister(self, chunk_id: int) -> None:
        chunk = self._chunks.pop(chunk_id)
        self._columns.drop(chunk_id, chunk.source_name)
        if self._tally is not None:
            self._tally.add(-1)
        del self._lead[chunk_id]
        if chunk.speaker:
            name = chunk.speaker.lower()
            self._speakers[name] -= 1
            if not self._speakers[name]:
                del self._speakers[name]
                del self._labels[name]
                self._file_name_words(name, add=False)
        self._local_only.discard(chunk_id)
        self._forget_talk(chunk_id)
        for name, speaker in self._vocatives.pop(chunk_id, ()):
            _uncount(self._addressed, name, speaker)

    def remove_record(self, record_id: str) -> list[int]:
        """Forget every chunk of ``record_id`` in both lanes; returns their ids (empty if none)."""
        with self._lock.write():
            ids = self._by_record.pop(record_id, [])
            if not ids:
                return []
            self._lexical.remove(ids)
            self._table.remove(ids)
            if isinstance(self._hnsw, hnswlib.Index):  # the matrix zeroes a row as it frees it
                _erase_from_graph(self._hnsw, ids, self.dimension)
            elif self._removed_while_building is not None:
                self._removed_while_building += ids
            for chunk_id in ids:
                if isinstance(self._hnsw, _FlatVectors):
                    self._hnsw.mark_deleted(chunk_id)
                self._unregister(chunk_id)
            self._changes += 1
            return list(ids)

    # ----------------------------------------------------------------------------------------- reads

    def chunks(self) -> list[Chunk]:
        with self._lock.read():
            return list(self._chunks.values())

    def get(self, chunk_id: int) -> Chunk | None:
        return self._chunks.get(chunk_id)

    @property
    def table(self) -> kernels.ChunkTable:
        """What ranking reads of each chunk, and the ranking pass (:meth:`kernels.ChunkTable.rank`)."""
        return self._table

    def quote(self, run: Sequence[Chunk]) -> str | None:
        """The exact Record text of consecutive chunks of one Record, in text order (the whitespace
        between them included); None when a lead is unknown or a chunk is gone."""
        parts = [run[0].text]
        for chunk in run[1:]:
            lead = self._lead.get(chunk.id)
            if lead is None:
                return None
            parts += (lead, chunk.text)
        return "".join(parts) if run[0].id in self._chunks else None

    def is_speaker(self, word: str) -> bool:
        """Whether ``word`` names a speaker (see :meth:`speaker_named`)."""
        return self.speaker_named(word) is not None

    def speaker_named(self, word: str) -> str | None:
        """The lowercased speaker ``word`` names: a speaker of some live chunk (case-insensitive);
        capitalized, the one speaker whose name of several words holds it (a display name "Caroline
        Reyes", asked about as Caroline); or the one speaker others addressed by that name (at least
        twice, and more often than anyone else; case-insensitive). Records often carry labels
        ("user", an account id) while people name each other in what they say, and a question names
        them the same way."""
        low = word.lower()
        if low in self._speakers:
            return low
        with self._lock.read():
            # capitalized, as a name is: "support" in a question does not name "Customer Support"
            holders = self._name_words.get(low) if word[:1].isupper() else None
            if holders is not None and len(holders) == 1:
                return next(iter(holders))
            counts = self._addressed.get(low)
            if not counts:
                return None
            (speaker, n), *rest = counts.most_common(2)
            if n < _ALIAS_MIN or (rest and rest[0][1] == n) or speaker not in self._speakers:
                return None
            return speaker

    def kin(self, speakers: Collection[str]) -> set[str]:
        """The lowercased speakers who talk with any of ``speakers`` (lowercased): whose turns came
        right before or after theirs in a source at least :data:`_KIN_SHARE` of the times any did. A
        conversation's people, not whoever spoke last before another conversation began."""
        kin: set[str] = set()
        with self._lock.read():
            for speaker in speakers:
                counts = self._talks.get(speaker)
                if counts:
                    least = _KIN_SHARE * sum(counts.values())
                    kin.update(other for other, n in counts.items() if n >= least)
        return kin

    def speaker_label(self, speaker: str) -> str | None:
        """A lowercased speaker's label as their Records wrote it ("Person A"); None for no live speaker."""
        return self._labels.get(speaker)

    def short_names(self, labels: Collection[str]) -> dict[str, str]:
        """Of these speakers' labels, each that a Context's transcript may name by its first name
        (:func:`~brainstore.retrieval.chunking.first_name`) once it named them in full: the label's
        first name, where that names no one else here (no other speaker's label holds the word or
        is it, and others address nobody else by it)."""
        out: dict[str, str] = {}
        with self._lock.read():
            for label in labels:
                first = first_name(label)
                if first is None:
                    continue
                word, speaker = first.lower(), label.lower()
                if word in self._speakers or self._name_words.get(word) != {speaker}:
                    continue
                counts = self._addressed.get(word)
                if counts and any(n >= _ALIAS_MIN and other != speaker for other, n in counts.items()):
                    continue
                out[label] = first
        return out

    def _file_name_words(self, speaker: str, *, add: bool) -> None:
        """Under the write lock: file a speaker who came (or take back one who went) under each word
        of a name of several words. Words of fewer than 3 letters ("Jr", "J.") name nobody."""
        parts = _NAME_WORD.findall(speaker)
        if len(parts) < 2:
            return
        for part in {p for p in parts if len(p) >= 3}:
            holders = self._name_words.setdefault(part, set())
            if add:
                holders.add(speaker)
                continue
            holders.discard(speaker)
            if not holders:
                del self._name_words[part]

    def local_only(self) -> frozenset[int]:
        """Ids of the live ``local_only`` chunks."""
        with self._lock.read():
            return frozenset(self._local_only)

    def record_ids(self) -> set[str]:
        """The Records that have a chunk here."""
        with self._lock.read():
            return set(self._by_record)

    def record_chunks(
        self, record_id: str, *, around: tuple[int, int] | None = None, whole: int = 0
    ) -> list[int]:
        """The Record's chunks in text order; with ``around``, a Record of more than ``whole`` chunks
        gives only the first ``whole`` of those whose text overlaps the span ``around`` (the chunk holding
        it when it is empty). A Record's chunks are disjoint and kept in text order (_link), so the span is
        found by bisection."""
        with self._lock.read():
            ids = self._by_record.get(record_id, ())
            if around is None or len(ids) <= whole:
                return list(ids)
            start, end = around[0], max(around[1], around[0] + 1)

            def starts(i: int) -> int:
                return self._chunks[i].start

            first = max(bisect.bisect_right(ids, start, key=starts) - 1, 0)
            past = bisect.bisect_left(ids, end, key=starts)
            return [i for i in ids[first:past] if self._chunks[i].end > start][:whole]

    def __len__(self) -> int:
        return len(self._chunks)

    def count_into(self, tally: ChunkTally | None) -> None:
        """Count this index's chunks, from now on as they come and go, into ``tally`` (None: into none),
        taking them back from the tally it counted into before."""
        with self._lock.write():
            if self._tally is not None:
                self._tally.add(-len(self._chunks))
            self._tally = tally
            if tally is not None:
                tally.add(len(self._chunks))

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._chunks

    def select(self, flt: ChunkFilter, excluded: Collection[int] = ()) -> Selection:
        """The live chunks ``flt`` admits, less ``excluded``. Ranking admits neighbours by the same rules
        in Rust (``Admits`` in rust/core/src/rank.rs), where a scan of the table took 3.1 ms against
        0.2 ms for these columns at 100,000 chunks; a test checks that the two agree."""
        with self._lock.read():
            columns = self._columns.current()
            keep = np.ones(len(columns.ids), dtype=bool)
            if flt.since is not None:
                keep &= columns.ts >= flt.since
            if flt.until is not None:
                keep &= columns.ts <= flt.until
            if flt.sources is not None:
                codes = [columns.source_codes[s] for s in flt.sources if s in columns.source_codes]
                keep &= np.isin(columns.source, codes)
            if excluded:
                keep &= ~np.isin(columns.ids, np.fromiter(excluded, dtype=np.int64, count=len(excluded)))
            return Selection(columns.ids[keep])

    def lexical(
        self,
        query: str,
        k: int,
        allowed: Sequence[int] | np.ndarray | None = None,
        excluded: Collection[int] = (),
    ) -> list[tuple[int, float]]:
        """The ``k`` best chunks by BM25 over ``index_text``, best first, optionally only among
        ``allowed`` ids (a :class:`Selection`'s id array goes to Rust without a Python int per id) and
        never one in ``excluded``."""
        with self._lock.read():
            return self._lexical.search(query, k, allowed, list(excluded))

    def vector(
        self,
        query_vec: np.ndarray,
        k: int,
        allowed: Selection | None = None,
        excluded: Collection[int] = frozenset(),
    ) -> list[tuple[int, float]]:
        """The ``k`` chunks most similar (cosine) to ``query_vec``, best first, optionally only among
        ``allowed`` ids (which :meth:`select` has already cleared of excluded ones), else never one
        in ``excluded``."""
        query = np.ascontiguousarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dimension:
            raise ValueError(f"query vector has dimension {query.shape[0]}, expected {self.dimension}")
        with self._lock.read():
            if allowed is not None:
                if len(allowed) <= _BRUTE_FORCE_MAX or len(allowed) <= k:
                    live = [i for i in allowed.ids.tolist() if i in self._chunks]
                    return self._brute_force(query, live, k)
                if isinstance(self._hnsw, _FlatVectors):  # past FLAT_MAX, its graph not built yet
                    return self._flat_among(query, k, allowed.holds)
                return self._graph(query, min(k, len(allowed)), allowed.__contains__)
            if excluded:
                if isinstance(self._hnsw, _FlatVectors):
                    refused = np.fromiter(excluded, dtype=np.int64, count=len(excluded))
                    return self._flat_among(query, k, lambda ids: ~np.isin(ids, refused))
                live = len(self._chunks) - sum(1 for i in excluded if i in self._chunks)
                return self._graph(query, min(k, live), lambda i: i not in excluded)
            return self._graph(query, min(k, len(self._chunks)), None)

    def _flat_among(
        self, query: np.ndarray, k: int, admits: Callable[[np.ndarray], np.ndarray]
    ) -> list[tuple[int, float]]:
        assert isinstance(self._hnsw, _FlatVectors)
        labels, distances = self._hnsw.knn_among(query, k, admits)
        return [(int(i), float(1.0 - d)) for i, d in zip(labels[0], distances[0], strict=True)]

    def vectors(self, chunk_ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of ``chunk_ids`` (live chunks only), shape ``(n, dimension)``."""
        with self._lock.read():
            ids = [i for i in chunk_ids if i in self._chunks]
            if not ids:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return np.asarray(self._hnsw.get_items(ids), dtype=np.float32)

    # ------------------------------------------------------------------------------------ the graph

    @property
    def needs_graph(self) -> bool:
        """Its vectors are more than FLAT_MAX in the matrix, scored exactly until :meth:`build_graph`
        moves them into a graph."""
        return isinstance(self._hnsw, _FlatVectors) and len(self._hnsw) > FLAT_MAX

    def build_graph(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Move the vectors of a Brain grown past FLAT_MAX from the matrix into hnswlib's graph; False
        when ``stop`` (asked between slices) said to give up, else True.

        Adding 100,000 vectors to a graph took 25-60 s on both cores of the 2-core machine, and a
        rebuild from the store did it under the write lock: the Brain's first Context, and every change
        to it, waited that long. Here the graph is built a slice at a time on the calling thread, off
        the write lock: searches score the matrix meanwhile (exactly; 4-6 ms a search at 100,000
        chunks, a fast Context's client p50 16-24 ms against 6.2-9.6 once the graph took over) and
        changes go on. Each slice takes the rows still live, and the chunks removed meanwhile leave the
        graph being built at the next slice, so no erased vector stays in it longer than a slice takes;
        then what was added meanwhile goes in, the last of it as the graph takes the matrix's place,
        under the write lock."""
        with self._building:
            with self._lock.read():
                if not self.needs_graph:
                    return True
                flat = self._hnsw
                assert isinstance(flat, _FlatVectors)
                ids = sorted(flat._rows)
                self._removed_while_building = []
            try:
                graph = _new_graph(self.dimension, max(self._capacity, len(ids)))
                built: set[int] = set()
                at = 0
                while True:
                    if stop():
                        return False
                    added_meanwhile = at >= len(ids)
                    with self._lock.read():
                        removed, self._removed_while_building = self._removed_while_building or [], []
                        if added_meanwhile:
                            live = list(itertools.islice((i for i in flat._rows if i not in built), _GRAPH_SLICE))
                        else:
                            live = [i for i in ids[at : at + _GRAPH_SLICE] if i in flat._rows]
                            at += _GRAPH_SLICE
                        vectors = flat.get_items(live)
                    self._erase_built(graph, built, removed)
                    if live:
                        # an erased element keeps its slot (counted by get_current_count) until reused
                        if graph.get_current_count() + len(live) > graph.get_max_elements():
                            graph.resize_index(2 * (graph.get_current_count() + len(live)))
                        # every core, at the caller's priority (a background thread's, below the requests')
                        graph.add_items(vectors, np.asarray(live, dtype=np.uint64))
                        built.update(live)
                    del vectors
                    if added_meanwhile and len(live) < _GRAPH_SLICE:
                        break
                with self._lock.write():
                    self._erase_built(graph, built, self._removed_while_building or [])
                    added = [i for i in flat._rows if i not in built]
                    # add() resizes the graph only past _capacity, which grew with the matrix meanwhile
                    capacity = max(self._capacity, graph.get_current_count() + len(added))
                    if capacity > graph.get_max_elements():
                        graph.resize_index(capacity)
                    if added:
                        graph.add_items(flat.get_items(added), np.asarray(added, dtype=np.uint64), num_threads=1)
                    self._capacity = graph.get_max_elements()
                    self._hnsw = graph
                    return True
            finally:
                with self._lock.write():
                    self._removed_while_building = None

    def _erase_built(self, graph: hnswlib.Index, built: set[int], removed: list[int]) -> None:
        gone = [i for i in removed if i in built]
        if gone:
            _erase_from_graph(graph, gone, self.dimension)
            built.difference_update(gone)

    def _graph(
        self, query: np.ndarray, k: int, admits: Callable[[int], bool] | None
    ) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        try:
            if admits is None:
                labels, distances = self._hnsw.knn_query(query, k=k, num_threads=1)
            else:
                labels, distances = self._hnsw.knn_query(query, k=k, num_threads=1, filter=admits)
        except RuntimeError:  # the graph walk found fewer than k: score the candidates directly
            ids = [i for i in self._chunks if admits is None or admits(i)]
            return self._brute_force(query, ids, k)
        return [(int(i), float(1.0 - d)) for i, d in zip(labels[0], distances[0], strict=True)]

    def _brute_force(self, query: np.ndarray, ids: list[int], k: int) -> list[tuple[int, float]]:
        if not ids or k <= 0:
            return []
        vectors = np.asarray(self._hnsw.get_items(ids), dtype=np.float32)
        sims = vectors @ query
        order = np.lexsort((np.asarray(ids), -sims))[:k]
        return [(ids[i], float(sims[i])) for i in order]

    # ----------------------------------------------------------------------------------- persistence

    def save(self, directory: Path) -> None:
        """Write the index to ``directory`` (created if needed), replacing a previous save atomically
        file by file (the metadata, written last, names the graph it belongs to). The graph file holds
        no vector of a removed chunk. Searches go on meanwhile; changes wait."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.build_graph()
        with self._lock.read():
            nonce = f"{os.getpid()}-{threading.get_ident()}"
            hnsw_tmp = directory / f"{_HNSW_FILE}.{nonce}.tmp"
            # the file is a graph whatever holds the vectors in memory: one format to load
            graph = self._hnsw.graph(max(len(self._hnsw), 1)) if isinstance(self._hnsw, _FlatVectors) else self._hnsw
            graph.save_index(str(hnsw_tmp))
            del graph
            try:
                _scrub_deleted(hnsw_tmp, self.dimension)
            except BaseException:
                hnsw_tmp.unlink(missing_ok=True)
                raise
            meta = {
                "format": _FORMAT,
                "model_name": self.model_name,
                "dimension": self.dimension,
                "capacity": self._capacity,
                "hnsw_bytes": hnsw_tmp.stat().st_size,
                "chunks": self._columns_saved(),
            }
            meta_tmp = directory / f"{_META_FILE}.{nonce}.tmp"
            # orjson in one call: json.dump streams through the pure-Python encoder, 0.49 s of the
            # GIL for 100,000 chunks (orjson 0.04 s) taken from every Context served meanwhile.
            encoded = orjson.dumps(meta)
            with meta_tmp.open("wb") as fh:
                fh.write(encoded)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(hnsw_tmp, directory / _HNSW_FILE)
            os.replace(meta_tmp, directory / _META_FILE)
            self._saved_changes = self._changes

    def _columns_saved(self) -> dict[str, list[Any]]:
        """Every chunk, as the columns of a format 4 file (caller holds the read lock)."""
        ids = list(self._chunks)
        chunks = list(self._chunks.values())
        return {
            "id": ids,
            "record_id": [c.record_id for c in chunks],
            "start": [c.start for c in chunks],
            "end": [c.end for c in chunks],
            "text": [c.text for c in chunks],
            "index_text": [c.index_text for c in chunks],
            "occurred_at": [c.occurred_at.isoformat() for c in chunks],
            "speaker": [c.speaker for c in chunks],
            "source_name": [c.source_name for c in chunks],
            "trust": [c.trust for c in chunks],
            "visibility": [c.visibility for c in chunks],
            "tokens": [self._table.token_counts(i)[0] for i in ids],  # type: ignore[index]
            "lead": [self._lead[i] for i in ids],
            "line_tokens": self._table.line_tokens(ids),
        }

    @property
    def unsaved(self) -> bool:
        """True when the last :meth:`save` (or the files it was loaded from) does not hold what it
        holds now."""
        return self._saved_changes != self._changes

    @classmethod
    def load(cls, directory: Path, model_name: str | None = None) -> BrainIndex | None:
        """The index saved in ``directory``, or ``None`` when it is missing or unreadable, or (when
        ``model_name`` is given) was built with another embedding model."""
        directory = Path(directory)
        meta_path, hnsw_path = directory / _META_FILE, directory / _HNSW_FILE
        try:
            meta = orjson.loads(meta_path.read_bytes())
            version = meta.get("format")
            if version not in (2, 3, _FORMAT):
                return None
            if model_name is not None and meta["model_name"] != model_name:
                return None
            if hnsw_path.stat().st_size != meta["hnsw_bytes"]:
                return None
            for saved in (meta_path, hnsw_path):
                _private(saved)
            index = cls(int(meta["dimension"]), str(meta["model_name"]))
            _scrub_deleted(hnsw_path, index.dimension)  # a save of an older version may hold some
            capacity = max(int(meta["capacity"]), _INITIAL_CAPACITY)
            hnsw = hnswlib.Index(space="ip", dim=index.dimension)
            hnsw.load_index(str(hnsw_path), max_elements=capacity, allow_replace_deleted=True)
            hnsw.set_ef(HNSW_EF_SEARCH)
            saved = meta["chunks"]
            if version == _FORMAT:
                columns = [saved[name] for name in _COLUMNS]
            else:  # a row a chunk
                width = len(_COLUMNS) - (version == 2)
                if any(len(row) != width for row in saved):
                    return None
                columns = [list(column) for column in zip(*saved, strict=True)] if saved else [[]] * width
            del meta, saved
            chunks, counts, leads, lines = _chunks_of(columns)
            del columns
            joined = kernels.count_tokens([" " + c.text for c in chunks])
            if lines is None:
                lines = kernels.count_tokens([line(c, dated=False) for c in chunks])
            index._register_all(chunks, counts, joined, leads, lines)
            live = set(index._chunks)
            if len(live) != len(chunks):
                return None
            stored = set(int(i) for i in hnsw.get_ids_list())
            if not live <= stored:
                return None
            if chunks:
                index._lexical.add([c.id for c in chunks], [c.index_text for c in chunks])
                _reserve_below(max(live))
            if len(live) <= FLAT_MAX:
                flat = _FlatVectors(index.dimension)
                ids = sorted(live)
                flat.add_items(np.asarray(hnsw.get_items(ids), dtype=np.float32), np.asarray(ids, dtype=np.int64))
                index._hnsw = flat
            else:
                index._hnsw = hnsw
            del hnsw
            index._capacity = capacity
            # a file of a previous format is to be written again: a format 2 file's lines are counted
            # at every load, and rows take more memory to read than columns
            index._saved_changes = index._changes if version == _FORMAT else -1
            return index
        except (OSError, ValueError, TypeError, KeyError, RuntimeError):  # orjson.JSONDecodeError is a ValueError
            return None
