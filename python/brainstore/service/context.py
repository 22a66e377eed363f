"""Context: the evidence index's life cycle and createContext, fast and thorough.

Rules kept here:
- A Record is indexed (chunked, embedded, stored, added to both lanes) inside the transaction that marks
  it ready, so "ready" implies "findable"; forgetting it removes its chunks from the store and from
  both lanes at once, and deletes the on-disk index files, which held its text.
- fast never composes: it returns cited evidence and asserts nothing; its one model call is the query
  embedding. thorough composes an extractive answer from the cited evidence.
- Every evidence item and every component points at a citation, every citation at a rec_ id; what
  the budget admits is counted with the real tokenizer and never exceeds budget.tokens.
- A miss is a ready Context with no evidence and an explicit unknown, never an error.
- filter.since/until/sources are enforced; subjects/owner/sensitivity_lte are recorded only.
- On a hosted deployment local_only evidence is silently absent; redacted_summary evidence is served
  only as a redacted summary.
"""

from __future__ import annotations

import itertools
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import numpy as np

from brainstore import kernels
from brainstore.derive import SourceText, named_periods, source_text
from brainstore.domain import Brain, MemoryRevision, Principal, Record, StoredChunk
from brainstore.errors import invalid
from brainstore.ids import new_id
from brainstore.retrieval.chunking import Chunk, ChunkDraft, chunk_record, embedding_text, format_day, leads
from brainstore.retrieval.embedder import Embedder, load_embedder
from brainstore.retrieval.index import BrainIndex, ChunkFilter
from brainstore.retrieval.memory_lane import LaneEntry, MemoryLane
from brainstore.retrieval.pipeline import Passage, Retrieval, lexical_query, retrieve
from brainstore.service.memories import eligible_at
from brainstore.service.views import memory_view, object_view, timestamp
from brainstore.store.base import StoreFeature

if TYPE_CHECKING:
    from brainstore.service.service import Reply, Service

FAST_MS = 250
THOROUGH_SYNC_MS = 5000
PENDING_WAIT_SECONDS = 120.0
COMPONENT_SHARE = 4  # with memories/objects/profile requested, a quarter of the budget is kept for them
# The memory lane's weight in reciprocal-rank fusion. On LoCoMo it measured 0 to -0.3 points (weights
# 0.1 and 0.25 against 0, through the API); it is kept small for the facts and corrections LoCoMo does
# not exercise.
MEMORY_LANE_WEIGHT = 0.25
MEMORY_LANE_K = 40


def query_periods(query: str, at: datetime) -> list[tuple[float, float]]:
    """The periods ``query`` names, as Unix seconds (``retrieve``'s ``focus``), relative forms ("last
    week") resolved at ``at``. Resolved from the start of ``at``'s day: a day's queries then share
    dateparser's cache (a numeric date, "3/4/2021", otherwise costs a millisecond or two per query)."""
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    return [(start.timestamp(), end.timestamp()) for start, end in named_periods(query, day)]


@dataclass(frozen=True)
class PreparedEvidence:
    record_id: str
    drafts: list[ChunkDraft]
    embeddings: np.ndarray
    model: str
    leads: list[str | None]  # the whitespace before each draft in the Record (chunking.leads)


class ContextRules:
    """Mixed into Service; owns the per-Brain evidence indexes and createContext."""

    def _init_context(self: Service, embedder: Embedder | None) -> None:
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._indexes: dict[str, BrainIndex] = {}
        self._memory_lanes: dict[str, MemoryLane] = {}
        self._index_lock = threading.RLock()
        self._completions = ThreadPoolExecutor(max_workers=2, thread_name_prefix="brainstore-context")

    # --- embedder and indexes ---------------------------------------------------------------------
    @property
    def embedder(self: Service) -> Embedder:
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    self._embedder = load_embedder(self.config.embedder)
        return self._embedder

    def _index_dir(self: Service, brain_uid: str) -> Path | None:
        if self.store.kind != "duckdb":
            return None
        return self.config.data_dir / "index" / brain_uid

    def index_for(self: Service, brain_uid: str) -> BrainIndex:
        with self._index_lock:
            held = self._indexes.get(brain_uid)
            if held is not None:
                return held
            model = self.embedder.model_name
            directory = self._index_dir(brain_uid)
            index = BrainIndex.load(directory, model) if directory is not None else None
            if index is None or len(index) != self.store.count_chunks(brain_uid):
                index = self._rebuild_index(brain_uid)
            self._indexes[brain_uid] = index
            return index

    def _rebuild_index(self: Service, brain_uid: str) -> BrainIndex:
        """From the stored chunks; chunks embedded by another model are embedded again."""
        embedder = self.embedder
        index = BrainIndex(embedder.dimension, embedder.model_name)
        stored = self.store.chunks(brain_uid)
        if not stored:
            return index
        drafts = [c.draft for c in stored]
        vectors = np.zeros((len(stored), embedder.dimension), dtype=np.float32)
        stale = []
        for i, chunk in enumerate(stored):
            if chunk.model == embedder.model_name and len(chunk.embedding) == 4 * embedder.dimension:
                vectors[i] = np.frombuffer(chunk.embedding, dtype=np.float32)
            else:
                stale.append(i)
        if stale:
            vectors[stale] = embedder.embed([embedding_text(drafts[i]) for i in stale])
        index.add(drafts, vectors, self._stored_leads(brain_uid, drafts))
        return index

    def _stored_leads(self: Service, brain_uid: str, drafts: list[ChunkDraft]) -> list[str | None]:
        """The leads of stored drafts (a Record's drafts together, in text order), from their Records'
        texts read in one go: the chunks table does not keep the whitespace between chunks."""
        contents = self.store.record_contents(brain_uid, sorted({d.record_id for d in drafts}))
        out: list[str | None] = []
        for record_id, group in itertools.groupby(drafts, key=lambda d: d.record_id):
            run = list(group)
            content = contents.get(record_id)
            if content is None:
                out += [None] * len(run)
                continue
            text = source_text(content, self_name=None, occurred_at=run[0].occurred_at).text
            out += leads(text, run)
        return out

    def prepare_evidence(self: Service, record: Record, text: SourceText) -> PreparedEvidence:
        source = record.source or {}
        drafts = chunk_record(
            record.id,
            text,
            source_name=source.get("name"),
            trust=source.get("trust", "normal"),
            visibility=record.visibility,
        )
        embedder = self.embedder
        vectors = embedder.embed([embedding_text(d) for d in drafts])
        return PreparedEvidence(record.id, drafts, vectors, embedder.model_name, leads(text.text, drafts))

    def index_evidence(self: Service, brain_uid: str, evidence: PreparedEvidence) -> None:
        """Inside the derivation transaction: store the chunks, then add them to the live index."""
        # Taken before the insert: an index built from the store now must not already hold them.
        index = self.index_for(brain_uid) if evidence.drafts else None
        self.store.insert_chunks(
            [
                StoredChunk(brain_uid, d, evidence.model, np.ascontiguousarray(v, dtype="<f4").tobytes())
                for d, v in zip(evidence.drafts, evidence.embeddings, strict=True)
            ]
        )
        if index is not None:
            try:
                index.add(evidence.drafts, evidence.embeddings, evidence.leads)
            except Exception:
                self._forget_index(brain_uid)  # rebuilt from the store on next use
                raise

    # --- the memory lane -------------------------------------------------------------------------
    def memory_lane(self: Service, brain_uid: str) -> MemoryLane:
        with self._index_lock:
            lane = self._memory_lanes.get(brain_uid)
            if lane is None:
                lane = MemoryLane()
                for memory in self.store.all_memories(brain_uid):
                    self._lane_apply(lane, memory)
                self._memory_lanes[brain_uid] = lane
            return lane

    @staticmethod
    def _lane_apply(lane: MemoryLane, memory: MemoryRevision) -> None:
        if memory.status != "active" or not memory.citations:
            lane.remove(memory.memory_id)
            return
        lane.upsert(
            LaneEntry(
                memory.memory_id,
                tuple(dict.fromkeys(c.record_id for c in memory.citations)),
                memory.valid_from.timestamp(),
                memory.valid_to.timestamp() if memory.valid_to else None,
            ),
            memory.statement,
        )

    def memory_lane_changed(self: Service, memory: MemoryRevision) -> None:
        lane = self._memory_lanes.get(memory.brain_uid)
        if lane is not None:  # an unbuilt lane is built from the store when first needed
            self._lane_apply(lane, memory)

    def memory_lane_erased(self: Service, brain_uid: str, memory_id: str) -> None:
        lane = self._memory_lanes.get(brain_uid)
        if lane is not None:
            lane.remove(memory_id)

    @contextmanager
    def memory_lane_guard(self: Service, brain_uid: str) -> Iterator[None]:
        """Around a transaction that writes Memories: if it rolls back, the lane is rebuilt later."""
        try:
            yield
        except BaseException:
            with self._index_lock:
                self._memory_lanes.pop(brain_uid, None)
            raise

    def _memory_hits(self: Service, brain_uid: str, index: BrainIndex, query: str, at: datetime) -> list[tuple[int, float]]:
        hits: list[tuple[int, float]] = []
        seen: set[int] = set()
        for entry, score in self.memory_lane(brain_uid).search(lexical_query(query), MEMORY_LANE_K, at.timestamp()):
            for record_id in entry.record_ids:
                for chunk_id in index.record_chunks(record_id):
                    if chunk_id not in seen:
                        seen.add(chunk_id)
                        hits.append((chunk_id, score))
        return hits

    def _forget_index(self: Service, brain_uid: str) -> None:
        with self._index_lock:
            self._indexes.pop(brain_uid, None)
            self._memory_lanes.pop(brain_uid, None)
        directory = self._index_dir(brain_uid)
        if directory is not None and directory.exists():
            shutil.rmtree(directory, ignore_errors=True)

    def unindex_record(self: Service, brain_uid: str, record_id: str) -> int:
        if self.store.schema_version() < StoreFeature.CHUNKS:
            return 0
        removed = self.store.erase_chunks(brain_uid, record_id)
        with self._index_lock:
            held = self._indexes.get(brain_uid)
            if held is not None:
                held.remove_record(record_id)
        directory = self._index_dir(brain_uid)
        if removed and directory is not None and directory.exists():
            # The saved files hold the forgotten text; they are rebuilt from the store when needed.
            shutil.rmtree(directory, ignore_errors=True)
        return removed

    def erase_brain_evidence(self: Service, brain_uid: str) -> int:
        count = self.store.count_chunks(brain_uid) if self.store.schema_version() >= StoreFeature.CHUNKS else 0
        self._forget_index(brain_uid)
        return count

    def save_indexes(self: Service) -> None:
        with self._index_lock:
            held = dict(self._indexes)
        for brain_uid, index in held.items():
            directory = self._index_dir(brain_uid)
            if directory is not None and len(index):
                index.save(directory)

    # --- createContext ----------------------------------------------------------------------------
    def create_context(
        self: Service,
        principal: Principal,
        brain_id: str,
        request: dict[str, Any],
        *,
        watermark: str | None,
    ) -> Reply:
        from brainstore.service.service import Reply

        brain = self.brain(principal, brain_id)
        self.require(StoreFeature.CHUNKS)
        if request["purpose"] not in self.config.purposes:
            raise invalid(
                "purpose", f"unknown policy {request['purpose']!r}; configured: {', '.join(self.config.purposes)}"
            )
        target = self.read_watermark(brain, watermark, "Brain-Watermark") if watermark is not None else None
        context_id = new_id("ctx")
        namespace = principal.namespace
        if target is not None and not self._reached(brain, target):
            self._completions.submit(self._assemble_when_reached, brain, namespace, context_id, request, target)
            pending = self._pending(brain, context_id, request, "waiting for derivation to reach Brain-Watermark")
            self._trace(namespace, brain, context_id, pending, None, 202)
            return Reply(202, pending, None)
        if request["mode"] == "thorough":
            future = self._completions.submit(self._assemble_and_trace, brain, namespace, context_id, request)
            try:
                context = future.result(timeout=THOROUGH_SYNC_MS / 1000)
            except FutureTimeout:
                pending = self._pending(brain, context_id, request, "past the synchronous budget; read it with getTrace")
                self._trace(namespace, brain, context_id, pending, None, 202)
                return Reply(202, pending, None)
            return Reply(200, context, None)
        return Reply(200, self._assemble_and_trace(brain, namespace, context_id, request), None)

    def _reached(self: Service, brain: Brain, target: int) -> bool:
        return not any(
            uid == brain.uid and (r := self.store.get_record(uid, rid)) is not None and r.seq <= target
            for uid, rid in self.store.records_in_status("processing")
        )

    def _assemble_when_reached(
        self: Service, brain: Brain, namespace: str, context_id: str, request: dict[str, Any], target: int
    ) -> None:
        deadline = time.monotonic() + PENDING_WAIT_SECONDS
        while not self._reached(brain, target) and time.monotonic() < deadline:
            time.sleep(0.05)
        self._assemble_and_trace(brain, namespace, context_id, request)

    def _pending(self: Service, brain: Brain, context_id: str, request: dict[str, Any], reason: str) -> dict[str, Any]:
        return {
            "id": context_id,
            "object": "context",
            "query": request["query"],
            "status": "pending",
            "reason": reason,
            "mode": request["mode"],
            "purpose": request["purpose"],
            "watermark": self.watermark(brain),
            "evidence": [],
            "citations": [],
            "unknowns": [],
            "budget": {
                "tokens": {"limit": request["budget_tokens"], "used": 0, "tokenizer": kernels.TOKENIZER_NAME},
                "ms": {"limit": self._ms_limit(request), "used": 0, "cut_lanes": []},
            },
        }

    @staticmethod
    def _ms_limit(request: dict[str, Any]) -> int:
        return int(request["budget_ms"] or (FAST_MS if request["mode"] == "fast" else THOROUGH_SYNC_MS))

    def _trace(
        self: Service,
        namespace: str,
        brain: Brain,
        context_id: str,
        context: dict[str, Any],
        retrieval: Retrieval | None,
        status: int,
    ) -> None:
        self.traces.add(
            context_id,
            namespace,
            brain.id,
            {
                "id": context_id,
                "object": "trace",
                "kind": "context",
                "created_at": timestamp(self.clock()),
                "operation": "createContext",
                "http_status": status,
                "error": None,
                "lanes": retrieval.lanes if retrieval else [],
                "scores": [
                    {
                        "chunk_id": str(c.chunk.id),
                        "record_id": c.chunk.record_id,
                        "lanes": c.lanes,
                        "final": c.score,
                    }
                    for c in (retrieval.candidates[:100] if retrieval else [])
                ],
                "citations": context.get("citations", []),
                "budget": context.get("budget"),
                "cost": context.get("cost"),
                "context": context,
            },
        )

    def _assemble_and_trace(
        self: Service, brain: Brain, namespace: str, context_id: str, request: dict[str, Any]
    ) -> dict[str, Any]:
        context, retrieval = self._assemble(brain, context_id, request)
        self._trace(namespace, brain, context_id, context, retrieval, 200)
        return context

    @staticmethod
    def _quote(index: BrainIndex, passage: Passage) -> str | None:
        """The exact Record text a passage covers, sentences and the whitespace between them; None
        when its Record is gone."""
        return passage.chunk.text if len(passage.chunks) == 1 else index.quote(passage.chunks)

    @staticmethod
    def _eligible(request: dict[str, Any]) -> ChunkFilter | None:
        """The request's filter, or None without one (a hosted deployment's local_only chunks are
        excluded by id instead: see ``_assemble``)."""
        flt = request["filter"]
        since, until, sources = flt.get("since"), flt.get("until"), flt.get("sources")
        if since is None and until is None and sources is None:
            return None
        return ChunkFilter(
            since=since.timestamp() if since is not None else None,
            until=until.timestamp() if until is not None else None,
            sources=frozenset(sources) if sources is not None else None,
        )

    def _assemble(self: Service, brain: Brain, context_id: str, request: dict[str, Any]) -> tuple[dict[str, Any], Retrieval]:
        started = time.monotonic()
        ms_limit = self._ms_limit(request)
        deadline = started + ms_limit / 1000
        watermark = self.watermark(brain)
        include = request["include"]
        budget = request["budget_tokens"]
        wants_components = any(i in include for i in ("memories", "objects", "profile"))
        evidence_budget = budget - (budget // COMPONENT_SHARE if wants_components else 0)
        if "evidence" not in include:
            evidence_budget = 0

        index = self.index_for(brain.uid)
        # On the request's own thread: handing it to a pool thread to overlap with the lexical lane
        # measured about 2 ms slower at the median on 2 cores (the lexical lane takes well under a
        # millisecond, and the hand-off and the threads' contention for the cores cost more).
        embedding = self.embedder.embed_query(request["query"]) if len(index) else None
        as_of = request["as_of"]
        at = as_of or self.clock()
        retrieval = retrieve(
            index,
            request["query"],
            embedding,
            budget_tokens=max(evidence_budget, 0),
            deadline=deadline,
            eligible=self._eligible(request),
            excluded=index.local_only() if self.config.hosted else frozenset(),
            now=at,
            focus=query_periods(request["query"], at),
            extra_lanes=[
                ("memory", lambda: self._memory_hits(brain.uid, index, request["query"], at), MEMORY_LANE_WEIGHT)
            ],
        )

        citations: list[dict[str, Any]] = []
        evidence: list[dict[str, Any]] = []
        used = 0
        for passage in retrieval.selected:
            chunk, last = passage.chunk, passage.chunks[-1]
            redacted = chunk.visibility == "redacted_summary"  # never part of a run
            text = self._redacted(chunk) if redacted else passage.text
            quote = self._redacted(chunk) if redacted else self._quote(index, passage)
            if quote is None:
                continue  # its Record was forgotten while the Context was assembled
            # The pipeline packed by the cited form's token count; a redaction is counted anew.
            used += kernels.token_count(text) if redacted else passage.tokens
            span = {"start": chunk.start, "end": last.end}
            citations.append(
                {"id": f"c{len(citations) + 1}", "record_id": chunk.record_id, "span": span, "quote": quote}
            )
            evidence.append(
                {
                    "id": f"chk_{chunk.id}",
                    "record_id": chunk.record_id,
                    "text": text,
                    "span": span,
                    "score": round(passage.score, 6),
                    "occurred_at": timestamp(chunk.occurred_at),
                    "speaker": chunk.speaker,
                    "citation": len(citations) - 1,
                    "redacted": redacted,
                }
            )

        context: dict[str, Any] = {
            "id": context_id,
            "object": "context",
            "query": request["query"],
            "status": "ready",
            "mode": request["mode"],
            "purpose": request["purpose"],
            "as_of": timestamp(as_of),
            "watermark": watermark,
            "evidence": evidence,
            "citations": citations,
            "unknowns": [],
            "filter": {
                "enforced": {k: self._jsonable(request["filter"].get(k)) for k in ("since", "until", "sources")},
                "recorded": {k: request["filter"].get(k) for k in ("subjects", "owner", "sensitivity_lte")},
            },
            "memories": [],
            "objects": [],
            "profile": None,
            "structured": None,
            "answer": None,
        }
        remaining = budget - used
        window = {c["record_id"] for c in citations}
        eligible_memories = []
        if wants_components or request["schema"] is not None:
            eligible_memories = [
                m
                for m in self.store.all_memories(brain.uid)
                if m.status == "active" and m.citations and eligible_at(m, as_of or self.clock())
            ]
        if "memories" in include:
            for memory in eligible_memories:
                if not {c.record_id for c in memory.citations} <= window:
                    continue  # its complete lineage must lie inside the selected evidence window
                cost = kernels.token_count(memory.statement)
                if cost > remaining:
                    continue
                remaining -= cost
                view = memory_view(memory)
                view["in_conflict"] = bool(view["conflicts_with"])
                context["memories"].append(view)
        if "objects" in include:
            for obj in self.store.list_objects(brain.uid):
                view = object_view(obj)
                cost = kernels.token_count(f"{obj.type}/{obj.key}: {obj.value}")
                if cost > remaining:
                    continue
                remaining -= cost
                context["objects"].append(view)
        if "profile" in include:
            lines = []
            for memory in eligible_memories:
                if brain.self_name and (memory.owner or "").casefold() == brain.self_name.casefold():
                    cost = kernels.token_count(memory.statement)
                    if cost > remaining:
                        continue
                    remaining -= cost
                    lines.append(
                        {
                            "memory_id": memory.memory_id,
                            "statement": memory.statement,
                            "attribute": memory.attribute,
                            "citations": memory_view(memory)["citations"],
                        }
                    )
            context["profile"] = {
                "object": "profile",
                "brain_id": brain.id,
                "self": {"type": brain.self_type, "name": brain.self_name} if brain.self_name else None,
                "lines": lines,
                "has_more": False,
            }
        if request["schema"] is not None:
            context["structured"] = self._structured(request["schema"], eligible_memories, brain)
        if request["mode"] == "thorough" and evidence:
            context["answer"] = self._compose(evidence, citations)

        if not evidence:
            context["unknowns"] = [
                {
                    "question": request["query"],
                    "reason": "no eligible evidence was found; this does not mean it is false",
                }
            ]
        else:
            context["unknowns"] = [
                {"term": term, "reason": "no selected evidence mentions it"} for term in retrieval.unknowns
            ]
        # The contract's ms.used is a number: whole milliseconds would report 10.9 ms as 10.
        elapsed = round((time.monotonic() - started) * 1000, 2)
        context["budget"] = {
            "tokens": {"limit": budget, "used": budget - remaining, "tokenizer": kernels.TOKENIZER_NAME},
            "ms": {"limit": ms_limit, "used": elapsed, "cut_lanes": [lane["name"] for lane in retrieval.lanes if lane.get("cut")]},
        }
        embedded = 1 if embedding is not None else 0
        context["cost"] = {"model_calls": embedded, "embedding_calls": embedded, "generative_calls": 0}
        return context, retrieval

    @staticmethod
    def _jsonable(value: Any) -> Any:
        return timestamp(value) if isinstance(value, datetime) else value

    @staticmethod
    def _redacted(chunk: Chunk) -> str:
        who = chunk.speaker or chunk.source_name or "a source"
        return f"[redacted summary: {who} recorded something on {format_day(chunk.occurred_at)}]"

    @staticmethod
    def _compose(evidence: list[dict[str, Any]], citations: list[dict[str, Any]]) -> dict[str, Any]:
        """The extractive composer: the best cited evidence, quoted, each with its citation."""
        parts, used = [], []
        for item in evidence[:3]:
            citation = citations[item["citation"]]
            parts.append(f"{item['text']} [{citation['id']}]")
            used.append(citation["id"])
        return {"text": " ".join(parts), "citations": used, "composer": "extractive"}

    def _structured(self: Service, schema: dict[str, Any], memories: list[Any], brain: Brain) -> dict[str, Any]:
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            return {"status": "unavailable", "value": None, "reason": f"schema: not a valid JSON Schema ({exc.message})"}
        properties = schema.get("properties")
        if schema.get("type") != "object" or not isinstance(properties, dict) or not properties:
            return {
                "status": "unavailable",
                "value": None,
                "reason": "schema: only object schemas with properties can be filled from Memories",
            }
        value: dict[str, Any] = {}
        cited: dict[str, list[str]] = {}
        self_name = (brain.self_name or "").casefold()
        for name, spec in properties.items():
            matches = [m for m in memories if m.attribute == name and m.value]
            matches.sort(key=lambda m: ((m.owner or "").casefold() != self_name, -m.valid_from.timestamp()))
            if not matches:
                continue
            if isinstance(spec, dict) and spec.get("type") == "array":
                value[name] = [m.value for m in matches]
                cited[name] = [m.memory_id for m in matches]
            else:
                value[name] = matches[0].value
                cited[name] = [matches[0].memory_id]
        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as exc:
            return {
                "status": "unavailable",
                "value": None,
                "reason": f"the cited Memories do not satisfy the schema: {exc.message}",
            }
        return {"status": "ready", "value": value, "reason": None, "memory_ids": cited}


def context_frames(context: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE frames of a thorough Context, in order (see openapi.yaml)."""
    yield "context.started", {"id": context["id"], "watermark": context["watermark"]}
    for item in context.get("evidence", []):
        yield "context.evidence", {"item": item}
    answer = context.get("answer")
    if answer:
        yield "context.answer.delta", {"text": answer["text"], "citations": answer["citations"]}
    yield "context.completed", {"context": context}
