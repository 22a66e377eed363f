"""Memories: derivation from Records, dedupe, corrections, conflicts, deletion cascade and reads.

Rules kept here (and only here):
- One Memory per distinct assertion. The same assertion from several Records is ONE Memory whose
  citations name every supporting Record (a new revision adds the citation).
- A correction supersedes the Memory it names: a new revision closes it (valid_to, superseded_by) and the
  new active Memory cites the correction and names what it supersedes.
- A single-valued attribute stated with a change ("moved to") closes the older value's validity; stated
  without one, the two values conflict: both stay active and name each other in conflicts_with.
- Forgetting a Record erases Memories it alone supported and puts the others in pending re-derivation
  (invisible to every read) until they are re-derived from the surviving Records.
- Every change takes the Brain's next change sequence number, which is what watermarks point at.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import queue
import threading
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from brainstore.derive import Assertion, Extractor, default_extractor, source_text, warm_up
from brainstore.domain import Brain, Citation, MemoryRevision, Principal, Record
from brainstore.errors import error, invalid
from brainstore.ids import new_id
from brainstore.service.views import citation_view, memory_view, timestamp
from brainstore.store.base import StoreFeature

if TYPE_CHECKING:
    from brainstore.service.service import Service

log = logging.getLogger("brainstore.derivation")


def assertion_fingerprint(subject: str, assertion: Assertion) -> str:
    if assertion.attribute:
        identity = ["attr", subject.casefold(), assertion.attribute, (assertion.value or "").casefold(), assertion.negated]
    else:
        identity = ["text", " ".join(assertion.statement.casefold().split()).rstrip(".")]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]


def _encode_cursor(memory_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": memory_id}).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
        # Exactly the shape _encode_cursor writes: {"after": "mem_..."}, nothing nested.
        if not isinstance(decoded, dict) or set(decoded) != {"after"}:
            raise ValueError
        after = decoded["after"]
        if not isinstance(after, str) or not after.startswith("mem_") or not after.isascii():
            raise ValueError
        return after
    except (ValueError, KeyError, TypeError, RecursionError):
        raise invalid("cursor", "is not a cursor this endpoint issued") from None


def eligible_at(memory: MemoryRevision, as_of: datetime | None) -> bool:
    if as_of is None:
        return True
    return memory.valid_from <= as_of and (memory.valid_to is None or memory.valid_to > as_of)


#: Seconds before a failed derivation is tried again (the last repeats): an embedding endpoint that
#: is down must not leave Records processing until the next restart.
RETRY_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


class DerivationWorker:
    """Drains the durable queue: Records in status processing and Memories pending re-derivation.

    The queue's durable form is the store itself; this in-process queue only wakes the thread. On start
    every Record still processing and every pending Memory is enqueued again, so a restart resumes.
    A derivation that raises (an unreachable embedding endpoint, a store error) is tried again after
    :data:`RETRY_DELAYS`, and stays pending meanwhile.
    """

    def __init__(self, service: Service) -> None:
        self.service = service
        self._queue: queue.Queue[tuple[str, str, str] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._idle = threading.Condition()
        self._pending = 0
        self._failures: dict[tuple[str, str, str], int] = {}
        self._retries: set[threading.Timer] = set()

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="brainstore-derivation", daemon=True)
        self._thread.start()
        if self.service.store.schema_version() >= StoreFeature.CORE:
            for brain_uid, record_id in self.service.store.records_in_status("processing"):
                self.put("record", brain_uid, record_id)
        if self.service.store.schema_version() >= StoreFeature.MEMORIES:
            for brain_uid, memory_id in self.service.store.memories_in_status("pending"):
                self.put("memory", brain_uid, memory_id)

    def put(self, kind: str, brain_uid: str, item_id: str) -> None:
        with self._idle:
            self._pending += 1
        self._queue.put((kind, brain_uid, item_id))

    def stop(self) -> None:
        with self._idle:
            retries, self._retries = self._retries, set()
        for timer in retries:
            timer.cancel()  # the item is still processing/pending in the store: a restart resumes it
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)
            self._thread = None

    def wait_idle(self, timeout: float = 30.0) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout=timeout)

    def _run(self) -> None:
        warm_up()  # here, off the request threads
        while True:
            item = self._queue.get()
            if item is None:
                return
            kind, brain_uid, item_id = item
            try:
                if kind == "record":
                    self.service.derive_record(brain_uid, item_id)
                else:
                    self.service.rederive_memory(brain_uid, item_id)
            except Exception:
                failures = self._failures.get(item, 0)
                self._failures[item] = failures + 1
                delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
                log.exception("derivation of %s %s failed; trying again in %.0f s", kind, item_id, delay)
                self._retry_later(item, delay)
                continue  # still pending
            self._failures.pop(item, None)
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()

    def _retry_later(self, item: tuple[str, str, str], delay: float) -> None:
        def requeue() -> None:
            with self._idle:
                if timer not in self._retries:
                    return  # stopped meanwhile
                self._retries.discard(timer)
            self._queue.put(item)

        timer = threading.Timer(delay, requeue)
        timer.daemon = True
        with self._idle:
            self._retries.add(timer)
        timer.start()


class MemoryRules:
    """Mixed into Service; uses its store, clock, brain() and watermark()."""

    extractor: Extractor
    worker: DerivationWorker

    def _init_memories(self: Service, extractor: Extractor | None) -> None:
        self.extractor = extractor or default_extractor()
        self.worker = DerivationWorker(self)
        self.on_record_queued = lambda brain_uid, record_id: self.worker.put("record", brain_uid, record_id)

    def start(self: Service) -> None:
        self.worker.start()

    def stop(self: Service) -> None:
        self.worker.stop()
        self.save_indexes()

    # --- derivation -------------------------------------------------------------------------------
    def derive_record(self: Service, brain_uid: str, record_id: str) -> None:
        record = self.store.get_record(brain_uid, record_id)
        if record is None or record.status != "processing":
            return  # forgotten meanwhile, or already derived: nothing is derived twice
        if self.store.schema_version() < max(StoreFeature):
            return  # stays processing until the operator migrates; resumed on the next start
        self_name = self.self_name(brain_uid)
        try:
            text = source_text(record.content, self_name=self_name, occurred_at=record.occurred_at)
            assertions = self.extractor.extract(text, self_name=self_name)
        except Exception as exc:
            log.exception("extraction failed for %s", record_id)
            with self.store.atomic():
                seq = self.store.next_seq(brain_uid)
                self.store.append_record_status(
                    brain_uid,
                    record_id,
                    "failed",
                    seq=seq,
                    error={"code": "extraction_failed", "message": f"{type(exc).__name__}: {exc}"[:500]},
                )
            return
        # Chunking and embedding are the slow part: done before taking the write lock.
        evidence = self.prepare_evidence(record, text)
        with self.memory_lane_guard(brain_uid), self.store.atomic():
            current = self.store.get_record(brain_uid, record_id)
            if current is None or current.status != "processing":
                return  # forgotten or derived while the evidence was being embedded
            memory_ids: list[str] = []
            corrects = record.content.get("corrects") if record.content.get("kind") == "correction" else None
            if corrects and not assertions:
                assertions = [self._whole_text_assertion(record, text.text, self_name)]
            for assertion in assertions:
                memory_id = self._apply_assertion(brain_uid, record, text.text, assertion, corrects)
                if memory_id not in memory_ids:
                    memory_ids.append(memory_id)
            self.index_evidence(brain_uid, evidence)
            seq = self.store.next_seq(brain_uid)
            self.store.append_record_status(brain_uid, record_id, "ready", seq=seq, memory_ids=memory_ids)

    def _whole_text_assertion(self: Service, record: Record, text: str, self_name: str | None) -> Assertion:
        subject = self_name or "unknown"
        return Assertion(
            statement=text.strip(),
            subject=subject,
            owner=self_name,
            attribute=None,
            value=None,
            single_valued=False,
            change=True,
            negated=False,
            valid_from=record.occurred_at,
            valid_to=None,
            span=(0, len(text)),
        )

    def _apply_assertion(
        self: Service,
        brain_uid: str,
        record: Record,
        text: str,
        assertion: Assertion,
        corrects: str | None,
    ) -> str:
        now = self.clock()
        start, end = assertion.span
        citation = Citation(record.id, start, end, text[start:end])
        fingerprint = assertion_fingerprint(assertion.subject, assertion)
        if corrects is None:
            for held in self.store.memories_by_fingerprint(brain_uid, fingerprint):
                if held.status == "active":
                    if any(c.record_id == record.id for c in held.citations):
                        return held.memory_id
                    self._revise(held, fingerprint, citations=(*held.citations, citation))
                    return held.memory_id
        memory_id = new_id("mem")
        conflicts: list[str] = []
        supersedes = None
        valid_from = assertion.valid_from
        if corrects is not None:
            corrected = self.store.memory(brain_uid, corrects)
            if corrected is not None and corrected.status == "active":
                supersedes = corrected.memory_id
                self._revise(
                    corrected,
                    None,
                    status="superseded",
                    superseded_by=memory_id,
                    valid_to=corrected.valid_to or max(valid_from, corrected.valid_from),
                )
        if assertion.attribute and assertion.single_valued:
            for other in self.store.memories_by_attribute(brain_uid, assertion.subject, assertion.attribute):
                if other.status != "active" or other.memory_id == supersedes:
                    continue
                if (other.value or "").casefold() == (assertion.value or "").casefold() and other.negated == assertion.negated:
                    continue
                if other.valid_to is not None and other.valid_to <= valid_from:
                    continue  # already over before this one starts: history, not disagreement
                if assertion.change and other.valid_from <= valid_from:
                    self._revise(other, None, valid_to=valid_from)  # the world changed: close the old value
                    continue
                conflicts.append(other.memory_id)
                self._revise(
                    other,
                    None,
                    extra={**other.extra, "conflicts_with": sorted({*other.extra.get("conflicts_with", []), memory_id})},
                )
        seq = self.store.next_seq(brain_uid)
        self._write_revision(
            MemoryRevision(
                memory_id=memory_id,
                brain_uid=brain_uid,
                version=1,
                statement=assertion.statement,
                subject=assertion.subject,
                owner=assertion.owner,
                attribute=assertion.attribute,
                value=assertion.value,
                valid_from=valid_from,
                valid_to=assertion.valid_to,
                recorded_at=now,
                status="active",
                citations=(citation,),
                supersedes=supersedes,
                superseded_by=None,
                seq=seq,
                single_valued=assertion.single_valued,
                negated=assertion.negated,
                extra={"conflicts_with": conflicts} if conflicts else {},
            ),
            fingerprint,
        )
        return memory_id

    def _revise(self: Service, memory: MemoryRevision, fingerprint: str | None, **changes: Any) -> MemoryRevision:
        """Append the next revision of ``memory`` with ``changes``; nothing is updated in place."""
        seq = self.store.next_seq(memory.brain_uid)
        revised = replace(memory, version=memory.version + 1, recorded_at=self.clock(), seq=seq, **changes)
        if fingerprint is None:
            fingerprint = self._fingerprint_of(revised)
        self._write_revision(revised, fingerprint)
        return revised

    def _write_revision(self: Service, revision: MemoryRevision, fingerprint: str) -> None:
        self.store.insert_memory_revision(revision, fingerprint)
        self.memory_lane_changed(revision)

    def _erase_memory(self: Service, brain_uid: str, memory_id: str, at: datetime) -> None:
        self.store.erase_memory(brain_uid, memory_id, seq=self.store.next_seq(brain_uid), at=at)
        self.memory_lane_erased(brain_uid, memory_id)

    @staticmethod
    def _fingerprint_of(memory: MemoryRevision) -> str:
        return memory.extra.get("fingerprint") or assertion_fingerprint(
            memory.subject,
            Assertion(
                statement=memory.statement,
                subject=memory.subject,
                owner=memory.owner,
                attribute=memory.attribute,
                value=memory.value,
                single_valued=memory.single_valued,
                change=False,
                negated=memory.negated,
                valid_from=memory.valid_from,
                valid_to=memory.valid_to,
                span=(0, 0),
            ),
        )

    # --- deletion ---------------------------------------------------------------------------------
    def _cascade_record_deletion(self: Service, brain: Brain, record: Record, seq: int) -> dict[str, int]:
        counts = {"memories": 0, "rederiving": 0, "chunks": self.unindex_record(brain.uid, record.id)}
        if self.store.schema_version() < StoreFeature.MEMORIES:
            return counts
        now = self.clock()
        for memory in self.store.memories_citing(brain.uid, record.id):
            survivors = tuple(c for c in memory.citations if c.record_id != record.id)
            if not survivors:
                self._erase_memory(brain.uid, memory.memory_id, now)
                counts["memories"] += 1
            else:
                self._revise(memory, None, status="pending", citations=survivors)
                counts["rederiving"] += 1
                self.worker.put("memory", brain.uid, memory.memory_id)
        return counts

    def rederive_memory(self: Service, brain_uid: str, memory_id: str) -> None:
        with self.memory_lane_guard(brain_uid), self.store.atomic():
            memory = self.store.memory(brain_uid, memory_id)
            if memory is None or memory.status != "pending":
                return
            fingerprint = self._fingerprint_of(memory)
            self_name = self.self_name(brain_uid)
            citations: list[Citation] = []
            statement = None
            for record_id in dict.fromkeys(c.record_id for c in memory.citations):
                record = self.store.get_record(brain_uid, record_id)
                if record is None:
                    continue
                text = source_text(record.content, self_name=self_name, occurred_at=record.occurred_at)
                for assertion in self.extractor.extract(text, self_name=self_name):
                    if assertion_fingerprint(assertion.subject, assertion) == fingerprint:
                        start, end = assertion.span
                        citations.append(Citation(record.id, start, end, text.text[start:end]))
                        statement = statement or assertion.statement
                        break
                else:
                    # The extractor no longer finds it there (a changed extractor): keep the stored span.
                    citations.extend(c for c in memory.citations if c.record_id == record_id)
            if not citations:
                self._erase_memory(brain_uid, memory_id, self.clock())
                return
            status = "superseded" if memory.superseded_by else "active"
            self._revise(
                memory,
                fingerprint,
                status=status,
                citations=tuple(citations),
                statement=statement or memory.statement,
            )

    # --- reads ------------------------------------------------------------------------------------
    def self_name(self: Service, brain_uid: str) -> str | None:
        brain = self.store.brain_by_uid(brain_uid)
        return brain.self_name if brain else None

    def _served(self: Service, memory: MemoryRevision) -> dict[str, Any]:
        if not memory.citations:
            raise error(
                "memory_without_lineage",
                f"memory_id: {memory.memory_id} has no supporting Record; it is never served uncited",
            )
        return memory_view(memory)

    def list_memories(
        self: Service,
        principal: Principal,
        brain_id: str,
        *,
        subject: str | None,
        owner: str | None,
        as_of: datetime | None,
        since_watermark: str | None,
        cursor: str | None,
        limit: int,
    ) -> dict[str, Any]:
        if since_watermark is not None and cursor is not None:
            raise error(
                "conflicting_parameters",
                "since_watermark, cursor: a delta read (since_watermark) takes no cursor; send one or the other",
            )
        brain = self.brain(principal, brain_id)
        self.require(StoreFeature.MEMORIES)
        if since_watermark is not None:
            after = self.read_watermark(brain, since_watermark)
            return self._delta(brain, after, subject, owner, as_of, limit)
        seq = self.store.current_seq(brain.uid)
        after_id = _decode_cursor(cursor) if cursor is not None else None
        rows: list[MemoryRevision] = []
        scan_after = after_id
        # as_of is applied after the store's page; keep reading until a page is full or the end.
        while len(rows) <= limit:
            page = self.store.list_memories(brain.uid, after_id=scan_after, limit=limit + 1, subject=subject, owner=owner)
            rows.extend(m for m in page if eligible_at(m, as_of))
            if len(page) < limit + 1:
                break
            scan_after = page[-1].memory_id
        has_more = len(rows) > limit
        rows = rows[:limit]
        return {
            "object": "list",
            "data": [self._served(m) for m in rows],
            "has_more": has_more,
            "next_cursor": _encode_cursor(rows[-1].memory_id) if has_more else None,
            "watermark": self.watermark(brain, seq),
            "deleted": [],
        }

    def _delta(
        self: Service,
        brain: Brain,
        after: int,
        subject: str | None,
        owner: str | None,
        as_of: datetime | None,
        limit: int,
    ) -> dict[str, Any]:
        seq_now = self.store.current_seq(brain.uid)
        changes = self.store.memory_changes(brain.uid, after, limit + 1)
        has_more = len(changes) > limit
        changes = changes[:limit]
        data, deleted = [], []
        for _, memory_id, memory in changes:
            if memory is None or memory.status not in ("active", "superseded"):
                deleted.append(memory_id)
                continue
            if subject is not None and memory.subject.casefold() != subject.casefold():
                continue
            if owner is not None and (memory.owner or "").casefold() != owner.casefold():
                continue
            if not eligible_at(memory, as_of):
                continue
            data.append(self._served(memory))
        boundary = changes[-1][0] if has_more else seq_now
        return {
            "object": "list",
            "data": data,
            "has_more": has_more,
            "next_cursor": None,
            "watermark": self.watermark(brain, boundary),
            "deleted": deleted,
        }

    def get_memory(self: Service, principal: Principal, brain_id: str, memory_id: str) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        self.require(StoreFeature.MEMORIES)
        memory = self.store.memory(brain.uid, memory_id)
        if memory is None:
            raise error(
                "memory_not_found",
                f"memory_id: no Memory {memory_id!r} in Brain {brain_id!r} (it may not be derived yet)",
            )
        if memory.status == "pending":
            raise error(
                "memory_pending_rederivation",
                f"memory_id: {memory_id} lost part of its evidence and is being re-derived",
            )
        body = self._served(memory)
        body["revisions"] = [
            {
                "version": r.version,
                "statement": r.statement,
                "valid_from": timestamp(r.valid_from),
                "valid_to": timestamp(r.valid_to),
                "recorded_at": timestamp(r.recorded_at),
                "status": r.status,
                "citations": [citation_view(c) for c in r.citations],
            }
            for r in self.store.memory_revisions(brain.uid, memory_id)
            if r.status != "pending"
        ]
        evidence = []
        for c in memory.citations:
            record = self.store.get_record(brain.uid, c.record_id)
            if record is None or (record.visibility == "local_only" and self.config.hosted):
                continue
            evidence.append(
                {
                    **citation_view(c),
                    "occurred_at": timestamp(record.occurred_at),
                    "visibility": record.visibility,
                    "source": record.source,
                }
            )
        body["evidence"] = evidence
        return body

    def get_profile(self: Service, principal: Principal, brain_id: str, *, limit: int) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        self.require(StoreFeature.MEMORIES)
        lines = []
        if brain.self_name:
            for memory in self.store.all_memories(brain.uid):
                if (
                    memory.status == "active"
                    and memory.valid_to is None
                    and memory.citations
                    and (memory.owner or "").casefold() == brain.self_name.casefold()
                ):
                    lines.append(
                        {
                            "memory_id": memory.memory_id,
                            "statement": memory.statement,
                            "attribute": memory.attribute,
                            "citations": [citation_view(c) for c in memory.citations],
                        }
                    )
        return {
            "object": "profile",
            "brain_id": brain.id,
            "self": {"type": brain.self_type, "name": brain.self_name} if brain.self_name else None,
            "lines": lines[:limit],
            "has_more": len(lines) > limit,
        }

    def get_census(self: Service, principal: Principal, brain_id: str) -> dict[str, Any]:
        brain = self.brain(principal, brain_id)
        self.require(StoreFeature.MEMORIES)
        records = self.store.list_records(brain.uid)
        memories = [m for m in self.store.all_memories(brain.uid) if m.status in ("active", "superseded")]
        failed = [r.id for r in records if r.status == "failed"]
        low_trust = [r.id for r in records if (r.source or {}).get("trust") == "low"]
        conflicts = [m.memory_id for m in memories if m.status == "active" and m.extra.get("conflicts_with")]
        duplicates = [m.memory_id for m in memories if len({c.record_id for c in m.citations}) > 1]
        unattributed = [m.memory_id for m in memories if m.owner is None]
        noise = [
            ("duplicates", duplicates),
            ("conflicts", conflicts),
            ("low_trust_sources", low_trust),
            ("failed_records", failed),
            ("unattributed", unattributed),
        ]
        return {
            "object": "census",
            "brain_id": brain.id,
            "counts": {
                "records": len(records),
                "records_failed": len(failed),
                "memories": len(memories),
                "conflicts": len(conflicts),
                "superseded": sum(1 for m in memories if m.status == "superseded"),
                "duplicates": len(duplicates),
                "low_trust_records": len(low_trust),
                "unattributed_memories": len(unattributed),
            },
            "noise": [{"kind": kind, "count": len(ids), "examples": ids[:5]} for kind, ids in noise if ids],
        }
