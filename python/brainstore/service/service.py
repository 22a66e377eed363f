"""Service: Brains, Records, Objects, idempotent replies and watermarks, over one Store.

Methods take validated values, enforce the spec's rules, and return contract-shaped dicts (or a
:class:`Reply` for writes, which carry a status and a Brain-Watermark). They raise
:class:`brainstore.errors.BrainstoreError` with the spec's codes and never know about HTTP.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from brainstore import kernels
from brainstore.config import Config
from brainstore.derive import Extractor
from brainstore.domain import Brain, IdempotentReply, ObjectVersion, Principal, Record
from brainstore.errors import error
from brainstore.ids import new_id
from brainstore.retrieval.embedder import Embedder
from brainstore.service.context import ContextRules
from brainstore.service.memories import MemoryRules
from brainstore.service.traces import TraceBuffer
from brainstore.service.views import brain_view, object_view, record_view
from brainstore.store.base import Store, StoreFeature


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # if_version absent, as opposed to if_version: null


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]
    watermark: str | None


def utcnow() -> datetime:
    return datetime.now(UTC)


def fingerprint(payload: Any) -> str:
    """The identity of a request body for Idempotency-Key comparison: canonical JSON, hashed."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def load_or_create_secret(data_dir: Path | None) -> bytes:
    """The watermark HMAC key. Kept in the data directory so watermarks survive a restart."""
    if data_dir is None:
        return secrets.token_bytes(32)
    path = data_dir / "watermark.secret"
    if path.exists():
        return bytes.fromhex(path.read_text().strip())
    data_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_bytes(32)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(value.hex())
    tmp.chmod(0o600)
    tmp.replace(path)
    return value


class Service(MemoryRules, ContextRules):
    def __init__(
        self,
        store: Store,
        *,
        config: Config | None = None,
        watermark_secret: bytes | None = None,
        clock: Callable[[], datetime] = utcnow,
        extractor: Extractor | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.config = config or Config(engine=store.kind)
        self.secret = watermark_secret or secrets.token_bytes(32)
        self.clock = clock
        self.traces = TraceBuffer(self.config.trace_buffer)
        # Called with (brain_uid, record_id) after a Record is committed: wakes the derivation worker.
        self.on_record_queued: Callable[[str, str], None] | None = None
        self._init_memories(extractor)
        self._init_context(embedder)

    # --- shared rules -----------------------------------------------------------------------------
    def require(self, feature: StoreFeature) -> None:
        if self.store.schema_version() < feature:
            raise error(
                "not_implemented",
                f"this engine's schema lacks {feature.name.lower()} (schema {self.store.schema_version()}, "
                f"needs {int(feature)}); the operator must run `brainstore migrate`",
            )

    def brain(self, principal: Principal, brain_id: str) -> Brain:
        self.require(StoreFeature.CORE)
        brain = self.store.get_brain(principal.namespace, brain_id)
        if brain is None:
            raise error("brain_not_found", f"brain_id: no Brain {brain_id!r} in this project")
        return brain

    def watermark(self, brain: Brain, seq: int | None = None) -> str:
        return kernels.encode_watermark(
            self.secret, brain.uid, self.store.current_seq(brain.uid) if seq is None else seq
        )

    def read_watermark(self, brain: Brain, token: str, field: str = "since_watermark") -> int:
        seq = kernels.decode_watermark(self.secret, brain.uid, token)
        if seq is None or seq > self.store.current_seq(brain.uid):
            raise error(
                "invalid_watermark",
                f"{field}: not a watermark this engine issued for Brain {brain.id!r}",
            )
        return seq

    def _idempotent(
        self,
        principal: Principal,
        operation: str,
        brain_id: str,
        key: str | None,
        request_fingerprint: str,
        write: Callable[[], Reply],
    ) -> Reply:
        """Run ``write`` once per Idempotency-Key; a replay returns the original reply.

        The reply is stored in the same transaction as the write, so a crash cannot leave a write
        without its reply (a retry would duplicate it) or a reply without its write.
        """
        if key is None:
            with self.store.atomic():
                return write()
        scope = f"{operation}:{brain_id}"
        with self.store.atomic():
            held = self.store.get_idempotent(principal.namespace, scope, key)
            if held is not None:
                if held.fingerprint != request_fingerprint:
                    raise error(
                        "idempotency_conflict",
                        f"Idempotency-Key: {key!r} was used with different content for {operation}",
                    )
                return Reply(held.status, held.body, held.watermark)
            reply = write()
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
                )
            )
            return reply

    # --- brains -----------------------------------------------------------------------------------
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
        self.require(StoreFeature.CORE)

        def write() -> Reply:
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
            return Reply(201, brain_view(brain), self.watermark(brain, seq))

        # The Brain id is part of the body here, so the key's scope is the whole project.
        return self._idempotent(principal, "createBrain", "", idempotency_key, request_fingerprint, write)

    def get_brain(self, principal: Principal, brain_id: str) -> dict[str, Any]:
        return brain_view(self.brain(principal, brain_id))

    def forget_brain(self, principal: Principal, brain_id: str) -> Reply:
        brain = self.brain(principal, brain_id)
        chunks = self.erase_brain_evidence(brain.uid)
        counts = self.store.erase_brain(brain.uid)
        counts["chunks"] = chunks
        self.traces.clear(principal.namespace, brain.id)
        body = {
            "object": "deletion_receipt",
            "id": brain.id,
            "deleted": {
                "records": counts.get("records", 0),
                "memories": counts.get("memories", 0),
                "objects": counts.get("objects", 0),
                "chunks": counts.get("chunks", 0),
            },
            "rederiving": {"memories": 0},
            "watermark": None,
        }
        return Reply(200, body, None)

    # --- records ----------------------------------------------------------------------------------
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
        brain = self.brain(principal, brain_id)
        if visibility == "local_only" and self.config.hosted:
            raise error(
                "local_only_record",
                "visibility: local_only Records cannot be written to a hosted deployment; nothing was stored",
            )
        if content["kind"] == "correction":
            self.check_correction(brain, content["corrects"])

        def write() -> Reply:
            if content["kind"] == "correction":
                self.check_correction(brain, content["corrects"])  # again, inside the write lock
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
            return Reply(202, record_view(record), self.watermark(brain, seq))

        reply = self._idempotent(
            principal, "rememberRecord", brain_id, idempotency_key, request_fingerprint, write
        )
        if self.on_record_queued is not None:
            self.on_record_queued(brain.uid, reply.body["id"])
        return reply

    def check_correction(self, brain: Brain, memory_id: str) -> None:
        """A correction must name a live Memory of this Brain that is not already superseded."""
        memory = self.store.memory(brain.uid, memory_id) if self.store.schema_version() >= 2 else None
        if memory is None:  # an erased Memory leaves no row
            raise error("corrected_memory_not_found", f"content.corrects: no Memory {memory_id!r} in this Brain")
        if memory.status == "superseded":
            raise error(
                "correction_conflict",
                f"content.corrects: Memory {memory_id!r} is already superseded by {memory.superseded_by}",
            )

    def get_record(self, principal: Principal, brain_id: str, record_id: str) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        record = self.store.get_record(brain.uid, record_id)
        if record is None:
            raise error("record_not_found", f"record_id: no Record {record_id!r} in Brain {brain_id!r}")
        if record.visibility == "local_only" and self.config.hosted:
            raise error("local_only_record", f"record_id: {record_id!r} is local_only and cannot be read here")
        return record_view(record)

    def forget_record(self, principal: Principal, brain_id: str, record_id: str) -> Reply:
        brain = self.brain(principal, brain_id)
        with self.memory_lane_guard(brain.uid), self.store.atomic():
            record = self.store.get_record(brain.uid, record_id)
            if record is None:
                raise error("record_not_found", f"record_id: no Record {record_id!r} in Brain {brain_id!r}")
            if record.origin == "import":
                raise error(
                    "record_not_erasable",
                    f"record_id: {record_id!r} was reconciled from external source "
                    f"{(record.source or {}).get('name')!r}; erase it at its source",
                )
            seq = self.store.next_seq(brain.uid)
            cascade = self._cascade_record_deletion(brain, record, seq)
            self.store.erase_record(brain.uid, record_id)
        body = {
            "object": "deletion_receipt",
            "id": record_id,
            "deleted": {
                "records": 1,
                "memories": cascade.get("memories", 0),
                "objects": 0,
                "chunks": cascade.get("chunks", 0),
            },
            "rederiving": {"memories": cascade.get("rederiving", 0)},
            "watermark": self.watermark(brain),
        }
        return Reply(200, body, body["watermark"])

    # --- objects ----------------------------------------------------------------------------------
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
        brain = self.brain(principal, brain_id)

        def write() -> Reply:
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
            return Reply(201, object_view(version), self.watermark(brain, seq))

        return self._idempotent(principal, "acceptObject", brain_id, idempotency_key, request_fingerprint, write)

    def get_object(self, principal: Principal, brain_id: str, type_: str, key: str) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        current = self.store.latest_object(brain.uid, type_, key)
        if current is None:
            raise error("object_not_found", f"object_key: no Object {type_}/{key} in Brain {brain_id!r}")
        return object_view(current)

    # --- traces -----------------------------------------------------------------------------------
    def list_traces(self, principal: Principal, brain_id: str, *, limit: int) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        found, has_more = self.traces.newest(principal.namespace, brain.id, limit)
        return {"object": "list", "data": found, "has_more": has_more, "next_cursor": None}

    def get_trace(self, principal: Principal, brain_id: str, trace_id: str) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        trace = self.traces.get(trace_id, principal.namespace, brain.id)
        if trace is None:
            raise error("trace_not_found", f"trace_id: {trace_id!r} is not in the recent trace buffer")
        return trace
