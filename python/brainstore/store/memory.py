"""MemoryStore: the in-memory conformance store. Same protocol and invariants as the database stores.

Every call holds one lock, and ``atomic()`` holds it for the whole transaction, so a reader never sees
a transaction's writes before it ends. A failure inside ``atomic()`` undoes its writes from an undo log
(each write records how to take itself back), which is what a database's rollback gives the others:
all or nothing, at a cost proportional to the transaction, not to the store.

Rows are held in dicts keyed the way they are looked up; the secondary indexes (by fingerprint, by
attribute, by cited Record) hold every Memory id that a revision it holds matches, and reads check the
Memory's current revision, so an index never has to be corrected when a revision changes a key. When
revisions leave a history (erased, or rewritten without a citation or what an erased Memory did) the
keys only they gave leave the indexes, and a key with no Memory left goes: a key holds the subject's
text, and a fingerprint is a hash of the statement, which confirms a guessed value offline.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from brainstore.domain import (
    Brain,
    IdempotentReply,
    MemoryRevision,
    ObjectVersion,
    Record,
    RecordStatus,
    RecordTally,
    StoredChunk,
    named_memories,
)
from brainstore.store.base import (
    StoreFeature,
    histories_unnamed,
    latest_ending,
    tally_records,
    without_citations_of,
)

_ABSENT = object()


class MemoryStore:
    kind = "memory"

    def __init__(self, schema_version: int = max(StoreFeature)) -> None:
        self._schema = schema_version
        self._lock = threading.RLock()
        self._undo: list[Callable[[], None]] | None = None
        self._brains: dict[str, Brain] = {}
        self._changes: dict[str, int] = {}
        self._records: dict[str, Record] = {}
        # record_id -> status events (status, error, memory_ids, seq), oldest first; the last is current
        self._record_events: dict[str, tuple[tuple[str, dict[str, str] | None, tuple[str, ...], int], ...]] = {}
        self._brain_records: dict[str, dict[str, None]] = {}
        self._objects: dict[tuple[str, str, str], tuple[ObjectVersion, ...]] = {}
        # (brain uid, type, key) -> its latest value's length as stored JSON (list_objects)
        self._object_bytes: dict[tuple[str, str, str], int] = {}
        self._idempotent: dict[tuple[str, str, str], IdempotentReply] = {}
        self._history: dict[str, tuple[MemoryRevision, ...]] = {}  # memory_id -> revisions by version
        self._brain_memories: dict[str, dict[str, None]] = {}
        self._by_fingerprint: dict[tuple[str, str], dict[str, None]] = {}
        self._by_attribute: dict[tuple[str, str, str], dict[str, None]] = {}
        self._by_record: dict[tuple[str, str], dict[str, None]] = {}
        self._tombstones: dict[str, tuple[str, int]] = {}  # memory_id -> (brain_uid, seq)
        self._chunks: dict[str, list[StoredChunk]] = {}

    # --- plumbing -------------------------------------------------------------------------------------
    def _set(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        old = table.get(key, _ABSENT)
        table[key] = value
        if self._undo is not None:
            self._undo.append(lambda: table.pop(key) if old is _ABSENT else table.__setitem__(key, old))

    def _del(self, table: dict[Any, Any], key: Any) -> None:
        old = table.pop(key, _ABSENT)
        if old is not _ABSENT and self._undo is not None:
            self._undo.append(lambda: table.__setitem__(key, old))

    def _index(self, table: dict[Any, dict[str, None]], key: Any, member: str) -> None:
        members = table.get(key)
        if members is None:
            self._set(table, key, {member: None})
        elif member not in members:
            self._set(members, member, None)

    def _unindex(self, table: dict[Any, dict[str, None]], key: Any, member: str) -> None:
        """Take ``member`` out of ``key``'s entry, and the key out once no member is left (undone, in
        reverse, by a rollback: the emptied entry comes back, then the member into it)."""
        members = table.get(key)
        if members is None or member not in members:
            return
        self._del(members, member)
        if not members:
            self._del(table, key)

    def _lookup_keys(self, revisions: Iterable[MemoryRevision]) -> set[tuple[int, Any]]:
        """The secondary index entries ``revisions`` give their Memory: (table number, key)."""
        keys: set[tuple[int, Any]] = set()
        for r in revisions:
            keys.add((0, (r.brain_uid, r.fingerprint)))
            if r.attribute:
                keys.add((1, (r.brain_uid, r.subject.casefold(), r.attribute)))
            keys.update((2, (r.brain_uid, c.record_id)) for c in r.citations)
        return keys

    def _rewrite_history(self, memory_id: str, kept: tuple[MemoryRevision, ...]) -> None:
        """Replace a Memory's history with ``kept`` (none: it goes) and take it out of every index entry
        only the revisions it loses gave it."""
        history = self._history.get(memory_id, ())
        if kept == history:
            return
        if kept:
            self._set(self._history, memory_id, kept)
        else:
            self._del(self._history, memory_id)
        tables = (self._by_fingerprint, self._by_attribute, self._by_record)
        for number, key in self._lookup_keys(history) - self._lookup_keys(kept):
            self._unindex(tables[number], key, memory_id)

    # --- schema -----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        return self._schema

    def migrate(self) -> list[int]:
        applied = list(range(self._schema + 1, max(StoreFeature) + 1))
        self._schema = max(StoreFeature)
        return applied

    def close(self) -> None:
        pass

    def unavailable(self, error: BaseException) -> bool:
        return isinstance(error, OSError | MemoryError)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            outermost = self._undo is None
            if outermost:
                self._undo = []
            try:
                yield
            except BaseException:
                if outermost:
                    undo, self._undo = self._undo or [], None
                    for step in reversed(undo):
                        step()
                raise
            else:
                if outermost:
                    self._undo = None

    # --- change sequence --------------------------------------------------------------------------
    def next_seq(self, brain_uid: str) -> int:
        with self._lock:
            seq = self._changes.get(brain_uid, 0) + 1
            self._set(self._changes, brain_uid, seq)
            return seq

    def current_seq(self, brain_uid: str) -> int:
        with self._lock:
            return self._changes.get(brain_uid, 0)

    def live_seq(self, brain_uid: str) -> int | None:
        with self._lock:
            return self._changes.get(brain_uid, 0) if brain_uid in self._brains else None

    # --- brains -----------------------------------------------------------------------------------
    def lock_brain(self, brain_uid: str) -> bool:
        with self._lock:  # the caller's atomic() holds it: erase_brain cannot run until it ends
            return brain_uid in self._brains

    def try_lock_brains(self, brain_uids: Sequence[str], *, wait_at_most: float = 0.0) -> set[str]:
        # The caller's atomic() holds the store's lock: no other transaction runs, and lock_brain never
        # waits.
        return set()

    def insert_brain(self, brain: Brain) -> None:
        with self._lock:
            self._set(self._brains, brain.uid, brain)

    def get_brain(self, namespace: str, brain_id: str) -> Brain | None:
        with self._lock:
            return next((b for b in self._brains.values() if b.namespace == namespace and b.id == brain_id), None)

    def brain_by_uid(self, brain_uid: str) -> Brain | None:
        with self._lock:
            return self._brains.get(brain_uid)

    def erase_brain(self, brain_uid: str) -> dict[str, int]:
        with self.atomic():
            record_ids = list(self._brain_records.get(brain_uid, ()))
            memory_ids = list(self._brain_memories.get(brain_uid, ()))
            object_keys = [k for k in self._objects if k[0] == brain_uid]
            for record_id in record_ids:
                self._del(self._records, record_id)
                self._del(self._record_events, record_id)
            self._del(self._brain_records, brain_uid)
            for key in object_keys:
                self._del(self._objects, key)
                self._del(self._object_bytes, key)
            for memory_id in memory_ids:
                self._del(self._history, memory_id)
            self._del(self._brain_memories, brain_uid)
            for table in (self._by_fingerprint, self._by_attribute, self._by_record):
                for key in [k for k in table if k[0] == brain_uid]:
                    self._del(table, key)
            for memory_id in [m for m, (uid, _) in self._tombstones.items() if uid == brain_uid]:
                self._del(self._tombstones, memory_id)
            self._del(self._chunks, brain_uid)
            self._del(self._brains, brain_uid)
            self._del(self._changes, brain_uid)
            self.erase_idempotent(brain_uid)
            return {"records": len(record_ids), "memories": len(memory_ids), "objects": len(object_keys)}

    # --- records ----------------------------------------------------------------------------------
    def insert_record(self, record: Record) -> None:
        with self._lock:
            self._set(self._records, record.id, record)
            self._index(self._brain_records, record.brain_uid, record.id)

    def _with_status(self, record: Record) -> Record:
        events = self._record_events.get(record.id)
        if not events:
            return record
        status, error, memory_ids, _ = events[-1]
        return replace(record, status=status, error=error, memory_ids=memory_ids)

    def get_record(self, brain_uid: str, record_id: str) -> Record | None:
        with self._lock:
            record = self._records.get(record_id)
            if record is None or record.brain_uid != brain_uid:
                return None
            return self._with_status(record)

    def records(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, Record]:
        with self._lock:
            found = [self._records.get(record_id) for record_id in record_ids]
            return {r.id: self._with_status(r) for r in found if r is not None and r.brain_uid == brain_uid}

    def record_contents(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        with self._lock:
            found = [self._records.get(record_id) for record_id in record_ids]
        return {r.id: r.content for r in found if r is not None and r.brain_uid == brain_uid}

    def record_visibilities(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, str]:
        with self._lock:
            found = [self._records.get(record_id) for record_id in record_ids]
        return {r.id: r.visibility for r in found if r is not None and r.brain_uid == brain_uid}

    def find_imported_record(self, brain_uid: str, source_name: str, external_id: str) -> Record | None:
        with self._lock:
            for record_id in self._brain_records.get(brain_uid, ()):
                record = self._records[record_id]
                source = record.source or {}
                if (
                    record.origin == "import"
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
        self.append_record_statuses([RecordStatus(brain_uid, record_id, status, seq, error, tuple(memory_ids))])

    def append_record_statuses(self, events: Sequence[RecordStatus]) -> None:
        with self._lock:
            for e in events:
                held = self._record_events.get(e.record_id, ())
                self._set(self._record_events, e.record_id, (*held, (e.status, e.error, tuple(e.memory_ids), e.seq)))

    def records_in_status(self, status: str) -> list[tuple[str, str]]:
        with self._lock:
            found = [self._with_status(r) for r in self._records.values()]
        found.sort(key=lambda r: r.seq)
        return [(r.brain_uid, r.id) for r in found if r.status == status]

    def records_supporting(self, brain_uid: str, memory_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        wanted, found = set(memory_ids), {}
        for record in self.list_records(brain_uid):
            for memory_id in wanted.intersection(record.memory_ids):
                supporters = found.setdefault(memory_id, [])
                if len(supporters) < limit:
                    supporters.append(record.id)
        return found

    def list_records(self, brain_uid: str) -> list[Record]:
        with self._lock:
            found = [self._with_status(self._records[r]) for r in self._brain_records.get(brain_uid, ())]
        return sorted(found, key=lambda r: r.seq)

    def _seqs_after(self, brain_uid: str, after: int) -> list[tuple[str, int]]:
        with self._lock:
            held = [self._records[r] for r in self._brain_records.get(brain_uid, ())]
        return sorted(((r.id, r.seq) for r in held if r.seq > after), key=lambda pair: pair[1])

    def record_seqs(self, brain_uid: str, *, after: int, limit: int) -> list[tuple[str, int]]:
        return self._seqs_after(brain_uid, after)[:limit]

    def count_records(self, brain_uid: str, *, after: int = 0, through: int | None = None) -> int:
        return sum(1 for _, seq in self._seqs_after(brain_uid, after) if through is None or seq <= through)

    def record_tally(self, brain_uid: str, examples: int, *, withheld: Collection[str] = ()) -> RecordTally:
        return tally_records(self.list_records(brain_uid), examples, withheld=withheld)

    def erase_record(self, brain_uid: str, record_id: str) -> None:
        with self._lock:
            record = self._records.get(record_id)
            if record is not None and record.brain_uid == brain_uid:
                self._del(self._records, record_id)
                self._del(self._record_events, record_id)
                self._del(self._brain_records.get(brain_uid, {}), record_id)

    # --- objects ----------------------------------------------------------------------------------
    def latest_object(self, brain_uid: str, type_: str, key: str) -> ObjectVersion | None:
        with self._lock:
            versions = self._objects.get((brain_uid, type_, key))
        return versions[-1] if versions else None

    def insert_object_version(self, version: ObjectVersion) -> None:
        with self._lock:
            key = (version.brain_uid, version.type, version.key)
            self._set(self._objects, key, (*self._objects.get(key, ()), version))
            value = json.dumps(version.value, separators=(",", ":"), ensure_ascii=False)
            self._set(self._object_bytes, key, len(value.encode()))

    def list_objects(
        self, brain_uid: str, limit: int | None = None, *, max_bytes: int | None = None
    ) -> list[ObjectVersion]:
        with self._lock:
            latest = sorted((v[-1] for k, v in self._objects.items() if k[0] == brain_uid), key=lambda o: (o.type, o.key))
            sizes = [self._object_bytes[(o.brain_uid, o.type, o.key)] for o in latest]
        if max_bytes is not None:
            fitting = [(o, n) for o, n in zip(latest, sizes, strict=True) if n <= max_bytes]
            read = list(itertools.accumulate(n for _, n in fitting))
            latest = [o for (o, _), total in zip(fitting, read, strict=True) if total <= max_bytes]
        return latest[:limit]

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotent(self, namespace: str, scope: str, key: str) -> IdempotentReply | None:
        with self._lock:
            return self._idempotent.get((namespace, scope, key))

    def put_idempotent(self, reply: IdempotentReply) -> None:
        with self._lock:
            self._set(self._idempotent, (reply.namespace, reply.scope, reply.key), reply)

    def erase_idempotent(self, brain_uid: str, resource_id: str | None = None) -> int:
        with self._lock:
            doomed = [
                k
                for k, r in self._idempotent.items()
                if r.brain_uid == brain_uid and (resource_id is None or r.resource_id == resource_id)
            ]
            for key in doomed:
                self._del(self._idempotent, key)
            return len(doomed)

    # --- memories ---------------------------------------------------------------------------------
    def _head(self, memory_id: str) -> MemoryRevision | None:
        history = self._history.get(memory_id)
        return history[-1] if history else None

    def _heads(self, brain_uid: str, ids: Any) -> list[MemoryRevision]:
        heads = (self._head(m) for m in ids)
        return sorted((h for h in heads if h is not None and h.brain_uid == brain_uid), key=lambda r: r.memory_id)

    def insert_memory_revisions(self, revisions: Sequence[MemoryRevision]) -> None:
        with self._lock:
            for r in revisions:
                history = self._history.get(r.memory_id, ())
                self._set(self._history, r.memory_id, tuple(sorted((*history, r), key=lambda x: x.version)))
                self._index(self._brain_memories, r.brain_uid, r.memory_id)
                self._index(self._by_fingerprint, (r.brain_uid, r.fingerprint), r.memory_id)
                if r.attribute:
                    self._index(self._by_attribute, (r.brain_uid, r.subject.casefold(), r.attribute), r.memory_id)
                for c in r.citations:
                    self._index(self._by_record, (r.brain_uid, c.record_id), r.memory_id)

    def insert_memory_revision(self, revision: MemoryRevision, fingerprint: str) -> None:
        self.insert_memory_revisions([replace(revision, fingerprint=fingerprint)])

    def memory(self, brain_uid: str, memory_id: str) -> MemoryRevision | None:
        with self._lock:
            head = self._head(memory_id)
        return head if head is not None and head.brain_uid == brain_uid else None

    def memories(self, brain_uid: str, memory_ids: Sequence[str]) -> dict[str, MemoryRevision]:
        with self._lock:
            heads = {m: self._head(m) for m in set(memory_ids)}
        return {m: head for m, head in heads.items() if head is not None and head.brain_uid == brain_uid}

    def memory_revisions(self, brain_uid: str, memory_id: str) -> list[MemoryRevision]:
        with self._lock:
            return [r for r in self._history.get(memory_id, ()) if r.brain_uid == brain_uid]

    def memories_by_fingerprints(
        self, brain_uid: str, fingerprints: Sequence[str], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        wanted = set(fingerprints)
        with self._lock:
            ids = {m for fp in wanted for m in self._by_fingerprint.get((brain_uid, fp), ())}
            found = self._heads(brain_uid, ids)
        matching = [m for m in found if m.fingerprint in wanted]
        return matching if newest is None else latest_ending(matching, newest, key=lambda m: m.fingerprint)

    def memories_by_attributes(
        self, brain_uid: str, keys: Sequence[tuple[str, str]], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        wanted = {(subject.casefold(), attribute) for subject, attribute in keys}
        with self._lock:
            ids = {m for subject, attr in wanted for m in self._by_attribute.get((brain_uid, subject, attr), ())}
            found = self._heads(brain_uid, ids)
        matching = [m for m in found if (m.subject.casefold(), m.attribute) in wanted]
        return matching if newest is None else latest_ending(matching, newest)

    def memories_citing(self, brain_uid: str, record_id: str) -> list[MemoryRevision]:
        with self._lock:
            found = self._heads(brain_uid, list(self._by_record.get((brain_uid, record_id), ())))
        return [m for m in found if any(c.record_id == record_id for c in m.citations)]

    def memories_citing_any(
        self, brain_uid: str, record_ids: Sequence[str], *, seq: int | None = None
    ) -> list[MemoryRevision]:
        wanted = set(record_ids)
        with self._lock:
            ids = {m for record_id in wanted for m in self._by_record.get((brain_uid, record_id), ())}
            found = self._heads(brain_uid, ids)
        return [m for m in found if any(c.record_id in wanted for c in m.citations)]

    def memories_referencing(self, brain_uid: str, memory_ids: Sequence[str]) -> list[MemoryRevision]:
        wanted = set(memory_ids)
        with self._lock:
            found = self._heads(brain_uid, list(self._brain_memories.get(brain_uid, ())))
        return [m for m in found if not named_memories(m).isdisjoint(wanted)]

    def memories_in_status(self, status: str) -> list[tuple[str, str]]:
        with self._lock:
            heads = [h[-1] for h in self._history.values() if h]
        found = sorted((r for r in heads if r.status == status), key=lambda r: r.seq)
        return [(r.brain_uid, r.memory_id) for r in found]

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
        found = [
            r
            for r in self.all_memories(brain_uid)
            if r.status in ("active", "superseded")
            and (after_id is None or r.memory_id > after_id)
            and (subject is None or r.subject.casefold() == subject.casefold())
            and (owner is None or (r.owner or "").casefold() == owner.casefold())
        ]
        return found[:limit]

    def all_memories(self, brain_uid: str, *, seq: int | None = None) -> list[MemoryRevision]:
        with self._lock:
            return self._heads(brain_uid, list(self._brain_memories.get(brain_uid, ())))

    def memory_changes(
        self, brain_uid: str, after_seq: int, limit: int
    ) -> list[tuple[int, str, MemoryRevision | None]]:
        changes: list[tuple[int, str, MemoryRevision | None]] = [
            (r.seq, r.memory_id, r) for r in self.all_memories(brain_uid) if r.seq > after_seq
        ]
        with self._lock:
            changes.extend(
                (seq, memory_id, None)
                for memory_id, (uid, seq) in self._tombstones.items()
                if uid == brain_uid and seq > after_seq
            )
        changes.sort(key=lambda c: (c[0], c[1]))
        return changes[:limit]

    def erase_memories(self, brain_uid: str, erased: Sequence[tuple[str, int]], *, at: datetime) -> None:
        with self._lock:
            for memory_id, seq in erased:
                head = self._head(memory_id)
                if head is None or head.brain_uid != brain_uid:
                    continue
                self._rewrite_history(memory_id, ())
                self._del(self._brain_memories.get(brain_uid, {}), memory_id)
                self._set(self._tombstones, memory_id, (brain_uid, seq))
            # what they did to other Memories leaves their histories (histories_unnamed)
            names = {memory_id for memory_id, _ in erased}
            naming = [
                revision
                for memory_id in self._brain_memories.get(brain_uid, {})
                if any(named_memories(r) & names for r in self._history.get(memory_id, ()))
                for revision in self._history[memory_id]
            ]
            rewritten, deleted = histories_unnamed(naming, names)
            changed = {(r.memory_id, r.version): r for r in rewritten}
            gone = set(deleted)
            for memory_id in {r.memory_id for r in naming}:
                history = self._history[memory_id]
                kept = tuple(changed.get((r.memory_id, r.version), r) for r in history if (r.memory_id, r.version) not in gone)
                self._rewrite_history(memory_id, kept)

    def erase_record_citations(self, brain_uid: str, record_id: str) -> None:
        with self._lock:
            for memory_id in list(self._by_record.get((brain_uid, record_id), ())):
                history = self._history.get(memory_id)
                if not history:
                    continue
                rows = [
                    (r.memory_id, r.version, json.dumps([{"record_id": c.record_id} for c in r.citations]), r.statement, r.valid_from)
                    for r in history
                ]
                _, erased = without_citations_of(record_id, rows)
                gone = {version for _, version in erased}
                kept = tuple(
                    replace(r, citations=tuple(c for c in r.citations if c.record_id != record_id))
                    for r in history
                    if r.version not in gone
                )
                self._rewrite_history(memory_id, kept)
                if not kept:
                    self._del(self._brain_memories.get(brain_uid, {}), memory_id)
            self._del(self._by_record, (brain_uid, record_id))

    def erase_earlier_revisions(self, brain_uid: str, memory_ids: Sequence[str], *, pending_only: bool = False) -> None:
        with self._lock:
            for memory_id in memory_ids:
                history = self._history.get(memory_id)
                if not history or history[-1].brain_uid != brain_uid:
                    continue
                kept = (*(r for r in history[:-1] if pending_only and r.status != "pending"), history[-1])
                self._rewrite_history(memory_id, kept)

    # --- evidence chunks --------------------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[StoredChunk]) -> None:
        with self._lock:
            for chunk in chunks:
                held = self._chunks.get(chunk.brain_uid)
                if held is None:
                    held = []
                    self._set(self._chunks, chunk.brain_uid, held)
                held.append(chunk)
                if self._undo is not None:
                    self._undo.append(held.pop)

    def chunks(self, brain_uid: str) -> list[StoredChunk]:
        with self._lock:
            held = list(self._chunks.get(brain_uid, ()))
            records = {c.draft.record_id: self._records.get(c.draft.record_id) for c in held}
        sent = {rid: r.seq for rid, r in records.items() if r is not None and r.brain_uid == brain_uid}
        # in the order the Records were sent (their change sequence), as the other stores read them
        return sorted(
            held,
            key=lambda c: (c.draft.record_id not in sent, sent.get(c.draft.record_id, 0), c.draft.record_id, c.draft.start),
        )

    def count_chunks(self, brain_uid: str) -> int:
        with self._lock:
            return len(self._chunks.get(brain_uid, ()))

    def erase_chunks(self, brain_uid: str, record_id: str) -> int:
        with self._lock:
            held = self._chunks.get(brain_uid, [])
            kept = [c for c in held if c.draft.record_id != record_id]
            self._set(self._chunks, brain_uid, kept)
            return len(held) - len(kept)
