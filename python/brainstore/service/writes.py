"""Writes: Brains, Records and Objects, their idempotent replies, and the deletes that erase them.

Invariants:
- A write resolves its Brain inside its own transaction (``Store.lock_brain``): it lands before a
  concurrent forgetBrain (and is erased with it) or answers brain_not_found. No row is ever written
  under a Brain that no longer exists.
- A 202 for rememberRecord means the Record is committed; the reply of an Idempotency-Key is stored
  in the same transaction as the write, keyed by the Brain and the resource it made.
- A delete leaves no byte of what it erased: rows (the store compacts its file), Memory citations in
  every revision, index entries and saved index files, idempotent replies, traces. What a forgotten
  Record's Memories did to others is undone (superseded ones restored), and Memories that lose part of
  their support are re-derived from what survives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from brainstore.domain import Brain, IdempotentReply, ObjectVersion, Principal, Record
from brainstore.errors import BrainstoreError, error
from brainstore.ids import new_id
from brainstore.service.common import (
    MISSING,
    Clock,
    Reply,
    Watermarks,
    brain_not_found,
    require,
    resolve_brain,
)
from brainstore.service.derivation import Derivation, memory_state, text_length, write_plans
from brainstore.service.evidence import EvidenceIndexes
from brainstore.service.group import GroupCommit
from brainstore.service.planner import MemoryRules
from brainstore.service.traces import Traces
from brainstore.service.views import brain_view, object_view, record_view
from brainstore.store.base import Store, StoreFeature

log = logging.getLogger("brainstore.writes")


class Writes:
    def __init__(
        self,
        store: Store,
        *,
        hosted: bool,
        clock: Clock,
        watermarks: Watermarks,
        evidence: EvidenceIndexes,
        derivation: Derivation,
        rules: MemoryRules,
        traces: Traces,
        forget_rederive_progress: Callable[[str], None],
    ) -> None:
        self.store = store
        self.hosted = hosted
        self.clock = clock
        self.watermarks = watermarks
        self.evidence = evidence
        self.derivation = derivation
        self.rules = rules
        self.traces = traces
        self.forget_rederive_progress = forget_rederive_progress
        self.group = GroupCommit(store)

    # --- idempotency ------------------------------------------------------------------------------------
    def _idempotent(
        self,
        principal: Principal,
        scope: str,
        key: str | None,
        request_fingerprint: str,
        operation: str,
        write: Callable[[], tuple[Reply, str | None, str | None]],
        brain: Brain | None,
    ) -> Reply:
        """Run ``write`` once per Idempotency-Key; a replay returns the original reply. ``brain`` is
        the Brain it writes to (None when it makes one), which orders it in its group commit.

        ``write`` returns the reply, the Brain it wrote under and the resource it made, which key the
        stored reply so that erasing them erases it. The reply is stored in the same transaction as
        the write: a crash cannot leave a write without its reply (a retry would duplicate it) or a
        reply without its write. Concurrent writes share one commit (:class:`GroupCommit`).
        """
        if key is not None:
            # The reply quotes what the write made; before ERASURE's keys no delete could find it, and a
            # replay would serve a forgotten Record or Brain.
            require(self.store, StoreFeature.ERASURE)

        def replay() -> Reply | None:
            held = self.store.get_idempotent(principal.namespace, scope, key) if key is not None else None
            if held is None:
                return None
            if held.fingerprint != request_fingerprint:
                raise error(
                    "idempotency_conflict",
                    f"Idempotency-Key: {key!r} was used with different content for {operation}",
                )
            return Reply(held.status, held.body, held.watermark)

        def once() -> Reply:
            replayed = replay()
            if replayed is not None:
                return replayed
            try:
                reply, brain_uid, resource_id = write()
            except BrainstoreError:
                # The same request on another process may have committed between the read above and the
                # write's own checks (each statement reads what is committed as it starts): its Brain
                # then exists, or its Object version is the current one. Its reply is committed with it.
                replayed = replay()
                if replayed is None:
                    raise
                return replayed
            if key is not None:
                self.store.put_idempotent(
                    IdempotentReply(
                        principal.namespace,
                        scope,
                        key,
                        request_fingerprint,
                        reply.status,
                        reply.body,
                        reply.watermark,
                        self.clock(),
                        brain_uid,
                        resource_id,
                    )
                )
            return reply

        return self.group.run(once, brain.uid if brain is not None else None)

    def _locked(self, brain: Brain) -> None:
        """Inside the write's transaction: the Brain still exists, and stays until it commits."""
        if not self.store.lock_brain(brain.uid):
            raise brain_not_found(brain.id)

    # --- brains -------------------------------------------------------------------------------------------
    def create_brain(
        self,
        principal: Principal,
        brain_id: str,
        *,
        name: str | None,
        self_entity: dict[str, str] | None,
        idempotency_key: str | None = None,
        request_fingerprint: str = "",
    ) -> Reply:
        require(self.store, StoreFeature.CORE)

        def write() -> tuple[Reply, str | None, str | None]:
            if self.store.get_brain(principal.namespace, brain_id) is not None:
                raise error("brain_exists", f"id: a Brain {brain_id!r} already exists in this project")
            brain = Brain(
                uid=new_id("brn"),
                namespace=principal.namespace,
                id=brain_id,
                name=name,
                self_type=self_entity["type"] if self_entity else None,
                self_name=self_entity["name"] if self_entity else None,
                created_at=self.clock(),
            )
            self.store.insert_brain(brain)
            seq = self.store.next_seq(brain.uid)
            return Reply(201, brain_view(brain), self.watermarks.issue(brain, seq)), brain.uid, None

        # The Brain id is part of the body here, so the key's scope is the whole project.
        return self._idempotent(
            principal, "createBrain:", idempotency_key, request_fingerprint, "createBrain", write, None
        )

    def forget_brain(self, principal: Principal, brain_id: str) -> Reply:
        brain = resolve_brain(self.store, principal, brain_id)
        with self.evidence.mutating([brain.uid]):
            chunks = self.store.count_chunks(brain.uid) if self.store.schema_version() >= StoreFeature.CHUNKS else 0
            counts = self.store.erase_brain(brain.uid)  # its idempotent replies go with it
            self.evidence.drop(brain.uid)
        self.derivation.forgotten(brain.uid)
        self.traces.erase_brain(principal.namespace, brain.id)
        try:
            self.forget_rederive_progress(brain.uid)
        except OSError:  # the Brain is erased either way; the file is a rederive run's to drop later
            log.exception("could not remove the rederive progress of erased Brain %s", brain.uid)
        body = {
            "object": "deletion_receipt",
            "id": brain.id,
            "deleted": {
                "records": counts.get("records", 0),
                "memories": counts.get("memories", 0),
                "objects": counts.get("objects", 0),
                "chunks": chunks,
            },
            "rederiving": {"memories": 0},
            "watermark": None,
        }
        return Reply(200, body, None)

    # --- records ------------------------------------------------------------------------------------------
    def remember_record(
        self,
        principal: Principal,
        brain_id: str,
        *,
        content: dict[str, Any],
        source: dict[str, Any] | None,
        visibility: str,
        occurred_at: datetime | None,
        idempotency_key: str | None = None,
        request_fingerprint: str = "",
        origin: str = "api",
    ) -> Reply:
        brain = resolve_brain(self.store, principal, brain_id)
        if visibility == "local_only" and self.hosted:
            raise error(
                "local_only_record",
                "visibility: local_only Records cannot be written to a hosted deployment; nothing was stored",
            )
        made: list[Record] = []

        def write() -> tuple[Reply, str | None, str | None]:
            self._locked(brain)
            # Inside the write lock, and only for a first write: a replay of a correction answers its
            # original 202 although the Memory it named is superseded (by it) or erased by now.
            if content["kind"] == "correction":
                self.check_correction(brain, content["corrects"])
            if origin == "import" and source is not None:
                # Reconciled under the lock: two imports of one file at once each found the line missing
                # before either wrote it, and wrote it twice (Records forgetRecord refuses).
                imported = self.store.find_imported_record(brain.uid, source["name"], source["external_id"])
                if imported is not None:
                    return Reply(200, record_view(imported), None), None, None
            now = self.clock()
            seq = self.store.next_seq(brain.uid)
            record = Record(
                id=new_id("rec"),
                brain_uid=brain.uid,
                content=content,
                source=source,
                visibility=visibility,
                occurred_at=occurred_at or now,
                created_at=now,
                origin=origin,
                seq=seq,
            )
            self.store.insert_record(record)
            made.append(record)
            return Reply(202, record_view(record), self.watermarks.issue(brain, seq)), brain.uid, record.id

        reply = self._idempotent(
            principal, f"rememberRecord:{brain_id}", idempotency_key, request_fingerprint, "rememberRecord", write, brain
        )
        # Not for a replay: that Record is queued (or derived) already. The last attempt's Record, and only
        # if it is the one answered: a group that failed as a whole wrote it again alone, or found the
        # key's reply stored meanwhile by a concurrent request, and the earlier attempt was rolled back.
        if made and made[-1].id == reply.body["id"]:
            record = made[-1]
            self.derivation.put_record(brain.uid, record.id, record.seq, text_length(record))
        return reply

    def check_correction(self, brain: Brain, memory_id: str) -> None:
        """A correction must name a live Memory of this Brain that is not already superseded."""
        memory = self.store.memory(brain.uid, memory_id) if self.store.schema_version() >= 2 else None
        if memory is None or memory.status == "pending":  # an erased Memory leaves no row
            raise error("corrected_memory_not_found", f"content.corrects: no Memory {memory_id!r} in this Brain")
        if memory.status == "superseded":
            raise error(
                "correction_conflict",
                f"content.corrects: Memory {memory_id!r} is already superseded by {memory.superseded_by}",
            )

    def get_record(self, principal: Principal, brain_id: str, record_id: str) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        record = self.store.get_record(brain.uid, record_id)
        if record is None:
            raise error("record_not_found", f"record_id: no Record {record_id!r} in Brain {brain_id!r}")
        if record.visibility == "local_only" and self.hosted:
            raise error("local_only_record", f"record_id: {record_id!r} is local_only and cannot be read here")
        if record.status == "ready":
            self.evidence.settled(brain.uid)  # "ready" promises the Record can be found
        return record_view(record)

    def forget_record(self, principal: Principal, brain_id: str, record_id: str) -> Reply:
        brain = resolve_brain(self.store, principal, brain_id)
        with self.evidence.mutating([brain.uid]):
            with self.store.atomic():
                self._locked(brain)
                record = self.store.get_record(brain.uid, record_id)
                if record is None:
                    raise error("record_not_found", f"record_id: no Record {record_id!r} in Brain {brain_id!r}")
                if record.origin == "import":
                    raise error(
                        "record_not_erasable",
                        f"record_id: {record_id!r} was reconciled from external source "
                        f"{(record.source or {}).get('name')!r}; erase it at its source",
                    )
                self.store.next_seq(brain.uid)
                state = memory_state(self.store, brain.uid)
                cascade = (
                    self.rules.forget_record(state, record_id)
                    if self.store.schema_version() >= StoreFeature.MEMORIES
                    else {"memories": 0, "rederiving": 0}
                )
                write_plans(self.store, [state], self.clock())
                if self.store.schema_version() >= StoreFeature.MEMORIES:
                    self.store.erase_record_citations(brain.uid, record_id)
                chunks = (
                    self.store.erase_chunks(brain.uid, record_id)
                    if self.store.schema_version() >= StoreFeature.CHUNKS
                    else 0
                )
                self.store.erase_idempotent(brain.uid, record_id)
                self.store.erase_record(brain.uid, record_id)
            self.evidence.forget_record(brain.uid, record_id)
            self.evidence.apply(brain.uid, [], state.plan.revisions, [m for m, _ in state.plan.erased])
        self.derivation.forgotten(brain.uid, record_id)
        self.traces.erase_record(principal.namespace, brain.id, record_id)
        for memory_id in state.plan.rederive:
            self.derivation.put_memory(brain.uid, memory_id)
        watermark = self.watermarks.issue(brain)
        body = {
            "object": "deletion_receipt",
            "id": record_id,
            "deleted": {"records": 1, "memories": cascade["memories"], "objects": 0, "chunks": chunks},
            "rederiving": {"memories": cascade["rederiving"]},
            "watermark": watermark,
        }
        return Reply(200, body, watermark)

    # --- objects ------------------------------------------------------------------------------------------
    def accept_object(
        self,
        principal: Principal,
        brain_id: str,
        *,
        type_: str,
        key: str,
        value: Any,
        if_version: int | Any | None = MISSING,
        idempotency_key: str | None = None,
        request_fingerprint: str = "",
    ) -> Reply:
        brain = resolve_brain(self.store, principal, brain_id)

        def write() -> tuple[Reply, str | None, str | None]:
            self._locked(brain)
            current = self.store.latest_object(brain.uid, type_, key)
            current_version = current.version if current else 0
            if if_version is not MISSING and if_version is not None and if_version != current_version:
                raise error(
                    "stale_version",
                    f"if_version: {if_version} does not match the current version {current_version} "
                    f"of {type_}/{key}",
                    current_version=current_version,
                )
            seq = self.store.next_seq(brain.uid)
            version = ObjectVersion(
                id=current.id if current else new_id("obj"),
                brain_uid=brain.uid,
                type=type_,
                key=key,
                version=current_version + 1,
                value=value,
                accepted_by=principal.key_label,
                created_at=self.clock(),
                seq=seq,
            )
            self.store.insert_object_version(version)
            return Reply(201, object_view(version), self.watermarks.issue(brain, seq)), brain.uid, None

        return self._idempotent(
            principal, f"acceptObject:{brain_id}", idempotency_key, request_fingerprint, "acceptObject", write, brain
        )

    def get_object(self, principal: Principal, brain_id: str, type_: str, key: str) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        current = self.store.latest_object(brain.uid, type_, key)
        if current is None:
            raise error("object_not_found", f"object_key: no Object {type_}/{key} in Brain {brain_id!r}")
        return object_view(current)
