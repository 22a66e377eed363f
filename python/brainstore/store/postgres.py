"""PostgresStore: the Store protocol on PostgreSQL, for deployments that outgrow one writing process.

Connections come from a pool (psycopg 3). ``atomic()`` is one transaction per thread: the outermost
call takes a connection and begins, nested calls join it, and every store call a thread makes inside it
runs on that connection; calls outside a transaction borrow a connection for one autocommitted
statement, so they read committed state only. Reads take no row locks and never wait for writers.

Concurrency is PostgreSQL's row locks, not a process-wide writer lock, so several processes (gunicorn
workers, machines) may write at once:

- ``lock_brain`` locks the Brain's row ``FOR NO KEY UPDATE`` until the transaction ends. Writers of one
  Brain therefore take turns, from the moment they resolve the Brain to their commit, and each one reads
  (READ COMMITTED: a fresh snapshot per statement) everything the previous ones committed. That is
  stronger than the ``FOR KEY SHARE`` a bare existence check needs, and needed: a writer reads before it
  writes (the latest Object version for the next one, a Record's status before deriving it, the current
  Memories the rules supersede), and two processes deriving the same Record or versioning the same
  Object must not both act on the same stale read. Writers of different Brains never wait for each other.
- ``try_lock_brains`` takes that lock on a group commit's Brains with ``SKIP LOCKED``: the writes
  whose Brain another transaction holds run apart, so a group never waits for one (see service.group).
  Derivation asks it to wait a moment first (``wait_at_most``): it then queues for each held Brain with
  a ``lock_timeout``, in a savepoint, and parks only the work of the Brains still held.
- ``erase_brain`` locks the row ``FOR UPDATE``, which conflicts with the writers' lock: a write either
  commits first (and its rows are deleted with the Brain, by statements that run after it committed) or
  waits and then finds the Brain gone (``lock_brain`` returns False). Nothing is written under a Brain
  that no longer exists.
- The change sequence is a counter row per Brain (``brain_sequences``), incremented by
  ``INSERT .. ON CONFLICT DO UPDATE .. RETURNING``: the increment's row lock is held until commit, so
  numbers are taken in commit order, never reused after a rollback (the increment rolls back with it),
  and ``current_seq`` (a plain read) sees exactly the committed end. A transaction's later numbers of a
  Brain follow its first without a statement (the lock is its own) and are written once, before it
  commits. This counter is the one row updated in place: it holds a Brain uid and a number, no
  content, so its old versions reveal nothing. (Two more updates serve erasure:
  ``erase_record_citations`` rewrites revisions without the erased Record's citations, leaving the old
  versions to the VACUUM, and a Memory's content-free tombstone is replaced by a later one.)

Schema changes are numbered SQL files in migrations_postgres/ with the same versions as DuckDB's
(``StoreFeature``), applied by ``migrate()`` under an advisory lock, so workers that start together on
an empty database migrate it once. A store behind answers not_implemented; the version is re-read every
few seconds until it is current, so a ``brainstore migrate`` run beside a live server takes effect
without a restart. Meanwhile each transaction holds the version it began at: it takes the migration lock
shared (``_hold_schema``), so no migration commits under a writer that chose its tables by an older one.

Deletes erase: rows are deleted inside the erase's transaction, and once it commits no SQL reads them.
PostgreSQL keeps the deleted tuples in the table files as dead tuples until VACUUM removes them, so every
committed erase schedules a ``VACUUM`` of the tables it touched, off the request path and debounced like
DuckDB's compaction (``purge_delay`` after the last erase, never later than ``_MAX_DEFER * purge_delay``
after the first; ``purge_delay=0`` vacuums before the outermost ``atomic()`` returns; ``vacuum()`` runs
one now; ``close()`` runs a pending one). VACUUM silently keeps the dead tuples a transaction older than
the erase may still see, so each erase's VACUUM waits (``ErasureHeldBack``, retried) until those older
than it have ended. What VACUUM does not do, and what else keeps the bytes (free space in pages, WAL,
replicas, backups), is in docs/operations.md ("PostgreSQL").
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

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
    StoreFeature,
    histories_unnamed,
    without_citations_of,
)
from brainstore.store.current import CheckedMemories, HeldBrain

log = logging.getLogger("brainstore.store.postgres")

_MEMORY_COLUMNS = (
    "memory_id, brain_uid, version, statement, subject, owner, attribute, value, valid_from, valid_to, "
    "recorded_at, status, citations, supersedes, superseded_by, seq, single_valued, negated, extra"
)
# The newest revision of each Memory; every memory read goes through it.
_CURRENT = f"""
    SELECT DISTINCT ON (memory_id) {_MEMORY_COLUMNS}, fingerprint, subject_key, owner_key
    FROM memory_revisions WHERE brain_uid = %s {{among}}
    ORDER BY memory_id, version DESC
"""
_RECORD_SELECT = """
    SELECT r.id, r.brain_uid, r.content, r.source, r.visibility, r.occurred_at, r.created_at, r.origin,
           r.seq, e.status, e.error, e.memory_ids
    FROM records r
    LEFT JOIN LATERAL (
        SELECT status, error, memory_ids FROM record_events ev WHERE ev.record_id = r.id
        ORDER BY ev.seq DESC LIMIT 1
    ) e ON true
"""
# A revision that names any of the Memories given (four times): superseded by one, superseding one,
# closed by one, or in conflict with one (?| : any of the strings is an element of the array).
_NAMES_ANY = (
    "superseded_by = ANY(%s) OR supersedes = ANY(%s) OR extra::jsonb ->> 'closed_by' = ANY(%s) "
    "OR coalesce(extra::jsonb -> 'conflicts_with' ?| %s, false)"
)
# Every table that holds rows under a Brain, by the schema version that made it.
_BRAIN_TABLES = (
    (1, ("records", "record_events", "object_versions")),
    (2, ("memory_revisions", "memory_links", "memory_tombstones")),
    (3, ("chunks",)),
    (4, ("idempotency",)),
    (5, ("record_erasures", "derivation_queue")),
    (6, ("memory_heads",)),
)
# Any constant: the advisory lock that serializes migrations across processes.
_MIGRATION_LOCK = 0x6272_6E73_7472_6531
# Schema 5 (migrations_postgres/005_shared.sql) has no StoreFeature: it is what several processes on
# one database need (the shared watermark key, the erasure log, derivation claims).
SHARED = 5
# Schema 6 (migrations_postgres/006_memory_heads.sql): each Memory's current revision, by the keys and the
# order of the lookups of a key's newest Memories.
HEADS = 6
# Schema 7 (migrations_postgres/007_hashed_keys.sql): keys made of long texts indexed by their md5. Its
# queries (the md5 of each part, then the texts) answer alike before it, only slower.
HASHED_KEYS = 7
_HEAD_COLUMNS = "memory_id, brain_uid, version, status, fingerprint, subject_key, attribute, valid_from, valid_to"
# Each head with its revision (h, r), for what the heads do not hold.
_HEADS_WITH_REVISIONS = (
    "memory_heads h JOIN memory_revisions r ON r.memory_id = h.memory_id AND r.version = h.version"
)
_SCHEMA_RECHECK = 2.0  # seconds a schema version below the latest is trusted before it is read again
# Under a steady stream of erases the debounce still vacuums this many purge_delays after the first one.
_MAX_DEFER = 4
_RETRY_MAX = 60.0  # seconds between retries of a failing background VACUUM, at most


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every PostgreSQL migration shipped with the package, in order."""
    found = []
    for entry in resources.files("brainstore.store").joinpath("migrations_postgres").iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(number), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


_LATEST = max(version for version, _, _ in migrations())


@dataclass
class _Own:
    """What a transaction of this process did to each Brain: the change sequence numbers it took (the
    first and the last), the revisions it wrote and the Brains it erased in, for the Memories it holds
    (CheckedMemories); and the Brains whose rows it holds locked (lock_brain), and the last numbers it
    took without writing them yet (next_seq), so that neither costs a statement again."""

    seqs: dict[str, tuple[int, int]] = field(default_factory=dict)
    written: dict[str, list[MemoryRevision]] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    locked: set[str] = field(default_factory=set)
    unwritten: dict[str, int] = field(default_factory=dict)
    erase_xid: str | None = None


class ErasureHeldBack(RuntimeError):
    """A VACUUM after an erase is put off: a transaction that may still see the erased rows runs."""


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _plan_each_time(conn: psycopg.Connection[Any]) -> None:
    """psycopg prepares a statement run five times, and the server then keeps one generic plan for it
    on that connection: chosen while the tables were small (a new database), or for one tenant's share
    of them, it stays for the connection's life. Derivation's lookups by fingerprint, planned when the
    Brain had no Memories, took 45 of 53 s of 1,000 Records (8 s planned each time). A plan costs a
    fraction of a millisecond; the statement is still parsed once."""
    conn.execute("SET plan_cache_mode = force_custom_plan")


def _read_as_written(conn: psycopg.Connection[Any]) -> None:
    """Rows come back in the session's formats, which the server, the database or the role may set to
    anything (ALTER DATABASE .. SET): in any TimeZone ahead of UTC an instant of 9999-12-31 the API took
    comes back in year 10000, and behind it one of 0001-01-01 in year 0, which psycopg cannot load, so
    every read of the Record or Brain failed with a 500. psycopg parses only the ISO DateStyle, and
    under another client_encoding could not send a Brain's name outside it."""
    conn.execute("SELECT set_config('TimeZone', 'UTC', false), set_config('DateStyle', 'ISO', false), "
                 "set_config('client_encoding', 'UTF8', false)")


def _configure(conn: psycopg.Connection[Any]) -> None:
    _plan_each_time(conn)
    _read_as_written(conn)


class PostgresStore:
    kind = "postgres"

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 12,
        purge_delay: float = 5.0,
        connect_timeout: float = 10.0,
    ) -> None:
        if purge_delay < 0:
            raise ValueError("purge_delay must be >= 0")
        if pool_size < 1:
            raise ValueError("pool_size must be >= 1")
        self.purge_delay = float(purge_delay)
        # One direct connection first: an unreachable or misspelt database fails here with the
        # server's own reason, not with a pool timeout.
        with psycopg.connect(url, connect_timeout=max(1, int(connect_timeout))) as conn:
            # A database in another encoding (LATIN1, say: createdb copies template1's) takes the text of
            # some Records and fails on the rest, a 500 for each; refused here, before any is taken.
            encoding = conn.execute("SHOW server_encoding").fetchone()
            if encoding is None or encoding[0] not in ("UTF8", "SQL_ASCII"):
                raise RuntimeError(
                    f"the database's encoding is {encoding[0] if encoding else None}, which cannot hold every "
                    "text brainstore takes: create it with ENCODING 'UTF8' (createdb --encoding=UTF8 "
                    "--template=template0)"
                )
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            configure=_configure,
            open=False,
            name="brainstore",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except BaseException:
            self._pool.close()
            raise
        self._local = threading.local()
        self._checked = CheckedMemories(as_stored=self._as_stored)  # see store.current
        self._schema: int | None = None
        self._schema_read = 0.0
        # Purge (VACUUM) scheduling.
        self._purge = threading.Condition(threading.Lock())
        # Each committed erase waiting for its VACUUM: its number -> (the tables it left dead tuples in,
        # its transaction id as xid8, None if it deleted nothing). A VACUUM clears the erases that
        # committed before it started and that no running transaction may still see (_horizon_passed).
        self._dirty: dict[int, tuple[frozenset[str], int | None]] = {}
        self._erases = 0
        self._first_erase: float | None = None
        self._due: float | None = None
        self._failures = 0
        self._stopping = False
        self._closed = False
        self._purger: threading.Thread | None = None

    # --- plumbing ---------------------------------------------------------------------------------
    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's transaction connection, or a pooled one for one autocommitted statement."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        with self._pool.connection() as conn:
            yield conn

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        rows = self._rows(sql, params)
        return rows[0][0] if rows else None

    def _exec(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """One statement: in the thread's transaction, else autocommitted (atomic by itself)."""
        with self._conn() as conn:
            conn.execute(sql, params)

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.atomic(), self._local.conn.cursor() as cursor:
            cursor.executemany(sql, rows)

    def _erased(self, *tables: str) -> None:
        """Inside an erase's transaction: its commit schedules a VACUUM of ``tables``."""
        self._local.erased.update(tables)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        local = self._local
        if getattr(local, "conn", None) is not None:
            yield  # joins the thread's transaction: its commit or rollback is the outermost's
            return
        erased: set[str] = set()
        own = _Own()
        with self._pool.connection() as conn:
            local.conn, local.erased, local.own = conn, erased, own
            try:
                with conn.transaction():
                    if not getattr(local, "migrating", False) and (self._schema is None or self._schema < _LATEST):
                        local.schema = self._hold_schema(conn)
                    yield
                    self._write_seqs(own)
                    if erased:
                        # NULL when it deleted nothing: no dead tuple to wait for
                        own.erase_xid = conn.execute("SELECT pg_current_xact_id_if_assigned()::text").fetchone()[0]
            finally:
                local.conn, local.erased, local.own, local.schema = None, None, None, None
        self._held_after(own)  # committed: a rollback raised above
        if erased:
            self._after_erase(erased, own.erase_xid)

    # --- purge ------------------------------------------------------------------------------------
    def _after_erase(self, tables: set[str], xid: str | None) -> None:
        with self._purge:
            self._erases += 1
            self._dirty[self._erases] = (frozenset(tables), None if xid is None else int(xid))
        if self.purge_delay == 0:
            try:
                self.vacuum()
            except ErasureHeldBack as held:
                log.info("%s; retrying in the background", held)
                self._schedule(retry=True)
            except Exception:
                # The erase is committed either way; its dead tuples stay until a retry succeeds.
                log.exception("VACUUM after an erase failed; retrying in the background")
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
            if self._purger is None or not self._purger.is_alive():  # none yet, or lost in a fork
                self._purger = threading.Thread(target=self._purge_loop, name="brainstore-vacuum", daemon=True)
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
                self.vacuum()
            except ErasureHeldBack as held:
                log.info("%s; retrying", held)
                self._schedule(retry=True)
            except Exception:
                log.exception("background VACUUM failed; retrying")
                self._schedule(retry=True)

    @property
    def dirty(self) -> bool:
        """True while committed erases wait for their VACUUM."""
        return bool(self._dirty)

    def vacuum(self) -> None:
        """VACUUM the tables erases touched since the last one: their dead tuples are removed (see the
        module docstring for what that does and does not reach). Dirty until it has finished; raises on
        failure, staying dirty, and ErasureHeldBack when an erase must wait for a transaction older than
        it (those that need not are vacuumed and cleared)."""
        if getattr(self._local, "conn", None) is not None:
            raise RuntimeError("vacuum() cannot run inside atomic()")
        with self._purge:
            erases = dict(self._dirty)
            self._first_erase = None
            self._due = None
        if not erases:
            return
        with self._pool.connection() as conn:
            # Read before the VACUUM starts: an erase no running transaction may see then, none can later.
            passed = self._horizon_passed(conn, erases)
            tables = sorted(set().union(*(erases[n][0] for n in passed)))
            if tables:
                # The names come from this module, never from input.
                conn.execute("VACUUM " + ", ".join(tables))
        with self._purge:
            for number in passed:
                self._dirty.pop(number, None)
            if passed:  # progress: those held are retried a purge_delay on, not after a growing backoff
                self._failures = 0
        if len(passed) < len(erases):
            raise ErasureHeldBack(
                f"VACUUM after {len(erases) - len(passed)} erase(s) waits for a transaction older than them "
                "(it may still see the erased rows, and VACUUM would keep them for it)"
            )

    @staticmethod
    def _horizon_passed(conn: psycopg.Connection[Any], erases: Mapping[int, tuple[frozenset[str], int | None]]) -> list[int]:
        """The erases whose deleted rows no running transaction of this database may still see, so that
        a VACUUM starting now removes them: it keeps, and reports success on, what one may see. An erase
        is held by any transaction of any role whose id is not newer (pg_locks: each holds its id's lock,
        and shows it to every role) and any session of this role holding a snapshot taken before it
        committed (another role's snapshot, an operator's, shows to its role only). Other databases'
        transactions do not hold this one's VACUUM back; nor do autovacuum or replication, which are not
        client backends. Each erase apart: under a steady stream of them one is always new."""
        numbers = sorted(erases)
        xids = [erases[n][1] for n in numbers]
        if all(xid is None for xid in xids):
            return numbers
        row = conn.execute(
            "SELECT (SELECT max(age(x)) FROM ("
            "  SELECT l.transactionid AS x FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            "  WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted"
            "  AND a.datname = current_database()"
            "  UNION ALL SELECT backend_xmin FROM pg_stat_activity WHERE datname = current_database()"
            "  AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND backend_xmin IS NOT NULL"
            ") running), ARRAY(SELECT age(x::xid) FROM unnest(%s::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i)",
            [[str(xid % 2**32) if xid is not None else "0" for xid in xids]],
        ).fetchone()
        oldest, ages = (row[0], row[1]) if row else (None, [])
        # an erase older than the oldest running transaction or snapshot: its age is greater
        return [n for n, xid, age in zip(numbers, xids, ages, strict=True) if xid is None or oldest is None or age > oldest]

    def unavailable(self, error: BaseException) -> bool:
        if isinstance(error, OSError | MemoryError | psycopg.InterfaceError):
            return True
        if not isinstance(error, psycopg.OperationalError):
            return False
        # By SQLSTATE class: connection, transaction rollback (serialization, deadlock), insufficient
        # resources, operator intervention (a statement timeout), system (I/O) errors, a lock not
        # available. Not class 54 (program limit exceeded: the data is too big for an index, say),
        # also an OperationalError. None: raised by the client or its pool (a pool timeout).
        state = error.sqlstate
        return state is None or state[:2] in {"08", "40", "53", "57", "58"} or state == "55P03"

    def close(self) -> None:
        with self._purge:
            if self._closed:
                return
            self._closed = True
            self._stopping = True
            self._purge.notify_all()
            purger = self._purger
        if purger is not None and purger is not threading.current_thread():
            purger.join()
        if self._dirty:
            try:
                self.vacuum()
            except Exception:
                log.exception("VACUUM at close failed; autovacuum removes the dead tuples later")
        self._checked.clear()
        self._pool.close()

    # --- schema -----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        held = getattr(self._local, "schema", None)
        if held is not None:  # no migration can commit before this transaction does (_hold_schema)
            return int(held)
        # Another process (`brainstore migrate`) may advance it: a version behind is read again after a
        # few seconds; the latest one cannot move.
        now = time.monotonic()
        if self._schema is not None and (self._schema >= _LATEST or now - self._schema_read < _SCHEMA_RECHECK):
            return self._schema
        return self._note_schema(self._read_schema(), now)

    def _read_schema(self) -> int:
        if self._one("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            return int(self._one("SELECT coalesce(max(version), 0) FROM schema_migrations"))
        return 0

    def _note_schema(self, version: int, read_at: float) -> int:
        # Threads read it concurrently: a slower one must not put back a version another saw passed.
        if self._schema is None or version >= self._schema:
            self._schema, self._schema_read = version, read_at
        return version

    def _hold_schema(self, conn: psycopg.Connection[Any]) -> int:
        """First in a transaction begun while the schema was behind: the version it runs at, held.

        A writer chooses its tables and columns by the version (erase_brain's tables, put_idempotent's
        keys); one that read a version a migration then passed wrote replies without the keys erasure
        finds them by, or erased a Brain without the tables the migration made. The shared lock waits
        for a migration in progress (migrate() holds _MIGRATION_LOCK until it commits) and keeps the
        next one from committing before this transaction does, so the version read after it stays true
        throughout. Taken before the transaction touches any table: a migration's ALTER TABLE waits for
        the tables this transaction holds, and it must never hold one while it waits for the lock.
        Read in its own statement, after the lock: READ COMMITTED's snapshot is taken as a statement
        starts. Once the schema is the latest no transaction pays for it."""
        conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", [_MIGRATION_LOCK])
        return self._note_schema(self._read_schema(), time.monotonic())

    def _keeps_heads(self) -> bool:
        """Inside a transaction that has written or erased revisions: whether it must keep memory_heads.
        Read again while the schema is behind: the migration that makes the heads locks out revision
        writers until it commits, so a writer past its lock sees the new schema, and one before it wrote
        revisions the migration's backfill reads."""
        if self._schema is not None and self._schema >= HEADS:
            return True  # a schema never goes back
        version = int(self._one("SELECT coalesce(max(version), 0) FROM schema_migrations"))
        if version >= HEADS:
            self._schema, self._schema_read = version, time.monotonic()
        return version >= HEADS

    def _refresh_heads(self, memory_ids: Sequence[str]) -> None:
        """Inside a transaction that erased revisions of these Memories: their heads are their newest
        revisions left (none for a Memory with no revision left)."""
        conn = self._local.conn
        conn.execute("DELETE FROM memory_heads WHERE memory_id = ANY(%s)", [list(memory_ids)])
        conn.execute(
            f"INSERT INTO memory_heads SELECT DISTINCT ON (memory_id) {_HEAD_COLUMNS} FROM memory_revisions "
            "WHERE memory_id = ANY(%s) ORDER BY memory_id, version DESC",
            [list(memory_ids)],
        )

    def migrate(self, up_to: int | None = None) -> list[int]:
        # Its transactions take the migration lock exclusively, first: not the shared one atomic() takes
        # while behind, which two migrate() calls would each hold while waiting for the other's.
        self._local.migrating = True
        try:
            applied = self._migrate(up_to)
        finally:
            self._local.migrating = False
        self._schema = None
        return applied

    def _migrate(self, up_to: int | None) -> list[int]:
        applied = []
        for version, name, sql in migrations():
            if up_to is not None and version > up_to:
                break
            with self.atomic():
                conn = self._local.conn
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
                )
                current = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
                if current is not None and current[0] >= version:
                    continue  # another process applied it first
                conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations VALUES (%s, %s, now())", [version, name])
            applied.append(version)
        return applied

    # --- change sequence --------------------------------------------------------------------------
    def next_seq(self, brain_uid: str) -> int:
        own: _Own | None = getattr(self._local, "own", None)
        if own is not None and brain_uid in own.seqs:
            # This transaction's first number locked the row until it ends: no other can take one
            # meanwhile, so the next is the last plus one, written once before the commit
            # (_write_seqs). A group commit's writes and a derivation batch's revisions and statuses
            # take many numbers of one Brain.
            first, last = own.seqs[brain_uid]
            own.seqs[brain_uid] = (first, last + 1)
            own.unwritten[brain_uid] = last + 1
            return last + 1
        seq = int(
            self._one(
                "INSERT INTO brain_sequences AS s VALUES (%s, 1) "
                "ON CONFLICT (brain_uid) DO UPDATE SET seq = s.seq + 1 RETURNING seq",
                [brain_uid],
            )
        )
        if own is not None:  # in a transaction, which holds the row's lock until it ends
            own.seqs[brain_uid] = (seq, seq)
        return seq

    def current_seq(self, brain_uid: str) -> int:
        own: _Own | None = getattr(self._local, "own", None)
        if own is not None and brain_uid in own.seqs:  # as this transaction left it
            return own.seqs[brain_uid][1]
        seq = self._one("SELECT seq FROM brain_sequences WHERE brain_uid = %s", [brain_uid])
        return int(seq or 0)

    def live_seq(self, brain_uid: str) -> int | None:
        own: _Own | None = getattr(self._local, "own", None)
        if own is not None and brain_uid in own.seqs:
            return own.seqs[brain_uid][1] if self.brain_by_uid(brain_uid) is not None else None
        rows = self._rows(
            "SELECT coalesce(s.seq, 0) FROM brains b LEFT JOIN brain_sequences s ON s.brain_uid = b.uid WHERE b.uid = %s",
            [brain_uid],
        )
        return int(rows[0][0]) if rows else None

    def _write_seqs(self, own: _Own) -> None:
        """Before the commit: the numbers next_seq took without a statement, one statement for all."""
        if own.unwritten:
            uids, seqs = zip(*sorted(own.unwritten.items()), strict=True)
            self._local.conn.execute(
                "UPDATE brain_sequences AS s SET seq = v.seq FROM unnest(%s::text[], %s::bigint[]) AS v(uid, seq) "
                "WHERE s.brain_uid = v.uid",
                [list(uids), list(seqs)],
            )
            own.unwritten.clear()

    # --- several processes on one database ---------------------------------------------------------
    def shares_processes(self) -> bool:
        """Whether the schema has what several processes serving this database need (migration 5)."""
        return self.schema_version() >= SHARED

    def shared_secret(self) -> bytes | None:
        """The watermark key every process shares: made by the first that asks, read back by all."""
        if not self.shares_processes():
            return None
        self._exec(
            "INSERT INTO watermark_secret VALUES (1, %s) ON CONFLICT (id) DO NOTHING", [secrets.token_bytes(32)]
        )
        return bytes(self._one("SELECT secret FROM watermark_secret WHERE id = 1"))

    def erased_records(self, brain_uid: str, after_seq: int) -> list[str]:
        rows = self._rows(
            "SELECT record_id FROM record_erasures WHERE brain_uid = %s AND seq > %s ORDER BY seq",
            [brain_uid, after_seq],
        )
        return [r[0] for r in rows]

    def chunks_ready_after(self, brain_uid: str, after_seq: int) -> list[StoredChunk]:
        """The chunks of the Records made ready after ``after_seq``, in the order they were made ready."""
        rows = self._rows(
            "SELECT c.brain_uid, c.record_id, c.span_start, c.span_end, c.text, c.index_text, c.occurred_at, "
            "c.speaker, c.source_name, c.trust, c.visibility, c.model, c.embedding "
            "FROM record_events e JOIN chunks c ON c.brain_uid = e.brain_uid AND c.record_id = e.record_id "
            "WHERE e.brain_uid = %s AND e.seq > %s AND e.status = 'ready' "
            "ORDER BY e.seq, c.record_id, c.span_start",
            [brain_uid, after_seq],
        )
        return [self._chunk(r) for r in rows]

    def derivation_pending_through(self, brain_uid: str, seq: int) -> bool:
        """Whether a Record of the Brain numbered ``seq`` or lower is still processing, in any process."""
        return bool(
            self._one(
                "SELECT EXISTS (SELECT 1 FROM derivation_queue WHERE brain_uid = %s AND seq <= %s)", [brain_uid, seq]
            )
        )

    def claim_records(self, owner: str, record_ids: Sequence[str], lease_seconds: float) -> set[str]:
        """Claim those of ``record_ids`` still queued that no other process holds (unclaimed, claimed by
        ``owner`` already, or a claim expired) until ``lease_seconds`` from now; the ids claimed. Rows
        another process is claiming at this moment are skipped, never waited for."""
        if not record_ids:
            return set()
        rows = self._rows(
            "WITH free AS ("
            "  SELECT record_id FROM derivation_queue WHERE record_id = ANY(%(ids)s)"
            "  AND (owner IS NULL OR owner = %(owner)s OR claimed_until < now())"
            "  ORDER BY record_id FOR UPDATE SKIP LOCKED"
            ") UPDATE derivation_queue q SET owner = %(owner)s, "
            "claimed_until = now() + make_interval(secs => %(lease)s) "
            "FROM free WHERE q.record_id = free.record_id RETURNING q.record_id",
            {"ids": sorted(set(record_ids)), "owner": owner, "lease": float(lease_seconds)},
        )
        return {r[0] for r in rows}

    def renew_claims(self, owner: str, record_ids: Sequence[str], lease_seconds: float) -> None:
        """Extend ``owner``'s claims on those of ``record_ids`` to ``lease_seconds`` from now (never taking
        a claim it does not hold)."""
        if record_ids:
            self._exec(
                "UPDATE derivation_queue SET claimed_until = now() + make_interval(secs => %(lease)s) "
                "WHERE owner = %(owner)s AND record_id = ANY(%(ids)s)",
                {"ids": sorted(set(record_ids)), "owner": owner, "lease": float(lease_seconds)},
            )

    def release_claims(self, owner: str) -> None:
        """``owner`` stops (its unfinished Records are free for the others now, not when claims expire)."""
        if self.shares_processes():
            self._exec("UPDATE derivation_queue SET owner = NULL, claimed_until = NULL WHERE owner = %s", [owner])

    def unclaimed_records(self, grace_seconds: float, limit: int) -> list[tuple[str, str, int]]:
        """(brain uid, record id, seq) of queued Records nobody is deriving: claims expired (their
        process died or stalled), or never claimed ``grace_seconds`` after they were queued (the process
        that took them died before it claimed them, or is busy)."""
        rows = self._rows(
            "SELECT brain_uid, record_id, seq FROM derivation_queue WHERE "
            "(claimed_until IS NULL AND queued_at < now() - make_interval(secs => %s)) OR claimed_until < now() "
            "ORDER BY queued_at, record_id LIMIT %s",
            [float(grace_seconds), int(limit)],
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def stale_pending_memories(self, grace_seconds: float, limit: int) -> list[tuple[str, str]]:
        """(brain uid, memory id) of Memories pending re-derivation for more than ``grace_seconds``: the
        process that made them pending queued them, and may have died since."""
        if self.schema_version() >= HEADS:
            rows = self._rows(
                f"SELECT h.brain_uid, h.memory_id FROM {_HEADS_WITH_REVISIONS} "
                "WHERE h.status = 'pending' AND r.recorded_at < now() - make_interval(secs => %s) "
                "ORDER BY r.recorded_at, h.memory_id LIMIT %s",
                [float(grace_seconds), int(limit)],
            )
            return [(r[0], r[1]) for r in rows]
        # Before schema 6: every revision ever pending is in memory_revisions_pending (200,000 of them
        # took 0.3 s a scan).
        rows = self._rows(
            "SELECT p.brain_uid, p.memory_id FROM memory_revisions p WHERE p.status = 'pending' "
            "AND p.recorded_at < now() - make_interval(secs => %s) AND NOT EXISTS "
            "(SELECT 1 FROM memory_revisions n WHERE n.memory_id = p.memory_id AND n.version > p.version) "
            "ORDER BY p.recorded_at, p.memory_id LIMIT %s",
            [float(grace_seconds), int(limit)],
        )
        return [(r[0], r[1]) for r in rows]

    def erasures_since(self, since: Mapping[str, int]) -> dict[str, tuple[int, set[str]] | None]:
        """For each Brain uid in ``since``: None when the Brain no longer exists, else its change
        sequence now and the Records erased after ``since[uid]`` (one statement for all of them)."""
        if not since:
            return {}
        uids, after = zip(*sorted(since.items()), strict=True)
        rows = self._rows(
            "SELECT h.uid, coalesce(s.seq, 0), e.record_id "
            "FROM unnest(%s::text[], %s::bigint[]) AS h(uid, after) JOIN brains b ON b.uid = h.uid "
            "LEFT JOIN brain_sequences s ON s.brain_uid = h.uid "
            "LEFT JOIN record_erasures e ON e.brain_uid = h.uid AND e.seq > h.after",
            [list(uids), list(after)],
        )
        found: dict[str, tuple[int, set[str]] | None] = dict.fromkeys(uids)
        for uid, seq, record_id in rows:
            head, erased = found[uid] or (int(seq), set())
            if record_id is not None:
                erased.add(record_id)
            found[uid] = (head, erased)
        return found

    # --- brains -----------------------------------------------------------------------------------
    def lock_brain(self, brain_uid: str) -> bool:
        with self.atomic():
            own: _Own = self._local.own
            # held until the transaction ends, or it erases the Brain: a group commit locks one Brain
            # for each of its writes
            if brain_uid in own.locked:
                return True
            if self._one("SELECT 1 FROM brains WHERE uid = %s FOR NO KEY UPDATE", [brain_uid]) is None:
                return False
            own.locked.add(brain_uid)
            return True

    def try_lock_brains(self, brain_uids: Sequence[str], *, wait_at_most: float = 0.0) -> set[str]:
        with self.atomic():
            held = self._lock_brains_skipping(brain_uids)
            if not held or wait_at_most <= 0:
                return held
            return self._lock_brains_waiting(sorted(held), time.monotonic() + wait_at_most)

    def _lock_brains_skipping(self, brain_uids: Sequence[str]) -> set[str]:
        with self.atomic():
            own: _Own = self._local.own
            wanted = [uid for uid in brain_uids if uid not in own.locked]
            if not wanted:
                return set()
            # SKIP LOCKED passes over a row another transaction holds (a writer of another process, an
            # erase_brain deleting a large Brain, an operator's session) instead of waiting for it, with
            # no lock_timeout to bound the wait. Taken without waiting, these locks close no cycle.
            locked = {
                uid
                for (uid,) in self._rows(
                    "SELECT uid FROM brains WHERE uid = ANY(%s) FOR NO KEY UPDATE SKIP LOCKED", [wanted]
                )
            }
            own.locked |= locked
            passed = [uid for uid in wanted if uid not in locked]
            if not passed:
                return set()
            # held, or gone (erased and committed): one gone lock_brain finds gone without waiting
            return {uid for (uid,) in self._rows("SELECT uid FROM brains WHERE uid = ANY(%s)", [passed])}

    def _lock_brains_waiting(self, brain_uids: Sequence[str], until: float) -> set[str]:
        """Inside the transaction: lock each of ``brain_uids`` in the lock's queue until ``until``
        (time.monotonic) at most; those still held then. Queued, a Brain this process's own writes keep
        busy (a group commit after another) is taken once the transaction holding it ends: SKIP LOCKED
        tried again passed it over as long as the writes went on. Each wait runs in a savepoint, which a
        lock timeout fails alone; the wait is far shorter than deadlock_timeout, so holding the
        transaction's other Brains meanwhile closes no lasting cycle."""
        conn = self._local.conn
        own: _Own = self._local.own
        was = conn.execute("SELECT current_setting('lock_timeout')").fetchone()[0]
        held: set[str] = set()
        for uid in brain_uids:
            left = until - time.monotonic()
            if left <= 0:
                held.add(uid)
                continue
            try:
                with conn.transaction():
                    conn.execute("SELECT set_config('lock_timeout', %s, true)", [f"{max(1, round(left * 1000))}ms"])
                    found = conn.execute("SELECT 1 FROM brains WHERE uid = %s FOR NO KEY UPDATE", [uid]).fetchone()
            except psycopg.errors.LockNotAvailable:
                held.add(uid)
                continue
            if found is not None:  # else gone: lock_brain finds it gone
                own.locked.add(uid)
        # the rest of the transaction waits as it did (a failed statement ends it: nothing to restore)
        conn.execute("SELECT set_config('lock_timeout', %s, true)", [was])
        return held

    def insert_brain(self, brain: Brain) -> None:
        self._exec(
            "INSERT INTO brains VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [brain.uid, brain.namespace, brain.id, brain.name, brain.self_type, brain.self_name, brain.created_at],
        )

    def _brain(self, where: str, params: Sequence[Any]) -> Brain | None:
        rows = self._rows(
            f"SELECT uid, namespace, id, name, self_type, self_name, created_at FROM brains WHERE {where}", params
        )
        if not rows:
            return None
        uid, ns, id_, name, self_type, self_name, created_at = rows[0]
        return Brain(uid, ns, id_, name, self_type, self_name, _utc(created_at))  # type: ignore[arg-type]

    def get_brain(self, namespace: str, brain_id: str) -> Brain | None:
        return self._brain("namespace = %s AND id = %s", [namespace, brain_id])

    def brain_by_uid(self, brain_uid: str) -> Brain | None:
        return self._brain("uid = %s", [brain_uid])

    def _brain_tables(self) -> list[str]:
        version = self.schema_version()
        return [table for needs, tables in _BRAIN_TABLES if version >= needs for table in tables]

    def erase_brain(self, brain_uid: str) -> dict[str, int]:
        with self.atomic():
            # Waits for every writer holding the Brain (lock_brain); a writer arriving later finds it gone.
            self._one("SELECT 1 FROM brains WHERE uid = %s FOR UPDATE", [brain_uid])
            memories = (
                "(SELECT count(DISTINCT memory_id) FROM memory_revisions WHERE brain_uid = %(uid)s)"
                if self.schema_version() >= StoreFeature.MEMORIES
                else "0"
            )
            counts = self._rows(
                "SELECT (SELECT count(*) FROM records WHERE brain_uid = %(uid)s), "
                f"{memories}, "
                "(SELECT count(*) FROM (SELECT DISTINCT type, key FROM object_versions WHERE brain_uid = %(uid)s) o)",
                {"uid": brain_uid},
            )[0]
            tables = self._brain_tables()
            conn = self._local.conn
            for table in tables:
                conn.execute(f"DELETE FROM {table} WHERE brain_uid = %s", [brain_uid])
            conn.execute("DELETE FROM brain_sequences WHERE brain_uid = %s", [brain_uid])
            conn.execute("DELETE FROM brains WHERE uid = %s", [brain_uid])
            own: _Own = self._local.own
            # gone with its rows: a number taken after this starts the sequence again, as before
            own.locked.discard(brain_uid)
            own.seqs.pop(brain_uid, None)
            own.unwritten.pop(brain_uid, None)
            self._forget_held([brain_uid])
            self._erased("brains", "brain_sequences", *tables)
        return {"records": int(counts[0]), "memories": int(counts[1]), "objects": int(counts[2])}

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
        source = record.source or {}
        insert = "INSERT INTO records VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        if self.schema_version() >= SHARED:  # queued for derivation in the same statement: one round trip
            insert = (
                f"WITH r AS ({insert} RETURNING id, brain_uid, seq) "
                "INSERT INTO derivation_queue (record_id, brain_uid, seq, queued_at) SELECT id, brain_uid, seq, now() FROM r"
            )
        self._exec(
            insert,
            [
                record.id,
                record.brain_uid,
                _json(record.content),
                _json(record.source) if record.source is not None else None,
                source.get("name"),
                source.get("external_id"),
                record.visibility,
                record.occurred_at,
                record.created_at,
                record.origin,
                record.seq,
            ],
        )

    def get_record(self, brain_uid: str, record_id: str) -> Record | None:
        rows = self._rows(_RECORD_SELECT + " WHERE r.id = %s AND r.brain_uid = %s", [record_id, brain_uid])
        return self._record(rows[0]) if rows else None

    def records(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, Record]:
        if not record_ids:
            return {}
        rows = self._rows(
            _RECORD_SELECT + " WHERE r.brain_uid = %s AND r.id = ANY(%s)", [brain_uid, sorted(set(record_ids))]
        )
        return {row[0]: self._record(row) for row in rows}

    def record_contents(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not record_ids:
            return {}
        rows = self._rows(
            "SELECT id, content FROM records WHERE brain_uid = %s AND id = ANY(%s)", [brain_uid, list(record_ids)]
        )
        return {id_: json.loads(content) for id_, content in rows}

    def record_visibilities(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, str]:
        if not record_ids:
            return {}
        rows = self._rows(
            "SELECT id, visibility FROM records WHERE brain_uid = %s AND id = ANY(%s)", [brain_uid, list(record_ids)]
        )
        return dict(rows)

    def find_imported_record(self, brain_uid: str, source_name: str, external_id: str) -> Record | None:
        rows = self._rows(
            _RECORD_SELECT
            + " WHERE r.brain_uid = %s AND r.origin = 'import' AND md5(r.source_name) = md5(%s) "
            "AND md5(r.external_id) = md5(%s) AND r.source_name = %s AND r.external_id = %s",  # its index: migration 7
            [brain_uid, source_name, external_id, source_name, external_id],
        )
        return self._record(rows[0]) if rows else None

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
        if not events:
            return
        with self.atomic():
            self._many(
                "INSERT INTO record_events VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    [e.record_id, e.brain_uid, e.seq, e.status, _json(e.error) if e.error else None, _json(list(e.memory_ids))]
                    for e in events
                ],
            )
            if self.schema_version() >= SHARED:
                # an outcome, ready or failed: no longer queued; back to processing (rederive): queued again
                latest = {e.record_id: e for e in events}
                settled = sorted(r for r, e in latest.items() if e.status != "processing")
                if settled:
                    self._local.conn.execute("DELETE FROM derivation_queue WHERE record_id = ANY(%s)", [settled])
                requeued = [[e.record_id, e.brain_uid, e.seq] for e in latest.values() if e.status == "processing"]
                if requeued:
                    self._many(
                        "INSERT INTO derivation_queue (record_id, brain_uid, seq, queued_at) VALUES (%s, %s, %s, now()) "
                        "ON CONFLICT (record_id) DO UPDATE SET seq = EXCLUDED.seq, queued_at = now(), owner = NULL, "
                        "claimed_until = NULL",
                        requeued,
                    )

    def records_in_status(self, status: str) -> list[tuple[str, str]]:
        if status == "processing":
            rows = self._rows(
                # no outcome yet, or sent back to derivation since (its latest event says processing)
                "SELECT r.brain_uid, r.id FROM records r WHERE coalesce((SELECT e.status FROM record_events e "
                "WHERE e.record_id = r.id ORDER BY e.seq DESC LIMIT 1), 'processing') = 'processing' ORDER BY r.seq, r.id"
            )
        else:
            rows = self._rows(
                "SELECT brain_uid, record_id FROM ("
                "  SELECT DISTINCT ON (record_id) brain_uid, record_id, status, seq FROM record_events"
                "  ORDER BY record_id, seq DESC"
                ") e WHERE status = %s ORDER BY seq, record_id",
                [status],
            )
        return [(r[0], r[1]) for r in rows]

    def records_supporting(self, brain_uid: str, memory_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        if not memory_ids:
            return {}
        # memory_ids is a JSON list (of generated ids), never another JSON value
        rows = self._rows(
            "SELECT memory_id, record_id FROM ("
            "  SELECT n.memory_id, e.record_id, row_number() OVER (PARTITION BY n.memory_id ORDER BY r.seq, r.id) AS rank"
            "  FROM ("
            "    SELECT DISTINCT ON (record_id) record_id, memory_ids FROM record_events WHERE brain_uid = %s"
            "    ORDER BY record_id, seq DESC"
            "  ) e JOIN records r ON r.id = e.record_id"
            "  CROSS JOIN LATERAL jsonb_array_elements_text(e.memory_ids::jsonb) AS n(memory_id)"
            "  WHERE n.memory_id = ANY(%s)"
            ") ranked WHERE rank <= %s ORDER BY memory_id, rank",
            [brain_uid, sorted(set(memory_ids)), limit],
        )
        found: dict[str, list[str]] = {}
        for memory_id, record_id in rows:
            found.setdefault(memory_id, []).append(record_id)
        return found

    def list_records(self, brain_uid: str) -> list[Record]:
        rows = self._rows(_RECORD_SELECT + " WHERE r.brain_uid = %s ORDER BY r.seq", [brain_uid])
        return [self._record(r) for r in rows]

    def record_seqs(self, brain_uid: str, *, after: int, limit: int) -> list[tuple[str, int]]:
        rows = self._rows(  # records_by_brain (brain_uid, seq): a page is an index range
            "SELECT id, seq FROM records WHERE brain_uid = %s AND seq > %s ORDER BY seq LIMIT %s",
            [brain_uid, after, limit],
        )
        return [(record_id, int(seq)) for record_id, seq in rows]

    def count_records(self, brain_uid: str, *, after: int = 0, through: int | None = None) -> int:
        bound = "" if through is None else " AND seq <= %s"
        params = [brain_uid, after] if through is None else [brain_uid, after, through]
        return int(self._one(f"SELECT count(*) FROM records WHERE brain_uid = %s AND seq > %s{bound}", params))

    def record_tally(self, brain_uid: str, examples: int, *, withheld: Collection[str] = ()) -> RecordTally:
        hidden = sorted(withheld)
        shown = f" AND r.visibility NOT IN ({', '.join('%s' for _ in hidden)})" if hidden else ""
        (row,) = self._rows(
            "SELECT count(*), count(*) FILTER (WHERE failed), count(*) FILTER (WHERE low_trust), "
            "(array_agg(id ORDER BY seq) FILTER (WHERE failed))[1:%s], "
            "(array_agg(id ORDER BY seq) FILTER (WHERE low_trust))[1:%s] FROM ("
            "  SELECT r.id, r.seq, coalesce(e.status = 'failed', false) AS failed,"
            "         coalesce(r.source::jsonb ->> 'trust' = 'low', false) AS low_trust"
            "  FROM records r LEFT JOIN ("
            "    SELECT DISTINCT ON (record_id) record_id, status FROM record_events WHERE brain_uid = %s"
            "    ORDER BY record_id, seq DESC"
            f"  ) e ON e.record_id = r.id WHERE r.brain_uid = %s{shown}"
            ") tallied",
            [examples, examples, brain_uid, brain_uid, *hidden],
        )
        records, failed, trusted_low, failed_ids, low_trust_ids = row
        return RecordTally(records, failed, trusted_low, tuple(failed_ids or ()), tuple(low_trust_ids or ()))

    def erase_record(self, brain_uid: str, record_id: str) -> None:
        with self.atomic():
            conn = self._local.conn
            conn.execute("DELETE FROM record_events WHERE record_id = %s AND brain_uid = %s", [record_id, brain_uid])
            conn.execute("DELETE FROM records WHERE id = %s AND brain_uid = %s", [record_id, brain_uid])
            self._erased("records", "record_events")
            if self.schema_version() >= SHARED:
                conn.execute("DELETE FROM derivation_queue WHERE record_id = %s", [record_id])
                # At the Brain's sequence as this transaction left it (the erase took a number).
                conn.execute(
                    "INSERT INTO record_erasures VALUES (%s, %s, %s)",
                    [brain_uid, record_id, self.current_seq(brain_uid)],
                )

    # --- objects ----------------------------------------------------------------------------------
    _OBJECT_COLUMNS = "id, brain_uid, type, key, version, value, accepted_by, created_at, seq"

    @staticmethod
    def _object(row: tuple[Any, ...]) -> ObjectVersion:
        id_, uid, type_, key, version, value, accepted_by, created_at, seq = row
        return ObjectVersion(id_, uid, type_, key, version, json.loads(value), accepted_by, _utc(created_at), seq)  # type: ignore[arg-type]

    def latest_object(self, brain_uid: str, type_: str, key: str) -> ObjectVersion | None:
        rows = self._rows(
            f"SELECT {self._OBJECT_COLUMNS} FROM object_versions WHERE brain_uid = %s AND type = %s AND key = %s "
            "ORDER BY version DESC LIMIT 1",
            [brain_uid, type_, key],
        )
        return self._object(rows[0]) if rows else None

    def insert_object_version(self, version: ObjectVersion) -> None:
        self._exec(
            f"INSERT INTO object_versions ({self._OBJECT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                version.id,
                version.brain_uid,
                version.type,
                version.key,
                version.version,
                _json(version.value),
                version.accepted_by,
                version.created_at,
                version.seq,
            ],
        )

    def list_objects(
        self, brain_uid: str, limit: int | None = None, *, max_bytes: int | None = None
    ) -> list[ObjectVersion]:
        # octet_length of a value stored out of line reads its size, not the value. In code point order
        # (COLLATE "C"), as the embedded stores sort: a database's language collation ("a" before "B")
        # gave a Context's budget another set of Objects.
        latest = (
            f"SELECT DISTINCT ON (type, key) {self._OBJECT_COLUMNS}, octet_length(value) AS bytes "
            "FROM object_versions WHERE brain_uid = %s ORDER BY type, key, version DESC"
        )
        params: list[Any] = [brain_uid]
        if max_bytes is not None:
            latest = (
                "SELECT * FROM (SELECT *, sum(bytes) OVER (ORDER BY type COLLATE \"C\", key COLLATE \"C\" "
                "ROWS UNBOUNDED PRECEDING) AS read "
                f"FROM ({latest}) l WHERE bytes <= %s) f WHERE read <= %s"
            )
            params += [max_bytes, max_bytes]
        rows = self._rows(
            f'SELECT {self._OBJECT_COLUMNS} FROM ({latest}) o ORDER BY type COLLATE "C", key COLLATE "C"'
            + ("" if limit is None else " LIMIT %s"),
            params + ([] if limit is None else [limit]),
        )
        return [self._object(r) for r in rows]

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotent(self, namespace: str, scope: str, key: str) -> IdempotentReply | None:
        keyed = ", brain_uid, resource_id" if self.schema_version() >= StoreFeature.ERASURE else ", NULL, NULL"
        rows = self._rows(
            "SELECT namespace, scope, key, fingerprint, status, body, watermark, created_at" + keyed
            + " FROM idempotency WHERE namespace = %s AND scope = %s AND key = %s",
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
            reply.created_at,
        ]
        columns = "namespace, scope, key, fingerprint, status, body, watermark, created_at"
        if self.schema_version() >= StoreFeature.ERASURE:
            row += [reply.brain_uid, reply.resource_id]
            columns += ", brain_uid, resource_id"
        self._exec(f"INSERT INTO idempotency ({columns}) VALUES ({', '.join(['%s'] * len(row))})", row)

    def erase_idempotent(self, brain_uid: str, resource_id: str | None = None) -> int:
        if self.schema_version() < StoreFeature.ERASURE:
            return 0
        where, params = "brain_uid = %s", [brain_uid]
        if resource_id is not None:
            where, params = where + " AND resource_id = %s", [*params, resource_id]
        with self.atomic():
            count = self._local.conn.execute(f"DELETE FROM idempotency WHERE {where}", params).rowcount
            if count:
                self._erased("idempotency")
            return int(count)

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
            fingerprint,
        ) = row[:20]
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
            citations=tuple(Citation(**c) for c in json.loads(citations)),
            supersedes=supersedes,
            superseded_by=superseded_by,
            seq=seq,
            single_valued=single_valued,
            negated=negated,
            extra=json.loads(extra),
            fingerprint=fingerprint or "",
        )

    @staticmethod
    def _citations_json(citations: Sequence[Citation] | Sequence[dict[str, Any]]) -> str:
        return _json(
            [
                c if isinstance(c, dict) else {"record_id": c.record_id, "start": c.start, "end": c.end, "quote": c.quote}
                for c in citations
            ]
        )

    def insert_memory_revisions(self, revisions: Sequence[MemoryRevision]) -> None:
        if not revisions:
            return
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
                r.owner.casefold() if r.owner is not None else None,
                r.attribute,
                r.value,
                r.valid_from,
                r.valid_to,
                r.recorded_at,
                r.status,
                self._citations_json(r.citations),
                r.supersedes,
                r.superseded_by,
                r.seq,
                r.single_valued,
                r.negated,
                _json(r.extra),
            ]
            for r in revisions
        ]
        links = [
            [r.brain_uid, r.memory_id, r.version, rid]
            for r in revisions
            for rid in sorted({c.record_id for c in r.citations})
        ]
        with self.atomic():
            own: _Own = self._local.own
            for r in revisions:
                own.written.setdefault(r.brain_uid, []).append(r)
            self._many(f"INSERT INTO memory_revisions VALUES ({', '.join(['%s'] * 22)})", rows)
            if links:  # COPY: a revision links every Record it cites, 16 at most, and one INSERT each cost
                # 0.1 s for a forget's 229 revisions
                with self._local.conn.cursor() as cursor, cursor.copy("COPY memory_links FROM STDIN") as copy:
                    for link in links:
                        copy.write_row(link)
            if self._keeps_heads():
                newest: dict[str, list[Any]] = {}
                for row in rows:  # the newest revision written of each Memory
                    if row[0] not in newest or row[2] > newest[row[0]][2]:
                        newest[row[0]] = row
                self._many(
                    f"INSERT INTO memory_heads ({_HEAD_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (memory_id) DO UPDATE SET brain_uid = excluded.brain_uid, version = excluded.version, "
                    "status = excluded.status, fingerprint = excluded.fingerprint, subject_key = excluded.subject_key, "
                    "attribute = excluded.attribute, valid_from = excluded.valid_from, valid_to = excluded.valid_to "
                    "WHERE memory_heads.version < excluded.version",
                    [[r[0], r[1], r[2], r[14], r[3], r[6], r[9], r[11], r[12]] for r in newest.values()],
                )

    # --- current Memories held (store.current.CheckedMemories) ---------------------------------------
    # Held with the Brain's change sequence read before them: every transaction that changes a Brain's
    # Memories advances it (each revision, tombstone and forget takes a next_seq), in whichever process,
    # as the evidence indexes' catch-up already relies on.
    def _forget_held(self, brain_uids: Sequence[str]) -> None:
        """Inside a transaction that erases in these Brains: this process's held copies go now, and again
        after the commit (another's go when it next reads the Brain, or at its next sweep)."""
        for uid in brain_uids:
            self._checked.forget(uid)
            self._local.own.dropped.add(uid)

    def _held_after(self, own: _Own) -> None:
        """After a commit: the Brains it erased in are forgotten; those whose change sequence it only
        advanced, writing revisions or not, are carried along to its last number
        (CheckedMemories.advance)."""
        for uid in own.dropped:
            self._checked.forget(uid)
        for uid, (first, last) in own.seqs.items():
            if uid not in own.dropped:
                self._checked.advance(uid, first - 1, last, own.written.get(uid, ()))
        for uid in own.written.keys() - own.seqs.keys():  # revisions written without a number: not followed
            self._checked.forget(uid)

    def _as_stored(self, r: MemoryRevision) -> MemoryRevision:
        """``r`` as a read of the store returns it once written (the columns _memory reads)."""
        return self._memory(
            (r.memory_id, r.brain_uid, r.version, r.statement, r.subject, r.owner, r.attribute, r.value,
             r.valid_from, r.valid_to, r.recorded_at, r.status, self._citations_json(r.citations), r.supersedes,
             r.superseded_by, r.seq, r.single_valued, r.negated, _json(r.extra), r.fingerprint)
        )  # fmt: skip

    def _held_memories(self, brain_uid: str, *, fill: bool, seq: int | None = None) -> HeldBrain | None:
        """The Brain's current Memories as held, if still current (read and held first when ``fill`` and
        the Brain is settled: store.current.SETTLE_SECONDS), or None. Never inside a transaction: its
        own writes are not what is held. ``seq``: the Brain's change sequence as the caller just read it
        (read here otherwise)."""
        if getattr(self._local, "conn", None) is not None:
            return None
        if seq is None:
            seq = self.current_seq(brain_uid)  # before the Memories: what is held is at least this new
        held = self._checked.get(brain_uid, seq)
        if held is None and fill and self._checked.settled(brain_uid):
            held = self._hold(brain_uid, seq, self._current(brain_uid, tail="ORDER BY memory_id"))
        return held

    def _hold(self, brain_uid: str, seq: int, found: list[MemoryRevision]) -> HeldBrain:
        """``found``, every current revision of the Brain read after ``seq``, held with it (unless the
        Brain is gone, or over the bounds); the caller answers from what this returns either way."""
        brain = self.brain_by_uid(brain_uid)
        if brain is None:
            return HeldBrain({m.memory_id: m for m in found})
        return self._checked.hold(brain_uid, seq, found, brain.namespace)

    def forget_stale_memories(self) -> None:
        """Drop the held Memories of every Brain changed or erased since they were read, by any process:
        one statement for all of them (the derivation scan calls it every few seconds)."""
        held = self._checked.held_generations()
        if not held:
            return
        rows = self._rows("SELECT brain_uid, seq FROM brain_sequences WHERE brain_uid = ANY(%s)", [sorted(held)])
        self._checked.forget_unless({uid: int(seq) for uid, seq in rows})

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
        limits the ranking to the Memories it names, a superset of those that can match, so a lookup
        reads a few Memories' revisions instead of the whole Brain's."""
        current = _CURRENT.format(among=f"AND memory_id IN ({among[0]})" if among else "")
        among_params = among[1] if among else ()
        sql = f"SELECT * FROM ({current}) cur {('WHERE ' + where) if where else ''} {tail}"
        return [self._memory(r) for r in self._rows(sql, [brain_uid, *among_params, *params])]

    def memory(self, brain_uid: str, memory_id: str) -> MemoryRevision | None:
        rows = self._rows(
            f"SELECT {_MEMORY_COLUMNS}, fingerprint FROM memory_revisions WHERE brain_uid = %s AND memory_id = %s "
            "ORDER BY version DESC LIMIT 1",
            [brain_uid, memory_id],
        )
        return self._memory(rows[0]) if rows else None

    def memories(self, brain_uid: str, memory_ids: Sequence[str]) -> dict[str, MemoryRevision]:
        if not memory_ids:
            return {}
        among = ("SELECT unnest(%s::text[])", [sorted(set(memory_ids))])
        return {m.memory_id: m for m in self._current(brain_uid, among=among)}

    def memory_revisions(self, brain_uid: str, memory_id: str) -> list[MemoryRevision]:
        rows = self._rows(
            f"SELECT {_MEMORY_COLUMNS}, fingerprint FROM memory_revisions WHERE brain_uid = %s AND memory_id = %s "
            "ORDER BY version",
            [brain_uid, memory_id],
        )
        return [self._memory(r) for r in rows]

    def memories_by_fingerprints(
        self, brain_uid: str, fingerprints: Sequence[str], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        if not fingerprints:
            return []
        wanted = sorted(set(fingerprints))
        match = "fingerprint = ANY(%s)"
        among = (f"SELECT memory_id FROM memory_revisions WHERE brain_uid = %s AND {match}", [brain_uid, wanted])
        if newest is None:
            return self._current(brain_uid, match, [wanted], "ORDER BY memory_id", among=among)
        keys = ("unnest(%s::text[]) AS k(fingerprint)", "fingerprint = k.fingerprint", [wanted])
        return self._latest_ending(brain_uid, match, [wanted], among, "fingerprint", newest, keys)

    def memories_by_attributes(
        self, brain_uid: str, keys: Sequence[tuple[str, str]], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        if not keys:
            return []
        pairs = sorted({(subject.casefold(), attribute) for subject, attribute in keys})
        subjects, attributes = [p[0] for p in pairs], [p[1] for p in pairs]
        match = "(subject_key, attribute) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
        # the indexes hold the parts' md5 (migration 7): matched down them, then the texts exactly
        hashed = "(md5(subject_key), md5(attribute)) IN (SELECT md5(s), md5(a) FROM unnest(%s::text[], %s::text[]) AS k(s, a))"
        among = (f"SELECT memory_id FROM memory_revisions WHERE brain_uid = %s AND {hashed}", [brain_uid, subjects, attributes])
        if newest is None:
            return self._current(brain_uid, match, [subjects, attributes], "ORDER BY memory_id", among=among)
        keys = (
            "unnest(%s::text[], %s::text[]) AS k(subject_key, attribute)",
            "md5(subject_key) = md5(k.subject_key) AND md5(attribute) = md5(k.attribute) "
            "AND subject_key = k.subject_key AND attribute = k.attribute",
            [subjects, attributes],
        )
        return self._latest_ending(brain_uid, match, [subjects, attributes], among, "subject_key, attribute", newest, keys)

    def _latest_ending(
        self,
        brain_uid: str,
        match: str,
        params: list[Any],
        among: tuple[str, list[Any]],
        partition: str,
        newest: int,
        keys: tuple[str, str, list[Any]],
    ) -> list[MemoryRevision]:
        """The ``newest`` of memories_by_attributes and memories_by_fingerprints. With memory_heads (schema
        6), each key's are read down its index, ``keys`` being the keys as rows, the condition matching
        a head to its key, and their parameters; the revisions are read in the same statement, and
        filtered again. Before it, every current revision of the key is ranked after the match, in a
        query around it: PostgreSQL has no QUALIFY (the rank is one more column, after those _memory
        reads)."""
        if self.schema_version() >= HEADS:
            rows, match_key, key_params = keys
            chosen = (
                f"SELECT h.memory_id FROM {rows} CROSS JOIN LATERAL (SELECT memory_id FROM memory_heads "
                f"WHERE brain_uid = %s AND {match_key} AND {WEIGHED_SQL} ORDER BY {LATEST_ENDING_SQL} LIMIT %s) h",
                [*key_params, brain_uid, newest],
            )
            return self._current(brain_uid, f"{match} AND {WEIGHED_SQL}", params, "ORDER BY memory_id", among=chosen)
        current = _CURRENT.format(among=f"AND memory_id IN ({among[0]})")
        sql = (
            f"SELECT * FROM (SELECT cur.*, row_number() OVER (PARTITION BY {partition} "
            f"ORDER BY {LATEST_ENDING_SQL}) AS latest FROM ({current}) cur WHERE {match} AND {WEIGHED_SQL}) ranked "
            "WHERE latest <= %s ORDER BY memory_id"
        )
        return [self._memory(r) for r in self._rows(sql, [brain_uid, *among[1], *params, newest])]

    def memories_citing(self, brain_uid: str, record_id: str) -> list[MemoryRevision]:
        return self.memories_citing_any(brain_uid, [record_id])

    def memories_citing_any(
        self, brain_uid: str, record_ids: Sequence[str], *, seq: int | None = None
    ) -> list[MemoryRevision]:
        wanted = sorted(set(record_ids))
        if not wanted:
            return []
        held = self._held_memories(brain_uid, fill=True, seq=seq)
        if held is not None:
            return held.citing_any(wanted)
        return self._current(
            brain_uid,
            "EXISTS (SELECT 1 FROM memory_links l WHERE l.memory_id = cur.memory_id "
            "AND l.version = cur.version AND l.record_id = ANY(%s))",
            [wanted],
            "ORDER BY memory_id",
            among=("SELECT memory_id FROM memory_links WHERE brain_uid = %s AND record_id = ANY(%s)", [brain_uid, wanted]),
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
            among=(f"SELECT memory_id FROM memory_revisions WHERE brain_uid = %s AND ({_NAMES_ANY})", [brain_uid, *[wanted] * 4]),
        )

    def memories_in_status(self, status: str) -> list[tuple[str, str]]:
        if self.schema_version() >= HEADS:
            rows = self._rows(
                f"SELECT h.brain_uid, h.memory_id FROM {_HEADS_WITH_REVISIONS} "
                "WHERE h.status = %s ORDER BY r.seq, h.memory_id",
                [status],
            )
            return [(r[0], r[1]) for r in rows]
        rows = self._rows(
            "SELECT brain_uid, memory_id FROM ("
            "  SELECT DISTINCT ON (memory_id) brain_uid, memory_id, status, seq FROM memory_revisions"
            "  ORDER BY memory_id, version DESC"
            ") m WHERE status = %s ORDER BY seq, memory_id",
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
        held = self._held_memories(brain_uid, fill=after_id is not None, seq=seq)
        if held is not None:
            return held.page(after_id=after_id, limit=limit, subject=subject, owner=owner)
        where = ["status IN ('active', 'superseded')"]
        params: list[Any] = []
        if after_id is not None:
            where.append("memory_id > %s")
            params.append(after_id)
        if subject is not None:
            where.append("subject_key = %s")
            params.append(subject.casefold())
        if owner is not None:
            where.append("owner_key = %s")
            params.append(owner.casefold())
        return self._current(brain_uid, " AND ".join(where), params, f"ORDER BY memory_id LIMIT {int(limit)}")

    def all_memories(self, brain_uid: str, *, seq: int | None = None) -> list[MemoryRevision]:
        if getattr(self._local, "conn", None) is not None:  # inside a transaction: never what is held
            return self._current(brain_uid, tail="ORDER BY memory_id")
        if seq is None:
            seq = self.current_seq(brain_uid)
        held = self._checked.get(brain_uid, seq)
        if held is not None:
            return held.all()
        found = self._current(brain_uid, tail="ORDER BY memory_id")
        self._hold(brain_uid, seq, found)
        return found

    def memory_changes(
        self, brain_uid: str, after_seq: int, limit: int
    ) -> list[tuple[int, str, MemoryRevision | None]]:
        # A current revision newer than after_seq belongs to a Memory with some revision that new.
        current = self._current(
            brain_uid,
            "seq > %s",
            [after_seq],
            f"ORDER BY seq, memory_id LIMIT {int(limit)}",
            among=("SELECT memory_id FROM memory_revisions WHERE brain_uid = %s AND seq > %s", [brain_uid, after_seq]),
        )
        tombstones = self._rows(
            "SELECT seq, memory_id FROM memory_tombstones WHERE brain_uid = %s AND seq > %s ORDER BY seq LIMIT %s",
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
        with self.atomic():
            conn = self._local.conn
            conn.execute("DELETE FROM memory_links WHERE brain_uid = %s AND memory_id = ANY(%s)", [brain_uid, ids])
            rows = conn.execute(
                "DELETE FROM memory_revisions WHERE brain_uid = %s AND memory_id = ANY(%s) RETURNING memory_id",
                [brain_uid, ids],
            ).fetchall()
            tables = ["memory_revisions", "memory_links"]
            if self._keeps_heads():
                conn.execute("DELETE FROM memory_heads WHERE brain_uid = %s AND memory_id = ANY(%s)", [brain_uid, ids])
                tables.append("memory_heads")
            found = {row[0] for row in rows}
            gone = [m for m in ids if m in found]  # the Brain's: a tombstone each
            if gone:
                conn.execute(
                    "INSERT INTO memory_tombstones SELECT m, %s, s, %s FROM unnest(%s::text[], %s::bigint[]) AS t(m, s) "
                    "ON CONFLICT (memory_id) DO UPDATE "
                    "SET brain_uid = excluded.brain_uid, seq = excluded.seq, erased_at = excluded.erased_at",
                    [brain_uid, at, gone, [seqs[m] for m in gone]],
                )
            self._unname(brain_uid, ids)
            self._forget_held([brain_uid])
            self._erased(*tables)

    def _unname(self, brain_uid: str, erased: list[str]) -> None:
        """Inside erase_memories: what the erased Memories did to other Memories leaves their histories
        (:func:`histories_unnamed`), not only their newest revision (which no heads row changes for)."""
        conn = self._local.conn
        rows = conn.execute(
            f"SELECT {_MEMORY_COLUMNS}, fingerprint FROM memory_revisions WHERE brain_uid = %s AND memory_id IN "
            f"(SELECT memory_id FROM memory_revisions WHERE brain_uid = %s AND ({_NAMES_ANY})) ORDER BY memory_id, version",
            [brain_uid, brain_uid, *[erased] * 4],
        ).fetchall()
        rewritten, deleted = histories_unnamed([self._memory(r) for r in rows], set(erased))
        for r in rewritten:
            conn.execute(
                "UPDATE memory_revisions SET status = %s, supersedes = %s, superseded_by = %s, valid_to = %s, "
                "extra = %s WHERE memory_id = %s AND version = %s",
                [r.status, r.supersedes, r.superseded_by, r.valid_to, _json(r.extra), r.memory_id, r.version],
            )
        for memory_id, version in deleted:
            for table in ("memory_revisions", "memory_links"):
                conn.execute(f"DELETE FROM {table} WHERE memory_id = %s AND version = %s", [memory_id, version])

    def erase_record_citations(self, brain_uid: str, record_id: str) -> None:
        with self.atomic():
            conn = self._local.conn
            rows = conn.execute(
                "SELECT memory_id, version, citations, statement, valid_from FROM memory_revisions "
                "WHERE brain_uid = %s AND memory_id IN "
                "(SELECT memory_id FROM memory_links WHERE brain_uid = %s AND record_id = %s) ORDER BY memory_id, version",
                [brain_uid, brain_uid, record_id],
            ).fetchall()
            if not rows:
                return
            revised, erased = without_citations_of(record_id, rows)
            # a few statements however many revisions (as DuckDB's)
            if revised:
                # %b: binary, as text escaped into an array literal cost a regex substitution for each
                # quotation mark of the JSON (0.17 s for the 3,664 citations of 229 revisions)
                conn.execute(
                    "UPDATE memory_revisions AS r SET citations = u.citations "
                    "FROM unnest(%b::text[], %b::integer[], %b::text[]) AS u(memory_id, version, citations) "
                    "WHERE r.memory_id = u.memory_id AND r.version = u.version",
                    [[r[0] for r in revised], [r[1] for r in revised], [self._citations_json(r[2]) for r in revised]],
                )
            if erased:  # states that may say what the erased Record said: nothing of them may remain
                for table in ("memory_revisions", "memory_links"):
                    conn.execute(
                        f"DELETE FROM {table} AS t USING unnest(%s::text[], %s::integer[]) AS e(memory_id, version) "
                        "WHERE t.memory_id = e.memory_id AND t.version = e.version",
                        [[e[0] for e in erased], [e[1] for e in erased]],
                    )
            dropped = {e[0] for e in erased}
            conn.execute("DELETE FROM memory_links WHERE brain_uid = %s AND record_id = %s", [brain_uid, record_id])
            erased = ["memory_revisions", "memory_links"]
            if dropped and self._keeps_heads():
                self._refresh_heads(sorted(dropped))
                erased.append("memory_heads")
            self._forget_held([brain_uid])
            self._erased(*erased)

    def erase_earlier_revisions(self, brain_uid: str, memory_ids: Sequence[str], *, pending_only: bool = False) -> None:
        if not memory_ids:
            return
        with self.atomic():
            conn = self._local.conn
            found = conn.execute(
                "SELECT memory_id, version FROM memory_revisions r WHERE brain_uid = %s AND memory_id = ANY(%s) "
                "AND (NOT %s OR status = 'pending') AND version < "
                "(SELECT max(version) FROM memory_revisions n WHERE n.memory_id = r.memory_id)",
                [brain_uid, list(memory_ids), pending_only],
            ).fetchall()
            if not found:
                return
            for table in ("memory_revisions", "memory_links"):
                conn.execute(
                    f"DELETE FROM {table} AS t USING unnest(%s::text[], %s::integer[]) AS e(memory_id, version) "
                    "WHERE t.memory_id = e.memory_id AND t.version = e.version",
                    [[f[0] for f in found], [f[1] for f in found]],
                )
            self._forget_held([brain_uid])
            self._erased("memory_revisions", "memory_links")

    # --- evidence chunks --------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[StoredChunk]) -> None:
        if not chunks:
            return
        self._many(
            "INSERT INTO chunks VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                [
                    c.brain_uid,
                    c.draft.record_id,
                    c.draft.start,
                    c.draft.end,
                    c.draft.text,
                    c.draft.index_text,
                    c.draft.occurred_at,
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
        # an index rebuilt from these rows keeps a conversation's turns in order.
        rows = self._rows(
            "SELECT c.brain_uid, c.record_id, c.span_start, c.span_end, c.text, c.index_text, c.occurred_at, "
            "c.speaker, c.source_name, c.trust, c.visibility, c.model, c.embedding "
            "FROM chunks c LEFT JOIN records r ON r.id = c.record_id AND r.brain_uid = c.brain_uid "
            "WHERE c.brain_uid = %s ORDER BY r.seq NULLS LAST, c.record_id, c.span_start",
            [brain_uid],
        )
        return [self._chunk(r) for r in rows]

    @staticmethod
    def _chunk(r: Sequence[Any]) -> StoredChunk:
        return StoredChunk(
            r[0],
            ChunkDraft(r[1], r[2], r[3], r[4], r[5], _utc(r[6]), r[7], r[8], r[9], r[10]),  # type: ignore[arg-type]
            r[11],
            bytes(r[12]),
        )

    def count_chunks(self, brain_uid: str) -> int:
        return int(self._one("SELECT count(*) FROM chunks WHERE brain_uid = %s", [brain_uid]))

    def erase_chunks(self, brain_uid: str, record_id: str) -> int:
        with self.atomic():
            count = self._local.conn.execute(
                "DELETE FROM chunks WHERE brain_uid = %s AND record_id = %s", [brain_uid, record_id]
            ).rowcount
            if count:
                self._erased("chunks")
            return int(count)
