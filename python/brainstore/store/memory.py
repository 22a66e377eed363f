"""MemoryStore: the in-memory conformance store. Same protocol and invariants as the DuckDB store.

Rows live in append-only lists guarded by one lock; ``atomic()`` snapshots the lists so a failure inside
it leaves nothing half-written, which is what a database transaction gives the other store.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from brainstore.domain import Brain, IdempotentReply, MemoryRevision, ObjectVersion, Record, StoredChunk
from brainstore.store.base import StoreFeature


class MemoryStore:
    kind = "memory"

    def __init__(self, schema_version: int = max(StoreFeature)) -> None:
        self._schema = schema_version
        self._lock = threading.RLock()
        self._depth = 0
        self._brains: dict[str, Brain] = {}
        self._changes: dict[str, int] = {}
        self._records: dict[str, Record] = {}
        # record_id -> status events, oldest first; the last one is the Record's state
        # Values are tuples, replaced and never mutated, so atomic() can snapshot with shallow copies.
        self._record_events: dict[str, tuple[tuple[str, dict[str, str] | None, tuple[str, ...], int], ...]] = {}
        self._objects: list[ObjectVersion] = []
        self._idempotent: dict[tuple[str, str, str], IdempotentReply] = {}
        self._revisions: list[tuple[MemoryRevision, str]] = []
        self._tombstones: dict[str, tuple[str, int]] = {}  # memory_id -> (brain_uid, seq)
        self._chunks: dict[str, tuple[StoredChunk, ...]] = {}  # brain_uid -> chunks, replaced not mutated

    # --- schema -----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        return self._schema

    def migrate(self) -> list[int]:
        applied = list(range(self._schema + 1, max(StoreFeature) + 1))
        self._schema = max(StoreFeature)
        return applied

    def close(self) -> None:
        pass

    _STATE = (
        "_brains",
        "_changes",
        "_records",
        "_record_events",
        "_objects",
        "_idempotent",
        "_revisions",
        "_tombstones",
        "_chunks",
    )

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            self._depth += 1
            saved: dict[str, Any] | None = None
            if self._depth == 1:
                saved = {name: copy.copy(getattr(self, name)) for name in self._STATE}
            try:
                yield
            except BaseException:
                if saved is not None:
                    for name, value in saved.items():
                        setattr(self, name, value)
                raise
            finally:
                self._depth -= 1

    # --- change sequence --------------------------------------------------------------------------
    def next_seq(self, brain_uid: str) -> int:
        with self._lock:
            seq = self._changes.get(brain_uid, 0) + 1
            self._changes[brain_uid] = seq
            return seq

    def current_seq(self, brain_uid: str) -> int:
        return self._changes.get(brain_uid, 0)

    # --- brains -----------------------------------------------------------------------------------
    def insert_brain(self, brain: Brain) -> None:
        with self._lock:
            self._brains[brain.uid] = brain

    def get_brain(self, namespace: str, brain_id: str) -> Brain | None:
        for brain in list(self._brains.values()):
            if brain.namespace == namespace and brain.id == brain_id:
                return brain
        return None

    def brain_by_uid(self, brain_uid: str) -> Brain | None:
        return self._brains.get(brain_uid)

    def erase_brain(self, brain_uid: str) -> dict[str, int]:
        with self._lock:
            records = [r for r in self._records.values() if r.brain_uid == brain_uid]
            memory_ids = {rev.memory_id for rev, _ in self._revisions if rev.brain_uid == brain_uid}
            object_keys = {(o.type, o.key) for o in self._objects if o.brain_uid == brain_uid}
            self._records = {k: r for k, r in self._records.items() if r.brain_uid != brain_uid}
            for record in records:
                self._record_events.pop(record.id, None)
            self._objects = [o for o in self._objects if o.brain_uid != brain_uid]
            self._revisions = [(r, f) for r, f in self._revisions if r.brain_uid != brain_uid]
            self._tombstones = {k: v for k, v in self._tombstones.items() if v[0] != brain_uid}
            self._chunks.pop(brain_uid, None)
            self._brains.pop(brain_uid, None)
            self._changes.pop(brain_uid, None)
            return {"records": len(records), "memories": len(memory_ids), "objects": len(object_keys)}

    # --- records ----------------------------------------------------------------------------------
    def insert_record(self, record: Record) -> None:
        with self._lock:
            self._records[record.id] = record

    def _with_status(self, record: Record) -> Record:
        events = self._record_events.get(record.id)
        if not events:
            return record
        status, error, memory_ids, _ = events[-1]
        return replace(record, status=status, error=error, memory_ids=memory_ids)

    def get_record(self, brain_uid: str, record_id: str) -> Record | None:
        record = self._records.get(record_id)
        if record is None or record.brain_uid != brain_uid:
            return None
        return self._with_status(record)

    def record_contents(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        with self._lock:
            found = [self._records.get(record_id) for record_id in record_ids]
        return {r.id: r.content for r in found if r is not None and r.brain_uid == brain_uid}

    def find_imported_record(self, brain_uid: str, source_name: str, external_id: str) -> Record | None:
        for record in list(self._records.values()):
            source = record.source or {}
            if (
                record.brain_uid == brain_uid
                and record.origin == "import"
                and source.get("name") == source_name
                and source.get("external_id") == external_id
            ):
                return self._with_status(record)
        return None

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
        with self._lock:
            events = self._record_events.get(record_id, ())
            self._record_events[record_id] = (*events, (status, error, tuple(memory_ids), seq))

    def records_in_status(self, status: str) -> list[tuple[str, str]]:
        with self._lock:
            found = [self._with_status(r) for r in self._records.values()]
        found.sort(key=lambda r: r.seq)
        return [(r.brain_uid, r.id) for r in found if r.status == status]

    def list_records(self, brain_uid: str) -> list[Record]:
        with self._lock:
            found = [self._with_status(r) for r in self._records.values() if r.brain_uid == brain_uid]
        return sorted(found, key=lambda r: r.seq)

    def erase_record(self, brain_uid: str, record_id: str) -> None:
        with self._lock:
            record = self._records.get(record_id)
            if record is not None and record.brain_uid == brain_uid:
                del self._records[record_id]
                self._record_events.pop(record_id, None)

    # --- objects ----------------------------------------------------------------------------------
    def latest_object(self, brain_uid: str, type_: str, key: str) -> ObjectVersion | None:
        found = [o for o in list(self._objects) if (o.brain_uid, o.type, o.key) == (brain_uid, type_, key)]
        return max(found, key=lambda o: o.version) if found else None

    def insert_object_version(self, version: ObjectVersion) -> None:
        with self._lock:
            self._objects.append(version)

    def list_objects(self, brain_uid: str) -> list[ObjectVersion]:
        latest: dict[tuple[str, str], ObjectVersion] = {}
        for o in list(self._objects):
            if o.brain_uid == brain_uid and (
                (o.type, o.key) not in latest or latest[(o.type, o.key)].version < o.version
            ):
                latest[(o.type, o.key)] = o
        return sorted(latest.values(), key=lambda o: (o.type, o.key))

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotent(self, namespace: str, scope: str, key: str) -> IdempotentReply | None:
        return self._idempotent.get((namespace, scope, key))

    def put_idempotent(self, reply: IdempotentReply) -> None:
        with self._lock:
            self._idempotent[(reply.namespace, reply.scope, reply.key)] = reply

    # --- memories ---------------------------------------------------------------------------------
    def _current(self, brain_uid: str) -> dict[str, tuple[MemoryRevision, str]]:
        current: dict[str, tuple[MemoryRevision, str]] = {}
        for rev, fingerprint in list(self._revisions):
            if rev.brain_uid == brain_uid:
                held = current.get(rev.memory_id)
                if held is None or held[0].version < rev.version:
                    current[rev.memory_id] = (rev, fingerprint)
        return current

    def insert_memory_revision(self, revision: MemoryRevision, fingerprint: str) -> None:
        with self._lock:
            self._revisions.append((revision, fingerprint))

    def memory(self, brain_uid: str, memory_id: str) -> MemoryRevision | None:
        held = self._current(brain_uid).get(memory_id)
        return held[0] if held else None

    def memory_revisions(self, brain_uid: str, memory_id: str) -> list[MemoryRevision]:
        revs = [r for r, _ in list(self._revisions) if r.brain_uid == brain_uid and r.memory_id == memory_id]
        return sorted(revs, key=lambda r: r.version)

    def memories_by_fingerprint(self, brain_uid: str, fingerprint: str) -> list[MemoryRevision]:
        return sorted(
            (r for r, f in self._current(brain_uid).values() if f == fingerprint), key=lambda r: r.memory_id
        )

    def memories_by_attribute(self, brain_uid: str, subject: str, attribute: str) -> list[MemoryRevision]:
        subject_key = subject.casefold()
        return sorted(
            (
                r
                for r, _ in self._current(brain_uid).values()
                if r.attribute == attribute and r.subject.casefold() == subject_key
            ),
            key=lambda r: r.memory_id,
        )

    def memories_citing(self, brain_uid: str, record_id: str) -> list[MemoryRevision]:
        return sorted(
            (
                r
                for r, _ in self._current(brain_uid).values()
                if any(c.record_id == record_id for c in r.citations)
            ),
            key=lambda r: r.memory_id,
        )

    def memories_in_status(self, status: str) -> list[tuple[str, str]]:
        uids = {r.brain_uid for r, _ in list(self._revisions)}
        found = []
        for uid in uids:
            found.extend(r for r, _ in self._current(uid).values() if r.status == status)
        found.sort(key=lambda r: r.seq)
        return [(r.brain_uid, r.memory_id) for r in found]

    def list_memories(
        self,
        brain_uid: str,
        *,
        after_id: str | None,
        limit: int,
        subject: str | None = None,
        owner: str | None = None,
    ) -> list[MemoryRevision]:
        found = [
            r
            for r, _ in self._current(brain_uid).values()
            if r.status in ("active", "superseded")
            and (after_id is None or r.memory_id > after_id)
            and (subject is None or r.subject.casefold() == subject.casefold())
            and (owner is None or (r.owner or "").casefold() == owner.casefold())
        ]
        found.sort(key=lambda r: r.memory_id)
        return found[:limit]

    def all_memories(self, brain_uid: str) -> list[MemoryRevision]:
        return sorted((r for r, _ in self._current(brain_uid).values()), key=lambda r: r.memory_id)

    def memory_changes(
        self, brain_uid: str, after_seq: int, limit: int
    ) -> list[tuple[int, str, MemoryRevision | None]]:
        changes: list[tuple[int, str, MemoryRevision | None]] = [
            (r.seq, r.memory_id, r) for r, _ in self._current(brain_uid).values() if r.seq > after_seq
        ]
        changes.extend(
            (seq, memory_id, None)
            for memory_id, (uid, seq) in list(self._tombstones.items())
            if uid == brain_uid and seq > after_seq
        )
        changes.sort(key=lambda c: (c[0], c[1]))
        return changes[:limit]

    def erase_memory(self, brain_uid: str, memory_id: str, *, seq: int, at: datetime) -> None:
        with self._lock:
            self._revisions = [
                (r, f) for r, f in self._revisions if not (r.brain_uid == brain_uid and r.memory_id == memory_id)
            ]
            self._tombstones[memory_id] = (brain_uid, seq)

    # --- evidence chunks --------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[StoredChunk]) -> None:
        with self._lock:
            for chunk in chunks:
                self._chunks[chunk.brain_uid] = (*self._chunks.get(chunk.brain_uid, ()), chunk)

    def chunks(self, brain_uid: str) -> list[StoredChunk]:
        return list(self._chunks.get(brain_uid, ()))

    def count_chunks(self, brain_uid: str) -> int:
        return len(self._chunks.get(brain_uid, ()))

    def erase_chunks(self, brain_uid: str, record_id: str) -> int:
        with self._lock:
            held = self._chunks.get(brain_uid, ())
            kept = tuple(c for c in held if c.draft.record_id != record_id)
            self._chunks[brain_uid] = kept
            return len(held) - len(kept)
