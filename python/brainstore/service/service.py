"""Service: the engine's one face, over components that own what they hold.

``Service(store)`` is an engine (the in-memory conformance engine over a MemoryStore, the database
engine over a DuckDBStore). It builds its components and passes each what it needs; it holds no rule
of its own:

- :class:`~brainstore.service.writes.Writes`: Brains, Records, Objects, idempotency and erasure
- :class:`~brainstore.service.derivation.Derivation`: the fair, batched worker over the memory rules
- :class:`~brainstore.service.evidence.EvidenceIndexes`: every Brain's indexes and the embedder
- :class:`~brainstore.service.memories.MemoryReads`: listMemories, getMemory, Profile, Census
- :class:`~brainstore.service.context.Contexts`: createContext and the Contexts that wait
- :class:`~brainstore.service.traces.Traces`: the bounded, per-namespace trace buffers

Methods take validated values and return contract-shaped dicts (or a :class:`Reply` for writes). They
raise :class:`brainstore.errors.BrainstoreError` with the spec's codes and never know about HTTP.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Collection, Mapping
from typing import Any

from brainstore.config import Config
from brainstore.derive import Extractor, default_extractor
from brainstore.domain import Principal
from brainstore.errors import error
from brainstore.ids import new_id
from brainstore.retrieval.embedder import Embedder
from brainstore.service.common import Clock, Watermarks, resolve_brain, shared_store, utcnow
from brainstore.service.context import Contexts, readable_trace
from brainstore.service.derivation import Derivation
from brainstore.service.evidence import EvidenceIndexes
from brainstore.service.memories import MemoryReads
from brainstore.service.planner import MemoryRules
from brainstore.service.traces import Traces
from brainstore.service.views import brain_view
from brainstore.service.visibility import Visibility
from brainstore.service.writes import Writes
from brainstore.store.base import Store

# The namespace of each Brain derivation schedules, held: at most this many, the first held given up first
# (read again from the store). A key making Brain after Brain grew it without bound.
NAMESPACES_HELD = 1 << 16


class Service:
    def __init__(
        self,
        store: Store,
        *,
        config: Config | None = None,
        watermark_secret: bytes | None = None,
        clock: Clock = utcnow,
        extractor: Extractor | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.config = config or Config(engine=store.kind)
        self.clock = clock
        self.watermarks = Watermarks(store, watermark_secret or secrets.token_bytes(32))
        self.visibility = Visibility(hosted=self.config.hosted)
        self.traces = Traces(self.config.trace_buffer, erasures_since=self._erasures_since)
        self.evidence = EvidenceIndexes(
            store,
            index_root=self.config.data_dir / "index" if store.kind != "memory" else None,
            embedder=embedder,
            embedder_spec=self.config.embedder,
            resident_chunks=self.config.resident_chunks,
        )
        self.rules = MemoryRules(clock, new_id)
        self.memories = MemoryReads(store, visibility=self.visibility, watermarks=self.watermarks)
        self.derivation = Derivation(
            store,
            self.evidence,
            self.rules,
            extractor or default_extractor(),
            namespace_of=self._namespace_of,
            on_scan=self.traces.catch_up,
        )
        self.writes = Writes(
            store,
            hosted=self.config.hosted,
            clock=clock,
            watermarks=self.watermarks,
            evidence=self.evidence,
            derivation=self.derivation,
            rules=self.rules,
            traces=self.traces,
            forget_rederive_progress=self.config.forget_rederive_progress,
        )
        self.contexts = Contexts(
            store,
            evidence=self.evidence,
            derivation=self.derivation,
            memories=self.memories,
            traces=self.traces,
            watermarks=self.watermarks,
            visibility=self.visibility,
            clock=clock,
            purposes=self.config.purposes,
        )
        self.derivation.on_applied = self.contexts.on_applied
        self._namespaces: dict[str, str] = {}  # brain uid -> namespace, at most NAMESPACES_HELD
        self._namespaces_lock = threading.Lock()

    def _erasures_since(self, since: Mapping[str, int]) -> Mapping[str, tuple[int, Collection[str]] | None]:
        """Traces follow other processes' deletes (none without a shared store)."""
        shared = shared_store(self.store)
        return shared.erasures_since(since) if shared is not None else {}

    def _namespace_of(self, brain_uid: str) -> str | None:
        held = self._namespaces.get(brain_uid)
        if held is None:
            brain = self.store.brain_by_uid(brain_uid)
            if brain is None:
                return None
            held = brain.namespace
            with self._namespaces_lock:
                self._namespaces[brain_uid] = held
                while len(self._namespaces) > NAMESPACES_HELD:  # the first held goes first
                    del self._namespaces[next(iter(self._namespaces))]
        return held

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.evidence.start()
        self.contexts.start()
        self.derivation.start()

    def stop(self) -> None:
        self.derivation.stop()
        self.contexts.stop()
        self.evidence.stop()
        self.evidence.save()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Until every queued derivation is done (tests, import, benches)."""
        return self.derivation.wait_idle(timeout)

    # --- brains, records, objects ----------------------------------------------------------------------
    def create_brain(self, principal: Principal, brain_id: str, **kw: Any) -> Any:
        return self.writes.create_brain(principal, brain_id, **kw)

    def get_brain(self, principal: Principal, brain_id: str) -> dict[str, Any]:
        return brain_view(resolve_brain(self.store, principal, brain_id))

    def forget_brain(self, principal: Principal, brain_id: str) -> Any:
        return self.writes.forget_brain(principal, brain_id)

    def remember_record(self, principal: Principal, brain_id: str, **kw: Any) -> Any:
        return self.writes.remember_record(principal, brain_id, **kw)

    def get_record(self, principal: Principal, brain_id: str, record_id: str) -> dict[str, Any]:
        return self.writes.get_record(principal, brain_id, record_id)

    def forget_record(self, principal: Principal, brain_id: str, record_id: str) -> Any:
        return self.writes.forget_record(principal, brain_id, record_id)

    def accept_object(self, principal: Principal, brain_id: str, **kw: Any) -> Any:
        return self.writes.accept_object(principal, brain_id, **kw)

    def get_object(self, principal: Principal, brain_id: str, type_: str, key: str) -> dict[str, Any]:
        return self.writes.get_object(principal, brain_id, type_, key)

    # --- reads -------------------------------------------------------------------------------------------
    def list_memories(self, principal: Principal, brain_id: str, **kw: Any) -> dict[str, Any]:
        return self.memories.list_memories(principal, brain_id, **kw)

    def get_memory(self, principal: Principal, brain_id: str, memory_id: str) -> dict[str, Any]:
        return self.memories.get_memory(principal, brain_id, memory_id)

    def get_profile(self, principal: Principal, brain_id: str, *, limit: int) -> dict[str, Any]:
        return self.memories.get_profile(principal, brain_id, limit=limit)

    def get_census(self, principal: Principal, brain_id: str) -> dict[str, Any]:
        return self.memories.get_census(principal, brain_id)

    def create_context(self, principal: Principal, brain_id: str, request: dict[str, Any], *, watermark: str | None) -> Any:
        return self.contexts.create_context(principal, brain_id, request, watermark=watermark)

    # --- traces -----------------------------------------------------------------------------------------
    def list_traces(self, principal: Principal, brain_id: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        self.traces.catch_up(brain.uid)
        found, next_cursor = self.traces.page(principal.namespace, brain.id, limit, cursor, brain.uid)
        data = [readable_trace(trace, principal) for trace in found]
        return {"object": "list", "data": data, "has_more": next_cursor is not None, "next_cursor": next_cursor}

    def get_trace(self, principal: Principal, brain_id: str, trace_id: str) -> dict[str, Any]:
        brain = resolve_brain(self.store, principal, brain_id)
        self.traces.catch_up(brain.uid)
        trace = self.traces.get(trace_id, principal.namespace, brain.id, brain.uid)
        if trace is None:
            raise error("trace_not_found", f"trace_id: {trace_id!r} is not in the recent trace buffer")
        return readable_trace(trace, principal)
