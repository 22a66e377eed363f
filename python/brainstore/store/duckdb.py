"""DuckDBStore: the embedded default. One file, one read-write process (see ../shared/NOTES.md).

The connection is opened in the process that serves (after gunicorn forks) and each thread works on its
own cursor. Writers are serialized by one lock; ``atomic()`` wraps them in a transaction, so a 202 is
sent only after the Record's row is committed. Schema changes are numbered SQL files in migrations/,
applied by ``migrate()`` (``brainstore migrate``), never silently by a read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from brainstore.domain import (
    Brain,
    Citation,
    IdempotentReply,
    MemoryRevision,
    ObjectVersion,
    Record,
    StoredChunk,
)

_MEMORY_COLUMNS = (
    "memory_id, brain_uid, version, statement, subject, owner, attribute, value, valid_from, valid_to, "
    "recorded_at, status, citations, supersedes, superseded_by, seq, single_valued, negated, extra"
)
# The newest revision of each Memory; every memory read goes through it.
_CURRENT = f"""
    SELECT {_MEMORY_COLUMNS}, fingerprint, subject_key FROM memory_revisions WHERE brain_uid = ?
    QUALIFY row_number() OVER (PARTITION BY memory_id ORDER BY version DESC) = 1
"""


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


class DuckDBStore:
    kind = "duckdb"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = duckdb.connect(str(self.path))
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._seq_cache: dict[str, int] = {}
        self._schema: int | None = None
        self._cur().execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
        )

    # --- plumbing ---------------------------------------------------------------------------------
    def _cur(self) -> duckdb.DuckDBPyConnection:
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._conn.cursor()
            self._local.cursor = cursor
            self._local.depth = 0
        return cursor

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._cur().execute(sql, params).fetchall()

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self.atomic():
            self._cur().execute(sql, params)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._write_lock:
            cursor = self._cur()
            outermost = self._local.depth == 0
            self._local.depth += 1
            if outermost:
                cursor.execute("BEGIN TRANSACTION")
            try:
                yield
                if outermost:
                    cursor.execute("COMMIT")
            except BaseException:
                if outermost:
                    cursor.execute("ROLLBACK")
                    self._seq_cache.clear()
                raise
            finally:
                self._local.depth -= 1

    def close(self) -> None:
        self._conn.close()

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
                self._cur().execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, name, _ts(datetime.now(UTC))]
                )
            self._schema = None
            applied.append(version)
        return applied

    # --- change sequence --------------------------------------------------------------------------
    def next_seq(self, brain_uid: str) -> int:
        with self.atomic():
            seq = self.current_seq(brain_uid) + 1
            self._cur().execute("INSERT INTO changes VALUES (?, ?)", [brain_uid, seq])
            self._seq_cache[brain_uid] = seq
            return seq

    def current_seq(self, brain_uid: str) -> int:
        cached = self._seq_cache.get(brain_uid)
        if cached is not None:
            return cached
        row = self._rows("SELECT coalesce(max(seq), 0) FROM changes WHERE brain_uid = ?", [brain_uid])
        return int(row[0][0])

    # --- brains -----------------------------------------------------------------------------------
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
        rows = self._rows(
            f"SELECT uid, namespace, id, name, self_type, self_name, created_at FROM brains WHERE {where}", params
        )
        if not rows:
            return None
        uid, ns, id_, name, self_type, self_name, created_at = rows[0]
        return Brain(uid, ns, id_, name, self_type, self_name, _utc(created_at))  # type: ignore[arg-type]

    def get_brain(self, namespace: str, brain_id: str) -> Brain | None:
        return self._brain("namespace = ? AND id = ?", [namespace, brain_id])

    def brain_by_uid(self, brain_uid: str) -> Brain | None:
        return self._brain("uid = ?", [brain_uid])

    def erase_brain(self, brain_uid: str) -> dict[str, int]:
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
            tables = ["records", "record_events", "object_versions", "changes"]
            if self.schema_version() >= 2:
                tables += ["memory_revisions", "memory_links", "memory_tombstones"]
            if self.schema_version() >= 3:
                tables.append("chunks")
            for table in tables:
                self._cur().execute(f"DELETE FROM {table} WHERE brain_uid = ?", [brain_uid])
            self._cur().execute("DELETE FROM brains WHERE uid = ?", [brain_uid])
            self._seq_cache.pop(brain_uid, None)
        # Deleted rows must not linger in the file: a delete that really deletes.
        self._cur().execute("CHECKPOINT")
        return {k: int(v) for k, v in counts.items()}

    # --- records ----------------------------------------------------------------------------------
    _RECORD_SELECT = """
        SELECT r.id, r.brain_uid, r.content, r.source, r.visibility, r.occurred_at, r.created_at, r.origin,
               r.seq, e.status, e.error, e.memory_ids
        FROM records r
        LEFT JOIN (
            SELECT * FROM record_events
            QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY seq DESC) = 1
        ) e ON e.record_id = r.id
    """

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
        self._exec(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                record.id,
                record.brain_uid,
                _json(record.content),
                _json(record.source) if record.source is not None else None,
                source.get("name"),
                source.get("external_id"),
                record.visibility,
                _ts(record.occurred_at),
                _ts(record.created_at),
                record.origin,
                record.seq,
            ],
        )

    def get_record(self, brain_uid: str, record_id: str) -> Record | None:
        rows = self._rows(
            self._RECORD_SELECT.replace("SELECT * FROM record_events", "SELECT * FROM record_events WHERE record_id = ?")
            + " WHERE r.id = ? AND r.brain_uid = ?",
            [record_id, record_id, brain_uid],
        )
        return self._record(rows[0]) if rows else None

    def find_imported_record(self, brain_uid: str, source_name: str, external_id: str) -> Record | None:
        rows = self._rows(
            self._RECORD_SELECT
            + " WHERE r.brain_uid = ? AND r.origin = 'import' AND r.source_name = ? AND r.external_id = ?",
            [brain_uid, source_name, external_id],
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
        self._exec(
            "INSERT INTO record_events VALUES (?, ?, ?, ?, ?, ?)",
            [record_id, brain_uid, seq, status, _json(error) if error else None, _json(list(memory_ids))],
        )

    def records_in_status(self, status: str) -> list[tuple[str, str]]:
        if status == "processing":
            rows = self._rows(
                "SELECT r.brain_uid, r.id FROM records r WHERE NOT EXISTS "
                "(SELECT 1 FROM record_events e WHERE e.record_id = r.id) ORDER BY r.seq"
            )
        else:
            rows = self._rows(
                "SELECT brain_uid, record_id FROM record_events "
                "QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY seq DESC) = 1 AND status = ? "
                "ORDER BY seq",
                [status],
            )
        return [(r[0], r[1]) for r in rows]

    def list_records(self, brain_uid: str) -> list[Record]:
        rows = self._rows(self._RECORD_SELECT + " WHERE r.brain_uid = ? ORDER BY r.seq", [brain_uid])
        return [self._record(r) for r in rows]

    def erase_record(self, brain_uid: str, record_id: str) -> None:
        with self.atomic():
            self._cur().execute("DELETE FROM record_events WHERE record_id = ? AND brain_uid = ?", [record_id, brain_uid])
            self._cur().execute("DELETE FROM records WHERE id = ? AND brain_uid = ?", [record_id, brain_uid])

    # --- objects ----------------------------------------------------------------------------------
    @staticmethod
    def _object(row: tuple[Any, ...]) -> ObjectVersion:
        id_, uid, type_, key, version, value, accepted_by, created_at, seq = row
        return ObjectVersion(id_, uid, type_, key, version, json.loads(value), accepted_by, _utc(created_at), seq)  # type: ignore[arg-type]

    def latest_object(self, brain_uid: str, type_: str, key: str) -> ObjectVersion | None:
        rows = self._rows(
            "SELECT * FROM object_versions WHERE brain_uid = ? AND type = ? AND key = ? ORDER BY version DESC LIMIT 1",
            [brain_uid, type_, key],
        )
        return self._object(rows[0]) if rows else None

    def insert_object_version(self, version: ObjectVersion) -> None:
        self._exec(
            "INSERT INTO object_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                version.id,
                version.brain_uid,
                version.type,
                version.key,
                version.version,
                _json(version.value),
                version.accepted_by,
                _ts(version.created_at),
                version.seq,
            ],
        )

    def list_objects(self, brain_uid: str) -> list[ObjectVersion]:
        rows = self._rows(
            "SELECT * FROM object_versions WHERE brain_uid = ? "
            "QUALIFY row_number() OVER (PARTITION BY type, key ORDER BY version DESC) = 1 ORDER BY type, key",
            [brain_uid],
        )
        return [self._object(r) for r in rows]

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotent(self, namespace: str, scope: str, key: str) -> IdempotentReply | None:
        rows = self._rows(
            "SELECT namespace, scope, key, fingerprint, status, body, watermark, created_at FROM idempotency "
            "WHERE namespace = ? AND scope = ? AND key = ?",
            [namespace, scope, key],
        )
        if not rows:
            return None
        ns, sc, k, fingerprint, status, body, watermark, created_at = rows[0]
        return IdempotentReply(ns, sc, k, fingerprint, status, json.loads(body), watermark, _utc(created_at))  # type: ignore[arg-type]

    def put_idempotent(self, reply: IdempotentReply) -> None:
        self._exec(
            "INSERT INTO idempotency VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                reply.namespace,
                reply.scope,
                reply.key,
                reply.fingerprint,
                reply.status,
                _json(reply.body),
                reply.watermark,
                _ts(reply.created_at),
            ],
        )

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
        )

    def insert_memory_revision(self, revision: MemoryRevision, fingerprint: str) -> None:
        r = revision
        citations = [{"record_id": c.record_id, "start": c.start, "end": c.end, "quote": c.quote} for c in r.citations]
        with self.atomic():
            self._cur().execute(
                "INSERT INTO memory_revisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    r.memory_id,
                    r.brain_uid,
                    r.version,
                    fingerprint,
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
                    _json(citations),
                    r.supersedes,
                    r.superseded_by,
                    r.seq,
                    r.single_valued,
                    r.negated,
                    _json(r.extra),
                ],
            )
            links = [[r.brain_uid, r.memory_id, r.version, rid] for rid in sorted({c.record_id for c in r.citations})]
            if links:
                self._cur().executemany("INSERT INTO memory_links VALUES (?, ?, ?, ?)", links)

    def _current(self, brain_uid: str, where: str = "", params: Sequence[Any] = (), tail: str = "") -> list[MemoryRevision]:
        sql = f"SELECT * FROM ({_CURRENT}) cur {('WHERE ' + where) if where else ''} {tail}"
        return [self._memory(r) for r in self._rows(sql, [brain_uid, *params])]

    def memory(self, brain_uid: str, memory_id: str) -> MemoryRevision | None:
        rows = self._rows(
            f"SELECT {_MEMORY_COLUMNS} FROM memory_revisions WHERE brain_uid = ? AND memory_id = ? "
            "ORDER BY version DESC LIMIT 1",
            [brain_uid, memory_id],
        )
        return self._memory(rows[0]) if rows else None

    def memory_revisions(self, brain_uid: str, memory_id: str) -> list[MemoryRevision]:
        rows = self._rows(
            f"SELECT {_MEMORY_COLUMNS} FROM memory_revisions WHERE brain_uid = ? AND memory_id = ? ORDER BY version",
            [brain_uid, memory_id],
        )
        return [self._memory(r) for r in rows]

    def memories_by_fingerprint(self, brain_uid: str, fingerprint: str) -> list[MemoryRevision]:
        return self._current(brain_uid, "fingerprint = ?", [fingerprint], "ORDER BY memory_id")

    def memories_by_attribute(self, brain_uid: str, subject: str, attribute: str) -> list[MemoryRevision]:
        return self._current(
            brain_uid, "subject_key = ? AND attribute = ?", [subject.casefold(), attribute], "ORDER BY memory_id"
        )

    def memories_citing(self, brain_uid: str, record_id: str) -> list[MemoryRevision]:
        return self._current(
            brain_uid,
            "EXISTS (SELECT 1 FROM memory_links l WHERE l.memory_id = cur.memory_id "
            "AND l.version = cur.version AND l.record_id = ?)",
            [record_id],
            "ORDER BY memory_id",
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
    ) -> list[MemoryRevision]:
        where = ["status IN ('active', 'superseded')"]
        params: list[Any] = []
        if after_id is not None:
            where.append("memory_id > ?")
            params.append(after_id)
        if subject is not None:
            where.append("subject_key = ?")
            params.append(subject.casefold())
        if owner is not None:
            where.append("lower(owner) = ?")
            params.append(owner.casefold())
        return self._current(brain_uid, " AND ".join(where), params, f"ORDER BY memory_id LIMIT {int(limit)}")

    def all_memories(self, brain_uid: str) -> list[MemoryRevision]:
        return self._current(brain_uid, tail="ORDER BY memory_id")

    def memory_changes(
        self, brain_uid: str, after_seq: int, limit: int
    ) -> list[tuple[int, str, MemoryRevision | None]]:
        current = self._current(brain_uid, "seq > ?", [after_seq], f"ORDER BY seq, memory_id LIMIT {int(limit)}")
        tombstones = self._rows(
            "SELECT seq, memory_id FROM memory_tombstones WHERE brain_uid = ? AND seq > ? ORDER BY seq LIMIT ?",
            [brain_uid, after_seq, int(limit)],
        )
        changes: list[tuple[int, str, MemoryRevision | None]] = [(m.seq, m.memory_id, m) for m in current]
        changes.extend((int(seq), memory_id, None) for seq, memory_id in tombstones)
        changes.sort(key=lambda c: (c[0], c[1]))
        return changes[:limit]

    def erase_memory(self, brain_uid: str, memory_id: str, *, seq: int, at: datetime) -> None:
        with self.atomic():
            self._cur().execute(
                "DELETE FROM memory_links WHERE brain_uid = ? AND memory_id = ?", [brain_uid, memory_id]
            )
            self._cur().execute(
                "DELETE FROM memory_revisions WHERE brain_uid = ? AND memory_id = ?", [brain_uid, memory_id]
            )
            self._cur().execute(
                "INSERT OR REPLACE INTO memory_tombstones VALUES (?, ?, ?, ?)", [memory_id, brain_uid, seq, _ts(at)]
            )

    # --- evidence chunks --------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[StoredChunk]) -> None:
        if not chunks:
            return
        with self.atomic():
            self._cur().executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        c.brain_uid,
                        c.record_id,
                        c.start,
                        c.end,
                        c.text,
                        c.index_text,
                        _ts(c.occurred_at),
                        c.speaker,
                        c.source_name,
                        c.trust,
                        c.visibility,
                        c.model,
                        c.embedding,
                    ]
                    for c in chunks
                ],
            )

    def chunks(self, brain_uid: str) -> list[StoredChunk]:
        rows = self._rows(
            "SELECT brain_uid, record_id, span_start, span_end, text, index_text, occurred_at, speaker, "
            "source_name, trust, visibility, model, embedding FROM chunks WHERE brain_uid = ? "
            "ORDER BY record_id, span_start",
            [brain_uid],
        )
        return [
            StoredChunk(r[0], r[1], r[2], r[3], r[4], r[5], _utc(r[6]), r[7], r[8], r[9], r[10], r[11], bytes(r[12]))  # type: ignore[arg-type]
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
            return int(count)
