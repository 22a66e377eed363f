"""Memory reads: listMemories (full and delta), getMemory, the Profile and the Census.

Every Memory leaves through :class:`~brainstore.service.visibility.Visibility`: citations of Records this
deployment may not serve are left out, redacted quotes are replaced, and a Memory none of whose Records
may be read is not served at all (it is treated as absent; in a delta read it is listed in ``deleted``
so a mirror drops any copy, as is a changed Memory the read's subject, owner or as_of leaves out). Pending Memories (re-derivation in progress) are excluded everywhere.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from itertools import islice
from typing import Any

from brainstore.domain import Brain, MemoryRevision, Principal
from brainstore.errors import BrainstoreError, error, invalid
from brainstore.service.common import Watermarks, require, resolve_brain
from brainstore.service.views import timestamp
from brainstore.service.visibility import REDACTED, SHAREABLE, Visibility
from brainstore.store.base import Store, StoreFeature

_CURSOR_MAX = 400
# Memories one full-read page reads at most when as_of or visibility leave some out; the page is then
# short, with has_more and a cursor past what was read.
SCAN_MEMORIES = 2_000
# Ids a census names of each kind of noise.
CENSUS_EXAMPLES = 5


def encode_cursor(memory_id: str, watermark: str) -> str:
    """The cursor of a full read's next page: the Memory id it continues after and the watermark of the
    read's first page (signed and bound to the Brain, see Watermarks), which every later page returns."""
    document = {"after": memory_id, "watermark": watermark}
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str | None]:
    """The Memory id a cursor continues after and the watermark it carries (None in a cursor issued
    before cursors carried one); anything but the exact shape this endpoint issues is invalid (never
    nested JSON, never another type). The watermark is read against the Brain by the caller."""
    try:
        if len(cursor) > _CURSOR_MAX:
            raise ValueError
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        if not isinstance(decoded, dict) or set(decoded) not in ({"after"}, {"after", "watermark"}):
            raise ValueError
        after, watermark = decoded["after"], decoded.get("watermark")
        if not isinstance(after, str) or not after.startswith("mem_") or not after.isascii():
            raise ValueError
        if "watermark" in decoded and (not isinstance(watermark, str) or not watermark.isascii()):
            raise ValueError
        return after, watermark
    except (ValueError, TypeError, UnicodeError, binascii.Error, RecursionError):
        raise invalid_cursor() from None


def invalid_cursor() -> Exception:
    return invalid("cursor", "is not a cursor this endpoint issued")


def eligible_at(memory: MemoryRevision, as_of: datetime | None) -> bool:
    if as_of is None:
        return True
    return memory.valid_from <= as_of and (memory.valid_to is None or memory.valid_to > as_of)


def record_ids_of(memories: list[MemoryRevision]) -> list[str]:
    return list(dict.fromkeys(c.record_id for m in memories for c in m.citations))


class MemoryReads:
    def __init__(self, store: Store, *, visibility: Visibility, watermarks: Watermarks) -> None:
        self.store = store
        self.visibility = visibility
        self.watermarks = watermarks

    def served(self, brain: Brain, memories: list[MemoryRevision]) -> list[tuple[MemoryRevision, dict[str, Any]]]:
        """The Memories this deployment may serve, each with its served view (one store read)."""
        return list(self.served_if(brain, memories, lambda statement, quotes: True))

    def served_if(
        self,
        brain: Brain,
        memories: list[MemoryRevision],
        wanted: Callable[[str, Callable[[], list[str]]], bool],
        cited: Callable[[str], bool] | None = None,
    ) -> Iterator[tuple[MemoryRevision, dict[str, Any]]]:
        """served(), lazily, passing over without a view each Memory that is not ``wanted`` when its turn
        comes, asked with its statement as served and a function that gives its quotes as served (made
        only if asked: a Context's budget, checked as it fills: a window citing 1,600 Memories built
        1,600 views for the few dozen its budget took). ``cited``: of which Records (by id) the quotes
        asked about are, when the caller serves only those citations."""
        visibilities = self._visibilities(brain, memories)
        for memory in memories:
            serving = self.visibility.serving(memory, visibilities)
            citations = memory.citations if cited is None else tuple(c for c in memory.citations if cited(c.record_id))
            if serving is not None and wanted(
                self.visibility.statement_as(memory, serving),
                partial(self.visibility.quotes, citations, visibilities),
            ):
                yield memory, self.visibility.view(memory, serving, visibilities)

    def servable(self, brain: Brain, memories: list[MemoryRevision], *, words: bool = False) -> list[MemoryRevision]:
        """Those of ``memories`` that served() serves (with ``words``, only those served with their own
        words, not redacted), without building their views: a census or a schema over 20,000
        Memories spent 0.25-0.38 s on views it then dropped."""
        visibilities = self._visibilities(brain, memories)
        wanted = (SHAREABLE,) if words else (SHAREABLE, REDACTED)
        return [memory for memory in memories if self.visibility.serving(memory, visibilities) in wanted]

    def _visibilities(self, brain: Brain, memories: list[MemoryRevision]) -> dict[str, str]:
        """Of the Records ``memories`` cite (one store read); a Memory with none is never served."""
        if not memories:
            return {}
        for memory in memories:
            if not memory.citations:
                raise error(
                    "memory_without_lineage",
                    f"memory_id: {memory.memory_id} has no supporting Record; it is never served uncited",
                )
        return self.store.record_visibilities(brain.uid, record_ids_of(memories))

    def list_memories(
        self,
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
        brain = resolve_brain(self.store, principal, brain_id)
        require(self.store, StoreFeature.MEMORIES)
        if since_watermark is not None:
            after = self.watermarks.read(brain, since_watermark)
            return self._delta(brain, after, subject, owner, as_of, limit)
        # A full read's pages all return the watermark of its first page, read before that page: a
        # mirror that reads every page and then reads deltas from it hears of every change made during
        # the walk, to a Memory on a page already read as much as to any other. (Each page returned the
        # Brain's watermark as it read the page: a Memory on an earlier page corrected or erased during
        # the walk was behind both the cursor and the watermark, and the mirror kept its old copy.)
        # Each page reads the Memories as they are now, never as of the first page (the stores keep no
        # such history: erasure removes every revision, and ``seq`` below is the store's freshness
        # check, not a point in time), so nothing erased since is ever served; the delta from the first
        # page's watermark lists it in deleted, and brings again in its newest state whatever changed.
        after_id, watermark = decode_cursor(cursor) if cursor is not None else (None, None)
        seq = self.store.current_seq(brain.uid)
        if watermark is None:
            watermark = self.watermarks.issue(brain, seq)
        else:
            try:
                self.watermarks.read(brain, watermark, field="cursor")
            except BrainstoreError:  # altered, forged, or from another Brain
                raise invalid_cursor() from None
        rows: list[dict[str, Any]] = []
        last_id: str | None = None
        scan_after = after_id
        # as_of and visibility apply after the store's page: read on until a page is full, the Memories
        # end, or SCAN_MEMORIES were read, then answer what was found with a cursor past what was read.
        # Read on one page at a time, an as_of that few Memories meet made a request of limit 1 read a
        # Brain of 20,000 Memories 2 at a time, each read ranking every revision: 9 minutes of both cores.
        # After the page's own read, the rest of the scan is one read: on DuckDB each read ranks the
        # Brain's revisions (0.07-0.1 s at 20,000), which costs more than building the extra Memories.
        scan_limit = max(SCAN_MEMORIES, limit + 1)
        page_size, scanned, exhausted = limit + 1, 0, False
        while len(rows) <= limit and scanned < scan_limit:
            page = self.store.list_memories(
                brain.uid, after_id=scan_after, limit=page_size, subject=subject, owner=owner, seq=seq
            )
            scanned += len(page)
            for memory, view in self.served(brain, [m for m in page if eligible_at(m, as_of)]):
                rows.append(view)
                if len(rows) <= limit:
                    last_id = memory.memory_id
            if len(page) < page_size:
                exhausted = True
                break
            scan_after = page[-1].memory_id
            page_size = scan_limit - scanned
        if len(rows) > limit:
            has_more, next_after = True, last_id
        else:  # every Memory up to scan_after was read; whatever follows it is still to read
            has_more, next_after = not exhausted, scan_after
        return {
            "object": "list",
            "data": rows[:limit],
            "has_more": has_more,
            "next_cursor": encode_cursor(next_after, watermark) if has_more and next_after else None,
            "watermark": watermark,
            "deleted": [],
        }

    def _delta(
        self, brain: Brain, after: int, subject: str | None, owner: str | None, as_of: datetime | None, limit: int
    ) -> dict[str, Any]:
        seq_now = self.store.current_seq(brain.uid)
        changes = self.store.memory_changes(brain.uid, after, limit + 1)
        has_more = len(changes) > limit
        changes = changes[:limit]
        live = [m for _, _, m in changes if m is not None and m.status in ("active", "superseded")]
        views = {m.memory_id: view for m, view in self.served(brain, live)}
        data, deleted = [], []
        for _, memory_id, memory in changes:
            view = views.get(memory_id)
            # Erased, pending, not servable here, or changed so that the view's parameters no longer
            # take it (its time ended before as_of): a mirror may hold an earlier copy, which a full
            # read with the same parameters would not return.
            if (
                memory is None
                or view is None
                or (subject is not None and memory.subject.casefold() != subject.casefold())
                or (owner is not None and (memory.owner or "").casefold() != owner.casefold())
                or not eligible_at(memory, as_of)
            ):
                deleted.append(memory_id)
            else:
                data.append(view)
        boundary = changes[-1][0] if has_more else seq_now
        return {
            "object": "list",
            "data": data,
            "has_more": has_more,
            "next_cursor": None,
            "watermark": self.watermarks.issue(brain, boundary),
            "deleted": deleted,
        }

    def get_memory(self, principal: Principal, brain_id: str, memory_id: str) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        require(self.store, StoreFeature.MEMORIES)
        # The current revision is the newest: one read for both (DuckDB reads the file in ~1.7 ms each).
        history = self.store.memory_revisions(brain.uid, memory_id)
        memory = history[-1] if history else None
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
        revisions = [r for r in history if r.status != "pending"]
        record_ids = record_ids_of([memory, *revisions])
        visibilities = self.store.record_visibilities(brain.uid, record_ids)
        served = self.served(brain, [memory])
        if not served:
            raise error(
                "local_only_record",
                f"memory_id: {memory_id} rests only on local_only Records, which cannot be read here",
            )
        body = served[0][1]
        body["revisions"] = []
        for r in revisions:
            view = self.visibility.memory(r, visibilities)
            if view is None:
                continue  # a state resting only on Records this deployment may not serve
            body["revisions"].append(
                {
                    "version": r.version,
                    "statement": view["statement"],
                    "valid_from": timestamp(r.valid_from),
                    "valid_to": timestamp(r.valid_to),
                    "recorded_at": timestamp(r.recorded_at),
                    "status": r.status,
                    "citations": view["citations"],
                }
            )
        evidence = []
        records = {c.record_id for c in memory.citations}
        for citation in body["citations"]:
            record = self.store.get_record(brain.uid, citation["record_id"]) if citation["record_id"] in records else None
            if record is None:
                continue
            evidence.append(
                {
                    **citation,
                    "occurred_at": timestamp(record.occurred_at),
                    "visibility": record.visibility,
                    "source": record.source,
                }
            )
        body["evidence"] = evidence
        return body

    def profile_lines(
        self,
        brain: Brain,
        memories: list[MemoryRevision],
        *,
        as_of: datetime | None = None,
        wanted: Callable[[str, Callable[[], list[str]]], bool] = lambda statement, quotes: True,
        cited: Callable[[str], bool] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The self card: active Memories the self owns, as served: the current ones, or with ``as_of``
        those valid then (ended since or not). Lazily, each line's view built only when it is taken and
        ``wanted`` (see served_if, and ``cited``): a profile of limit 1 built the views of all 12,000
        Memories its self owned (0.7 s of the GIL a request), then served one."""
        if not brain.self_name:
            return
        me = brain.self_name.casefold()
        own = [
            m
            for m in memories
            if m.status == "active"
            and (m.valid_to is None if as_of is None else eligible_at(m, as_of))
            and m.citations
            and (m.owner or "").casefold() == me
        ]
        for memory, view in self.served_if(brain, own, wanted, cited):
            yield {
                "memory_id": memory.memory_id,
                "statement": view["statement"],
                "attribute": view["attribute"],
                "citations": view["citations"],
            }

    def get_profile(self, principal: Principal, brain_id: str, *, limit: int) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        require(self.store, StoreFeature.MEMORIES)
        lines = list(islice(self.profile_lines(brain, self.store.all_memories(brain.uid)), limit + 1))
        return {
            "object": "profile",
            "brain_id": brain.id,
            "self": {"type": brain.self_type, "name": brain.self_name} if brain.self_name else None,
            "lines": lines[:limit],
            "has_more": len(lines) > limit,
        }

    def get_census(self, principal: Principal, brain_id: str) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        require(self.store, StoreFeature.MEMORIES)
        # Records this deployment withholds are neither counted nor named (their ids are refused by
        # getRecord), nor do they make a Memory a duplicate.
        records = self.store.record_tally(brain.uid, CENSUS_EXAMPLES, withheld=self.visibility.withheld_visibilities)
        candidates = [m for m in self.store.all_memories(brain.uid) if m.status in ("active", "superseded")]
        visibilities = self._visibilities(brain, candidates)
        memories = [m for m in candidates if self.visibility.serving(m, visibilities) is not None]
        live = {m.memory_id for m in memories}
        conflicts = [
            m.memory_id
            for m in memories
            if m.status == "active" and any(other in live for other in m.extra.get("conflicts_with", ()))
        ]
        duplicates = [
            m.memory_id
            for m in memories
            if len({c.record_id for c in m.citations if not self.visibility.withheld(visibilities.get(c.record_id))}) > 1
        ]
        unattributed = [m.memory_id for m in memories if m.owner is None]
        noise = [
            ("duplicates", len(duplicates), duplicates),
            ("conflicts", len(conflicts), conflicts),
            ("low_trust_sources", records.low_trust, records.low_trust_examples),
            ("failed_records", records.failed, records.failed_examples),
            ("unattributed", len(unattributed), unattributed),
        ]
        return {
            "object": "census",
            "brain_id": brain.id,
            "counts": {
                "records": records.records,
                "records_failed": records.failed,
                "memories": len(memories),
                "conflicts": len(conflicts),
                "superseded": sum(1 for m in memories if m.status == "superseded"),
                "duplicates": len(duplicates),
                "low_trust_records": records.low_trust,
                "unattributed_memories": len(unattributed),
            },
            "noise": [
                {"kind": kind, "count": count, "examples": list(ids[:CENSUS_EXAMPLES])} for kind, count, ids in noise if count
            ],
        }
