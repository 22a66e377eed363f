"""Contexts: createContext, fast and thorough, and the Contexts that wait for a Brain-Watermark.

Rules kept here:
- fast never composes: it returns cited evidence and asserts nothing; its one model call is the query
  embedding. thorough composes an extractive answer from the served, cited evidence.
- The evidence window is selected whether or not evidence is returned: ``include: [memories]`` gets the
  Memories whose whole lineage lies inside it.
- ONE ledger: every served component (evidence, memories, objects, profile, structured, answer) is
  counted on the text actually served (redactions included) with the real tokenizer, in that order of
  priority, and ``budget.tokens.used`` never exceeds ``budget.tokens.limit``. ``unknowns`` are computed
  on served text only (a redacted Record never tells whether it holds a word).
- A miss is a ready Context with no evidence and an explicit unknown, never an error; time that ran out
  is said as such.
- filter.since/until/sources are enforced on evidence and on the Profile; subjects/owner/sensitivity_lte
  are recorded only. Visibility applies through :mod:`brainstore.service.visibility`.
- With a Brain-Watermark the Context is at or after it, or a 202 pending Context completed in the
  background once derivation reaches it (read with getTrace). Waiting holds no thread; completions are
  scheduled fairly across namespaces, so one tenant's waiting Contexts never make another's answer 202.
  A namespace may have WATERMARK_WAITERS waiting (one more is 429), each holding its request pickled;
  one that cannot be completed has a trace that says to send it again, never pending for ever.
- Several processes on one database: a watermark may come from a write another process derives. Whether
  it is reached is read from the store (``Derivation.pending_through``), the inline wait and the sweep
  look again (no local derivation will wake them), and the Brain's cached
  index catches up to the watermark from the store before the Context is assembled
  (``EvidenceIndexes.catch_up``); without a watermark it catches up to what was committed when the
  Context started (an erasure on another node is never served from this node's cache).
"""

from __future__ import annotations

import json
import logging
import pickle
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from brainstore import kernels
from brainstore.derive import named_periods
from brainstore.domain import Brain, MemoryRevision, Principal
from brainstore.errors import error, invalid
from brainstore.ids import new_id
from brainstore.retrieval.chunking import format_day
from brainstore.retrieval.index import BrainIndex, ChunkFilter
from brainstore.retrieval.pipeline import (
    Candidate,
    Passage,
    Retrieval,
    content_terms,
    embedded_query,
    retrieve,
    transcript,
)
from brainstore.service.answer import Composer, ExtractiveComposer, ServedPassage
from brainstore.service.common import (
    Clock,
    Reply,
    Watermarks,
    brain_not_found,
    require,
    resolve_brain,
    shared_store,
)
from brainstore.service.derivation import Derivation
from brainstore.service.evidence import EvidenceIndexes
from brainstore.service.fair import FairExecutor, NamespaceBusy
from brainstore.service.memories import MemoryReads, eligible_at
from brainstore.service.structured import Fact, LazyFacts, SchemaRefused, compile_schema, fill
from brainstore.service.traces import Traces
from brainstore.service.views import object_view, timestamp
from brainstore.service.visibility import Visibility
from brainstore.store.base import Store, StoreFeature

log = logging.getLogger("brainstore.context")

FAST_MS = 250
THOROUGH_SYNC_MS = 5000
# A Context refused because its project has a full queue of thorough Contexts, or of Contexts waiting for
# a Brain-Watermark, is worth sending again after this.
BUSY_RETRY_SECONDS = 1.0
PENDING_WAIT_SECONDS = 120.0
# A project may have this many Contexts waiting for a Brain-Watermark (the request's own wait, then the
# 202's until derivation reaches it or PENDING_WAIT_SECONDS pass); one more is refused. Each holds its
# request: without a bound, one key's 150 Contexts with a MiB of filter.subjects held 1.2 GiB of the
# worker, and their completions past the executor's queue of 64 a project were dropped.
WATERMARK_WAITERS = 64
# With a Brain-Watermark not yet reached, the request waits this share of its ms budget (at most
# MAX_SYNC_WAIT seconds) for derivation before it answers 202: a write is usually derived in tens of
# milliseconds, so a client reading its own write right away mostly gets a 200.
SYNC_WAIT_SHARE = 0.6
MAX_SYNC_WAIT = 2.0
COMPONENT_SHARE = 4  # with memories/objects/profile requested, a quarter of the budget is kept for them
# A Context's objects come from the Brain's first objects by type and key, at most this many: it read and
# tokenized every object (5,000 objects of 200 words: 335 ms a Context, and a tenant may write more).
CONTEXT_OBJECTS = 1_000
# ... and of those, only values the tokens left could hold at this many bytes of stored JSON a token, read
# up to that many bytes in all: reading every Object whatever its size took 5.2 s and 500 MiB of the
# worker for 80 values of 1 MiB. Stored JSON (compact) is 0.7-2 bytes a served token for lists, numbers
# and records, 8 for one long run of a letter; a value denser than 16 (a long run of spaces: 128) is
# passed over though it might fit.
OBJECT_BYTES_A_TOKEN = 16
# The memory lane's weight in reciprocal-rank fusion. On LoCoMo it measured 0 to -0.3 points (weights
# 0.1 and 0.25 against 0, through the API); it is kept small for the facts and corrections LoCoMo does
# not exercise.
MEMORY_LANE_WEIGHT = 0.25
# With a shared store, how often a request waiting inline looks whether another process's derivation
# reached its watermark (the sweep, every SWEEP_SECONDS, looks for the Contexts that answered 202).
SHARED_POLL_SECONDS = 0.05
SWEEP_SECONDS = 0.5
# Times a Context whose trace would outlive a Record forgotten during its assembly is assembled again.
ASSEMBLY_ATTEMPTS = 3
# A query names a period or two ("in October 2023", "from 2015 to 2018"; none of LoCoMo's 1,986
# questions has more than two time expressions): only its first this many are looked at. Each may cost
# two dateparser calls of about a millisecond, before any deadline is looked at: a 10,000-character
# query of numeric dates took 1.2 s of CPU whatever its budget.ms.
QUERY_TIME_EXPRESSIONS = 8
# The scope each component of a Context needs besides createContext's own context:read: what getObject,
# listMemories and getProfile refuse a key is not served to it as a Context either (a key with only
# context:read read Objects, Memories and the Profile through include). A schema is filled from
# Memories. Evidence (Record passages) needs context:read only.
COMPONENT_SCOPES = {"memories": "memories:read", "objects": "objects:read", "profile": "memories:read"}
SCHEMA_SCOPE = "memories:read"


def require_component_scopes(principal: Principal, request: dict[str, Any]) -> None:
    """403 missing_scope, naming the scope, when ``request`` asks for a component the key may not read
    by its own route. Asked before any work: no wait for a watermark, no trace, no 202 to poll."""
    wanted = [(COMPONENT_SCOPES[item], f"include {item}") for item in request["include"] if item in COMPONENT_SCOPES]
    if request["schema"] is not None:
        wanted.append((SCHEMA_SCOPE, "schema"))
    for scope, asked in wanted:
        if scope not in principal.scopes:
            raise error("missing_scope", f"Authorization: this key lacks the scope {scope}, which {asked} needs")


# What a Context holds of each component when it was not asked for: a trace read by a key without the
# component's scope shows it so
_NOT_INCLUDED: dict[str, Any] = {"memories": [], "objects": [], "profile": None}


def readable_trace(trace: dict[str, Any], principal: Principal) -> dict[str, Any]:
    """``trace`` as ``principal`` may read it: its Context without the components the key's scopes do
    not cover (as require_component_scopes refuses them to it). A key with context:read alone read
    another key's Objects, Memories and Profile in the Contexts that key had asked for."""
    context = trace.get("context")
    if not context:
        return trace
    hidden = {item: empty for item, empty in _NOT_INCLUDED.items() if COMPONENT_SCOPES[item] not in principal.scopes}
    if SCHEMA_SCOPE not in principal.scopes and context.get("structured") is not None:
        hidden["structured"] = None
    if not any(context.get(item) != empty for item, empty in hidden.items()):
        return trace
    shown = {**context, **{item: empty for item, empty in hidden.items() if item in context}}
    shown["unknowns"] = _unknowns_shown(context, shown, structured_hidden="structured" in hidden)
    return {**trace, "context": shown}


# The reasons of the unknowns a Context's served text decides (see Contexts._assemble)
TERM_UNKNOWN = "no selected evidence mentions it"
SCHEMA_UNKNOWN = "no cited evidence or Memory gives this property of the schema"


def _unknowns_shown(context: dict[str, Any], shown: dict[str, Any], *, structured_hidden: bool) -> list[dict[str, Any]]:
    """The unknowns of ``context`` as ``shown`` without components: its query's terms judged again on
    the text it still shows, and the schema's unfilled properties gone with a hidden structured value.
    Judged on everything served, a term missing from them told a key without the scope that a hidden
    Object, Memory or Profile line said it, and the properties missing, which ones Memories filled.
    Terms are judged when the Context judged them (it had an evidence window), which a question
    unknown without terms or evidence leaves in doubt: none are listed then."""
    unknowns = context.get("unknowns") or []
    judged = bool(shown.get("evidence")) or not any("question" in u for u in unknowns)
    judged = judged or any(u.get("reason") == TERM_UNKNOWN for u in unknowns)
    texts = [item["text"] for item in shown.get("evidence") or []]
    texts += [memory["statement"] for memory in shown.get("memories") or []]
    texts += [json.dumps(obj["value"], ensure_ascii=False) for obj in shown.get("objects") or []]
    texts += [line["statement"] for line in (shown.get("profile") or {}).get("lines", [])]
    structured = shown.get("structured")
    if structured is not None and structured.get("status") == "ready":
        texts.append(json.dumps(structured["value"], ensure_ascii=False))
    if shown.get("answer"):
        texts.append(shown["answer"]["text"])
    return [
        *(u for u in unknowns if "question" in u),
        *(_terms_unknown(context["query"], texts) if judged else []),
        *(u for u in unknowns if u.get("reason") == SCHEMA_UNKNOWN and not structured_hidden),
    ]


def _terms_unknown(query: str, served_texts: Iterable[str]) -> list[dict[str, str]]:
    """The query's terms none of the served texts mentions."""
    served = "\n".join(served_texts).lower()
    return [{"term": term, "reason": TERM_UNKNOWN} for term in content_terms(query) if _stemmed(term) not in served]


def query_periods(query: str, at: datetime) -> list[tuple[float, float]]:
    """The periods ``query`` names, as Unix seconds (``retrieve``'s ``focus``), relative forms ("last
    week") resolved at ``at``. Resolved from the start of ``at``'s day: a day's queries then share
    dateparser's cache (a numeric date, "3/4/2021", otherwise costs a millisecond or two per query)."""
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    periods = named_periods(query, day, limit=QUERY_TIME_EXPRESSIONS)
    return [(start.timestamp(), end.timestamp()) for start, end in periods]


_RUNS = re.compile(r"[^ \t\n\r\f\v]+")


class Ledger:
    """The one token budget of a Context: what is charged is what is served."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def charge(self, *texts: str) -> bool:
        """Charge ``texts`` together, all or nothing; False (nothing charged) when they do not fit."""
        cost = sum(kernels.count_tokens(list(texts))) if texts else 0
        if cost > self.remaining:
            return False
        self.used += cost
        return True

    def charge_counted(self, tokens: int) -> bool:
        if tokens > self.remaining:
            return False
        self.used += tokens
        return True

    def fits(self, text: str) -> bool:
        return kernels.token_count(text) <= self.remaining

    def may_fit(self, *texts: str) -> bool:
        """False when ``texts`` surely cost more than what remains, without tokenizing them: cl100k_base
        never joins two runs of non-space characters in one token (its pre-tokenizer cuts before each
        word), so a text costs at least as many tokens as it has runs. Of a long text only the start is
        read, as much as holds more runs than what remains at 16 characters a run (words are shorter):
        a statement may be 175,000 characters, and the runs of its start are runs of it."""
        remaining = self.remaining
        for text in texts:
            remaining -= len(_RUNS.findall(text, 0, 16 * (remaining + 1)))
            if remaining < 0:
                return False
        return True


@dataclass
class _Waiter:
    brain: Brain
    namespace: str
    context_id: str
    # The request, pickled: every field is needed to complete it (filter.subjects, recorded only, is
    # echoed on the Context), but as Python objects a body of a MiB (120,000 short subjects) held
    # 8 MiB for up to PENDING_WAIT_SECONDS, pickled about its own size.
    packed_request: bytes
    target: int
    deadline: float
    reached: threading.Event = field(default_factory=threading.Event)
    claimed: bool = False  # by the request thread (answered inline) or by the background completion
    # The request thread still waits for it: it answers the Context itself once the watermark is
    # reached. Only a waiter it gave up on (answered 202) is completed in the background.
    inline: bool = True
    queued: bool = False  # its background completion is submitted (the sweep would submit it again)

    @property
    def request(self) -> dict[str, Any]:
        return pickle.loads(self.packed_request)


def _lineage_in(memory: MemoryRevision, window_records: set[str]) -> bool:
    """Whether a Memory's whole lineage is in the evidence window. A citation of a Record outside it
    still counts when it quotes verbatim what a citation inside it quotes: the same words said twice
    (the window keeps one of two exact duplicates), not more material."""
    inside = {c.quote for c in memory.citations if c.record_id in window_records}
    return bool(inside) and all(c.record_id in window_records or c.quote in inside for c in memory.citations)


class Contexts:
    def __init__(
        self,
        store: Store,
        *,
        evidence: EvidenceIndexes,
        derivation: Derivation,
        memories: MemoryReads,
        traces: Traces,
        watermarks: Watermarks,
        visibility: Visibility,
        clock: Clock,
        purposes: tuple[str, ...],
        composer: Composer | None = None,
    ) -> None:
        self.store = store
        self.evidence = evidence
        self.derivation = derivation
        self.memories = memories
        self.traces = traces
        self.watermarks = watermarks
        self.visibility = visibility
        self.clock = clock
        self.purposes = purposes
        self.composer: Composer = composer or ExtractiveComposer(content_terms)
        self._completions: FairExecutor | None = None
        self._waiters: dict[str, list[_Waiter]] = {}
        self._waiting: Counter[str] = Counter()  # the waiters of each namespace
        self._waiters_lock = threading.Lock()
        self._sweeper: threading.Thread | None = None
        self._preloader: threading.Thread | None = None
        self._stopping = threading.Event()

    # --- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        if self._completions is None:
            self._completions = FairExecutor(2, name="brainstore-context")
            self._stopping.clear()
            self._sweeper = threading.Thread(target=self._sweep, name="brainstore-context-sweep", daemon=True)
            self._sweeper.start()
            # The saved indexes load in the background from the start, so no Context waits on disk.
            self._preloader = threading.Thread(
                target=self.evidence.preload, args=(self._stopping,), name="brainstore-index-preload", daemon=True
            )
            self._preloader.start()

    def wait_preloaded(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the saved indexes to be loaded; whether they are."""
        preloader = self._preloader
        if preloader is not None:
            preloader.join(timeout=timeout)
            return not preloader.is_alive()
        return True

    def stop(self) -> None:
        self._stopping.set()
        if self._sweeper is not None:
            self._sweeper.join(timeout=5)
            self._sweeper = None
        if self._preloader is not None:
            self._preloader.join(timeout=60)  # it stops between Brains
            self._preloader = None
        if self._completions is not None:
            self._completions.shutdown()
            self._completions = None

    @property
    def completions(self) -> FairExecutor:
        if self._completions is None:
            self.start()
        assert self._completions is not None
        return self._completions

    # --- createContext ---------------------------------------------------------------------------------
    def create_context(
        self, principal: Principal, brain_id: str, request: dict[str, Any], *, watermark: str | None
    ) -> Reply:
        require_component_scopes(principal, request)
        brain = resolve_brain(self.store, principal, brain_id)
        require(self.store, StoreFeature.CHUNKS)
        if request["purpose"] not in self.purposes:
            raise invalid(
                "purpose", f"unknown policy {request['purpose']!r}; configured: {', '.join(self.purposes)}"
            )
        target = self.watermarks.read(brain, watermark, "Brain-Watermark") if watermark is not None else None
        context_id = new_id("ctx")
        namespace = principal.namespace
        started = time.monotonic()
        ms_limit = self._ms_limit(request)
        if target is not None and not self._reached(brain, target):
            waiter = _Waiter(
                brain, namespace, context_id, pickle.dumps(request), target, time.monotonic() + PENDING_WAIT_SECONDS
            )
            self._register(waiter)
            try:
                self._wait_inline(waiter, min(ms_limit / 1000 * SYNC_WAIT_SHARE, MAX_SYNC_WAIT))
            except BaseException:
                self._give_up(waiter)
                raise
            if not self._claim(waiter, inline=True):
                pending = self._pending(brain, context_id, request, "waiting for derivation to reach Brain-Watermark")
                self._trace(namespace, brain, context_id, pending, None, 202, replace=False)
                return Reply(202, pending, None)
        if request["mode"] == "thorough" and ms_limit > THOROUGH_SYNC_MS:
            try:
                future = self.completions.submit(
                    namespace, lambda: self._assemble_and_trace(brain, namespace, context_id, request, started)
                )
            except NamespaceBusy:
                raise error(
                    "too_many_requests",
                    f"mode: this project already has {self.completions.per_namespace} thorough Contexts waiting "
                    "to be assembled; send this one again once some are done",
                    retry_after_seconds=BUSY_RETRY_SECONDS,
                ) from None
            try:
                context = future.result(timeout=THOROUGH_SYNC_MS / 1000)
                return Reply(200 if context["status"] == "ready" else 202, context, None)
            except FutureTimeout:
                pending = self._pending(brain, context_id, request, "past the synchronous budget; read it with getTrace")
                self._trace(namespace, brain, context_id, pending, None, 202, replace=False)
                return Reply(202, pending, None)
        return self._answer(brain, namespace, context_id, request, started)

    def _reached(self, brain: Brain, target: int) -> bool:
        if self.derivation.pending_through(brain.uid, target):
            return False
        self.evidence.settled(brain.uid)
        self.evidence.catch_up(brain.uid, target)  # what other processes derived, up to the watermark
        return True

    def _wait_inline(self, waiter: _Waiter, seconds: float) -> None:
        if shared_store(self.store) is None:
            waiter.reached.wait(seconds)  # this process's derivation sets it (on_applied)
            return
        deadline = time.monotonic() + seconds
        while not waiter.reached.wait(min(SHARED_POLL_SECONDS, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return
            if self._reached(waiter.brain, waiter.target):
                waiter.reached.set()
                return

    # --- waiting for a watermark -----------------------------------------------------------------------
    def _register(self, waiter: _Waiter) -> None:
        with self._waiters_lock:
            if self._waiting[waiter.namespace] >= WATERMARK_WAITERS:
                raise error(
                    "too_many_requests",
                    f"Brain-Watermark: this project already has {WATERMARK_WAITERS} Contexts waiting for "
                    "derivation to reach their watermark; send this one again once some are done",
                    retry_after_seconds=BUSY_RETRY_SECONDS,
                )
            self._waiters.setdefault(waiter.brain.uid, []).append(waiter)
            self._waiting[waiter.namespace] += 1
        if self._reached(waiter.brain, waiter.target):  # reached between the check and the registration
            waiter.reached.set()

    def _claim(self, waiter: _Waiter, *, inline: bool) -> bool:
        """Whoever claims a reached waiter first assembles it; True when it is this caller's. The request
        thread (``inline``) claims it when the watermark was reached while it waited; when it was not, it
        gives the waiter up to the background completion, which until then leaves it to the request
        thread (on_applied): completed in the background, it was answered 202 although the watermark
        had been reached while the client waited."""
        with self._waiters_lock:
            if inline and not waiter.reached.is_set():
                waiter.inline = False  # answered 202: derivation reaching it later completes it
                return False
            if waiter.claimed:
                return False
            waiter.claimed = True
            held = self._waiters.get(waiter.brain.uid, [])
            if waiter in held:
                held.remove(waiter)
                if not held:
                    del self._waiters[waiter.brain.uid]
                self._waiting[waiter.namespace] -= 1
                if not self._waiting[waiter.namespace]:
                    del self._waiting[waiter.namespace]
            return True

    def _give_up(self, waiter: _Waiter) -> None:
        """The request thread failed while it waited: the waiter is the background's to complete."""
        with self._waiters_lock:
            waiter.inline = False
            late = waiter.reached.is_set() and not waiter.claimed  # on_applied passed it by already
        if late:
            self._complete_later(waiter)

    def on_applied(self, brain_uids: set[str]) -> None:
        """Called by derivation after it applied work of these Brains: wake what now may go on."""
        with self._waiters_lock:
            waiting = [w for uid in brain_uids for w in self._waiters.get(uid, ())]
        for waiter in waiting:
            if not waiter.reached.is_set() and self._reached(waiter.brain, waiter.target):
                waiter.reached.set()  # before reading inline: see _claim
                with self._waiters_lock:
                    background = not waiter.inline
                if background:
                    self._complete_later(waiter)

    def _complete_later(self, waiter: _Waiter, *, expired: bool = False) -> None:
        # A waiter its request thread gave up on (see _claim), or one that expired.
        with self._waiters_lock:
            if waiter.queued:
                return
            waiter.queued = True

        def complete() -> None:
            if not self._claim(waiter, inline=False):
                return
            if expired:
                reason = f"derivation did not reach the Brain-Watermark within {PENDING_WAIT_SECONDS:.0f} s"
                self._trace_unfinished(waiter, reason)
                return
            self._assemble_and_trace(waiter.brain, waiter.namespace, waiter.context_id, waiter.request, time.monotonic())

        try:
            self.completions.submit(waiter.namespace, complete)
        except NamespaceBusy:
            # The project's thorough Contexts share the queue (its waiters alone never fill it): the
            # trace says it was not completed, or it would say pending for ever.
            if self._claim(waiter, inline=False):
                self._trace_unfinished(waiter, "its project had too many Contexts waiting to be assembled")
        except RuntimeError:
            log.warning("context completion of %s dropped: the service is stopping", waiter.context_id)

    def _trace_unfinished(self, waiter: _Waiter, reason: str) -> None:
        pending = self._pending(waiter.brain, waiter.context_id, waiter.request, f"{reason}; send the Context again")
        self._trace(waiter.namespace, waiter.brain, waiter.context_id, pending, None, 202)

    def _sweep(self) -> None:
        while not self._stopping.wait(SWEEP_SECONDS):
            now = time.monotonic()
            with self._waiters_lock:
                expired = [w for ws in self._waiters.values() for w in ws if w.deadline <= now and not w.claimed]
                waiting = set(self._waiters)
            for waiter in expired:
                self._complete_later(waiter, expired=True)
            if waiting and shared_store(self.store) is not None:
                try:  # derivation in another process wakes nobody here
                    self.on_applied(waiting)
                except Exception:
                    log.exception("checking waiting Contexts against the shared store failed")

    # --- shapes ------------------------------------------------------------------------------------------
    def _pending(self, brain: Brain, context_id: str, request: dict[str, Any], reason: str) -> dict[str, Any]:
        return {
            "id": context_id,
            "object": "context",
            "query": request["query"],
            "status": "pending",
            "reason": reason,
            "mode": request["mode"],
            "purpose": request["purpose"],
            "watermark": self.watermarks.issue(brain),
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
        self,
        namespace: str,
        brain: Brain,
        context_id: str,
        context: dict[str, Any],
        retrieval: Retrieval | None,
        status: int,
        record_ids: frozenset[str] = frozenset(),
        mark: int | None = None,
        head: int = 0,
        *,
        replace: bool = True,
    ) -> bool:
        """Hold the trace unless what it names was forgotten since ``mark`` (taken now if None), or its
        Brain was: False then. A forgotten Brain's traces are erased after its rows, so a Brain still in
        the store after the mark has not had them erased before it. ``head``: the Brain's change
        sequence its Context read at (another process's erasures after it drop the trace). Without
        ``replace`` (a 202's pending trace), not in the place of the trace its background completion
        may have held already: the 202 is written once that completion may run, and replacing its
        ready trace left the Context pending for every getTrace the 202 says to poll."""
        if mark is None:
            mark = self.traces.mark()
        if self.store.brain_by_uid(brain.uid) is None:
            return False
        return self.traces.add(
            context_id,
            namespace,
            brain.id,
            self._trace_of(context_id, context, retrieval, status, timestamp(self.clock())),
            record_ids=self._named(retrieval, record_ids),
            mark=mark,
            brain_uid=brain.uid,
            head=head,
            replace=replace,
        )

    @staticmethod
    def _trace_of(
        context_id: str, context: dict[str, Any], retrieval: Retrieval | None, status: int, created_at: str | None
    ) -> dict[str, Any]:
        return {
            "id": context_id,
            "object": "trace",
            "kind": "context",
            "created_at": created_at,
            "operation": "createContext",
            "http_status": status,
            "error": None,
            "lanes": retrieval.lanes if retrieval else [],
            "scores": Contexts._scores(retrieval.candidates[:100], retrieval) if retrieval else [],
            "citations": context.get("citations", []),
            "budget": context.get("budget"),
            "cost": context.get("cost"),
            "context": context,
        }

    @staticmethod
    def _scores(candidates: list[Candidate], retrieval: Retrieval) -> list[dict[str, Any]]:
        lanes = retrieval.lane_ranks([c.chunk.id for c in candidates])
        return [
            {"chunk_id": str(c.chunk.id), "record_id": c.chunk.record_id, "lanes": found, "final": c.score}
            for c, found in zip(candidates, lanes, strict=True)
        ]

    @staticmethod
    def _named(retrieval: Retrieval | None, quoted: frozenset[str]) -> frozenset[str]:
        """The Records a trace names (its scores) and quotes: forgetting one drops the trace."""
        return quoted | frozenset(c.chunk.record_id for c in (retrieval.candidates[:100] if retrieval else []))

    def _assemble_and_trace(
        self, brain: Brain, namespace: str, context_id: str, request: dict[str, Any], started: float
    ) -> dict[str, Any]:
        """A Context and its trace. A Record it quotes forgotten before the trace is held (the trace would
        outlive it): assembled again, which no longer finds it, at most ASSEMBLY_ATTEMPTS times; then
        its trace says to send it again, and so does what is returned (a pending Context: the last
        assembly quotes a Record whose forget returned). A completion in the background is read only
        from its trace."""
        for _ in range(ASSEMBLY_ATTEMPTS):
            mark = self.traces.mark()  # before anything is read that the trace may quote
            # A queued Context can start long after its Brain was forgotten (and made again under its id:
            # the old Brain's trace would show there).
            head = self._require_live(brain)
            context, retrieval, record_ids = self._assemble(brain, context_id, request, started, head)
            if self._trace(namespace, brain, context_id, context, retrieval, 200, record_ids, mark, head):
                return context
        reason = "Records it quoted were forgotten while it was assembled; send the Context again"
        pending = self._pending(brain, context_id, request, reason)
        self._trace(namespace, brain, context_id, pending, None, 202)
        return pending

    def _answer(self, brain: Brain, namespace: str, context_id: str, request: dict[str, Any], started: float) -> Reply:
        """A Context answered on the request's thread; its trace is written after the answer is (see
        Reply.then), its place held before, so that reading it at once finds it. No place is held when
        a Record it quotes was forgotten meanwhile: the trace would outlive it."""
        mark = self.traces.mark()  # before anything is read that the trace may quote
        head = self._require_live(brain)
        context, retrieval, record_ids = self._assemble(brain, context_id, request, started, head)
        created_at = timestamp(self.clock())
        named = self._named(retrieval, record_ids)
        self.traces.reserve(context_id, namespace, brain.id, named, mark, brain_uid=brain.uid, head=head)

        def write_trace() -> None:
            trace = None
            try:
                trace = self._trace_of(context_id, context, retrieval, 200, created_at)
            finally:
                self.traces.write(context_id, namespace, trace)  # None gives the place up: no reader waits on

        return Reply(200, context, None, then=write_trace)

    def _require_live(self, brain: Brain) -> int:
        """The Brain's change sequence end, or brain_not_found when ``brain`` was forgotten since the
        request found it. Asked after a trace mark: a Brain forgotten later has its traces erased after
        the mark, which drops this one."""
        head = self.store.live_seq(brain.uid)
        if head is None:
            raise brain_not_found(brain.id)
        return head

    # --- assembly ------------------------------------------------------------------------------------------
    @staticmethod
    def _eligible(request: dict[str, Any]) -> ChunkFilter | None:
        flt = request["filter"]
        since, until, sources = flt.get("since"), flt.get("until"), flt.get("sources")
        if since is None and until is None and sources is None:
            return None
        return ChunkFilter(
            since=since.timestamp() if since is not None else None,
            until=until.timestamp() if until is not None else None,
            sources=frozenset(sources) if sources is not None else None,
        )

    @staticmethod
    def _admitted(index: BrainIndex, flt: ChunkFilter | None) -> Callable[[str], bool]:
        """Whether a Record passes the request's filter, judged by its chunks in the index."""
        if flt is None:
            return lambda record_id: True

        def judge(record_id: str) -> bool:
            for chunk_id in index.record_chunks(record_id)[:1]:
                chunk = index.get(chunk_id)
                if chunk is None:
                    return False
                ts = chunk.occurred_at.timestamp()
                return (
                    (flt.since is None or ts >= flt.since)
                    and (flt.until is None or ts <= flt.until)
                    and (flt.sources is None or chunk.source_name in flt.sources)
                )
            return False

        # A schema asks of every Memory's Records (about 2 us each under the index's lock, 20,000
        # Memories on a Brain), and a Record gives several Memories.
        verdicts: dict[str, bool] = {}

        def admits(record_id: str) -> bool:
            verdict = verdicts.get(record_id)
            if verdict is None:
                verdict = verdicts[record_id] = judge(record_id)
            return verdict

        return admits

    def _assemble(
        self, brain: Brain, context_id: str, request: dict[str, Any], started: float, head: int
    ) -> tuple[dict[str, Any], Retrieval, frozenset[str]]:
        """The Context of ``request`` at ``head``, the Brain's change sequence end read after the trace
        mark: the watermark it answers with, and how far the cached index catches up."""
        ms_limit = self._ms_limit(request)
        deadline = started + ms_limit / 1000
        watermark = self.watermarks.issue(brain, head)
        include = request["include"]
        ledger = Ledger(request["budget_tokens"])
        wants_components = any(i in include for i in ("memories", "objects", "profile")) or request["schema"] is not None
        window_budget = ledger.limit - (ledger.limit // COMPONENT_SHARE if wants_components else 0)

        self.evidence.catch_up(brain.uid, head=head)
        index = self.evidence.index(brain.uid)
        # On the request's own thread: handing it to a pool thread to overlap with the lexical lane
        # measured about 2 ms slower at the median on 2 cores.
        embedding = self.evidence.embed_query(embedded_query(index, request["query"])) if len(index) else None
        as_of = request["as_of"]
        at = as_of or self.clock()
        flt = self._eligible(request)
        retrieval = retrieve(
            index,
            request["query"],
            embedding,
            budget_tokens=max(window_budget, 0),
            deadline=deadline,
            eligible=flt,
            excluded=index.local_only() if self.visibility.hosted else frozenset(),
            now=at,
            focus=query_periods(request["query"], at),
            asker=brain.self_name,
            extra_lanes=[
                ("memory", lambda: self.evidence.memory_hits(brain.uid, index, request["query"], at), MEMORY_LANE_WEIGHT)
            ],
        )
        # The evidence window: what the budget selected, whether or not evidence is returned.
        window: list[tuple[Passage, str, str]] = []  # (passage, served text, quote)
        for passage in retrieval.selected:
            redacted = passage.chunk.visibility == "redacted_summary"
            quote = passage.text if redacted else self._quote(index, passage)
            if quote is None:
                continue  # its Record was forgotten while the Context was assembled
            window.append((passage, passage.text, quote))
        if len(window) < len(retrieval.selected):
            # The passage that named its day may be gone: the lines are told again without it.
            quotes = {p.chunk.id: quote for p, _, quote in window}
            runs = [[Candidate(c, p.score) for c in p.chunks] for p, _, _ in window]
            window = [(p, p.text, quotes[p.chunk.id]) for p in transcript(runs, retrieval.tokens_used, retrieval.short_names)]
        window_records = {p.chunk.record_id for p, _, _ in window}

        citations: list[dict[str, Any]] = []
        evidence: list[dict[str, Any]] = []
        served_texts: list[str] = []
        if "evidence" in include:
            for passage, text, quote in window:
                if not ledger.charge_counted(passage.tokens):
                    continue
                chunk, last = passage.chunk, passage.chunks[-1]
                redacted = chunk.visibility == "redacted_summary"
                span = {"start": chunk.start, "end": last.end}
                citations.append({"id": f"c{len(citations) + 1}", "record_id": chunk.record_id, "span": span, "quote": quote})
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
                served_texts.append(text)

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
        quoted: set[str] = set(window_records) if "evidence" in include else set()
        eligible: list[MemoryRevision] = []
        if wants_components:
            # The memories component takes only Memories whose lineage lies in the window: those citing
            # its Records are read, not the whole Brain (0.4 s at 20,000 Memories). A profile and a
            # schema draw on every Memory.
            if "profile" in include or request["schema"] is not None:
                current = self.store.all_memories(brain.uid, seq=head)
            elif "memories" in include:
                current = self.store.memories_citing_any(brain.uid, sorted(window_records), seq=head)
            else:
                current = []
            eligible = [m for m in current if m.status == "active" and m.citations and eligible_at(m, at)]

        # each component's statements served: one sentence may state two facts, each its own Memory
        # ("Alice is a nurse at Mercy": her job and her employer), whose words a component serves once
        served_statements: set[str] = set()
        profile_statements: set[str] = set()
        joined, joined_count = "", 0  # served_texts joined, when it had joined_count (it only grows)

        def unserved(quotes: Iterable[str]) -> list[str]:
            nonlocal joined, joined_count
            if joined_count != len(served_texts):
                joined, joined_count = "\n".join(served_texts), len(served_texts)
            return [quote for quote in quotes if quote not in joined]

        def charge_memory(view: dict[str, Any]) -> bool:
            """A Memory's statement, and the quotes of its citations that are not already served."""
            return ledger.charge(view["statement"], *unserved(c["quote"] for c in view["citations"]))

        def may_serve(statement: str, quotes: Callable[[], list[str]]) -> bool:
            """False when charge_memory() surely refuses the Memory: its view is not worth building (a
            budget nearly spent passed over 1,600 of a window's Memories only after viewing each). The
            statement's runs decide most, then its tokens (a name may be three tokens in one run), and
            the quotes are looked at only when it fits."""
            return (
                ledger.may_fit(statement)
                and ledger.fits(statement)
                and ledger.may_fit(statement, *unserved(quotes()))
            )

        if "memories" in include:
            in_window = [m for m in eligible if _lineage_in(m, window_records)]
            for memory, view in self.memories.served_if(brain, in_window, may_serve):
                if view["statement"] in served_statements:
                    continue
                if charge_memory(view):
                    view["in_conflict"] = bool(view["conflicts_with"])
                    context["memories"].append(view)
                    served_texts.append(view["statement"])
                    served_statements.add(view["statement"])
                    quoted.update(c.record_id for c in memory.citations)
        if "objects" in include:
            room = OBJECT_BYTES_A_TOKEN * ledger.remaining
            for obj in self.store.list_objects(brain.uid, limit=CONTEXT_OBJECTS, max_bytes=room):
                label, value = f"{obj.type}/{obj.key}: ", json.dumps(obj.value, ensure_ascii=False)
                if ledger.may_fit(label, value) and ledger.charge(label, value):
                    context["objects"].append(object_view(obj))
                    served_texts.append(value)
        admitted = self._admitted(index, flt)
        if "profile" in include:
            lines = []
            # A line charging surely refuses is passed over unviewed, as the memories are (may_serve, asked
            # about the quotes of the citations the line keeps): a Context with the profile built the
            # views of all 12,000 lines of a self (1.6-2.4 s) to serve the 43 its budget held.
            for line in self.memories.profile_lines(brain, eligible, as_of=as_of, wanted=may_serve, cited=admitted):
                line["citations"] = [c for c in line["citations"] if admitted(c["record_id"])]
                if line["statement"] in profile_statements:
                    continue
                if line["citations"] and charge_memory(line):
                    lines.append(line)
                    served_texts.append(line["statement"])
                    profile_statements.add(line["statement"])
                    quoted.update(c["record_id"] for c in line["citations"])
            context["profile"] = {
                "object": "profile",
                "brain_id": brain.id,
                "self": {"type": brain.self_type, "name": brain.self_name} if brain.self_name else None,
                "lines": lines,
                "has_more": False,
            }
        cost_embeddings = 1 if embedding is not None else 0
        unfilled: list[str] = []
        if request["schema"] is not None:
            bodies = {f"chk_{p.chunk.id}": p.body for p, _, _ in window}
            structured, unfilled, embedded, drawn_from = self._structured(
                request["schema"],
                brain,
                eligible,
                admitted,
                as_of,
                window_records,
                evidence,
                bodies,
                citations,
                ledger,
                deadline,
            )
            context["structured"] = structured
            quoted.update(drawn_from)
            cost_embeddings += embedded
            if structured["status"] == "ready":
                served_texts.append(json.dumps(structured["value"], ensure_ascii=False))
        if request["mode"] == "thorough" and evidence:
            # past the deadline, the answer is composed from the words alone (no model call)
            meaning = embedding if time.monotonic() < deadline else None
            answer = self._compose(request["query"], window, evidence, citations, ledger, meaning, as_of)
            if answer is not None:
                context["answer"] = answer
                served_texts.append(answer["text"])
                cost_embeddings += 1 if meaning is not None else 0

        cut = [lane["name"] for lane in retrieval.lanes if lane.get("cut")]
        unknowns: list[dict[str, Any]] = []
        if cut:
            unknowns.append(
                {
                    "question": request["query"],
                    "reason": f"the ms budget ({ms_limit} ms) ran out before the {', '.join(cut)} lane(s) ran; "
                    "a larger budget.ms may find more",
                }
            )
        if not window:
            if not cut:
                unknowns.append(
                    {"question": request["query"], "reason": "no eligible evidence was found; this does not mean it is false"}
                )
        else:
            unknowns += _terms_unknown(request["query"], served_texts)
        unknowns += [{"term": name, "reason": SCHEMA_UNKNOWN} for name in unfilled]
        context["unknowns"] = unknowns
        elapsed = round((time.monotonic() - started) * 1000, 2)
        context["budget"] = {
            "tokens": {"limit": ledger.limit, "used": ledger.used, "tokenizer": kernels.TOKENIZER_NAME},
            "ms": {"limit": ms_limit, "used": elapsed, "cut_lanes": cut},
        }
        context["cost"] = {"model_calls": cost_embeddings, "embedding_calls": cost_embeddings, "generative_calls": 0}
        return context, retrieval, frozenset(quoted)

    @staticmethod
    def _jsonable(value: Any) -> Any:
        return timestamp(value) if isinstance(value, datetime) else value

    @staticmethod
    def _quote(index: BrainIndex, passage: Passage) -> str | None:
        """The exact Record text a passage covers, sentences and the whitespace between them; None
        when its Record is gone."""
        return passage.chunk.text if len(passage.chunks) == 1 else index.quote(passage.chunks)

    def _compose(
        self,
        query: str,
        window: list[tuple[Passage, str, str]],
        evidence: list[dict[str, Any]],
        citations: list[dict[str, Any]],
        ledger: Ledger,
        embedding: Any,
        as_of: datetime | None,
    ) -> dict[str, Any] | None:
        by_record_chunk = {item["id"]: item for item in evidence}
        passages = []
        # Best first: the composer counts a passage's rank (the evidence is served in the order said).
        for passage, _, _ in sorted(window, key=lambda served: -served[0].score):
            item = by_record_chunk.get(f"chk_{passage.chunk.id}")
            if item is None:
                continue
            chunk = passage.chunk
            if as_of is not None and chunk.occurred_at > as_of:
                continue  # served as evidence whatever its date, as the structured value does not answer from it
            header = f"{chunk.speaker or chunk.source_name or 'a source'} ({format_day(chunk.occurred_at)})"
            passages.append(
                ServedPassage(
                    header,
                    passage.body,
                    citations[item["citation"]]["id"],
                    (chunk.occurred_at.timestamp(), chunk.id),
                    redacted=item["redacted"],
                )
            )
        answer = self.composer.compose(
            query,
            passages,
            fits=ledger.fits,
            query_vector=embedding,
            embed=self.evidence.embed if embedding is not None else None,
        )
        if answer is None or not ledger.charge(answer.text):
            return None
        return {"text": answer.text, "citations": answer.citations, "composer": answer.composer}

    # Phrase mining embeds a fact's candidate phrases: with less time than this left, a schema is
    # filled from the Memories' attributes alone (they need no model call).
    STRUCTURED_MIN_MS = 60

    def _structured(
        self,
        raw: dict[str, Any],
        brain: Brain,
        eligible: list[MemoryRevision],
        admitted: Callable[[str], bool],
        as_of: datetime | None,
        window_records: set[str],
        evidence: list[dict[str, Any]],
        bodies: dict[str, str],
        citations: list[dict[str, Any]],
        ledger: Ledger,
        deadline: float,
    ) -> tuple[dict[str, Any], list[str], int, set[str]]:
        """The structured component, the schema properties nothing filled (for unknowns), the
        embedding calls it made, and the Records cited by the Memories its value came from (a Memory
        may lie outside the evidence window: forgetting such a Record must erase the trace too).
        Filled only from served, cited material: the Memories this reader may see (with their
        citations) citing a Record the request's filter ``admitted``, as a profile line must, and, when
        evidence is served, its passages up to ``as_of`` (by citation id; ``bodies`` holds each served
        item's text without its header, by item id)."""
        try:
            schema = compile_schema(raw)
        except SchemaRefused as exc:
            return {"status": "unavailable", "value": None, "reason": exc.reason}, [], 0, set()
        me = (brain.self_name or "").casefold()
        # free text outside the window is not this question's material, nor is a Memory resting only on
        # Records the filter leaves out; a redacted Memory's words are not served, so no value may come
        # from them. With too little time left, only the Memories' attributes (no phrase of a text is
        # embedded then).
        text_facts = time.monotonic() * 1000 < deadline * 1000 - self.STRUCTURED_MIN_MS
        material = [
            m
            for m in eligible
            if (m.attribute is not None or (text_facts and _lineage_in(m, window_records)))
            and any(admitted(c.record_id) for c in m.citations)
        ]

        def is_mine(memory: MemoryRevision) -> bool:
            return bool(me) and (memory.owner or "").casefold() == me

        def memory_fact(memory: MemoryRevision) -> Fact:
            return Fact(
                text=memory.statement,
                source=memory.memory_id,
                attribute=memory.attribute,
                value=memory.value,
                owner_is_self=is_mine(memory),
                valid_from=memory.valid_from.timestamp(),
                negated=memory.negated,
            )

        def facts_of(items: list[MemoryRevision | Fact]) -> list[Fact | None]:
            """Passages as they are; Memories viewed (one read for all) and made facts."""
            memories = [item for item in items if isinstance(item, MemoryRevision)]
            served = {id(m) for m in self.memories.servable(brain, memories, words=True)} if memories else set()
            return [
                item if isinstance(item, Fact) else memory_fact(item) if id(item) in served else None
                for item in items
            ]

        def lazily(memories: list[MemoryRevision], passages: list[Fact]) -> LazyFacts[MemoryRevision | Fact]:
            items: list[MemoryRevision | Fact] = [*memories, *passages]
            return LazyFacts(
                items,
                times=[m.valid_from.timestamp() for m in memories] + [f.valid_from for f in passages],
                attributes=[m.attribute for m in memories] + [f.attribute for f in passages],
                make=facts_of,
            )

        passages: list[Fact] = []
        for item in evidence if text_facts else []:
            if item["redacted"]:
                continue
            speaker = (item.get("speaker") or "").casefold()
            when = datetime.fromisoformat(item["occurred_at"].replace("Z", "+00:00")).timestamp()
            if as_of is not None and when > as_of.timestamp():
                continue  # served as evidence whatever its date, but it tells nothing of as_of
            passages.append(
                Fact(bodies[item["id"]], citations[item["citation"]]["id"], owner_is_self=bool(me) and speaker == me, valid_from=when)
            )
        # fill() reads the self's facts alone when there are any, and the other people's only without
        # them; of either, only the newest few hundred: Memories are viewed and made facts only as it
        # reads them (a schema on a Brain of 20,000 Memories made them all, about 45-60 ms)
        mine: list[MemoryRevision] = []
        theirs: list[MemoryRevision] = []
        for memory in material:
            (mine if is_mine(memory) else theirs).append(memory)
        my_passages = [f for f in passages if f.owner_is_self]
        their_passages = [f for f in passages if not f.owner_is_self]

        calls = 0

        def embed(texts: list[str]) -> Any:
            nonlocal calls
            calls += 1
            return self.evidence.embed(texts)

        try:
            result = fill(
                schema,
                [],
                embed,
                self_name=brain.self_name,
                mine=lambda: lazily(mine, my_passages),
                others=lambda: lazily(theirs, their_passages),
            )
        except SchemaRefused as exc:
            return {"status": "unavailable", "value": None, "reason": exc.reason}, [], calls, set()
        if result.missing_required:
            reason = f"schema: no cited evidence or Memory gives the required {', '.join(result.missing_required)}"
            if not text_facts:
                reason += " (the ms budget left no time to read the evidence)"
            return {"status": "unavailable", "value": None, "reason": reason}, result.unfilled, calls, set()
        if not ledger.charge(json.dumps(result.value, ensure_ascii=False)):
            return (
                {"status": "unavailable", "value": None, "reason": "budget.tokens: no room left for the structured value"},
                [],
                calls,
                set(),
            )
        # a fact's source is its Memory's id or its passage's citation id ("c3")
        cited = {path: [s for s in sources if not s.startswith("mem_")] for path, sources in result.provenance.items()}
        memory_ids = {path: [s for s in sources if s.startswith("mem_")] for path, sources in result.provenance.items()}
        used = {memory_id for ids in memory_ids.values() for memory_id in ids}
        drawn_from = {c.record_id for m in material if m.memory_id in used for c in m.citations}
        return (
            {
                "status": "ready",
                "value": result.value,
                "reason": None,
                "citations": {path: ids for path, ids in cited.items() if ids},
                "memory_ids": {path: ids for path, ids in memory_ids.items() if ids},
            },
            result.unfilled,
            calls,
            drawn_from,
        )


def _stemmed(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def context_frames(context: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE frames of a thorough Context, in order (see openapi.yaml)."""
    yield "context.started", {"id": context["id"], "watermark": context["watermark"]}
    for item in context.get("evidence", []):
        yield "context.evidence", {"item": item}
    answer = context.get("answer")
    if answer:
        yield "context.answer.delta", {"text": answer["text"], "citations": answer["citations"]}
    yield "context.completed", {"context": context}
