"""The Store protocol: the only way the service reaches persistence.

Invariants every implementation keeps:
- Append-only. Rows are inserted, never updated in place: a Record's status change, an Object version,
  a Memory revision are new rows. Deletion is physical erasure plus a tombstone that carries no content.
- Every write that changes what a Brain holds takes the next value of that Brain's change sequence
  (``next_seq``), inside ``atomic()``; watermarks are positions in that sequence.
- ``atomic()`` serializes writers and makes the writes inside it one transaction: all or nothing.
- A write under a Brain resolves the Brain inside its transaction (``lock_brain``): it either commits
  before a concurrent ``erase_brain`` (and is erased with it) or finds the Brain gone. Nothing is ever
  written under a Brain that no longer exists.
- An idempotent reply quotes what the write made; it is erased with it (``erase_idempotent``).
- Reads never wait for the writer's lock and see only committed data. (DuckDBStore pauses them only
  for the moment it swaps in a compacted file after an erase.)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Collection, Hashable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from enum import IntEnum
from typing import Any, Protocol

from brainstore.domain import (
    Brain,
    IdempotentReply,
    MemoryRevision,
    ObjectVersion,
    Record,
    RecordStatus,
    RecordTally,
    StoredChunk,
    unnamed,
)


class StoreFeature(IntEnum):
    """The schema version a feature first needs. A store below it answers not_implemented."""

    CORE = 1  # brains, records, objects, idempotency, change sequence
    MEMORIES = 2  # memory revisions, tombstones, citations
    CHUNKS = 3  # evidence chunks and their embeddings
    ERASURE = 4  # idempotent replies keyed by what they describe, so deletes erase them


SCHEMA_FEATURES = {feature.name.lower(): int(feature) for feature in StoreFeature}

# The order of memories_by_attributes(newest=) and memories_by_fingerprints(newest=): the validity that
# ends latest (open first), then the latest valid_from, then the latest id. SQL stores say it as this
# ORDER BY.
LATEST_ENDING_SQL = "valid_to DESC NULLS FIRST, valid_from DESC, memory_id DESC"
# The Memories those lookups rank: the active, and those pending re-derivation, which a Record that
# states them again supports instead of making a second Memory of the same assertion.
WEIGHED_STATUSES = ("active", "pending")
WEIGHED_SQL = "status IN ({})".format(", ".join(f"'{status}'" for status in WEIGHED_STATUSES))


def latest_ending_order(
    valid_from: datetime, valid_to: datetime | None, memory_id: str
) -> tuple[bool, datetime, datetime, str]:
    """LATEST_ENDING_SQL as a sort key: the greatest comes first."""
    return (valid_to is None, valid_to or valid_from, valid_from, memory_id)


def attribute_key(memory: MemoryRevision) -> tuple[str, str | None]:
    return (memory.subject.casefold(), memory.attribute)


def latest_ending(
    memories: Sequence[MemoryRevision],
    newest: int,
    key: Callable[[MemoryRevision], Hashable] = attribute_key,
) -> list[MemoryRevision]:
    """The active and pending ``memories`` (WEIGHED_STATUSES), at most ``newest`` of each ``key`` (by
    default (subject, attribute)), by id (see :meth:`Store.memories_by_attributes`)."""
    ranked = sorted(
        (m for m in memories if m.status in WEIGHED_STATUSES),
        key=lambda m: latest_ending_order(m.valid_from, m.valid_to, m.memory_id),
        reverse=True,
    )
    taken: dict[Hashable, int] = {}
    kept = []
    for memory in ranked:
        group = key(memory)
        if taken.get(group, 0) < newest:
            taken[group] = taken.get(group, 0) + 1
            kept.append(memory)
    return sorted(kept, key=lambda m: m.memory_id)


def without_citations_of(
    record_id: str, revisions: Sequence[tuple[str, int, str, str, datetime]]
) -> tuple[list[tuple[str, int, list[dict[str, Any]]]], list[tuple[str, int]]]:
    """For erase_record_citations: of the (memory_id, version, citations JSON, statement, valid_from) rows
    of every revision of the Memories that cite ``record_id`` (by Memory, by version), the revisions that
    cite it to keep with the other Records' citations, and the (memory_id, version) of those to erase.

    A Memory takes its statement and valid_from from the Records that made or re-derived it, so a
    revision that cites the Record may say its words or its time: it is kept only when it says what a
    revision from before the Record was cited said (support by another Record changes neither), and
    never when no other Record is left cited."""
    revised, erased = [], []
    for _, group in itertools.groupby(revisions, key=lambda r: r[0]):
        before: set[tuple[str, datetime]] = set()  # what revisions from before it was cited said
        cited = False
        for memory_id, version, raw, statement, valid_from in group:
            citations = json.loads(raw)
            kept = [c for c in citations if c["record_id"] != record_id]
            if len(kept) == len(citations):
                if not cited:
                    before.add((statement, valid_from))
                continue
            cited = True
            if kept and (statement, valid_from) in before:
                revised.append((memory_id, version, kept))
            else:
                erased.append((memory_id, version))
    return revised, erased


def histories_unnamed(
    revisions: Sequence[MemoryRevision], erased: Collection[str]
) -> tuple[list[MemoryRevision], list[tuple[str, int]]]:
    """For erase_memories: of the revisions (by Memory, by version) of Memories whose history names one
    of the ``erased`` Memories, those to write again with what it did undone (:func:`unnamed`), and the
    (memory_id, version) of those to delete: undone, they repeat the revision before them, and were made
    by the erased Memory alone (their time is its Record's). The newest revision of each is left as it
    is: the rules appended one that undoes it (MemoryRules.erase), and it holds the Memory's state."""
    rewritten: list[MemoryRevision] = []
    deleted: list[tuple[str, int]] = []
    for memory_id, group in itertools.groupby(revisions, key=lambda r: r.memory_id):
        history = list(group)
        before: MemoryRevision | None = None
        for revision in history[:-1]:
            undone = unnamed(revision, erased)
            if undone is None:
                before = revision
            elif before is not None and _same_state(undone, before):
                deleted.append((memory_id, revision.version))
            else:
                rewritten.append(undone)
                before = undone
    return rewritten, deleted


def _same_state(one: MemoryRevision, other: MemoryRevision) -> bool:
    return replace(one, version=0, recorded_at=other.recorded_at, seq=0) == replace(other, version=0, seq=0)


def low_trust(record: Record) -> bool:
    return (record.source or {}).get("trust") == "low"


def tally_records(records: Sequence[Record], examples: int, *, withheld: Collection[str] = ()) -> RecordTally:
    """RecordTally of ``records`` (in seq order), as a store that holds them whole counts them: those
    of a ``withheld`` visibility left out."""
    records = [r for r in records if r.visibility not in withheld]
    failed = [r.id for r in records if r.status == "failed"]
    trusted_low = [r.id for r in records if low_trust(r)]
    return RecordTally(len(records), len(failed), len(trusted_low), tuple(failed[:examples]), tuple(trusted_low[:examples]))


class Store(Protocol):
    kind: str

    # --- schema -----------------------------------------------------------------------------------
    def schema_version(self) -> int: ...
    def close(self) -> None: ...
    def atomic(self) -> AbstractContextManager[None]: ...
    def unavailable(self, error: BaseException) -> bool:
        """Whether ``error`` says the store or the machine could not do the work then (a connection,
        a lock, a timeout, memory, the disk), not that it refused the work itself: such a failure
        repeats for as long as its cause lasts, whatever was asked."""
        ...

    # --- change sequence --------------------------------------------------------------------------
    def next_seq(self, brain_uid: str) -> int: ...
    def current_seq(self, brain_uid: str) -> int: ...
    def live_seq(self, brain_uid: str) -> int | None:
        """``current_seq``, or None when the Brain no longer exists: one read where a Context asks both."""
        ...

    # --- brains -----------------------------------------------------------------------------------
    def lock_brain(self, brain_uid: str) -> bool:
        """Inside ``atomic()``: whether the Brain exists, holding it against ``erase_brain`` until the
        transaction ends."""
        ...
    def try_lock_brains(self, brain_uids: Sequence[str], *, wait_at_most: float = 0.0) -> set[str]:
        """Inside ``atomic()``: ``lock_brain``'s hold on each of ``brain_uids`` that no other transaction
        holds, taken without waiting for any; returns the others, which ``lock_brain`` would wait for (a
        group commit writes under them apart, so that a Brain held long delays no other Brain's writes).
        A Brain that no longer exists may be in either: ``lock_brain`` finds it gone at once.
        ``wait_at_most``: seconds in all to wait, in turn, for those another transaction holds before
        returning those it still holds (derivation rides out its own process's short writes so)."""
        ...
    def insert_brain(self, brain: Brain) -> None: ...
    def get_brain(self, namespace: str, brain_id: str) -> Brain | None: ...
    def brain_by_uid(self, brain_uid: str) -> Brain | None: ...
    def erase_brain(self, brain_uid: str) -> dict[str, int]: ...

    # --- records ----------------------------------------------------------------------------------
    def insert_record(self, record: Record) -> None: ...
    def get_record(self, brain_uid: str, record_id: str) -> Record | None: ...
    def records(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, Record]:
        """The live Records of the Brain among ``record_ids``, with their status, in one read."""
        ...
    def record_contents(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The content of each of ``record_ids`` that is a live Record of the Brain (others are left
        out), in one read: an evidence index rebuilt from stored chunks takes the whitespace between
        a Record's chunks from it."""
        ...
    def find_imported_record(self, brain_uid: str, source_name: str, external_id: str) -> Record | None: ...
    def append_record_status(
        self,
        brain_uid: str,
        record_id: str,
        status: str,
        *,
        seq: int,
        error: dict[str, str] | None = None,
        memory_ids: Sequence[str] = (),
    ) -> None: ...
    def append_record_statuses(self, events: Sequence[RecordStatus]) -> None:
        """Append many status events in one write (a derivation batch's)."""
        ...
    def records_in_status(self, status: str) -> list[tuple[str, str]]: ...
    def records_supporting(self, brain_uid: str, memory_ids: Sequence[str], limit: int) -> dict[str, list[str]]:
        """For each of ``memory_ids`` that any has, the ids of the Brain's Records whose status names it
        (their memory_ids), oldest first, at most ``limit``; in one read of the Brain's Record events
        (one each, for a batch of re-derived Memories, was 11 ms apiece on a Brain of 17,600 Records)."""
        ...
    def list_records(self, brain_uid: str) -> list[Record]: ...
    def record_seqs(self, brain_uid: str, *, after: int, limit: int) -> list[tuple[str, int]]:
        """The id and change sequence of the Brain's first ``limit`` Records whose sequence is past
        ``after``, by sequence: a walk over a Brain's Records a page at a time that reads none of their
        content (``brainstore rederive`` had read every Record of the Brain whole to learn these)."""
        ...
    def count_records(self, brain_uid: str, *, after: int = 0, through: int | None = None) -> int:
        """How many of the Brain's Records have a change sequence past ``after`` (and at most
        ``through``), reading none of them."""
        ...
    def record_tally(self, brain_uid: str, examples: int, *, withheld: Collection[str] = ()) -> RecordTally:
        """The Brain's Records counted (all, failed, from a low-trust source) with the ids of the first
        ``examples`` failed and low-trust ones by seq, in one read of no Record's content: a census of a
        Brain of 20,000 Records read them all whole in 0.35 s, holding the GIL while it parsed them.
        Records of a ``withheld`` visibility (local_only on a hosted deployment) are neither counted nor
        named."""
        ...
    def erase_record(self, brain_uid: str, record_id: str) -> None: ...
    def record_visibilities(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, str]:
        """The visibility of each of ``record_ids`` that is a live Record of the Brain (erased ones are
        left out), in one read."""
        ...

    # --- objects ----------------------------------------------------------------------------------
    def latest_object(self, brain_uid: str, type_: str, key: str) -> ObjectVersion | None: ...
    def insert_object_version(self, version: ObjectVersion) -> None: ...
    def list_objects(
        self, brain_uid: str, limit: int | None = None, *, max_bytes: int | None = None
    ) -> list[ObjectVersion]:
        """The latest version of each of the Brain's objects, by type then key; the first ``limit``. With
        ``max_bytes``: only those whose value is at most that long as stored JSON (UTF-8), up to where
        the values read would sum to more; no value passed over is read."""
        ...

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotent(self, namespace: str, scope: str, key: str) -> IdempotentReply | None: ...
    def put_idempotent(self, reply: IdempotentReply) -> None: ...
    def erase_idempotent(self, brain_uid: str, resource_id: str | None = None) -> int:
        """Erase the replies of writes under the Brain (only the one that made ``resource_id`` when
        given); returns how many."""
        ...

    # --- memories (schema 2) ----------------------------------------------------------------------
    def insert_memory_revisions(self, revisions: Sequence[MemoryRevision]) -> None:
        """Append revisions (``revision.fingerprint`` is stored with each) in one go."""
        ...
    def memory(self, brain_uid: str, memory_id: str) -> MemoryRevision | None: ...
    def memories(self, brain_uid: str, memory_ids: Sequence[str]) -> dict[str, MemoryRevision]:
        """What :meth:`memory` answers for each of ``memory_ids`` that has an answer, in one read."""
        ...
    def memory_revisions(self, brain_uid: str, memory_id: str) -> list[MemoryRevision]: ...
    def memories_by_fingerprints(
        self, brain_uid: str, fingerprints: Sequence[str], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        """Current revisions with any of ``fingerprints``, by id, in one read. With ``newest``, only
        active and pending ones (WEIGHED_STATUSES), at most that many of each fingerprint, in the order of
        memories_by_attributes."""
        ...
    def memories_by_attributes(
        self, brain_uid: str, keys: Sequence[tuple[str, str]], *, newest: int | None = None
    ) -> list[MemoryRevision]:
        """Current revisions of any of the (subject, attribute) ``keys`` (subject case-insensitive), by
        id. With ``newest``, only active and pending ones (WEIGHED_STATUSES), at most that many of each
        key: those whose validity ends latest (still open first), then the latest valid_from, then the
        latest id (see :func:`latest_ending`)."""
        ...
    def memories_citing(self, brain_uid: str, record_id: str) -> list[MemoryRevision]: ...
    def memories_citing_any(
        self, brain_uid: str, record_ids: Sequence[str], *, seq: int | None = None
    ) -> list[MemoryRevision]:
        """Current revisions that cite any of ``record_ids``, by id, in one read. ``seq`` (here and in
        list_memories, all_memories): the Brain's change sequence as the caller has just read it, which
        a store that must ask its database for it (PostgreSQL) checks its held Memories against."""
        ...
    def memories_referencing(self, brain_uid: str, memory_ids: Sequence[str]) -> list[MemoryRevision]:
        """Current revisions that name any of ``memory_ids``: superseded by one, closed by one, or in
        conflict with one (a superset is fine: callers check), in one read."""
        ...
    def memories_in_status(self, status: str) -> list[tuple[str, str]]: ...
    def list_memories(
        self,
        brain_uid: str,
        *,
        after_id: str | None,
        limit: int,
        subject: str | None = None,
        owner: str | None = None,
        seq: int | None = None,
    ) -> list[MemoryRevision]: ...
    def all_memories(self, brain_uid: str, *, seq: int | None = None) -> list[MemoryRevision]: ...
    def memory_changes(
        self, brain_uid: str, after_seq: int, limit: int
    ) -> list[tuple[int, str, MemoryRevision | None]]: ...
    def erase_memories(self, brain_uid: str, erased: Sequence[tuple[str, int]], *, at: datetime) -> None:
        """Erase each (memory_id, seq) of ``erased``, every revision of it, leaving a tombstone of no
        content at that seq; a Memory not in the Brain is left alone. A few statements however many:
        one each made forgetting a Record that supported a thousand Memories take 3.5 s."""
        ...
    def erase_record_citations(self, brain_uid: str, record_id: str) -> None:
        """Remove ``record_id``'s citations (ids and quotes) from every revision of every Memory, the
        old ones included; a revision that may say its words or its time is erased instead (see
        :func:`without_citations_of`)."""
        ...
    def erase_earlier_revisions(self, brain_uid: str, memory_ids: Sequence[str], *, pending_only: bool = False) -> None:
        """Erase every revision of each of ``memory_ids`` but its newest (``pending_only``: every pending
        one but its newest): they said what a forgotten Record said (see MemoryPlan.reworded and
        MemoryPlan.rederived)."""
        ...

    # --- evidence chunks (schema 3) ---------------------------------------------------------------
    def insert_chunks(self, chunks: Sequence[StoredChunk]) -> None: ...
    def chunks(self, brain_uid: str) -> list[StoredChunk]: ...
    def count_chunks(self, brain_uid: str) -> int: ...
    def erase_chunks(self, brain_uid: str, record_id: str) -> int: ...
