"""DuckDBStore: the embedded default. One file, one read-write process (see ../shared/NOTES.md).

The connection is opened in the process that serves (after gunicorn forks) and each thread works on its
own cursor. Writers are serialized by one lock; ``atomic()`` wraps them in a transaction, so a 202 is
sent only after the Record's row is committed. Schema changes are numbered SQL files in migrations/,
applied by ``migrate()`` (``brainstore migrate``), never silently by a read.

Deletes that really delete. DuckDB's DELETE (even followed by CHECKPOINT, or by rewriting a table) leaves
the erased bytes in freed blocks of the file. So every committed ``erase_*`` marks the store dirty, and a
*compaction* copies the live database into a fresh file (``ATTACH``; ``COPY FROM DATABASE``), checks that
every table holds the same number of rows, and swaps it over the old one (``os.replace``; the old .wal
goes too). The guarantee: **erased content leaves the file within ``purge_delay`` seconds** of the
erase's commit (plus the time the compaction itself takes; for a file that takes longer than
``purge_delay / _REST_FACTOR`` to copy, ``_REST_FACTOR`` times that instead); a burst of erases is
compacted once, ``purge_delay`` after the last of them, but never later than ``_MAX_DEFER * purge_delay``
after the first, and no sooner than ``_REST_FACTOR`` times the last compaction's duration after it
ended. ``purge_delay=0`` compacts before the erase's outermost ``atomic()`` returns; ``compact()`` runs
one now; ``close()`` runs one if the store is dirty. A ``<file>.purge`` marker is written before an
erase commits and removed after a compaction, so a process that dies in between compacts on next open.
A failed compaction keeps the old file (committed data is never at stake), stays dirty and is retried.

Compaction does not stop writers while it copies: a store serves every tenant, and copying a large file
takes seconds (about 4 s for the 224 MB file of 100,000 chunks). It pins a snapshot under the write lock
and, from then on, every committed transaction's writing statements go to a journal. The snapshot is
copied while reads and writes go on; the journal is replayed into the copy in rounds, also while writers
go on, until little is left; the rest is replayed under the write lock, the copy's row counts are
checked against the live file's, and the files are swapped under the exclusive side of a gate every
store call enters shared: reads pause only for the swap, writes also for the last round and a checkpoint
of what they wrote during the copy. Then each thread's cursor notices the new connection generation and
is replaced. An erase that commits after the snapshot still has its bytes in the copy, so the store
stays dirty and the next compaction (``purge_delay`` later) purges it. Replayed entries leave the
journal; while it holds more than ``_JOURNAL_LIMIT``, new transactions wait. The retries of a failed
background compaction hold the write lock throughout, so a journal that cannot be replayed never keeps
erased bytes in the file.
Not covered: copies outside the file (backups, filesystem snapshots, SSD remapping of the old file's
blocks after it is unlinked).
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import orjson

from brainstore.domain import (
    Brain,
    ChunkDraft,
    Citation,
    IdempotentReply,
    MemoryRevision,
    ObjectVersion,
    Record,
    RecordStatus,
    RecordTally,
    StoredChunk,
)
from brainstore.store.base import (
    LATEST_ENDING_SQL,
    WEIGHED_SQL,
    WEIGHED_STATUSES,
    histories_unnamed,
    latest_ending_order,
    without_citations_of,
)
from brainstore.store.current import CurrentMemories, HeldBrain, evict_fairly

_MEMORY_COLUMNS = (
    "memory_id, brain_uid, version, statement, subject, owner, attribute, value, valid_from, valid_to, "
    "recorded_at, status, citations, supersedes, superseded_by, seq, single_valued, negated, extra"
)
# A revision that names any of a list of memory ids (its four parameters, each the list): superseded by
# one, superseding one, closed by one, or in conflict with one.
_NAMES_ANY = (
    "superseded_by IN (SELECT unnest(?::VARCHAR[])) OR supersedes IN (SELECT unnest(?::VARCHAR[])) "
    "OR json_extract_string(extra, '$.closed_by') IN (SELECT unnest(?::VARCHAR[])) "
    "OR coalesce(list_has_any(json_extract(extra, '$.conflicts_with')::VARCHAR[], ?::VARCHAR[]), false)"
)
# The newest revision of each Memory; every memory read goes through it.
_CURRENT = f"""
    SELECT {_MEMORY_COLUMNS}, fingerprint, subject_key{{owner_key}} FROM memory_revisions WHERE brain_uid = ? {{among}}
    QUALIFY row_number() OVER (PARTITION BY memory_id ORDER BY version DESC) = 1
"""


# Column types of the tables written in bulk (see DuckDBStore._insert), in table order.
_CHUNK_TYPES = ("VARCHAR", "VARCHAR", "INTEGER", "INTEGER", "VARCHAR", "VARCHAR", "TIMESTAMP", "VARCHAR", "VARCHAR",
                "VARCHAR", "VARCHAR", "VARCHAR", "BLOB")  # fmt: skip
_REVISION_TYPES = ("VARCHAR", "VARCHAR", "INTEGER", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
                   "VARCHAR", "TIMESTAMP", "TIMESTAMP", "TIMESTAMP", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
                   "BIGINT", "BOOLEAN", "BOOLEAN", "VARCHAR")  # fmt: skip
# Schema 6 (006_owner_key.sql) appends owner_key to memory_revisions.
OWNER_KEYS = 6
# Schema 7 (007_object_bytes.sql) appends value_bytes to object_versions.
OBJECT_BYTES = 7
_OBJECT_COLUMNS = "id, brain_uid, type, key, version, value, accepted_by, created_at, seq"
_LINK_TYPES = ("VARCHAR", "VARCHAR", "INTEGER", "VARCHAR")
# The tables whose rows belong to a Brain (brain_uid), by the schema that made them.
_BRAIN_TABLES = (
    (1, ("records", "record_events", "object_versions", "changes")),
    (2, ("memory_revisions", "memory_links", "memory_tombstones")),
    (3, ("chunks",)),
    (4, ("idempotency",)),
)
# Of those, the rows read without finding their Brain first: a stored reply is found by its key alone (a
# createBrain replay would answer for a Brain just forgotten), so they go in the transaction that
# forgets the Brain, not in slices after it.
_FOUND_WITHOUT_THEIR_BRAIN = frozenset({"idempotency"})
_EVENT_TYPES = ("VARCHAR", "VARCHAR", "BIGINT", "VARCHAR", "VARCHAR", "VARCHAR")
_RECORD_TYPES = ("VARCHAR",) * 7 + ("TIMESTAMP", "TIMESTAMP", "VARCHAR", "BIGINT")
# Records this process wrote, held as committed (row and latest status) for reads by id: DuckDB takes
# about 2.5 ms for one (a snapshot and two statements), and a client polls each new Record until it is
# ready. At most this many, each with content of at most this many characters of JSON; longer ones
# are read from the file.
RECENT_RECORDS = 4096
# Brains read (by id and by uid), and Brains' change sequences, held: at most this many of each, the
# first held given up first. A key making Brain after Brain grew them without bound (about 0.6 KB a Brain).
BRAINS_HELD = 1 << 16
# A forgotten Brain's rows go this many a transaction (erase_brain): deleting a row's entries from a
# table's indexes costs DuckDB about 7 us at the commit, so the Records and events of a 100,000-chunk
# Brain, deleted in one, held the write lock, every tenant's writes waiting, for 0.4 s.
ERASE_SLICE_ROWS = 2048
# Between slices: Python's locks are not handed over, so without a pause the erasing thread takes the
# write lock again before a waiting writer wakes up (another tenant's POST waited 89 ms at the median).
ERASE_SLICE_PAUSE = 0.001
RECENT_CONTENT_CHARS = 8192
# Records' visibilities held, read or written (record_visibilities): a Record's is fixed when it is
# written, and every Memory served (a Context's memories, listMemories, getMemory, a profile) asks for
# those of the Records it cites, which DuckDB answered in about 1.7 ms however few. At most this many
# (about 200 bytes each), the Brains used least recently given up first.
HELD_VISIBILITIES = 1 << 18
# Memory keys (see _MemoryKeys) held: for at most this many Brains and revisions in all (600-800 bytes
# a Memory of its own keys, with what ranks it: 470 before the keys ranked Memories); a Brain with more
# revisions than the last is looked up by statements, as without them.
# Over a bound, the namespace holding the most (Brains, or revisions) gives up its least recently
# used Brain: a tenant that touches many Brains, or one huge one, never pushes out another's few.
MEMORY_KEY_BRAINS = 64
MEMORY_KEY_TOTAL = 500_000
MEMORY_KEY_REVISIONS = 250_000
# Joins a (subject, attribute) pair into one comparable key; the unit separator never occurs in text.
_KEY_SEP = "\x1f"


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration shipped with the package, in order."""
    found = []
    for entry in resources.files("brainstore.store").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(number), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def _ts(value: datetime | None) -> datetime | None:
    """Store naive UTC."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None)


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


log = logging.getLogger("brainstore.store.duckdb")

# Under a steady stream of erases the debounce still compacts this many purge_delays after the first one.
_MAX_DEFER = 4
# A scheduled compaction starts no sooner than this many times the last one's duration after it ended: a
# tenant that forgets something every second would otherwise keep a core copying a large file all the time
# (a 224 MB file takes about 4 s; 1,000,000 chunks, ten times as long). At most a fifth of a core then goes
# to compaction, and erased bytes leave a file that takes D seconds to copy within 4 D + D.
_REST_FACTOR = 4.0
_RETRY_MAX = 60.0  # seconds between retries of a failing background compaction, at most
_ALIAS = "brainstore_compact"
# Journal replay: rounds run while writers go on until at most this many transactions are left for the
# round under the write lock (a few milliseconds of statements), or for at most this many rounds.
_CATCH_UP_LEFT = 16
_CATCH_UP_ROUNDS = 8
# What the journal may hold (strings and bytes of the statements and their parameters, roughly) before
# new transactions wait for the compaction to replay it or finish: a copy of a large file takes a minute,
# and writes at full speed meanwhile must not grow the process without bound.
_JOURNAL_LIMIT = 64 << 20
# Statements that only read; everything else a transaction runs is journaled while a compaction copies.
_READS = ("SELECT", "WITH", "FROM", "DESCRIBE", "SHOW", "PRAGMA", "EXPLAIN")


def _quote(identifier: str) -> str:
    return identifier.replace('"', '""')


# Shrinks a large file this much at a time before unlinking it.
_SHRINK_STEP = 8 << 20


def _remove_gradually(path: Path) -> None:
    """Unlink a large file without stalling other writers: freeing all of a 224 MB file's blocks at
    once held up the WAL's fsyncs of every commit for 120-140 ms; freeing them a few megabytes at a
    time spreads that out."""
    try:
        with open(path, "rb+") as file:
            size = os.fstat(file.fileno()).st_size
            while size > 0:
                size = max(0, size - _SHRINK_STEP)
                os.ftruncate(file.fileno(), size)
                time.sleep(0.002)  # room for another thread's fsync
    except FileNotFoundError:
        return
    _remove(path)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _interrupted(exc: RuntimeError) -> bool:
    """Whether a statement failed because a signal handler raised (Ctrl-C's KeyboardInterrupt, the
    bench's SIGTERM): DuckDB consumes that exception and raises a plain RuntimeError('Query
    interrupted') instead (duckdb 2.0; Connection.interrupt() from a thread raises InterruptException,
    another class). Only the main thread sees it: signals run their handlers there."""
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@dataclass
class _Written:
    """What a transaction wrote to Records: its rows (inserted at its next statement or its commit),
    status events and erasures, for the cache of recent Records after its commit."""

    rows: list[list[Any]] = field(default_factory=list)  # as the records table holds them
    inserted: int = 0  # how many of ``rows`` are in the table already
    events: list[RecordStatus] = field(default_factory=list)
    erased: list[tuple[str, str]] = field(default_factory=list)  # (brain uid, record id)

    @property
    def nothing(self) -> bool:
        return not (self.rows or self.events or self.erased)


def _footprint(statements: list[tuple[str, Any]]) -> int:
    """Roughly the bytes a transaction's journaled statements hold."""
    total = 0
    for query, parameters in statements:
        total += len(query)
        for value in parameters or ():
            for item in value if isinstance(value, list) else (value,):
                total += len(item) if isinstance(item, str | bytes) else 8
    return total


class _Ranked(NamedTuple):
    """What ranks a Memory among those of its key (LATEST_ENDING_SQL), from its newest revision."""

    version: int
    status: str
    valid_from: datetime  # naive UTC, as stored
    valid_to: datetime | None
    fingerprint: str | None
    subject_key: str
    attribute: str | None


@dataclass
class _MemoryKeys:
    """One Brain's memory ids under each fingerprint and each (subject key, attribute) of any of its
    revisions: a superset of the current Memories a lookup by either can match. Derivation looks up
    every batch's assertions, and most find nothing: a key missing here needs no statement, and one
    present reads the Memories it names, one scan of the Brain's revisions instead of two (5 ms a
    lookup at 2,000 turns, 9-14 ms at 200,000 revisions, before). Beside them, what ranks each Memory
    by its newest revision, so that the newest of a key (memories_by_*(newest=)) are chosen here and
    only those read: one assertion stated at 3,000 times made derivation rank all of them by statement,
    twice a Record (8.5 ms each; 5.5 by the keys, 1.1 of it choosing). Added to as revisions are written (a
    rolled-back write leaves a superset still); dropped whole by any erase in the Brain, since the
    keys hold its text, and all of them by a rollback, since keys read after an erase inside it would
    miss what it restores, and a rolled-back revision would rank its Memory."""

    by_fingerprint: dict[str, set[str]] = field(default_factory=dict)
    by_attribute: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    ranked: dict[str, _Ranked] = field(default_factory=dict)  # memory id -> its newest revision's
    size: int = 0  # revisions added

    def add(
        self,
        memory_id: str,
        fingerprint: str | None,
        subject_key: str,
        attribute: str | None,
        version: int,
        status: str,
        valid_from: datetime,
        valid_to: datetime | None,
    ) -> None:
        self.size += 1
        # one string for each key however many Memories and revisions hold it
        fingerprint, subject_key = _interned(fingerprint), sys.intern(subject_key)
        attribute = _interned(attribute)
        if fingerprint:
            self.by_fingerprint.setdefault(fingerprint, set()).add(memory_id)
        if attribute:
            self.by_attribute.setdefault((subject_key, attribute), set()).add(memory_id)
        held = self.ranked.get(memory_id)
        if held is None or version >= held.version:
            self.ranked[memory_id] = _Ranked(version, status, valid_from, valid_to, fingerprint, subject_key, attribute)

    def latest_ending(
        self, memory_ids: Iterable[str], group: Callable[[_Ranked], str], wanted: Collection[str], newest: int
    ) -> list[str]:
        """Of ``memory_ids``, those in WEIGHED_STATUSES whose ``group`` is ``wanted``, at most ``newest``
        of each group, in the order of LATEST_ENDING_SQL."""
        groups: dict[str, list[tuple[bool, datetime, datetime, str]]] = {}
        for memory_id in memory_ids:
            r = self.ranked[memory_id]
            if r.status in WEIGHED_STATUSES and (key := group(r)) in wanted:
                groups.setdefault(key, []).append(latest_ending_order(r.valid_from, r.valid_to, memory_id))
        return [order[3] for orders in groups.values() for order in heapq.nlargest(newest, orders)]


def _interned(text: str | None) -> str | None:
    return sys.intern(text) if text else text


def _fingerprint_of(ranked: _Ranked) -> str:
    return ranked.fingerprint or ""


def _attribute_key(subject_key: str, attribute: str | None) -> str:
    """A (subject key, attribute) pair as one comparable text, as memories_by_attributes matches it."""
    return f"{subject_key}{_KEY_SEP}{attribute}"


def _attribute_key_of(ranked: _Ranked) -> str:
    return _attribute_key(ranked.subject_key, ranked.attribute)


def _uncarried_seqs(seqs: dict[str, int], written: _Written) -> list[tuple[str, int]]:
    """The per-Brain ends of a transaction's change sequence that need a ``changes`` row: those no
    Record row it wrote holds already (current_seq reads Records too). A group commit of Records
    then writes one statement less (about 1 ms of CPU, a fifth of a lone Record's write)."""
    erased = {record_id for _, record_id in written.erased}
    carried: dict[str, int] = {}
    for row in written.rows:
        if row[0] not in erased:
            brain_uid, seq = row[1], row[-1]
            carried[brain_uid] = max(carried.get(brain_uid, 0), seq)
    return [(brain_uid, seq) for brain_uid, seq in seqs.items() if carried.get(brain_uid) != seq]


class _Journaling:
    """A transaction's cursor while a compaction copies: its writing statements are noted, to be
    replayed into the copy once the transaction commits."""

    __slots__ = ("_cursor", "_statements")

    def __init__(self, cursor: duckdb.DuckDBPyConnection, statements: list[tuple[str, Any]]) -> None:
        self._cursor = cursor
        self._statements = statements

    def execute(self, query: str, parameters: Any = None) -> duckdb.DuckDBPyConnection:
        result = self._cursor.execute(query, parameters)
        words = query.lstrip().split(None, 1)
        if words and words[0].upper() not in _READS:
            self._statements.append((query, list(parameters) if parameters is not None else None))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class DuckDBStore:
    kind = "duckdb"

    def __init__(self, path: str | Path, *, purge_delay: float = 5.0, memory_limit_mib: int = 0) -> None:
        """``memory_limit_mib``: what DuckDB may use (0: DuckDB's default, 80% of the machine)."""
        if purge_delay < 0:
            raise ValueError("purge_delay must be >= 0")
        if memory_limit_mib < 0:
            raise ValueError("memory_limit_mib must be >= 0")
        self.memory_limit_mib = memory_limit_mib
        self.path = Path(path)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.purge_delay = float(purge_delay)
        self._tmp = self.path.with_name(self.path.name + ".compact")
        self._backup = self.path.with_name(self.path.name + ".precompact")
        self._marker = self.path.with_name(self.path.name + ".purge")
        self._recover_files()
        self._conn = self._connect()
        self._generation = 0  # bumped whenever _conn is replaced: cursors of an older one are stale
        self._local = threading.local()
        self._write_lock = threading.RLock()
        # The gate: every store call holds it shared; compaction holds it exclusive while it swaps files.
        self._gate = threading.Condition(threading.Lock())
        self._gate_active = 0
        self._gate_exclusive = False
        # One compaction at a time; taken before the write lock (close() holds both).
        self._compaction = threading.RLock()
        # While a compaction copies: each committed transaction's writing statements, in commit order
        # (appended under the write lock; None once replayed). None otherwise.
        self._journal: list[list[tuple[str, Any]] | None] | None = None
        self._journal_sizes: list[int] = []
        self._journal_bytes = 0  # held by entries not replayed yet (see _JOURNAL_LIMIT)
        self._journal_room = threading.Condition(threading.Lock())
        self._erasures = 0  # erases committed so far: one committed after a compaction's snapshot keeps it dirty
        # Purge scheduling.
        self._purge = threading.Condition(threading.Lock())
        self._dirty = False
        self._first_erase: float | None = None
        self._due: float | None = None
        self._rest_until = 0.0  # see _REST_FACTOR
        self._failures = 0
        self._brains_erasing = 0  # Brains whose rows are going a slice at a time (erase_brain)
        self._orphans_left = False  # a Brain's slices failed: the next compaction deletes what is left
        self._stopping = False
        self._closed = False
        self._purger: threading.Thread | None = None
        # The committed end of each Brain's change sequence (a transaction's own advance is in
        # ``self._local.seqs`` until it commits, when a Record row or a ``changes`` row records it).
        self._seq_cache: dict[str, int] = {}
        # Brains never change once created, so reads of them are cached; erase_brain drops its entries
        # again after its commit (a reader may have cached the Brain meanwhile).
        self._brains: dict[tuple[str, str], Brain] = {}
        self._brains_by_uid: dict[str, Brain] = {}
        self._brains_lock = threading.Lock()  # changes to the two (reads take no lock)
        self._brain_erasures = 0  # a read that overlapped an erase's commit caches nothing
        # record id -> (row as _record reads it, seq of its latest event); see RECENT_RECORDS. Changed
        # only after a commit, in commit order (under the write lock): a reader outside a transaction
        # sees what it would read from the file.
        self._recent: OrderedDict[str, tuple[tuple[Any, ...], int]] = OrderedDict()
        self._recent_lock = threading.Lock()
        # brain uid -> record id -> visibility (HELD_VISIBILITIES), under _recent_lock; the Brains used
        # least recently first. Erasures count up so that a read overlapping one holds nothing it read.
        self._visibilities: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._visibilities_held = 0
        self._record_erasures = 0
        # brain uid -> its memory keys, or None when it has too many revisions, least recently used first;
        # and the namespace of each Brain held. Used under the write lock.
        self._memory_keys: OrderedDict[str, _MemoryKeys | None] = OrderedDict()
        self._memory_key_namespaces: dict[str, str] = {}
        self._current_memories = CurrentMemories(as_stored=self._as_stored)  # see store.current
        self._schema: int | None = None
        self._exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
        )
        if self._marker.exists():
            # An erase committed but its compaction never finished (the process died): do it now.
            self._dirty = True
            if self.schema_version() >= 1:
                self._erase_orphans()
            try:
                self.compact()
            except Exception:
                log.exception("compaction of %s at open failed; retrying in the background", self.path)
                self._schedule(retry=True)

    def _recover_files(self) -> None:
        """Leftovers of a compaction the process did not finish. The data file itself is always whole."""
        if not self.path.exists() and self._backup.exists():
            os.replace(self._backup, self.path)  # pragma: no cover - only after a crash mid-fallback-copy
        for leftover in (self._tmp, Path(f"{self._tmp}.wal"), self._backup):
            if leftover.exists():
                self._marker.touch()  # the old file's erased bytes may be there: compact again
                _remove(leftover)

    # --- plumbing ---------------------------------------------------------------------------------
    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file and keep it (and its WAL) readable by this user only: it holds every
        tenant's text."""
        settings: dict[str, str | bool | int | float | list[str]] = {}
        if self.memory_limit_mib:
            settings["memory_limit"] = f"{self.memory_limit_mib}MiB"
        conn = duckdb.connect(str(self.path), config=settings)
        self._private_files()
        return conn

    def _private_files(self, database: Path | None = None) -> None:
        """The database file (default: the store's) and its WAL, readable by this user only."""
        database = database or self.path
        for path in (database, Path(f"{database}.wal")):
            try:
                if path.stat().st_mode & 0o077:
                    path.chmod(0o600)
            except OSError:  # not there (no WAL yet), or vanished meanwhile
                pass

    @contextmanager
    def _shared(self) -> Iterator[None]:
        """Enter the gate for one store call (re-entrant per thread); waits only while a compaction swaps."""
        local = self._local
        depth = getattr(local, "gate", 0)
        if depth == 0:
            with self._gate:
                while self._gate_exclusive:
                    self._gate.wait()
                self._gate_active += 1
        local.gate = depth + 1
        try:
            yield
        except RuntimeError as exc:
            # Ctrl-C in a statement is an interrupt again, raised at the store call it landed in: as
            # DuckDB's RuntimeError it was an Exception, and the callers that take one for a failure
            # went on (a group commit tried each write again alone and the command ran on; the API
            # answered internal_error, which the embedded bench retried).
            if _interrupted(exc):
                raise KeyboardInterrupt from exc
            raise
        finally:
            local.gate = depth
            if depth == 0:
                with self._gate:
                    self._gate_active -= 1
                    if self._gate_active == 0:
                        self._gate.notify_all()

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold off every store call. Caller holds the write lock, so no transaction is open."""
        with self._gate:
            while self._gate_exclusive:  # pragma: no cover - the write lock already serializes this
                self._gate.wait()
            self._gate_exclusive = True
            try:
                while self._gate_active:
                    self._gate.wait()
            except BaseException:  # pragma: no cover
                self._gate_exclusive = False
                self._gate.notify_all()
                raise
        try:
            yield
        finally:
            with self._gate:
                self._gate_exclusive = False
                self._gate.notify_all()

    def _cur(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor, for a statement: the Records this transaction buffered go in first,
        so that the statement sees them. While a compaction copies, a transaction's statements are
        journaled."""
        cursor = self._cursor()
        self._flush_records(cursor)
        statements = getattr(self._local, "journaled", None)
        if statements is not None:
            return _Journaling(cursor, statements)  # type: ignore[return-value]
        return cursor

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        local = self._local
        if not getattr(local, "gate", 0):
            raise RuntimeError("DuckDBStore: a cursor is used outside the store's gate")
        cursor = getattr(local, "cursor", None)
        if cursor is None or local.generation != self._generation:
            cursor = self._conn.cursor()
            local.cursor = cursor
            local.generation = self._generation
            local.depth = 0
        return cursor

    def _flush_records(self, cursor: duckdb.DuckDBPyConnection) -> None:
        """Insert the Records this transaction wrote since its last statement, in one statement: a
        group commit's writes share one INSERT instead of paying about a millisecond each."""
        written = getattr(self._local, "written", None)
        if written is None or written.inserted == len(written.rows):
            return
        rows = written.rows[written.inserted :]
        written.inserted = len(written.rows)  # before the statement, which comes back here
        self._insert("records", _RECORD_TYPES, rows)

    # --- Records written by this process (RECENT_RECORDS) -----------------------------------------------
    def _remember(self, written: _Written) -> None:
        """After a commit: what it wrote to Records, in the cache of recent ones."""
        if written.nothing:
            return
        with self._recent_lock:
            recent = self._recent
            for id_, uid, content, source, _name, _external_id, *rest in written.rows:
                if len(content) <= RECENT_CONTENT_CHARS:
                    # the row as _record reads it: no status event yet
                    recent[id_] = ((id_, uid, content, source, *rest, None, None, None), 0)
                    if len(recent) > RECENT_RECORDS:
                        recent.popitem(last=False)
            for event in written.events:
                held = recent.get(event.record_id)
                if held is not None and held[0][1] == event.brain_uid and event.seq > held[1]:
                    outcome = (
                        event.status,
                        _json(event.error) if event.error else None,
                        _json(list(event.memory_ids)),
                    )
                    recent[event.record_id] = ((*held[0][:9], *outcome), event.seq)
            for _, record_id in written.erased:
                recent.pop(record_id, None)
            for id_, uid, _content, _source, _name, _external_id, visibility, *_ in written.rows:
                self._hold_visibilities(uid, {id_: visibility})
            if written.erased:
                self._record_erasures += 1
            for uid, record_id in written.erased:
                if self._visibilities.get(uid, {}).pop(record_id, None) is not None:
                    self._visibilities_held -= 1

    def _hold_visibilities(self, brain_uid: str, visibilities: dict[str, str]) -> None:
        """Under _recent_lock: hold these of the Brain's Records, within HELD_VISIBILITIES."""
        held = self._visibilities.get(brain_uid)
        if held is None:
            held = self._visibilities[brain_uid] = {}
        self._visibilities.move_to_end(brain_uid)
        for record_id, visibility in visibilities.items():
            if record_id in held:
                continue
            while self._visibilities_held >= HELD_VISIBILITIES and next(iter(self._visibilities)) != brain_uid:
                _, dropped = self._visibilities.popitem(last=False)
                self._visibilities_held -= len(dropped)
            if self._visibilities_held >= HELD_VISIBILITIES:
                return  # this Brain alone holds the bound
            held[record_id] = visibility
            self._visibilities_held += 1

    def _recent_records(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, Record] | None:
        """The Records from the cache of recent ones, or None unless every one is there. Inside a
        transaction only until it writes to Records: its snapshot is then the last commit, which the
        cache follows under the same write lock (derivation's batch reads its Records' statuses with
        two statements less); after, its own writes are not in the cache."""
        local = self._local
        if getattr(local, "depth", 0) and not local.written.nothing:
            return None
        with self._recent_lock:
            held = [self._recent.get(record_id) for record_id in record_ids]
        # Another Brain's Record is a miss, read as an unknown id is: answered from here, it came back
        # faster, which told another tenant that the id exists.
        if any(h is None or h[0][1] != brain_uid for h in held):
            return None
        return {row[0]: self._record(row) for row, _ in held}  # type: ignore[index]

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._shared():
            return self._cur().execute(sql, params).fetchall()

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self.atomic():
            self._cur().execute(sql, params)

    def _insert(self, table: str, types: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` in ONE statement: each column goes in as a list and is unnested. A
        statement costs about a millisecond however small, and executemany runs one per row (1,000
        chunk rows: 560 ms by executemany, 115 ms this way). One row goes in as plain VALUES, which
        is cheaper than the unnest (0.96 against 1.49 ms). A list is not cast to its column's type
        (``types``, in table order): the insert casts every value to its column's type anyway, and
        the cast of each list cost about 25 us a column (6 Records: 1.27 against 0.99 ms)."""
        if not rows:
            return
        with self.atomic():
            if len(rows) == 1:
                self._cur().execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(types))})", list(rows[0]))
                return
            columns = [list(column) for column in zip(*rows, strict=True)]
            select = ", ".join("unnest(?)" for _ in types)
            self._cur().execute(f"INSERT INTO {table} SELECT {select}", columns)

    def _erased(self) -> None:
        """Called inside an erase's transaction: its commit makes the store dirty."""
        self._local.erased = True

    @contextmanager
    def atomic(self) -> Iterator[None]:
        local = self._local
        if getattr(local, "depth", 0):
            # Inside this thread's own transaction, which holds the write lock and the gate and commits
            # or rolls back as a whole: nothing to take or set up. Every store call of a transaction
            # enters here (a group commit's write, about a dozen a Record): 5.6 us each by the full path.
            local.depth += 1
            try:
                yield
            except RuntimeError as exc:
                if _interrupted(exc):  # see _shared: raised here, before the caller inside the transaction
                    raise KeyboardInterrupt from exc
                raise
            finally:
                local.depth -= 1
            return
        purge = False
        if self._journal is not None and not getattr(self._local, "depth", 0):
            self._wait_for_journal_room()  # before the write lock, which the compaction needs to finish
        with self._write_lock, self._shared():
            local = self._local
            cursor = self._cursor()  # no flush: a write that buffers a Record enters here
            outermost = local.depth == 0
            local.depth += 1
            if outermost:
                local.erased = False
                local.seqs = {}
                local.erased_brains = []
                local.locked = set()
                local.written = _Written()
                local.memories_written = {}
                local.memories_dropped = set()
                local.journaled = [] if self._journal is not None else None
                cursor.execute("BEGIN TRANSACTION")
            memory_commit = None
            try:
                yield
                if outermost:
                    purge = local.erased
                    self._flush_records(cursor)
                    self._insert("changes", ("VARCHAR", "BIGINT"), _uncarried_seqs(local.seqs, local.written))
                    if purge:
                        self._marker.touch()  # before the commit: a crash after it still purges on open
                    memory_commit = self._current_memories.committing(local.memories_written, local.memories_dropped)
                    cursor.execute("COMMIT")
                    self._current_memories.committed(memory_commit)
                    memory_commit = None
                    if local.journaled and self._journal is not None:
                        size = _footprint(local.journaled)
                        with self._journal_room:
                            self._journal.append(local.journaled)
                            self._journal_sizes.append(size)
                            self._journal_bytes += size
                    if purge:
                        self._erasures += 1
                        with self._purge:
                            self._dirty = True
                    self._hold_seqs(local.seqs)
                    self._remember(local.written)
                    for uid in local.erased_brains:
                        self._forget_brain(uid)
                    self._private_files()  # a WAL the commit created
            except BaseException:
                purge = False
                self._current_memories.abandoned(memory_commit)
                if outermost:
                    self._memory_keys.clear()  # see _MemoryKeys
                    self._memory_key_namespaces.clear()
                    cursor.execute("ROLLBACK")
                raise
            finally:
                local.depth -= 1
                if outermost:
                    local.erased = False
                    local.seqs = {}
                    local.written = _Written()
                    local.memories_written = {}
                    local.memories_dropped = set()
                    local.journaled = None
        if purge and not getattr(self._local, "compact_later", False):
            self._after_erase()

    def _wait_for_journal_room(self) -> None:
        with self._journal_room:
            while self._journal is not None and self._journal_bytes > _JOURNAL_LIMIT:
                self._journal_room.wait()

    def _set_journal(self, journal: list[list[tuple[str, Any]] | None] | None) -> None:
        with self._journal_room:
            self._journal = journal
            self._journal_sizes = []
            self._journal_bytes = 0
            self._journal_room.notify_all()

    # --- purge ------------------------------------------------------------------------------------
    def _after_erase(self) -> None:
        if self.purge_delay == 0:
            try:
                self.compact()
            except Exception:
                # The erase is committed either way; its bytes stay until a retry succeeds.
                log.exception("compaction of %s after an erase failed; retrying in the background", self.path)
                self._schedule(retry=True)
        else:
            self._schedule()

    def _schedule(self, *, retry: bool = False) -> None:
        now = time.monotonic()
        with self._purge:
            if self._stopping:
                return
            if retry:
                self._failures += 1
                self._due = now + min(_RETRY_MAX, max(self.purge_delay, 1.0) * 2 ** (self._failures - 1))
            else:
                if self._first_erase is None:
                    self._first_erase = now
                self._due = min(now + self.purge_delay, self._first_erase + _MAX_DEFER * self.purge_delay)
                self._due = max(self._due, self._rest_until)
            if self._purger is None or not self._purger.is_alive():  # none yet, or lost in a fork
                self._purger = threading.Thread(target=self._purge_loop, name="brainstore-purge", daemon=True)
                self._purger.start()
            self._purge.notify_all()

    def _purge_loop(self) -> None:
        while True:
            with self._purge:
                while not self._stopping and (self._due is None or self._due > time.monotonic()):
                    self._purge.wait(None if self._due is None else self._due - time.monotonic())
                if self._stopping:
                    return
                self._due = None
            try:
                self.compact()
            except Exception:
                log.exception("background compaction of %s failed; the store stays dirty", self.path)
                self._schedule(retry=True)

    @property
    def dirty(self) -> bool:
        """True while erased content may still be in the file."""
        return self._dirty

    def compact(self) -> None:
        """Rewrite the file with only live data, so erased rows' bytes leave it.

        Reads and writes go on while the copy is made and caught up. Reads wait only for the swap;
        writes also for the last round of the catch-up and the checkpoint of what was written meanwhile
        (see the module's docstring). Every erase committed before
        the call is purged when it returns; one committed meanwhile leaves the store dirty. On failure
        the old file stays in place, the store stays dirty, and the error is raised.
        """
        if getattr(self._local, "depth", 0) or getattr(self._local, "gate", 0):
            raise RuntimeError("compact() cannot run inside atomic() or another store call")
        # Retrying a failed background compaction, writers wait for the whole copy: nothing is
        # journaled, so a statement that does not replay cannot keep erased bytes in the file.
        with self._compaction, self._write_lock if self._failures else nullcontext():
            self._compact()

    def _compact(self) -> None:
        if self._closed:
            raise duckdb.ConnectionException("Connection already closed!")
        started = time.monotonic()
        with self._purge:
            orphans, self._orphans_left = self._orphans_left, False
        if orphans:
            try:
                self._erase_orphans()
            except BaseException:
                with self._purge:
                    self._orphans_left = True
                raise
        copier: duckdb.DuckDBPyConnection | None = None
        replayer: duckdb.DuckDBPyConnection | None = None
        try:
            with self._shared():
                name = self._attach_copy()  # creating the file took up to a quarter second: not under the lock
            with self._write_lock, self._shared():
                erasures = self._erasures
                with self._purge:
                    self._first_erase = None  # an erase from now on debounces from itself
                copier = self._pin_snapshot(name)
                journal: list[list[tuple[str, Any]] | None] = []
                self._set_journal(journal)
            with self._shared():
                self._copy(copier, name)
                replayer = self._conn.cursor()
                replayer.execute(f"USE {_ALIAS}")  # this cursor's unqualified names are the copy's
                replayed = 0
                for _ in range(_CATCH_UP_ROUNDS):
                    if len(journal) - replayed <= _CATCH_UP_LEFT:
                        break
                    replayed = self._replay(replayer, journal, replayed)
                self._sync_copy(copier)  # most of the copy reaches the disk before writers wait
            with self._write_lock:
                with self._shared():
                    # What the writes since the snapshot left in the WAL (no checkpoint runs while a snapshot
                    # is pinned) goes into the old file here, with reads going on, not in the swap, which
                    # holds them off: 0.6 s after 760 writes of a Record and 8 chunks each during a copy.
                    self._conn.execute("CHECKPOINT")
                    self._replay(replayer, journal, replayed)
                    self._set_journal(None)
                    replayer.close()
                    self._check_copy(copier, name)
                    self._sync_copy(copier)
                    copier.execute(f"DETACH {_ALIAS}")
                    copier.close()
                    if Path(f"{self._tmp}.wal").exists():
                        raise RuntimeError("compaction left a WAL behind its copy")
                with self._exclusive():
                    self._swap()
        except BaseException:
            with self._write_lock:
                self._set_journal(None)
                if not self._closed:
                    with self._shared():
                        for cursor in (replayer, copier):
                            if cursor is not None:
                                with suppress(duckdb.Error):  # closed already
                                    cursor.close()
                        if self._alias_attached():
                            self._conn.execute(f"DETACH {_ALIAS}")
            _remove(self._tmp)
            _remove(Path(f"{self._tmp}.wal"))
            raise  # still dirty; the marker stays
        # The old file, with the erased bytes, goes while writers go on.
        _remove_gradually(self._backup)
        _fsync_dir(self.path.parent)
        with self._write_lock:  # erases commit under it: none can slip between the check and the reset
            ended = time.monotonic()
            with self._purge:
                self._rest_until = ended + _REST_FACTOR * (ended - started)
                if self._due is not None and self._erasures != erasures:
                    self._due = max(self._due, self._rest_until)
            # every erase committed so far is out of the file, and no Brain's rows are left or going
            if self._erasures == erasures and not self._brains_erasing and not self._orphans_left:
                with self._purge:
                    self._dirty = False
                    self._failures = 0
                    self._first_erase = None
                    self._due = None
                _remove(self._marker)

    def _alias_attached(self) -> bool:
        return bool(self._conn.execute("SELECT 1 FROM duckdb_databases() WHERE database_name = ?", [_ALIAS]).fetchall())

    def _attach_copy(self) -> str:
        """Attach a new, empty file for the copy; returns the live database's name."""
        conn = self._conn
        for leftover in (self._tmp, Path(f"{self._tmp}.wal")):
            _remove(leftover)
        name, tags = conn.execute(
            "SELECT database_name, tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()  # type: ignore[misc]
        # Keep the file readable by the DuckDB versions that read the old one.
        version = str((tags or {}).get("storage_version", "")).rstrip("+")
        options = f" (STORAGE_VERSION '{version}')" if version.startswith("v") else ""
        quoted_path = str(self._tmp).replace("'", "''")
        conn.execute(f"ATTACH '{quoted_path}' AS {_ALIAS}{options}")
        self._private_files(self._tmp)  # before any row is copied into it
        return str(name)

    def _pin_snapshot(self, name: str) -> duckdb.DuckDBPyConnection:
        """A cursor of its own in a transaction whose snapshot of the live database is pinned. Caller
        holds the write lock, so the snapshot holds every committed transaction and none half done."""
        self._conn.execute("CHECKPOINT")  # the copy reads the main file, not a long WAL
        copier = self._conn.cursor()
        copier.execute("BEGIN TRANSACTION")
        copier.execute(f'SELECT count(*) FROM "{_quote(name)}".main.schema_migrations').fetchall()
        return copier

    def _copy(self, copier: duckdb.DuckDBPyConnection, name: str) -> None:
        """Copy the pinned snapshot into the attached copy and check it holds every row of it."""
        copier.execute(f'COPY FROM DATABASE "{_quote(name)}" TO {_ALIAS}')
        self._check_copy(copier, name)
        copier.execute("COMMIT")
        self._private_files(self._tmp)  # a WAL the commit created

    def _check_copy(self, cursor: duckdb.DuckDBPyConnection, name: str) -> None:
        """The copy has the live database's tables, each with as many rows, as ``cursor`` sees them."""
        tables = {
            (schema, table)
            for schema, table in cursor.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ?", [name]
            ).fetchall()
        }
        copied = {
            (schema, table)
            for schema, table in cursor.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ?", [_ALIAS]
            ).fetchall()
        }
        if tables != copied:
            raise RuntimeError(f"compaction copied tables {sorted(copied)}, expected {sorted(tables)}")
        for schema, table in sorted(tables):
            ident = f'"{_quote(schema)}"."{_quote(table)}"'
            old, new = cursor.execute(
                f'SELECT (SELECT count(*) FROM "{_quote(name)}".{ident}), (SELECT count(*) FROM {_ALIAS}.{ident})'
            ).fetchone()  # type: ignore[misc]
            if old != new:
                raise RuntimeError(f"compaction copied {new} rows of {table}, expected {old}")

    def _sync_copy(self, copier: duckdb.DuckDBPyConnection) -> None:
        copier.execute(f"CHECKPOINT {_ALIAS}")
        with open(self._tmp, "rb+") as copy:
            os.fsync(copy.fileno())

    def _replay(
        self, replayer: duckdb.DuckDBPyConnection, journal: list[list[tuple[str, Any]] | None], start: int
    ) -> int:
        """Replay the journal's transactions from ``start`` into the copy, in one transaction, and let
        them go; returns where the next round starts."""
        end = len(journal)  # writers append whole transactions, under the write lock
        if end == start:
            return end
        replayer.execute("BEGIN TRANSACTION")
        try:
            for statements in journal[start:end]:
                for query, parameters in statements or ():
                    replayer.execute(query, parameters)
            replayer.execute("COMMIT")
            self._private_files(self._tmp)  # a WAL the commit created
        except BaseException:
            replayer.execute("ROLLBACK")
            raise
        with self._journal_room:
            if self._journal is journal:
                for i in range(start, end):
                    journal[i] = None
                self._journal_bytes -= sum(self._journal_sizes[start:end])
                self._journal_room.notify_all()
        return end

    def _swap(self) -> None:
        """Put the checked copy in place of the file. Runs with every store call held off."""
        self._generation += 1  # every thread's cursor belongs to the connection closed here
        wal = Path(f"{self.path}.wal")
        try:
            self._conn.execute("CHECKPOINT")  # nothing else is running: this one empties the WAL
            self._conn.close()  # closes every thread's cursor too
            if wal.exists() and wal.stat().st_size:
                raise RuntimeError(f"{wal} is not empty after a checkpoint; not swapping")
            _remove(wal)
            _remove(self._backup)
            try:
                os.link(self.path, self._backup)  # the old file stays reachable until the new one opens
            except OSError:  # pragma: no cover - filesystems without hard links
                shutil.copy2(self.path, self._backup)
            os.replace(self._tmp, self.path)
            _fsync_dir(self.path.parent)
        except BaseException:
            self._conn = self._connect()
            raise
        try:
            self._conn = self._connect()
        except BaseException:
            log.exception("the compacted copy of %s did not open; putting the old file back", self.path)
            os.replace(self._backup, self.path)
            _fsync_dir(self.path.parent)
            self._conn = self._connect()
            raise

    def unavailable(self, error: BaseException) -> bool:
        # duckdb's OperationalError: IO, transaction conflicts, out of memory, connection
        return isinstance(error, OSError | MemoryError | duckdb.OperationalError | duckdb.InterruptException | duckdb.FatalException)

    def close(self) -> None:
        with self._purge:
            self._stopping = True
            self._purge.notify_all()
            purger = self._purger
        if purger is not None and purger is not threading.current_thread():
            purger.join()
        with self._compaction, self._write_lock:
            if self._closed:
                return
            if self._dirty:
                try:
                    self.compact()
                except Exception:
                    log.exception("compaction of %s at close failed; it runs at the next open", self.path)
            with self._exclusive():
                self._closed = True
                self._conn.close()
                self._generation += 1
            with self._recent_lock:
                self._recent.clear()
                self._visibilities.clear()
                self._visibilities_held = 0
            self._current_memories.clear()

    # --- schema -----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        # Only migrate() changes it, and only this process holds the file: cache it.
        if self._schema is None:
            row = self._rows("SELECT coalesce(max(version), 0) FROM schema_migrations")
            self._schema = int(row[0][0])
        return self._schema

    def migrate(self, up_to: int | None = None) -> list[int]:
        applied = []
        current = self.schema_version()
        for version, name, sql in migrations():
            if version <= current or (up_to is not None and version > up_to):
                continue
            with self.atomic():
                # Comments may hold semicolons; drop them before splitting into statements.
                code = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
                for statement in filter(str.strip, code.split(";")):
                    self._cur().execute(statement)
                if version == OWNER_KEYS:
                    self._casefold_owner_keys()
                self._cur().execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, name, _ts(datetime.now(UTC))]
                )
            self._schema = None
            self._current_memories.clear()
            applied.append(version)
        return applied

    def _casefold_owner_keys(self) -> None:
        """Migration 6 keyed owners by DuckDB's lower(); the owners whose casefold differs get it here."""
        owners = self._rows("SELECT DISTINCT owner, owner_key FROM memory_revisions WHERE owner IS NOT NULL")
        for owner, key in owners:
            if owner.casefold() != key:
                self._cur().execute(
                    "UPDATE memory_revisions SET owner_key = ? WHERE owner = ?", [owner.casefold(), owner]
                )

    # --- change sequence --------------------------------------------------------------------------
    def next_seq(self, brain_uid: str) -> int:
        with self.atomic():
            seq = self.current_seq(brain_uid) + 1
            self._local.seqs[brain_uid] = seq
            return seq

    def current_seq(self, brain_uid: str) -> int:
        pending = getattr(self._local, "seqs", None)
        if pending and brain_uid in pending:  # this thread's open transaction
            return int(pending[brain_uid])
        cached = self._seq_cache.get(brain_uid)
        if cached is not None:
            return cached
        with self._write_lock:  # not while a transaction that advances it is committing
            cached = self._seq_cache.get(brain_uid)
            if cached is None:
                row = self._rows(
                    "SELECT greatest((SELECT coalesce(max(seq), 0) FROM changes WHERE brain_uid = ?), "
                    "(SELECT coalesce(max(seq), 0) FROM records WHERE brain_uid = ?))",
                    [brain_uid, brain_uid],
                )
                cached = int(row[0][0])
                self._hold_seqs({brain_uid: cached})
            return cached

    def _hold_seqs(self, seqs: dict[str, int]) -> None:
        """Under the write lock (the only one that changes them): these committed sequence ends, within
        BRAINS_HELD. One given up is read again from the file, under the write lock."""
        self._seq_cache.update(seqs)
        while len(self._seq_cache) > BRAINS_HELD:
            del self._seq_cache[next(iter(self._seq_cache))]

    def live_seq(self, brain_uid: str) -> int | None:
        # both held in memory once read: no statement to save
        return self.current_seq(brain_uid) if self.brain_by_uid(brain_uid) is not None else None

    # --- brains -----------------------------------------------------------------------------------
    def lock_brain(self, brain_uid: str) -> bool:
        # One writing process, writers serialized by the write lock the caller's atomic() holds:
        # erase_brain cannot commit until this transaction ends.
        with self.atomic():
            # once seen in this transaction it stays until the transaction erases it: a group commit
            # locks one Brain for each of its writes
            if brain_uid in self._local.locked:
                return True
            # The Brain cache holds only Brains committed and not erased since (an erase drops its
            # entry inside its transaction, and this one holds the write lock): no statement needed.
            if brain_uid in self._brains_by_uid:
                self._local.locked.add(brain_uid)
                return True
            row = self._cur().execute("SELECT count(*) FROM brains WHERE uid = ?", [brain_uid]).fetchone()
            if row and row[0]:
                self._local.locked.add(brain_uid)
                return True
            return False

    def try_lock_brains(self, brain_uids: Sequence[str], *, wait_at_most: float = 0.0) -> set[str]:
        # One writing process, whose transactions take turns under the write lock the caller's atomic()
        # holds: no other transaction holds a Brain, and lock_brain never waits.
        return set()

    def insert_brain(self, brain: Brain) -> None:
        self._exec(
            "INSERT INTO brains VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                brain.uid,
                brain.namespace,
                brain.id,
                brain.name,
                brain.self_type,
                brain.self_name,
                _ts(brain.created_at),
            ],
        )

    def _brain(self, where: str, params: Sequence[Any]) -> Brain | None:
        erasures = self._brain_erasures
        rows = self._rows(
            f"SELECT uid, namespace, id, name, self_type, self_name, created_at FROM brains WHERE {where}", params
        )
        if not rows:
            return None
        uid, ns, id_, name, self_type, self_name, created_at = rows[0]
        brain = Brain(uid, ns, id_, name, self_type, self_name, _utc(created_at))  # type: ignore[arg-type]
        # Only what is committed, and only if no erase committed since the read began (checked under the
        # lock an erase's _forget_brain takes: it cannot come between the check and the holding).
        if getattr(self._local, "depth", 0):
            return brain
        with self._brains_lock:
            if erasures == self._brain_erasures:
                self._brains[(ns, id_)] = self._brains_by_uid[uid] = brain
                while len(self._brains_by_uid) > BRAINS_HELD:
                    oldest = self._brains_by_uid.pop(next(iter(self._brains_by_uid)))
                    self._brains.pop((oldest.namespace, oldest.id), None)
        return brain

    def _forget_brain(self, brain_uid: str) -> None:
        with self._brains_lock:
            self._brain_erasures += 1
            brain = self._brains_by_uid.pop(brain_uid, None)
            if brain is not None:
                self._brains.pop((brain.namespace, brain.id), None)
        with self._recent_lock:
            for record_id in [rid for rid, (row, _) in self._recent.items() if row[1] == brain_uid]:
                del self._recent[record_id]
            self._record_erasures += 1
            self._visibilities_held -= len(self._visibilities.pop(brain_uid, {}))

    def get_brain(self, namespace: str, brain_id: str) -> Brain | None:
        held = self._brains.get((namespace, brain_id))
        return held if held is not None else self._brain("namespace = ? AND id = ?", [namespace, brain_id])

    def brain_by_uid(self, brain_uid: str) -> Brain | None:
        held = self._brains_by_uid.get(brain_uid)
        return held if held is not None else self._brain("uid = ?", [brain_uid])

    def _brain_tables(self) -> list[str]:
        """The tables whose rows belong to a Brain (by ``brain_uid``), at this schema."""
        version = self.schema_version()
        return [table for needs, tables in _BRAIN_TABLES if version >= needs for table in tables]

    def erase_brain(self, brain_uid: str) -> dict[str, int]:
        """The Brain goes in one transaction: from its commit no read finds it, nor a write (lock_brain).
        Its rows go then, ERASE_SLICE_ROWS a transaction, before this returns, every other writer taking
        the write lock in between (inside a caller's transaction, all in it). A slice that fails leaves
        the rest to the next compaction, which deletes the rows of no Brain before it copies; a process
        that dies in between leaves them to its next open (the purge marker stays until then)."""
        sliced = not getattr(self._local, "depth", 0)
        tables = self._brain_tables()
        at_once = [t for t in tables if not sliced or t in _FOUND_WITHOUT_THEIR_BRAIN]
        gone = left = False
        with self._purge:
            self._brains_erasing += 1
        try:
            self._local.compact_later = sliced  # once, after the last slice
            with self.atomic():
                counts = {
                    "records": self._rows("SELECT count(*) FROM records WHERE brain_uid = ?", [brain_uid])[0][0],
                    "memories": self._rows(
                        "SELECT count(DISTINCT memory_id) FROM memory_revisions WHERE brain_uid = ?", [brain_uid]
                    )[0][0]
                    if self.schema_version() >= 2
                    else 0,
                    "objects": self._rows(
                        "SELECT count(*) FROM (SELECT DISTINCT type, key FROM object_versions WHERE brain_uid = ?)",
                        [brain_uid],
                    )[0][0],
                }
                for table in at_once:
                    self._cur().execute(f"DELETE FROM {table} WHERE brain_uid = ?", [brain_uid])
                self._cur().execute("DELETE FROM brains WHERE uid = ?", [brain_uid])
                self._seq_cache.pop(brain_uid, None)
                self._local.seqs.pop(brain_uid, None)
                self._forget_brain(brain_uid)  # and again at the commit (see _dropped)
                self._dropped(brain_uid)
                self._local.locked.discard(brain_uid)
            gone = left = sliced
            indexed = self._indexed_tables()
            for table in [t for t in tables if t not in at_once]:
                while self._erase_slice(table, brain_uid, table in indexed) == ERASE_SLICE_ROWS:
                    time.sleep(ERASE_SLICE_PAUSE)  # a writer waiting for the lock takes it now, not after the last
            left = False
        finally:
            self._local.compact_later = False
            with self._purge:
                self._brains_erasing -= 1
                self._orphans_left = self._orphans_left or left
            if gone:
                self._after_erase()
        return {k: int(v) for k, v in counts.items()}

    def _erase_slice(self, table: str, brain_uid: str, indexed: bool) -> int:
        """Delete at most ERASE_SLICE_ROWS of the Brain's rows of ``table`` (all of them when the table has
        no index to keep: 100,000 chunks go in 6 ms), in a transaction of its own; how many went."""
        with self.atomic():
            deleted = self._cur().execute(
                f"DELETE FROM {table} WHERE rowid IN "
                f"(SELECT rowid FROM {table} WHERE brain_uid = ? LIMIT {ERASE_SLICE_ROWS})"
                if indexed
                else f"DELETE FROM {table} WHERE brain_uid = ?",
                [brain_uid],
            ).fetchone()
            # A read that found the Brain before it went may have held some of them meanwhile.
            self._dropped(brain_uid)
        return int(deleted[0]) if deleted else 0

    def _indexed_tables(self) -> set[str]:
        """The tables with a key or an index, whose deleted rows cost the commit (see ERASE_SLICE_ROWS)."""
        rows = self._rows(
            "SELECT table_name FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE') "
            "UNION SELECT table_name FROM duckdb_indexes()"
        )
        return {table for (table,) in rows}

    def _dropped(self, brain_uid: str) -> None:
        """Inside a transaction that erases the Brain's rows: its commit drops what is held of the
        Brain, and a compaction follows."""
        self._forget_memories(brain_uid)
        self._local.erased_brains.append(brain_uid)
        self._erased()

    def _erase_orphans(self) -> None:
        """The rows of no Brain, which an erase_brain that failed or died between its slices left: in one
        transaction (at open, or before a compaction copies), whose compaction is the caller's."""
        try:
            self._local.compact_later = True
            with self.atomic():
                for table in self._brain_tables():
                    deleted = self._cur().execute(
                        f"DELETE FROM {table} WHERE brain_uid NOT IN (SELECT uid FROM brains)"
                    ).fetchone()
                    if deleted and deleted[0]:
                        self._erased()
        finally:
            self._local.compact_later = False

    # --- records ----------------------------------------------------------------------------------
    @staticmethod
    def _record(row: tuple[Any, ...]) -> Record:
        id_, uid, content, source, visibility, occurred_at, created_at, origin, seq, status, error, mids = row
        return Record(
            id=id_,
            brain_uid=uid,
            content=json.loads(content),
            source=json.loads(source) if source else None,
            visibility=visibility,
            occurred_at=_utc(occurred_at),  # type: ignore[arg-type]
            created_at=_utc(created_at),  # type: ignore[arg-type]
            origin=origin,
            seq=seq,
            status=status or "processing",
            error=json.loads(error) if error else None,
            memory_ids=tuple(json.loads(mids)) if mids else (),
        )

    def insert_record(self, record: Record) -> None:
        """Inserted with the transaction's next statement or at its commit (see _flush_records)."""
        source = record.source or {}
        with self.atomic():
            self._local.written.rows.append([
                record.id, record.brain_uid, _json(record.content),
                _json(record.source) if record.source is not None else None, source.get("name"),
                source.get("external_id"), record.visibility, _ts(record.occurred_at), _ts(record.created_at),
                record.origin, record.seq,
            ])  # fmt: skip

    _RECORD_COLUMNS = "id, brain_uid, content, source, visibility, occurred_at, created_at, origin, seq"

    def get_record(self, brain_uid: str, record_id: str) -> Record | None:
        return self.records(brain_uid, [record_id]).get(record_id)

    def records(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, Record]:
        if not record_ids:
            return {}
        wanted = sorted(set(record_ids))
        recent = self._recent_records(brain_uid, wanted)
        if recent is not None:
            return recent
        found = self._read_records(brain_uid, "list_contains(?::VARCHAR[], {id})", [wanted])
        return {record.id: record for record in found}

    def _read_records(self, brain_uid: str, where: str, params: Sequence[Any]) -> list[Record]:
        """The Brain's Records matching ``where`` (``{id}`` stands for the Record id column), by seq.

        A Record's status is its latest event. Both tables are filtered by ``where`` alone, so that a
        filter on ids reads the primary key and the events' index (migration 5) instead of scanning
        every tenant's rows (DuckDB uses an index only for a filter on the indexed column alone); the
        Brain is checked on what comes back. Both reads see one snapshot."""
        with self._shared():
            cursor = self._cur()
            snapshot = getattr(self._local, "depth", 0) == 0  # else this thread's transaction is one
            if snapshot:
                cursor.execute("BEGIN TRANSACTION")
            try:
                rows = cursor.execute(
                    f"SELECT {self._RECORD_COLUMNS} FROM records WHERE {where.format(id='id')}", params
                ).fetchall()
                events = cursor.execute(
                    "SELECT record_id, brain_uid, seq, status, error, memory_ids FROM record_events "
                    f"WHERE {where.format(id='record_id')}",
                    params,
                ).fetchall()
            finally:
                if snapshot:
                    cursor.execute("ROLLBACK")  # read only; also after a failed read
        latest: dict[str, tuple[Any, ...]] = {}
        for record_id, event_brain, seq, *outcome in events:
            if event_brain == brain_uid and (record_id not in latest or seq > latest[record_id][0]):
                latest[record_id] = (seq, *outcome)
        found = [
            self._record((*row, *latest.get(row[0], (None, None, None, None))[1:]))
            for row in rows
            if row[1] == brain_uid
        ]
        return sorted(found, key=lambda record: record.seq)

    def record_contents(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not record_ids:
            return {}
        # A hash join on the ids: a list_contains filter compares every row with every id (78 ms for
        # 30,000 ids of 100,000 Records, against 22 ms).
        rows = self._rows(
            "SELECT r.id, r.content FROM records r "
            "JOIN (SELECT DISTINCT unnest(?::VARCHAR[]) AS id) wanted ON wanted.id = r.id WHERE r.brain_uid = ?",
            [list(record_ids), brain_uid],
        )
        return {id_: json.loads(content) for id_, content in rows}

    def record_visibilities(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, str]:
        if not record_ids:
            return {}
        if getattr(self._local, "depth", 0):  # a transaction's own writes and erases are not what is held
            return self._read_visibilities(brain_uid, record_ids)
        found: dict[str, str] = {}
        missing: list[str] = []
        with self._recent_lock:
            held = self._visibilities.get(brain_uid, {})
            if held:
                self._visibilities.move_to_end(brain_uid)  # used: the last of them to be given up
            for record_id in record_ids:
                visibility = held.get(record_id)
                if visibility is None:
                    missing.append(record_id)
                else:
                    found[record_id] = visibility
            erasures = self._record_erasures
        if missing:
            read = self._read_visibilities(brain_uid, missing)
            found.update(read)
            with self._recent_lock:
                if erasures == self._record_erasures:  # else what was read may have been erased since
                    self._hold_visibilities(brain_uid, read)
        return found

    def _read_visibilities(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, str]:
        rows = self._rows(
            "SELECT r.id, r.visibility FROM records r "
            "JOIN (SELECT DISTINCT unnest(?::VARCHAR[]) AS id) wanted ON wanted.id = r.id WHERE r.brain_uid = ?",
            [list(record_ids), brain_uid],
        )
        return {id_: visibility for id_, visibility in rows}

    def find_imported_record(self, brain_uid: str, source_name: str, external_id: str) -> Record | None:
        rows = self._rows(
            "SELECT id FROM records WHERE brain_uid = ? AND origin = 'import' AND source_name = ? AND external_id = ?",
            [brain_uid, source_name, external_id],
        )
        return self.get_record(brain_uid, rows[0][0]) if rows else None

    def append_record_status(
        self,
        brain_uid: str,
        record_id: str,
        status: str,
        *,
        seq: int,
        error: dict[str, str] | None = None,
        memory_ids: Sequence[str] = (),
    ) -> None:
        self.append_record_statuses([RecordStatus(brain_uid, record_id, status, seq, error, tuple(memory_ids))])

    def append_record_statuses(self, events: Sequence[RecordStatus]) -> None:
        with self.atomic():
            self._local.written.events.extend(events)
            self._insert(
            "record_events",
            _EVENT_TYPES,
                [
                    [e.record_id, e.brain_uid, e.seq, e.status, _json(e.error) if e.error else None, _json(list(e.memory_ids))]
                    for e in events
                ],
            )

    def records_in_status(self, status: str) -> list[tuple[str, str]]:
        if status == "processing":
            rows = self._rows(
                # no outcome yet, or sent back to derivation since (its latest event says processing)
                "SELECT r.brain_uid, r.id FROM records r WHERE coalesce((SELECT e.status FROM record_events e "
                "WHERE e.record_id = r.id ORDER BY e.seq DESC LIMIT 1), 'processing') = 'processing' ORDER BY r.seq"
            )
        else:
            rows = self._rows(
                "SELECT brain_uid, record_id FROM record_events "
                "QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY seq DESC) = 1 AND status = ? "
                "ORDER BY seq",
                [status],
            )
        return [(r[0], r[1]) for r in rows]

    def records_supporting(self, brain_uid: str, memory_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        if not memory_ids:
            return {}
        rows = self._rows(
            "SELECT memory_id, record_id FROM ("
            "  SELECT n.memory_id, e.record_id, row_number() OVER (PARTITION BY n.memory_id ORDER BY r.seq) AS rank"
            "  FROM ("
            "    SELECT record_id, unnest(json_extract_string(memory_ids, '$[*]')) AS memory_id FROM ("
            "      SELECT record_id, memory_ids FROM record_events WHERE brain_uid = ?"
            "      QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY seq DESC) = 1"
            "    )"
            "  ) e JOIN records r ON r.id = e.record_id"
            "  JOIN (SELECT DISTINCT unnest(?::VARCHAR[]) AS memory_id) n ON n.memory_id = e.memory_id"
            ") WHERE rank <= ? ORDER BY memory_id, rank",
            [brain_uid, list(memory_ids), limit],
        )
        found: dict[str, list[str]] = {}
        for memory_id, record_id in rows:
            found.setdefault(memory_id, []).append(record_id)
        return found

    def list_records(self, brain_uid: str) -> list[Record]:
        return self._read_records(brain_uid, "brain_uid = ?", [brain_uid])

    def record_seqs(self, brain_uid: str, *, after: int, limit: int) -> list[tuple[str, int]]:
        rows = self._rows(
            "SELECT id, seq FROM records WHERE brain_uid = ? AND seq > ? ORDER BY seq LIMIT ?",
            [brain_uid, after, limit],
        )
        return [(record_id, int(seq)) for record_id, seq in rows]

    def count_records(self, brain_uid: str, *, after: int = 0, through: int | None = None) -> int:
        bound = "" if through is None else " AND seq <= ?"
        params = [brain_uid, after] if through is None else [brain_uid, after, through]
        return int(self._rows(f"SELECT count(*) FROM records WHERE brain_uid = ? AND seq > ?{bound}", params)[0][0])

    def record_tally(self, brain_uid: str, examples: int, *, withheld: Collection[str] = ()) -> RecordTally:
        # One statement, so the Records and their latest events are one snapshot.
        hidden = sorted(withheld)
        shown = f" AND r.visibility NOT IN ({', '.join('?' for _ in hidden)})" if hidden else ""
        (row,) = self._rows(
            "SELECT count(*), count(*) FILTER (WHERE failed), count(*) FILTER (WHERE low_trust), "
            "list_slice(list(id ORDER BY seq) FILTER (WHERE failed), 1, ?), "
            "list_slice(list(id ORDER BY seq) FILTER (WHERE low_trust), 1, ?) FROM ("
            "  SELECT r.id, r.seq, coalesce(e.status = 'failed', false) AS failed,"
            "         coalesce(json_extract_string(r.source, '$.trust') = 'low', false) AS low_trust"
            "  FROM records r LEFT JOIN ("
            "    SELECT record_id, arg_max(status, seq) AS status FROM record_events WHERE brain_uid = ? GROUP BY record_id"
            f"  ) e ON e.record_id = r.id WHERE r.brain_uid = ?{shown}"
            ")",
            [examples, examples, brain_uid, brain_uid, *hidden],
        )
        records, failed, trusted_low, failed_ids, low_trust_ids = row
        return RecordTally(records, failed, trusted_low, tuple(failed_ids or ()), tuple(low_trust_ids or ()))

    def erase_record(self, brain_uid: str, record_id: str) -> None:
        with self.atomic():
            if brain_uid not in self._local.seqs:
                # its row may hold the Brain's sequence end (see _uncarried_seqs): an erase advances
                # it (forgetRecord does already), so a changes row holds it and it never goes back
                self.next_seq(brain_uid)
            self._cur().execute("DELETE FROM record_events WHERE record_id = ? AND brain_uid = ?", [record_id, brain_uid])
            self._cur().execute("DELETE FROM records WHERE id = ? AND brain_uid = ?", [record_id, brain_uid])
            self._local.written.erased.append((brain_uid, record_id))
            self._erased()

    # --- objects ----------------------------------------------------------------------------------
    @staticmethod
    def _object(row: tuple[Any, ...]) -> ObjectVersion:
        id_, uid, type_, key, version, value, accepted_by, created_at, seq = row
        return ObjectVersion(id_, uid, type_, key, version, json.loads(value), accepted_by, _utc(created_at), seq)  # type: ignore[arg-type]

    def latest_object(self, brain_uid: str, type_: str, key: str) -> ObjectVersion | None:
        rows = self._rows(
            f"SELECT {_OBJECT_COLUMNS} FROM object_versions WHERE brain_uid = ? AND type = ? AND key = ? "
            "ORDER BY version DESC LIMIT 1",
            [brain_uid, type_, key],
        )
        return self._object(rows[0]) if rows else None

    def insert_object_version(self, version: ObjectVersion) -> None:
        value = _json(version.value)
        sized = self.schema_version() >= OBJECT_BYTES  # a file not migrated yet still takes Objects
        self._exec(
            f"INSERT INTO object_versions ({_OBJECT_COLUMNS}{', value_bytes' if sized else ''}) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?{', ?' if sized else ''})",
            [
                version.id,
                version.brain_uid,
                version.type,
                version.key,
                version.version,
                value,
                version.accepted_by,
                _ts(version.created_at),
                version.seq,
                *([len(value.encode())] if sized else []),
            ],
        )

    def list_objects(
        self, brain_uid: str, limit: int | None = None, *, max_bytes: int | None = None
    ) -> list[ObjectVersion]:
        latest = (
            f"SELECT {_OBJECT_COLUMNS}, {'value_bytes' if self.schema_version() >= OBJECT_BYTES else 'strlen(value)'} "
            "AS bytes FROM object_versions WHERE brain_uid = ? "
            "QUALIFY row_number() OVER (PARTITION BY type, key ORDER BY version DESC) = 1"
        )
        params: list[Any] = [brain_uid]
        if max_bytes is not None:
            latest = (
                f"SELECT * FROM (SELECT *, sum(bytes) OVER (ORDER BY type, key ROWS UNBOUNDED PRECEDING) AS read "
                f"FROM ({latest}) WHERE bytes <= ?) WHERE read <= ?"
            )
            params += [max_bytes, max_bytes]
        rows = self._rows(
            f"SELECT {_OBJECT_COLUMNS} FROM ({latest}) ORDER BY type, key" + ("" if limit is None else " LIMIT ?"),
            params + ([] if limit is None else [limit]),
        )
        return [self._object(r) for r in rows]

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotent(self, namespace: str, scope: str, key: str) -> IdempotentReply | None:
        keyed = ", brain_uid, resource_id" if self.schema_version() >= 4 else ", NULL, NULL"
        rows = self._rows(
            "SELECT namespace, scope, key, fingerprint, status, body, watermark, created_at" + keyed
            + " FROM idempotency WHERE namespace = ? AND scope = ? AND key = ?",
            [namespace, scope, key],
        )
        if not rows:
            return None
        ns, sc, k, fingerprint, status, body, watermark, created_at, brain_uid, resource_id = rows[0]
        return IdempotentReply(
            ns, sc, k, fingerprint, status, json.loads(body), watermark, _utc(created_at), brain_uid, resource_id  # type: ignore[arg-type]
        )

    def put_idempotent(self, reply: IdempotentReply) -> None:
        row = [
            reply.namespace,
            reply.scope,
            reply.key,
            reply.fingerprint,
            reply.status,
            _json(reply.body),
            reply.watermark,
            _ts(reply.created_at),
        ]
        if self.schema_version() >= 4:
            self._exec("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [*row, reply.brain_uid, reply.resource_id])
        else:
            self._exec("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)

    def erase_idempotent(self, brain_uid: str, resource_id: str | None = None) -> int:
        if self.schema_version() < 4:
            return 0
        where, params = "brain_uid = ?", [brain_uid]
        if resource_id is not None:
            where, params = where + " AND resource_id = ?", [*params, resource_id]
        with self.atomic():
            count = int(self._rows(f"SELECT count(*) FROM idempotency WHERE {where}", params)[0][0])
            if count:
                self._cur().execute(f"DELETE FROM idempotency WHERE {where}", params)
                self._erased()
            return count

    # --- memories ---------------------------------------------------------------------------------
    @staticmethod
    def _memory(row: Sequence[Any]) -> MemoryRevision:
        (
            memory_id,
            uid,
            version,
            statement,
            subject,
            owner,
            attribute,
            value,
            valid_from,
            valid_to,
            recorded_at,
            status,
            citations,
            supersedes,
            superseded_by,
            seq,
            single_valued,
            negated,
            extra,
        ) = row[:19]
        fingerprint = row[19] if len(row) > 19 else ""
        return MemoryRevision(
            memory_id=memory_id,
            brain_uid=uid,
            version=version,
            statement=statement,
            subject=subject,
            owner=owner,
            attribute=attribute,
            value=value,
            valid_from=_utc(valid_from),  # type: ignore[arg-type]
            valid_to=_utc(valid_to),
            recorded_at=_utc(recorded_at),  # type: ignore[arg-type]
            status=status,
            citations=tuple(Citation(**c) for c in orjson.loads(citations)),
            supersedes=supersedes,
            superseded_by=superseded_by,
            seq=seq,
            single_valued=single_valued,
            negated=negated,
            extra=orjson.loads(extra) if extra != "{}" else {},
            fingerprint=fingerprint or "",
        )

    def _as_stored(self, r: MemoryRevision) -> MemoryRevision:
        """``r`` as a read of the store returns it once written (the columns _memory reads)."""
        return self._memory(
            (r.memory_id, r.brain_uid, r.version, r.statement, r.subject, r.owner, r.attribute, r.value,
             _ts(r.valid_from), _ts(r.valid_to), _ts(r.recorded_at), r.status, self._citations_json(r.citations),
             r.supersedes, r.superseded_by, r.seq, r.single_valued, r.negated, _json(r.extra), r.fingerprint)
        )  # fmt: skip

    @staticmethod
    def _citations_json(citations: Sequence[Citation]) -> str:
        return _json([{"record_id": c.record_id, "start": c.start, "end": c.end, "quote": c.quote} for c in citations])

    def insert_memory_revisions(self, revisions: Sequence[MemoryRevision]) -> None:
        if not revisions:
            return
        keyed = self.schema_version() >= OWNER_KEYS  # a file not migrated yet still takes revisions

        def owner_key(r: MemoryRevision) -> list[str | None]:
            return [r.owner.casefold() if r.owner is not None else None] if keyed else []

        rows = [
            [
                r.memory_id,
                r.brain_uid,
                r.version,
                r.fingerprint,
                r.statement,
                r.subject,
                r.subject.casefold(),
                r.owner,
                r.attribute,
                r.value,
                _ts(r.valid_from),
                _ts(r.valid_to),
                _ts(r.recorded_at),
                r.status,
                self._citations_json(r.citations),
                r.supersedes,
                r.superseded_by,
                r.seq,
                r.single_valued,
                r.negated,
                _json(r.extra),
                *owner_key(r),
            ]
            for r in revisions
        ]
        links = [
            [r.brain_uid, r.memory_id, r.version, rid]
            for r in revisions
            for rid in sorted({c.record_id for c in r.citations})
        ]
        with self.atomic():
            self._insert("memory_revisions", (*_REVISION_TYPES, "VARCHAR") if keyed else _REVISION_TYPES, rows)
            self._insert("memory_links", _LINK_TYPES, links)
            written = self._local.memories_written
            for r in revisions:
                written.setdefault(r.brain_uid, []).append(r)
                keys = self._memory_keys.get(r.brain_uid)
                if keys is not None:
                    keys.add(
                        r.memory_id, r.fingerprint, r.subject.casefold(), r.attribute, r.version, r.status,
                        _ts(r.valid_from), _ts(r.valid_to),
                    )  # fmt: skip

    def insert_memory_revision(self, revision: MemoryRevision, fingerprint: str) -> None:
        self.insert_memory_revisions([replace(revision, fingerprint=fingerprint)])

    def _current(
        self,
        brain_uid: str,
        where: str = "",
        params: Sequence[Any] = (),
        tail: str = "",
        among: tuple[str, Sequence[Any]] | None = None,
    ) -> list[MemoryRevision]:
        """Current revisions matching ``where``. ``among`` (a query of memory ids and its parameters)
        limits the window to the Memories it names, a superset of those that can match: otherwise
        every lookup ranks all of the Brain's revisions (one by fingerprint over 200,000 revisions
        took 70-86 ms, limited 9-14 ms)."""
        current = _CURRENT.format(
            among=f"AND memory_id IN ({among[0]})" if among else "",
            owner_key=", owner_key" if self.schema_version() >= OWNER_KEYS else "",
        )
        among_params = among[1] if among else ()
        sql = f"SELECT * FROM ({current}) cur {('WHERE ' + where) if where else ''} {tail}"
        return [self._memory(r) for r in self._rows(sql, [brain_uid, *among_params, *params])]

    def memory(self, brain_uid: str, memory_id: str) -> MemoryRevision | None:
        rows = self._rows(
            f"SELECT {_MEMORY_COLUMNS}, fingerprint FROM memory_revisions WHERE brain_uid = ? AND memory_id = ? "
            "ORDER BY version DESC LIMIT 1",
            [brain_uid, memory_id],
        )
        return self._memory(rows[0]) if rows else None

    def memories(self, brain_uid: str, memory_ids: Sequence[str]) -> dict[str, MemoryRevision]:
        if not memory_ids:
            return {}
        among = ("SELECT unnest(?::VARCHAR[])", [sorted(set(memory_ids))])
        return {m.memory_id: m for m in self._current(brain_uid, among=among)}

    def memory_revisions(self, brain_uid: str, memory_id: str) -> list[MemoryRevision]:
        rows = self._rows(
            f"SELECT {_MEMORY_COLUMNS}, fingerprint FROM memory_revisions WHERE brain_uid = ? AND memory_id = ? "
            "ORDER BY version",
            [brain_uid, memory_id],
        )
        return [self._memory(r) for r in rows]

    def _keys(self, brain_uid: str) -> _MemoryKeys | None:
        """The Brain's memory keys (read once, in one statement), or None when it has too many. Caller
        holds the write lock."""
        if brain_uid in self._memory_keys:
            self._memory_keys.move_to_end(brain_uid)
            return self._memory_keys[brain_uid]
        rows = self._rows(
            "SELECT memory_id, fingerprint, subject_key, attribute, version, status, valid_from, valid_to "
            "FROM memory_revisions WHERE brain_uid = ? "
            f"LIMIT {MEMORY_KEY_REVISIONS + 1}",
            [brain_uid],
        )
        keys: _MemoryKeys | None = None
        if len(rows) <= MEMORY_KEY_REVISIONS:
            keys = _MemoryKeys()
            for row in rows:
                keys.add(*row)
        brain = self.brain_by_uid(brain_uid)  # the Brain cache: no statement once a request resolved it
        self._memory_keys[brain_uid] = keys
        self._memory_key_namespaces[brain_uid] = brain.namespace if brain is not None else ""
        self._bound_memory_keys(brain_uid)
        return keys

    def _bound_memory_keys(self, kept: str) -> None:
        """Within MEMORY_KEY_BRAINS and MEMORY_KEY_TOTAL, never dropping ``kept`` (just read)."""
        evict_fairly(
            self._memory_keys,
            self._memory_key_namespaces,
            lambda keys: keys.size if keys is not None else 0,
            max_brains=MEMORY_KEY_BRAINS,
            max_total=MEMORY_KEY_TOTAL,
            newcomer=kept,
            keep_newcomer=True,
        )

    def _forget_memories(self, brain_uid: str) -> None:
        """Inside an erase's transaction (which holds the write lock): the Brain's memory keys and
        current Memories held may hold erased text."""
        self._memory_keys.pop(brain_uid, None)
        self._memory_key_namespaces.pop(brain_uid, None)
        self._local.memories_dropped.add(brain_uid)  # its commit forgets the Memories held

    def _by_keys(
        self, brain_uid: str, lookup: Callable[[_MemoryKeys], set[str]], where: str, params: Sequence[Any]
    ) -> list[MemoryRevision] | None:
        """Current revisions matching ``where`` among the Memories the Brain's keys name; None when the
        Brain's keys are not held (too many revisions)."""
        with self._write_lock:
            keys = self._keys(brain_uid)
            if keys is None:
                return None
            memory_ids = sorted(lookup(keys))
            if not memory_ids:
                return []
            return self._current(
                brain_uid, where, params, "ORDER BY memory_id", among=("SELECT unnest(?::VARCHAR[])", [memory_ids])
            )

    def memories_by_fingerprints(
        self, brain_uid: str, fingerprints: Sequence[str], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        if not fingerprints:
            return []
        wanted = sorted(set(fingerprints))
        match = "list_contains(?::VARCHAR[], fingerprint)"

        def held(keys: _MemoryKeys) -> set[str]:
            return set().union(*(keys.by_fingerprint.get(f, ()) for f in wanted))

        if newest is not None:
            return self._latest_ending(brain_uid, held, _fingerprint_of, match, wanted, "fingerprint", newest)
        found = self._by_keys(brain_uid, held, match, [wanted])
        if found is not None:
            return found
        return self._current(
            brain_uid,
            match,
            [wanted],
            "ORDER BY memory_id",
            among=(f"SELECT memory_id FROM memory_revisions WHERE brain_uid = ? AND {match}", [brain_uid, wanted]),
        )

    def memories_by_attributes(
        self, brain_uid: str, keys: Sequence[tuple[str, str]], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        if not keys:
            return []
        pairs = {(subject.casefold(), attribute) for subject, attribute in keys}
        wanted = sorted(_attribute_key(subject_key, attribute) for subject_key, attribute in pairs)
        match = f"list_contains(?::VARCHAR[], subject_key || '{_KEY_SEP}' || attribute)"

        def held(keys: _MemoryKeys) -> set[str]:
            return set().union(*(keys.by_attribute.get(pair, ()) for pair in pairs))

        if newest is not None:
            return self._latest_ending(brain_uid, held, _attribute_key_of, match, wanted, "subject_key, attribute", newest)
        found = self._by_keys(brain_uid, held, match, [wanted])
        if found is not None:
            return found
        return self._current(
            brain_uid,
            match,
            [wanted],
            "ORDER BY memory_id",
            among=(f"SELECT memory_id FROM memory_revisions WHERE brain_uid = ? AND {match}", [brain_uid, wanted]),
        )

    def _latest_ending(
        self,
        brain_uid: str,
        held: Callable[[_MemoryKeys], set[str]],
        group: Callable[[_Ranked], str],
        match: str,
        wanted: list[str],
        partition: str,
        newest: int,
    ) -> list[MemoryRevision]:
        """The ``newest`` of memories_by_attributes and memories_by_fingerprints: chosen by the Brain's
        keys among the Memories they name (``held``, each in its ``group``), or, when they are not held,
        ranked by statement on a few narrow columns of those a scan finds; only the chosen are read
        whole. Ranking 4,000 Memories of one key by whole rows took 17-21 ms, on narrow columns 10-13;
        3,000 by the keys take 1.1 ms, then 4 to read the 64 chosen. A key the Brain's keys do not
        hold needs no statement."""
        with self._write_lock:
            keys = self._keys(brain_uid)
            if keys is not None:
                chosen = keys.latest_ending(held(keys), group, set(wanted), newest)
                if not chosen:
                    return []
                found = self._current(
                    brain_uid, "", (), "ORDER BY memory_id", among=("SELECT unnest(?::VARCHAR[])", [chosen])
                )
                return [m for m in found if m.status in WEIGHED_STATUSES]
            ranked = f"""
                SELECT memory_id FROM (
                    SELECT memory_id, subject_key, attribute, fingerprint, status, valid_from, valid_to
                    FROM memory_revisions WHERE brain_uid = ? AND memory_id IN (
                        SELECT memory_id FROM memory_revisions WHERE brain_uid = ? AND {match})
                    QUALIFY row_number() OVER (PARTITION BY memory_id ORDER BY version DESC) = 1
                ) cur WHERE {match} AND {WEIGHED_SQL}
                QUALIFY row_number() OVER (PARTITION BY {partition} ORDER BY {LATEST_ENDING_SQL}) <= ?
            """
            return self._current(
                brain_uid, "", (), "ORDER BY memory_id", among=(ranked, [brain_uid, brain_uid, wanted, wanted, newest])
            )

    def memories_citing(self, brain_uid: str, record_id: str) -> list[MemoryRevision]:
        return self.memories_citing_any(brain_uid, [record_id])

    def memories_citing_any(
        self, brain_uid: str, record_ids: Sequence[str], *, seq: int | None = None
    ) -> list[MemoryRevision]:
        wanted = sorted(set(record_ids))
        if not wanted:
            return []
        held = self._held_memories(brain_uid, fill=True)
        if held is not None:
            return held.citing_any(wanted)
        return self._current(
            brain_uid,
            "EXISTS (SELECT 1 FROM memory_links l WHERE l.memory_id = cur.memory_id "
            "AND l.version = cur.version AND list_contains(?::VARCHAR[], l.record_id))",
            [wanted],
            "ORDER BY memory_id",
            among=(
                "SELECT memory_id FROM memory_links WHERE brain_uid = ? AND list_contains(?::VARCHAR[], record_id)",
                [brain_uid, wanted],
            ),
        )

    def memories_referencing(self, brain_uid: str, memory_ids: Sequence[str]) -> list[MemoryRevision]:
        if not memory_ids:
            return []
        wanted = sorted(set(memory_ids))
        return self._current(
            brain_uid,
            _NAMES_ANY,
            [wanted] * 4,
            "ORDER BY memory_id",
            among=(f"SELECT memory_id FROM memory_revisions WHERE brain_uid = ? AND ({_NAMES_ANY})", [brain_uid, *[wanted] * 4]),
        )

    def memories_in_status(self, status: str) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT brain_uid, memory_id, status FROM memory_revisions "
            "QUALIFY row_number() OVER (PARTITION BY memory_id ORDER BY version DESC) = 1 AND status = ? ORDER BY seq",
            [status],
        )
        return [(r[0], r[1]) for r in rows]

    def list_memories(
        self,
        brain_uid: str,
        *,
        after_id: str | None,
        limit: int,
        subject: str | None = None,
        owner: str | None = None,
        seq: int | None = None,
    ) -> list[MemoryRevision]:
        # The first page of a walk reads its page alone; the next ones hold the Brain and page through it.
        held = self._held_memories(brain_uid, fill=after_id is not None)
        if held is not None:
            return held.page(after_id=after_id, limit=limit, subject=subject, owner=owner)
        where = ["status IN ('active', 'superseded')"]
        params: list[Any] = []
        if after_id is not None:
            where.append("memory_id > ?")
            params.append(after_id)
        if subject is not None:
            where.append("subject_key = ?")
            params.append(subject.casefold())
        if owner is not None:
            where.append("owner_key = ?" if self.schema_version() >= OWNER_KEYS else "lower(owner) = ?")
            params.append(owner.casefold())
        return self._current(brain_uid, " AND ".join(where), params, f"ORDER BY memory_id LIMIT {int(limit)}")

    def all_memories(self, brain_uid: str, *, seq: int | None = None) -> list[MemoryRevision]:
        held = self._held_memories(brain_uid, fill=False)
        if held is not None:
            return held.all()
        return self._read_all_memories(brain_uid)

    def _held_memories(self, brain_uid: str, *, fill: bool) -> HeldBrain | None:
        """The Brain's current Memories held in memory (read from the file first when ``fill`` and the
        Brain is settled: store.current.SETTLE_SECONDS), or None. Never inside a transaction: its
        snapshot, and its own writes, are not what is held."""
        if getattr(self._local, "depth", 0):
            return None
        held = self._current_memories.get(brain_uid)
        if held is None and fill and self._current_memories.settled(brain_uid):
            found = self._read_all_memories(brain_uid)
            # not held when a commit overlapped the read: the caller answers from what it read, not
            # by reading again
            held = self._current_memories.get(brain_uid) or HeldBrain({m.memory_id: m for m in found})
        return held

    def _read_all_memories(self, brain_uid: str) -> list[MemoryRevision]:
        """Every current revision of the Brain from the file; held for the next reads (see
        store.current) unless a commit of the Brain overlapped the read."""
        if getattr(self._local, "depth", 0):
            return self._current(brain_uid, tail="ORDER BY memory_id")
        fill = self._current_memories.begin_fill(brain_uid)
        try:
            found = self._current(brain_uid, tail="ORDER BY memory_id")
            brain = self.brain_by_uid(brain_uid) if fill is not None else None
        except BaseException:
            if fill is not None:
                self._current_memories.end_fill(fill, None, "")
            raise
        if fill is not None:  # a Brain gone meanwhile is not held
            self._current_memories.end_fill(fill, found if brain else None, brain.namespace if brain else "")
        return found

    def memory_changes(
        self, brain_uid: str, after_seq: int, limit: int
    ) -> list[tuple[int, str, MemoryRevision | None]]:
        held = self._held_memories(brain_uid, fill=True)  # a client syncing by watermark asks again and again
        if held is not None:
            current = sorted((m for m in held.all() if m.seq > after_seq), key=lambda m: (m.seq, m.memory_id))[:limit]
        else:
            current = self._current(brain_uid, "seq > ?", [after_seq], f"ORDER BY seq, memory_id LIMIT {int(limit)}")
        tombstones = self._rows(
            "SELECT seq, memory_id FROM memory_tombstones WHERE brain_uid = ? AND seq > ? ORDER BY seq LIMIT ?",
            [brain_uid, after_seq, int(limit)],
        )
        changes: list[tuple[int, str, MemoryRevision | None]] = [(m.seq, m.memory_id, m) for m in current]
        changes.extend((int(seq), memory_id, None) for seq, memory_id in tombstones)
        changes.sort(key=lambda c: (c[0], c[1]))
        return changes[:limit]

    def erase_memories(self, brain_uid: str, erased: Sequence[tuple[str, int]], *, at: datetime) -> None:
        if not erased:
            return
        seqs = dict(erased)  # one tombstone a Memory: the last seq given for it
        ids = list(seqs)
        wanted = "memory_id IN (SELECT unnest(?::VARCHAR[]))"
        with self.atomic():
            self._cur().execute(f"DELETE FROM memory_links WHERE brain_uid = ? AND {wanted}", [brain_uid, ids])
            rows = self._cur().execute(
                f"DELETE FROM memory_revisions WHERE brain_uid = ? AND {wanted} RETURNING memory_id", [brain_uid, ids]
            ).fetchall()
            found = {row[0] for row in rows}
            gone = [m for m in ids if m in found]  # the Brain's: a tombstone each
            if gone:
                self._cur().execute(
                    "INSERT OR REPLACE INTO memory_tombstones SELECT unnest(?::VARCHAR[]), ?, unnest(?::BIGINT[]), ?",
                    [gone, brain_uid, [seqs[m] for m in gone], _ts(at)],
                )
            self._unname(brain_uid, ids)
            self._forget_memories(brain_uid)
            self._erased()

    def _unname(self, brain_uid: str, erased: list[str]) -> None:
        """Inside erase_memories: what the erased Memories did to other Memories leaves their histories
        (:func:`histories_unnamed`), not only their newest revision."""
        cursor = self._cur()
        rows = cursor.execute(
            f"SELECT {_MEMORY_COLUMNS}, fingerprint FROM memory_revisions WHERE brain_uid = ? AND memory_id IN "
            f"(SELECT memory_id FROM memory_revisions WHERE brain_uid = ? AND ({_NAMES_ANY})) ORDER BY memory_id, version",
            [brain_uid, brain_uid, *[erased] * 4],
        ).fetchall()
        rewritten, deleted = histories_unnamed([self._memory(r) for r in rows], set(erased))
        for r in rewritten:
            cursor.execute(
                "UPDATE memory_revisions SET status = ?, supersedes = ?, superseded_by = ?, valid_to = ?, "
                "extra = ? WHERE memory_id = ? AND version = ?",
                [r.status, r.supersedes, r.superseded_by, _ts(r.valid_to), _json(r.extra), r.memory_id, r.version],
            )
        for memory_id, version in deleted:
            for table in ("memory_revisions", "memory_links"):
                cursor.execute(f"DELETE FROM {table} WHERE memory_id = ? AND version = ?", [memory_id, version])

    def erase_record_citations(self, brain_uid: str, record_id: str) -> None:
        with self.atomic():
            rows = self._rows(
                "SELECT memory_id, version, citations, statement, valid_from FROM memory_revisions "
                "WHERE brain_uid = ? AND memory_id IN "
                "(SELECT memory_id FROM memory_links WHERE brain_uid = ? AND record_id = ?) ORDER BY memory_id, version",
                [brain_uid, brain_uid, record_id],
            )
            if not rows:
                return
            revised, erased = without_citations_of(record_id, rows)
            cursor = self._cur()
            # a few statements however many revisions: one each held the write lock 2.1 s for a document
            # whose thousand Memories another Record also supports
            if revised:
                cursor.execute(
                    "UPDATE memory_revisions SET citations = u.citations FROM (SELECT unnest(?::VARCHAR[]) AS memory_id, "
                    "unnest(?::INTEGER[]) AS version, unnest(?::VARCHAR[]) AS citations) u "
                    "WHERE memory_revisions.memory_id = u.memory_id AND memory_revisions.version = u.version",
                    [[r[0] for r in revised], [r[1] for r in revised], [_json(r[2]) for r in revised]],
                )
            if erased:  # states that may say what the erased Record said: nothing of them may remain
                for table in ("memory_revisions", "memory_links"):
                    cursor.execute(
                        f"DELETE FROM {table} USING (SELECT unnest(?::VARCHAR[]) AS memory_id, unnest(?::INTEGER[]) AS version) e "
                        f"WHERE {table}.memory_id = e.memory_id AND {table}.version = e.version",
                        [[e[0] for e in erased], [e[1] for e in erased]],
                    )
            cursor.execute("DELETE FROM memory_links WHERE brain_uid = ? AND record_id = ?", [brain_uid, record_id])
            self._forget_memories(brain_uid)
            self._erased()

    def erase_earlier_revisions(self, brain_uid: str, memory_ids: Sequence[str], *, pending_only: bool = False) -> None:
        if not memory_ids:
            return
        with self.atomic():
            cursor = self._cur()
            found = cursor.execute(
                "SELECT memory_id, version FROM memory_revisions r WHERE brain_uid = ? AND memory_id IN "
                "(SELECT unnest(?::VARCHAR[])) AND (NOT ? OR status = 'pending') AND version < "
                "(SELECT max(version) FROM memory_revisions n WHERE n.memory_id = r.memory_id)",
                [brain_uid, list(memory_ids), pending_only],
            ).fetchall()
            if not found:
                return
            for table in ("memory_revisions", "memory_links"):
                cursor.execute(
                    f"DELETE FROM {table} USING (SELECT unnest(?::VARCHAR[]) AS memory_id, unnest(?::INTEGER[]) AS version) e "
                    f"WHERE {table}.memory_id = e.memory_id AND {table}.version = e.version",
                    [[f[0] for f in found], [f[1] for f in found]],
                )
            self._forget_memories(brain_uid)
            self._erased()

    # --- evidence chunks --------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[StoredChunk]) -> None:
        self._insert(
            "chunks",
            _CHUNK_TYPES,
            [
                [
                    c.brain_uid,
                    c.draft.record_id,
                    c.draft.start,
                    c.draft.end,
                    c.draft.text,
                    c.draft.index_text,
                    _ts(c.draft.occurred_at),
                    c.draft.speaker,
                    c.draft.source_name,
                    c.draft.trust,
                    c.draft.visibility,
                    c.model,
                    c.embedding,
                ]
                for c in chunks
            ],
        )

    def chunks(self, brain_uid: str) -> list[StoredChunk]:
        # In the order the Records were sent (their change sequence), as the live index took them in:
        # an index rebuilt from these rows keeps a conversation's turns in order. Sorted here, not by
        # DuckDB: its sort of a Brain's rows, vectors and all, left the process holding about as much
        # again after it was done (100,000 chunks: 388 MiB more after the read against 205, and 0.47 s
        # against 0.34).
        rows = self._rows(
            "SELECT r.seq, c.brain_uid, c.record_id, c.span_start, c.span_end, c.text, c.index_text, "
            "c.occurred_at, c.speaker, c.source_name, c.trust, c.visibility, c.model, c.embedding "
            "FROM chunks c LEFT JOIN records r ON r.id = c.record_id AND r.brain_uid = c.brain_uid "
            "WHERE c.brain_uid = ?",
            [brain_uid],
        )
        rows.sort(key=lambda r: (r[0] is None, r[0] or 0, r[2], r[3]))
        return [
            StoredChunk(
                r[1],
                ChunkDraft(r[2], r[3], r[4], r[5], r[6], _utc(r[7]), r[8], r[9], r[10], r[11]),  # type: ignore[arg-type]
                r[12],
                bytes(r[13]),
            )
            for r in rows
        ]

    def count_chunks(self, brain_uid: str) -> int:
        return int(self._rows("SELECT count(*) FROM chunks WHERE brain_uid = ?", [brain_uid])[0][0])

    def erase_chunks(self, brain_uid: str, record_id: str) -> int:
        with self.atomic():
            count = self._rows(
                "SELECT count(*) FROM chunks WHERE brain_uid = ? AND record_id = ?", [brain_uid, record_id]
            )[0][0]
            self._cur().execute("DELETE FROM chunks WHERE brain_uid = ? AND record_id = ?", [brain_uid, record_id])
            if count:
                self._erased()
            return int(count)
