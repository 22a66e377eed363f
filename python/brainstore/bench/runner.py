"""Running a budget benchmark through the HTTP contract: Brains in, questions asked, every call timed.

Both targets go through :class:`brainstore.client.Client`: a running server (``--url``), or the
embedded engine behind ``httpx.WSGITransport`` (:func:`embedded_client`), so the two measure the same
contract. Invariants:

- Every Brain the run creates is forgotten when the run ends, however it ends (an error, Ctrl-C,
  SIGTERM), unless the caller asked to keep them after a completed run. A Brain is registered for
  deletion before it is created, so an interrupted createBrain leaves nothing behind either.
- Turns are posted one at a time in conversation order: LoCoMo's turns of a session share one time,
  so the order they came in is what orders them in the index, and retrieval lifts a turn's
  neighbours by it. Each post carries an Idempotency-Key
  derived from the Brain and the turn, so a retried post never makes a second Record.
- 429 is retried after the server's retry_after_seconds with exponential backoff; a pending (202)
  Context is a miss, counted and reported, never retried into a ready one.
"""

from __future__ import annotations

import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from tqdm import tqdm

from brainstore.bench.loader import Conversation, Query, conversation_queries
from brainstore.client import Client
from brainstore.config import Config
from brainstore.errors import BrainstoreError, InternalFailure, NotFound, RateLimited

__all__ = [
    "BenchAborted",
    "BenchSettings",
    "Observation",
    "RetryingCaller",
    "Runner",
    "Target",
    "embedded_client",
    "evidence_recall",
]

T = TypeVar("T")

#: Internal failures that are deterministic: retrying them cannot succeed.
_NOT_RETRYABLE = frozenset({"not_implemented", "memory_without_lineage", "key_registry_unreadable"})
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class BenchAborted(RuntimeError):
    """The run cannot go on (a Record failed to become ready in time, the server keeps refusing)."""


@dataclass(frozen=True)
class BenchSettings:
    budgets: tuple[int, ...]
    modes: tuple[str, ...] = ("fast",)
    brain_prefix: str = "bench"
    keep_brains: bool = False
    ready_timeout: float = 600.0  # seconds for every Record of a Brain to become ready
    progress: bool | None = None  # tqdm's own rule when None: bars only on a terminal


@dataclass(frozen=True)
class Observation:
    """One question asked at one budget and mode."""

    target: str  # the conversation (or data set) the question belongs to
    category: str | None
    budget: int
    mode: str
    recall: float  # 0.0 for a pending Context
    tokens_used: int | None  # None for a pending Context: nothing was served
    latency_ms: float  # client-side, around the HTTP call that answered
    pending: bool


@dataclass
class Target:
    """A Brain and the questions asked of it; ``key_of`` maps a cited Record id to an evidence key."""

    label: str
    brain: str
    queries: list[Query]
    key_of: Callable[[str], str | None]
    record_ids: list[str] = field(default_factory=list)  # the Records the run posted, in order
    failed_records: int = 0
    ingest_seconds: float = 0.0

    @property
    def records(self) -> int:
        return len(self.record_ids)


def evidence_recall(
    context: dict[str, Any], evidence: frozenset[str], key_of: Callable[[str], str | None]
) -> float:
    """The share of ``evidence`` whose Record the Context both cites and serves text of.

    Served means an evidence item of that record_id that is not a redaction: a citation alone (or a
    redacted summary) does not put the text in front of the model.
    """
    if not evidence:
        raise ValueError("a question without evidence is not scored")
    cited = {c["record_id"] for c in context.get("citations") or ()}
    served = {e["record_id"] for e in context.get("evidence") or () if not e.get("redacted")}
    found = {key_of(record_id) for record_id in cited & served}
    return len(evidence & found) / len(evidence)


@dataclass
class RetryingCaller:
    """Calls one client operation, retrying what the contract says may be retried.

    429: wait the server's retry_after_seconds, or an exponential backoff if longer, until
    ``max_wait`` seconds have been spent waiting in one call. A dropped connection or an internal
    failure: at most ``transient_retries`` more tries (every call the bench makes is safe to repeat:
    reads, and writes under an Idempotency-Key).
    """

    max_wait: float = 600.0
    transient_retries: int = 2
    sleep: Callable[[float], None] = time.sleep
    rate_limited: int = 0  # 429s seen
    transient: int = 0  # transport errors and 5xx retried
    last_seconds: float = field(default=0.0, init=False)  # the duration of the attempt that answered

    def __call__(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        waited = 0.0
        attempt = 0
        transient_left = self.transient_retries
        while True:
            started = time.perf_counter()
            try:
                result = operation(*args, **kwargs)
            except RateLimited as exc:
                self.rate_limited += 1
                retry_after = float(exc.extra.get("retry_after_seconds") or 0)
                delay = max(retry_after, min(0.25 * 2**attempt, 30.0))
                if waited + delay > self.max_wait:
                    raise BenchAborted(
                        f"still rate limited after waiting {waited:.0f} s; raise the server's "
                        "BRAINSTORE_RATE_LIMIT or use a key with a higher limit"
                    ) from exc
                attempt += 1
                waited += delay
                self.sleep(delay)
                continue
            except (httpx.TransportError, InternalFailure) as exc:
                if (isinstance(exc, InternalFailure) and exc.code in _NOT_RETRYABLE) or transient_left <= 0:
                    raise
                transient_left -= 1
                self.transient += 1
                self.sleep(0.5 * 2 ** (self.transient_retries - transient_left))
                continue
            self.last_seconds = time.perf_counter() - started
            return result


def _timestamp(value: Any) -> str:
    return value.isoformat().replace("+00:00", "Z")


def brain_label(text: str) -> str:
    """A Slug-safe piece of a Brain id."""
    return _SLUG_UNSAFE.sub("-", text).strip("-")[:40] or "data"


class Runner:
    """One benchmark run against one client: creates Brains, asks, and forgets what it created."""

    def __init__(self, client: Client, settings: BenchSettings, caller: RetryingCaller | None = None) -> None:
        self.client = client
        self.settings = settings
        self.call = caller or RetryingCaller()
        self.run_id = secrets.token_hex(3)
        self.created: list[str] = []  # Brains this run made (or may have made): forgotten at the end
        self.left_behind: list[str] = []  # Brains that could not be forgotten

    def run(
        self, conversations: Sequence[Conversation] = (), existing: tuple[str, list[Query], str] | None = None
    ) -> tuple[list[Target], list[Observation]]:
        """Ingest each conversation into a new Brain (and/or take an existing Brain with its questions),
        ask everything, and forget the Brains created, however the run ends."""
        targets: list[Target] = []
        with forgetting_on_exit(self):
            for conversation in conversations:
                targets.append(self.ingest(conversation))
            if existing is not None:
                targets.append(self.existing(*existing))
            observations = self.ask(targets)
        return targets, observations

    # ------------------------------------------------------------------ Brains

    def brain_id(self, label: str) -> str:
        return f"{self.settings.brain_prefix}-{brain_label(label)}-{self.run_id}"

    def ingest(self, conversation: Conversation) -> Target:
        """A new Brain holding the conversation's turns, every Record ready."""
        brain = self.brain_id(conversation.sample_id)
        self.created.append(brain)
        try:
            self.call(
                self.client.create_brain,
                brain,
                name=f"brainstore bench: conversation {conversation.sample_id}",
                idempotency_key=f"bench-create-{brain}",
            )
        except BrainstoreError as exc:
            if exc.code == "brain_exists":
                # Not this run's (a retry of its own createBrain replays under the Idempotency-Key):
                # the cleanup forgot another's Brain of that id, every Record in it.
                self.created.remove(brain)
                raise BenchAborted(f"a Brain {brain!r} exists already; it is not this run's and is left as it is") from exc
            raise
        record_turn: dict[str, str] = {}
        order: list[str] = []
        started = time.perf_counter()
        with tqdm(
            total=len(conversation.turns) * 2,
            desc=f"ingest {conversation.sample_id}",
            unit="step",
            disable=self._bars_off(),
            leave=False,
        ) as bar:
            for turn in conversation.turns:
                content = {"kind": "message", "text": turn.text, "speaker": turn.speaker, "role": "other"}
                record = self.call(
                    self.client.remember_record,
                    brain,
                    content,
                    occurred_at=_timestamp(turn.occurred_at),
                    idempotency_key=f"bench-{brain}-{turn.dia_id}",
                )
                record_turn[record["id"]] = turn.dia_id
                order.append(record["id"])
                bar.update()
            failed = self._wait_ready(brain, order, bar)
        target = Target(
            label=conversation.sample_id,
            brain=brain,
            queries=conversation_queries(conversation),
            key_of=record_turn.get,
            record_ids=order,
            failed_records=failed,
            ingest_seconds=time.perf_counter() - started,
        )
        return target

    def _wait_ready(self, brain: str, record_ids: Sequence[str], bar: Any) -> int:
        """Poll each Record until it leaves processing; the number that failed."""
        deadline = time.monotonic() + self.settings.ready_timeout
        failed = 0
        for record_id in record_ids:  # derivation runs in arrival order: wait for each in turn
            while True:
                status = self.call(self.client.get_record, brain, record_id)["status"]
                if status != "processing":
                    failed += status == "failed"
                    bar.update()
                    break
                if time.monotonic() > deadline:
                    raise BenchAborted(
                        f"{brain}: Record {record_id} still processing after {self.settings.ready_timeout:.0f} s"
                    )
                time.sleep(0.1)
        return failed

    def existing(self, brain: str, queries: list[Query], label: str) -> Target:
        """Questions asked of a Brain that already holds the Records (keyed by their external ids)."""
        self.call(self.client.get_brain, brain)  # brain_not_found now, not after the first question
        external: dict[str, str | None] = {}

        def key_of(record_id: str) -> str | None:
            if record_id not in external:
                try:
                    record = self.call(self.client.get_record, brain, record_id)
                except NotFound:  # forgotten since it was cited
                    external[record_id] = None
                else:
                    external[record_id] = (record.get("source") or {}).get("external_id")
            return external[record_id]

        return Target(label=label, brain=brain, queries=queries, key_of=key_of)

    def forget_created(self) -> None:
        """Forget every Brain this run created; one that cannot be forgotten is kept in left_behind."""
        while self.created:
            brain = self.created.pop()
            try:
                self.call(self.client.forget_brain, brain)
            except NotFound:
                pass  # its createBrain never landed
            except (BrainstoreError, httpx.HTTPError, BenchAborted):
                self.left_behind.append(brain)

    # ------------------------------------------------------------------ questions

    def ask(self, targets: Sequence[Target]) -> list[Observation]:
        """Every question of every target at every budget and mode."""
        total = sum(len(t.queries) for t in targets) * len(self.settings.budgets) * len(self.settings.modes)
        observations: list[Observation] = []
        with tqdm(total=total, desc="questions", unit="ctx", disable=self._bars_off(), leave=False) as bar:
            for target in targets:
                for query in target.queries:
                    for mode in self.settings.modes:
                        for budget in self.settings.budgets:
                            observations.append(self._ask_one(target, query, budget, mode))
                            bar.update()
        return observations

    def _ask_one(self, target: Target, query: Query, budget: int, mode: str) -> Observation:
        context = self.call(
            self.client.create_context, target.brain, query.text, budget={"tokens": budget}, mode=mode
        )
        latency_ms = self.call.last_seconds * 1000.0
        pending = context.get("status") == "pending"
        return Observation(
            target=target.label,
            category=query.category,
            budget=budget,
            mode=mode,
            recall=0.0 if pending else evidence_recall(context, query.evidence, target.key_of),
            tokens_used=None if pending else int(context["budget"]["tokens"]["used"]),
            latency_ms=latency_ms,
            pending=pending,
        )

    def _bars_off(self) -> bool | None:
        return None if self.settings.progress is None else not self.settings.progress


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def forgetting_on_exit(runner: Runner) -> Iterator[Runner]:
    """Run the body with SIGTERM raised as KeyboardInterrupt; forget the run's Brains however it ends.

    The cleanup itself ignores SIGINT and SIGTERM: a second Ctrl-C must not leave a Brain half-erased.
    Each forgetBrain is bounded by the client's timeout.
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main else None
    completed = False
    try:
        yield runner
        completed = True
    finally:
        if not (completed and runner.settings.keep_brains):
            handlers = (
                (signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN))
                if main
                else None
            )
            try:
                runner.forget_created()
            finally:
                if handlers is not None:
                    signal.signal(signal.SIGINT, handlers[0])
                    signal.signal(signal.SIGTERM, handlers[1])
        if main:
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def embedded_client(
    data_dir: Path, key: str, *, engine: str = "duckdb", timeout: float = 120.0
) -> Iterator[Client]:
    """A client of the embedded engine on ``data_dir``, through the same HTTP contract as a server
    (built by the composition root). No rate limit: the caller is the only one. :class:`BenchAborted`
    while a server holds the directory.
    """
    from brainstore import app

    config = Config(engine=engine, data_dir=Path(data_dir), rate_limit_per_minute=0)
    try:
        with app.embedded_client(config, key, timeout=timeout) as client:
            yield client
    except app.DataDirectoryInUse as exc:
        raise BenchAborted(f"{exc}: stop the server on it, or bench the server with --url") from None
