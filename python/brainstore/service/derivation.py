"""Derivation: Records in status processing become Memories and indexed evidence, fairly and in batches.

The durable queue is the store itself (Records processing, Memories pending); this component keeps the
in-process schedule. On start every Record still processing and every pending Memory is queued again,
so a restart (or kill -9 after any 202) resumes where it stopped.

How a batch runs:
1. Take work round robin across namespaces (project and environment), one job per namespace in turn,
   bounded by count and by the text it will embed: one tenant's backlog waits its turn behind another
   tenant's single Record instead of in front of it.
2. Extract assertions and cut chunks (no I/O), then embed every chunk the batch selected in ONE call
   (the embedder spreads it over the cores). A long document is embedded in slices of at most
   SLICE_CHARS over several batches (its job goes back to the head of its namespace's queue), and
   its extraction (seconds for 150,000 characters) runs off the worker while the batches go on (the
   offline rules in a process of their own, an extractor that waits on a model server on a thread),
   so it never holds the worker for more than one short slice.
3. Apply every finished Record in ONE transaction: each Brain is resolved inside it (a Brain erased
   meanwhile takes its Records with it), the memory rules plan the revisions, chunks and statuses are
   written, and only after the commit do the live indexes change (EvidenceIndexes.apply).
   A Brain another transaction holds is waited for HELD_WAIT_SECONDS at most, in the lock's queue
   (on PostgreSQL this process's own writes hold a Brain that long under load); one held longer
   (another process's writer, an erase of a large Brain, an operator's session) is parked whole: its
   jobs wait aside, every later job of the Brain (a Record, a re-derivation, a failure to mark, from
   any batch or the express lane) queues behind them, and the applier tries them again together, in
   their order, after HELD_DELAYS, while the rest of the batch commits at once. So its Records are
   applied in the order they would have been without the hold, and no hold counts as a failure. With
   one Brain's row held 6 s from another session, a Record of another Brain in the same batch was
   ready when the hold ended (6.1 s); it is now ready in 0.8-1.0 s. Erasing a parked Brain (or one of
   its Records) drops its parked jobs with what they held; a stop leaves them processing for the
   next start.
4. Tell the waiting Contexts which Brains moved.

Threads share the steps: the worker reads and extracts (step 1 and the first half of 2), the
embedding threads embed, the applier does 3-4. So the next batch is read while the last one embeds,
and embedded while the one before is written: the cores embed instead of waiting for Python or for a
commit. The next batch's embedding call queues behind the one in progress (EMBEDDINGS_AT_ONCE), so a
core that finishes its share of a call takes up the next one instead of idling. The worker takes the
next batch only as late as it can still read it before the embedder is free (see _run), a batch is
handed to the applier only once the previous one is taken, and batches are applied in the order they
were prepared.

A namespace whose whole backlog is a few short Records (EXPRESS_JOBS) does not wait for those
batches: the express lane reads, embeds and applies its jobs at once, on a thread of its own at the
requests' priority (the batches embed at background priority), and the worker leaves that namespace
alone meanwhile. So a tenant posting now and then is not queued behind another tenant's bulk load.

A failure of the embedder, the store or an unreachable extractor (ExtractorUnavailable) leaves the work
queued and retries it with backoff; any other extraction failure marks that Record failed. Nothing is
derived twice: a Record is re-read inside the transaction and skipped unless still processing.

Several processes on one database (a :class:`~brainstore.service.common.SharedStore`): each process
schedules the Records it received (fairly, as above), and before it reads a Record it claims it in the
store (``claim_records``: FOR UPDATE SKIP LOCKED, a lease of LEASE_SECONDS, renewed by the scan while
the Record is queued here and the worker lives), dropping those another process holds. A scan every SCAN_SECONDS adopts the queued Records nobody is deriving: claims expired (a
process died) or never taken GRACE_SECONDS after the write (its process died first, or is busy), and
Memories pending re-derivation that long (they take no claim: a pending Memory is re-read under the
Brain's lock and re-derived only while still pending). The
re-read under the Brain's row lock still guards the outcome: a Record derived by one process is skipped
by any other. Brains are locked in uid order in a batch, so two processes' batches never deadlock.
Such a store may be migrated beside a live process (`brainstore migrate`), so the scan runs from the
start: it takes up the shared queue once the schema has it, and queues again the work derivation
dropped while the schema was behind its own (``_resume``).
"""

from __future__ import annotations

import logging
import math
import os
import queue
import secrets
import socket
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from brainstore.derive import (
    Assertion,
    Extractor,
    ExtractorUnavailable,
    ReaderEnded,
    ReaderProcess,
    RuleExtractor,
    SourceText,
    extract_record,
    source_text,
    warm_up,
)
from brainstore.domain import MemoryRevision, Record, RecordStatus, StoredChunk
from brainstore.retrieval.chunking import ChunkDraft, embedding_text, leads
from brainstore.retrieval.embedder import BACKGROUND_NICE, background_priority
from brainstore.service.common import SharedStore, shared_store
from brainstore.service.evidence import EvidenceIndexes, PreparedEvidence, draft_chunks
from brainstore.service.fair import FairExecutor, NamespaceBusy
from brainstore.service.planner import (
    ASSERTION_MEMORIES,
    ATTRIBUTE_MEMORIES,
    MAX_CITATIONS,
    MORE_SUPPORT,
    SERVED_RANK,
    MemoryRules,
    MemoryState,
    assertion_fingerprint,
    first_by_fingerprint,
    revision_fingerprint,
)
from brainstore.store.base import Store, StoreFeature

log = logging.getLogger("brainstore.derivation")

#: Seconds before failed work is tried again (the last repeats): an embedding endpoint that is down
#: must not leave Records processing until the next restart.
RETRY_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
#: Times in a row a Record's transaction may fail alone with the same error before the Record is marked
#: failed (the fifth comes about 18 s after the first): a failure that repeats while the store still
#: takes the failed status is the Record's own (content a bug meets, a value the store refuses), and
#: left processing it would hold its Brain's watermark, and every Context waiting for it, for ever.
#: An error that says the store was unavailable (Store.unavailable) is never counted.
APPLY_ATTEMPTS = 5
# How long an apply waits, at most, in the lock's queue for a Brain another transaction holds before it
# parks that Brain's jobs. On PostgreSQL this process's own request transactions (a group commit of
# Records, an Object write) hold a Brain's row for milliseconds under ordinary load: parked, a Record
# would wait HELD_DELAYS[0] more for nothing, and with four threads writing to one Brain nonstop its
# parked Records, tried again with SKIP LOCKED alone, found it held try after try (a Record posted
# then was ready after 44 s).
HELD_WAIT_SECONDS = 0.1
#: Seconds before a parked Brain's jobs are tried again (the last repeats): not a failure, it counts
#: toward neither APPLY_ATTEMPTS nor RETRY_DELAYS. Short, so that its work follows soon after a hold
#: ends; growing, so that a long hold (an erase of a large Brain, an operator's session) costs one
#: statement every few seconds.
HELD_DELAYS = (0.25, 0.5, 1.0, 2.0)
BATCH_RECORDS = 64
# Characters of chunk text one batch embeds at most: about 0.4 s of the offline model on 2 cores. Only
# a backlog fills a batch, and a bigger one is cheaper a Record: the embedder cuts it into bigger runs,
# and the apply's statements are shared by more Records. Against 32 Records and 4,000 characters, a
# backlog of 2,000 LoCoMo turns was derived at 121-148 Records/s instead of 122-137 (six pairs, one
# Brain and eight, in process: a median 5% more, one pair even). A light namespace's Records do not
# wait behind a batch (the express lane): in benches/ingest.py's fairness scenario a quiet tenant's
# Record was ready in at most 0.15-0.17 s, against 0.25-0.30 s. (Before the express lane, 6,000
# characters had given a quiet tenant a p50 of 0.68 s instead of 0.54 s.)
BATCH_CHARS = 8_000
# What a batch counts for a Record whose length it does not know (one queued by another process, or
# before a restart) until it reads it: a turn's worth.
UNKNOWN_RECORD_CHARS = 200
# Characters of one Record's chunks one batch embeds at most. A document's chunks are longer than a
# turn in tokens per character: 6,000 characters of one took 1.0-1.1 s on the loaded 2-core machine.
SLICE_CHARS = 3_000
# Embedding calls in flight at once. The embedder runs a call as a few pieces on its cores, and the
# last piece of a call ran alone while the other core idled; with the next call already queued behind
# it, that core takes the next call's first piece. Embedding alone, 3,958 LoCoMo chunks in calls of
# 34 (the size batches of 4,000 characters made), quiet: 245-268 chunks/s one call at a time, 257-282 two.
EMBEDDINGS_AT_ONCE = 2
# A namespace whose whole backlog is at most this many jobs and this much text, all of it waiting in
# the queue (none being derived or waiting for a retry) and of known length, is light: the express
# lane derives it at once, beside the batches, instead of behind the batch being embedded and the one
# read meanwhile. In benches/ingest.py's fairness scenario, a quiet tenant's one-sentence Record spent
# its worst seconds there during the bulk load's POSTs: up to 1.1 s before a batch took it and 0.7 s in
# that batch's embedding, at background priority behind the request threads (max 2.38 s on a slow
# day). A Record of unknown length (read back at a start) is guessed at a turn's: it could be a
# document, which would hold the lane, and every light namespace behind it, for seconds.
EXPRESS_JOBS = 4
EXPRESS_CHARS = 1_000
# Texts at least this long are extracted off the worker (150,000 characters took 1.7-2.1 s), by the
# offline rules in a process of their own: on a thread, that much pure Python held the GIL against the
# request threads and the worker, and a quiet tenant's one-sentence Record took up to 1.7 s to be
# ready while three such documents were read (0.8 s without them).
LONG_TEXT_CHARS = 20_000
# Long texts are read one at a time, namespaces in turn (one tenant's forty documents queued first made
# another's one document wait for all forty), each in at most READ_APART_SECONDS: the longest text the
# API takes (200,000 characters) is read in under a second on one quiet core, and a million characters
# of the worst shapes measured took 4.3 s. A text whose reading ends the process READER_ENDINGS times
# (killed, out of memory, or over its time) fails instead of being tried forever, taking the process
# (and every other tenant's long texts) with it each time.
READ_APART_SECONDS = 120.0
READER_ENDINGS = 3
# Address space the process reading long texts may take: a text that needs more fails at once
# (MemoryError), rather than leaving the kernel to choose a process to kill, perhaps the server. Reading
# a million characters of the hungriest shapes measured peaked at 241 MB (prose: 94 MB; idle: 41 MB).
READ_APART_BYTES = 1 << 30
# Long texts one namespace may have waiting to be read: a waiting text is its job alone (about a
# kilobyte), as its text is read again on its turn.
LONG_TEXTS_WAITING = 10_000
# Characters of re-derivation sources a batch reads on its own thread (the worker, or the express lane)
# at most: as much as a batch of Records reads there (BATCH_CHARS // SLICE_CHARS Records, each shorter
# than LONG_TEXT_CHARS). The sources past it, and every one of LONG_TEXT_CHARS or more, are read apart,
# as long texts are: a Memory left to a 200,000-character document (its other supporting Record
# forgotten) was read on the express lane, 3-4.5 s of pure Python holding the GIL, and every other
# tenant's short Record waited for it.
REDERIVE_INLINE_CHARS = BATCH_CHARS // SLICE_CHARS * LONG_TEXT_CHARS
# Characters of sources one task of the long texts' thread reads at most (or one source longer than
# that): the longest text the API takes, so that a task re-deriving a Memory holds that thread, and the
# other tenants' long texts behind it, no longer than one Record's.
APART_SOURCE_CHARS = 200_000
# With a shared store: how long a claim holds a Record against other processes unless renewed (every
# scan renews the claims on what is queued here; a process that dies holds its Records this long at
# most), how often the queue is scanned for Records nobody derives, and how long a Record may stay
# unclaimed before another process adopts it.
LEASE_SECONDS = 30.0
SCAN_SECONDS = 5.0
GRACE_SECONDS = 10.0
# Self names of Brains held at most (a name each, at most 200 characters).
SELF_NAMES_HELD = 4096
# Characters of re-derivation sources whose reading is held for the batches after the one that read
# them (see _said_by). Past it the namespace holding the most gives up its least recently used: given
# up in plain LRU order, one tenant's re-derivations of many sources (a fact in each of 300 padded
# Records, its copies forgotten) pushed another's document out between that tenant's batches, and
# the document was read again for 6 of its 10 batches instead of once.
SAID_HELD_CHARS = 1_000_000
# Forgets remembered (see _forgotten_since): past them, whether what a read found is gone is asked of
# the store.
FORGETS_KEPT = 1024
# A change sequence past any Brain's: asked erasures after it, a store says only whether the Brain lives.
_NO_ERASURES = 1 << 62


def _what_it_says(extractor: Extractor, text: SourceText, self_name: str | None) -> dict[str, Assertion]:
    """What a re-derivation source says (here, or in the process reading long texts)."""
    return first_by_fingerprint(extractor.extract(text, self_name=self_name))


class StoreLoader:
    """The memory rules' view of one Brain in the store (inside the applying transaction)."""

    def __init__(self, store: Store, brain_uid: str) -> None:
        self.store = store
        self.brain_uid = brain_uid

    def memories(self, memory_ids: Sequence[str]) -> dict[str, MemoryRevision]:
        return self.store.memories(self.brain_uid, memory_ids)

    def by_fingerprints(self, fingerprints: Sequence[str]) -> list[MemoryRevision]:
        return self.store.memories_by_fingerprints(self.brain_uid, fingerprints, newest=ASSERTION_MEMORIES)

    def by_attributes(self, keys: Sequence[tuple[str, str]]) -> list[MemoryRevision]:
        return self.store.memories_by_attributes(self.brain_uid, keys, newest=ATTRIBUTE_MEMORIES)

    def citing(self, record_id: str) -> list[MemoryRevision]:
        return self.store.memories_citing(self.brain_uid, record_id)

    def referencing(self, memory_ids: Sequence[str]) -> list[MemoryRevision]:
        return self.store.memories_referencing(self.brain_uid, memory_ids)

    def visibilities(self, record_ids: Sequence[str]) -> dict[str, str]:
        return self.store.record_visibilities(self.brain_uid, record_ids)


def _supporters_wanted(memory: MemoryRevision) -> int:
    """How many of a Memory's supporters re-derivation reads: enough to fill its citations besides
    those it has, and one more to tell whether there are more still."""
    return MAX_CITATIONS + len({c.record_id for c in memory.citations}) + 1


def memory_state(store: Store, brain_uid: str) -> MemoryState:
    return MemoryState(brain_uid, StoreLoader(store, brain_uid), lambda: store.next_seq(brain_uid))


def write_plans(store: Store, states: Sequence[MemoryState], at: Any) -> None:
    """Inside the transaction: the plans' revisions, then the earlier revisions they leave saying what is
    no longer so, then their erasures (which remove every revision).

    The revisions of several Brains go in as one insert: a batch spread over many tenants' Brains paid
    two statements a Brain for them, each a GIL hand-off for the applier."""
    store.insert_memory_revisions([r for state in states for r in state.plan.revisions])
    for state in states:
        if state.plan.rederived:
            store.erase_earlier_revisions(state.brain_uid, state.plan.rederived, pending_only=True)
        if state.plan.reworded:
            store.erase_earlier_revisions(state.brain_uid, state.plan.reworded)
        if state.plan.erased:
            store.erase_memories(state.brain_uid, state.plan.erased, at=at)


@dataclass
class SourcesRead:
    """What the Memory jobs of one batch read of their sources before its transaction, by record id: the
    Records (their content never changes; whether they still exist is asked again in the transaction),
    their texts, and what each says (fingerprint -> first assertion)."""

    records: dict[str, Record] = field(default_factory=dict)
    texts: dict[str, SourceText] = field(default_factory=dict)
    said: dict[str, dict[str, Assertion]] = field(default_factory=dict)
    # those of ``records`` the transaction applying the batch found still there (emptied as it begins)
    alive: set[str] = field(default_factory=set)


@dataclass(eq=False)
class Job:
    kind: str  # record | memory
    namespace: str
    brain_uid: str
    item_id: str
    seq: int = 0  # a Record's change sequence (0 when unknown: it then holds back every watermark)
    chars: int | None = None  # the length of a Record's text when it was queued (None: unknown)
    failures: int = 0
    reader_endings: int = 0  # times reading its text (or a source of its Memory) apart failed
    applying_failed: str = ""  # how its transaction, applied alone, last failed
    applying_failed_alike: int = 0  # times in a row it failed so
    failure: dict[str, str] | None = None  # the error a Record is to be marked failed with (_fail)
    # a Record's derivation in progress
    record: Record | None = None
    text: SourceText | None = None
    assertions: list[Assertion] | None = None
    drafts: list[ChunkDraft] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    # a Memory's re-derivation: its sources and what they say, read before the transaction; shared by
    # the Memory jobs of one batch
    read: SourcesRead | None = None
    # ... what its sources read apart say (record id -> fingerprint -> first assertion), and the Records
    # found supporting it when it was sent to have them read (None: not looked up yet)
    said_apart: dict[str, dict[str, Assertion]] = field(default_factory=dict)
    said_mark: int = 0  # _forget_mark before what said_apart holds was read (or last checked)
    supporters: list[str] | None = None

    @property
    def embedded(self) -> int:
        return sum(len(v) for v in self.vectors)

    @property
    def sized(self) -> bool:
        """Whether its cost is known, not guessed: a Record queued without its length (read back at a
        start, or adopted from another process) is guessed at until it is read."""
        return self.kind == "memory" or self.record is not None or self.chars is not None

    @property
    def ready(self) -> bool:
        return self.kind == "memory" or (self.assertions is not None and self.embedded == len(self.drafts))

    def cost(self) -> int:
        if self.kind == "memory":
            return 0
        if self.record is None:  # not read yet: its text's length, else a turn's worth
            return min(UNKNOWN_RECORD_CHARS if self.chars is None else self.chars, SLICE_CHARS)
        return min(sum(len(d.text) for d in self.drafts[self.embedded :]), SLICE_CHARS)


@dataclass
class _Embedding:
    """A batch being embedded, when it is expected to be done and when it was (time.monotonic)."""

    jobs: list[Job]
    due: float
    done: Future[None] = field(init=False)
    ended: float = 0.0


@dataclass
class _Pace:
    """Moving averages of the worker's pace: seconds to read a batch, and to embed a character."""

    read: float = 0.0
    per_char: float = 0.0

    @staticmethod
    def moved(average: float, sample: float) -> float:
        return 0.2 * sample + 0.8 * average  # the newest measurement weighs a fifth


def text_length(record: Record) -> int:
    """The length of the text a Record is read as, whatever field of its content holds the words (an
    event's name, a fact's triple)."""
    return len(source_text(record.content, self_name=None, occurred_at=record.occurred_at).text)


def _corrected_reading(corrected: Sequence[tuple[MemoryRevision, str]], assertion: Assertion) -> str | None:
    """The user-corrected Memory an assertion reads again, if any: the same fingerprint, or a span
    that overlaps the corrected Memory's citation of the Record (another extractor words the same
    clause differently; the user already said what those words are worth)."""
    fingerprint = assertion_fingerprint(assertion.subject, assertion)
    start, end = assertion.span
    for memory, held in corrected:
        if held == fingerprint or any(c.start < end and start < c.end for c in memory.citations):
            return memory.memory_id
    return None


@dataclass
class _Parked:
    """The jobs of a Brain another transaction held when they were to be applied, in their order, and
    every later job of the Brain behind them; when they are tried again and how often they were held.
    While some of them are being tried (``returning``) the Brain's later jobs still queue behind, and
    those of the try that find the Brain held again go back in front of them (``back``: how many did)."""

    jobs: deque[Job]
    due: float
    holds: int = 1
    returning: bool = False
    back: int = 0


class FairQueue:
    """Jobs per namespace, taken round robin; a namespace's jobs keep their order.

    Light namespaces (EXPRESS_JOBS) are left to :meth:`take_light`, which holds them until
    :meth:`release`: :meth:`take` leaves their jobs alone meanwhile too, so one namespace's jobs are
    never derived on both paths at once. ``outstanding`` says how many jobs a namespace has in all,
    queued or not (being derived, waiting for a retry, read apart): a namespace is light only when
    every one of them is queued here."""

    def __init__(self, outstanding: Callable[[str], int] = lambda namespace: 0) -> None:
        self._queues: OrderedDict[str, deque[Job]] = OrderedDict()
        self._cond = threading.Condition()
        self._closed = False
        self._outstanding = outstanding
        self._held: set[str] = set()  # namespaces the express lane is deriving

    def put(self, job: Job, *, front: bool = False) -> None:
        with self._cond:
            queue = self._queues.get(job.namespace)
            if queue is None:
                queue = self._queues[job.namespace] = deque()
            if front:
                queue.appendleft(job)
            else:
                queue.append(job)
            self._cond.notify_all()  # the worker and the express lane wait for different jobs

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wake(self) -> None:
        """A job left the pipeline: its namespace may have become light."""
        with self._cond:
            self._cond.notify_all()

    def take(self, max_jobs: int, max_chars: int, *, wait: bool = True) -> list[Job] | None:
        """A batch, round robin across the namespaces that are neither light nor held by the express
        lane; None once closed. While there is nothing, blocks, or with ``wait=False`` returns an
        empty batch."""
        with self._cond:
            if wait:
                self._cond.wait_for(lambda: self._closed or any(map(self._batched, self._queues)))
            if self._closed:
                return None
            batch: list[Job] = []
            chars = 0
            while len(batch) < max_jobs and self._queues:
                progressed = False
                for namespace in list(self._queues):
                    queue = self._queues[namespace]
                    if not queue:
                        del self._queues[namespace]
                        continue
                    if not self._batched(namespace):
                        continue
                    if batch and chars + min(queue[0].cost(), max_chars) > max_chars:
                        continue
                    job = queue.popleft()
                    batch.append(job)
                    chars += job.cost()
                    progressed = True
                    # the namespace just served goes to the back of the rotation
                    self._queues.move_to_end(namespace)
                    if not queue:
                        del self._queues[namespace]
                    break
                if not progressed or len(batch) >= max_jobs or chars >= max_chars:
                    break
            return batch

    def take_light(self, max_chars: int) -> list[Job] | None:
        """Every job of the light namespaces, up to ``max_chars`` of text (a first namespace whatever
        its size), in their order; the namespaces are held until :meth:`release`. Blocks until one is
        light; None once closed."""
        with self._cond:
            self._cond.wait_for(lambda: self._closed or any(self._light(ns) for ns in self._queues))
            if self._closed:
                return None
            batch: list[Job] = []
            chars = 0
            for namespace in [ns for ns in self._queues if self._light(ns)]:
                cost = sum(job.cost() for job in self._queues[namespace])
                if batch and chars + cost > max_chars:
                    break
                batch.extend(self._queues.pop(namespace))
                chars += cost
                self._held.add(namespace)
            return batch

    def release(self, namespaces: set[str]) -> None:
        with self._cond:
            self._held -= namespaces
            self._cond.notify_all()

    def _batched(self, namespace: str) -> bool:
        return bool(self._queues[namespace]) and namespace not in self._held and not self._light(namespace)

    def _light(self, namespace: str) -> bool:
        queue = self._queues[namespace]
        return (
            namespace not in self._held
            and 0 < len(queue) <= EXPRESS_JOBS
            and len(queue) == self._outstanding(namespace)
            and all(job.sized for job in queue)
            and sum(job.cost() for job in queue) <= EXPRESS_CHARS
        )


class Derivation:
    def __init__(
        self,
        store: Store,
        evidence: EvidenceIndexes,
        rules: MemoryRules,
        extractor: Extractor,
        *,
        namespace_of: Callable[[str], str | None],
        on_applied: Callable[[set[str]], None] = lambda brains: None,
        on_scan: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.evidence = evidence
        self.rules = rules
        self.extractor = extractor
        self.namespace_of = namespace_of
        self.on_applied = on_applied
        self.on_scan = on_scan  # every SCAN_SECONDS, with a shared store: what else follows the others
        # namespace -> its jobs not done yet, queued or anywhere else (under _idle); empty when idle
        self._outstanding: Counter[str] = Counter()
        self._queue = FairQueue(self._outstanding_jobs)
        self._thread: threading.Thread | None = None
        self._express: threading.Thread | None = None
        # prepared batches on their way to the applier; None tells it to stop
        self._prepared: queue.Queue[list[Job] | None] = queue.Queue(maxsize=1)
        self._applier: threading.Thread | None = None
        # the worker's embedding calls, so that it reads the next batch meanwhile (see _run)
        self._embedding = self._embedding_executor()
        self._pace = _Pace()
        # extraction of long texts, off the worker: the order (namespaces in turn), and for the offline
        # rules the process that reads them
        self._long_texts: FairExecutor | None = None
        self._reader: ReaderProcess | None = None
        self._idle = threading.Condition()
        self._queued_records: dict[str, dict[str, int]] = {}  # brain_uid -> record_id -> seq
        # Records queued here that were forgotten since: their jobs are dropped where they next pass
        # (see forgotten); an entry goes with its job.
        self._forgotten: set[tuple[str, str]] = set()
        self._queued_memories: set[tuple[str, str]] = set()  # (brain_uid, memory_id) waiting here
        # Brains another transaction held at an apply -> their jobs parked (see _park), under _idle
        self._parked: dict[str, _Parked] = {}
        self._retries: set[threading.Timer] = set()
        self._stopping = False
        # Each Brain's self name, read once (it never changes), the least recently used given up past
        # SELF_NAMES_HELD; a forgotten Brain's goes with it (forgotten, forget_gone_brains).
        self._self_names: OrderedDict[str, str | None] = OrderedDict()
        self._self_names_lock = threading.Lock()
        # What re-derivation sources say, by (brain_uid, record_id): (the Brain's namespace, the source's
        # characters, what it says); a forgotten Record's or Brain's goes (forgotten, forget_gone_brains).
        # Each namespace's keys, least recently used first, and the characters it holds: what gives up
        # one when over SAID_HELD_CHARS (_hold_said).
        self._said: dict[tuple[str, str], tuple[str, int, dict[str, Assertion]]] = {}
        self._said_used: dict[str, OrderedDict[tuple[str, str], None]] = {}
        self._said_chars: Counter[str] = Counter()
        self._said_lock = threading.Lock()
        # Forgets counted, and the latest of them ((count, brain_uid, record_id or None for the Brain)),
        # so that what a read that overlapped a forget of its Brain or Record found is not held, and
        # what one that overlapped another tenant's found is (_forget_mark, _forgotten_since).
        self._forgets_lock = threading.Lock()
        self._forget_count = 0
        self._forgets: deque[tuple[int, str, str | None]] = deque(maxlen=FORGETS_KEPT)
        # With a shared store: each Brain with readings held -> the change sequence up to which other
        # processes' erasures of its Records have been looked for (forget_gone_brains).
        self._said_checked: dict[str, int] = {}
        # Who this process is in the store's claims: unique per process and start.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._scanner: threading.Thread | None = None
        self._scan_stop = threading.Event()
        # Whether work was left undone because the schema was behind (see _resume).
        self._behind = False

    def _shared(self) -> SharedStore | None:
        return shared_store(self.store)

    @staticmethod
    def _embedding_executor() -> ThreadPoolExecutor:
        """Where the worker's embedding calls run: at background priority (see BACKGROUND_NICE), as
        derivation is throughput work that must not take a core from a request. Only these threads:
        the worker and the applier hold the GIL for long stretches, and a thread the scheduler
        neglects while it holds the GIL would hold up every request thread."""
        return ThreadPoolExecutor(
            EMBEDDINGS_AT_ONCE, thread_name_prefix="brainstore-derivation-embed", initializer=background_priority
        )

    # --- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stopping = False
        self._queue = FairQueue(self._outstanding_jobs)
        with self._idle:  # the store is the durable queue: everything still to do is read back below
            self._outstanding.clear()
            self._queued_records.clear()
            self._forgotten.clear()
            self._queued_memories.clear()
            self._parked.clear()
        self._prepared = queue.Queue(maxsize=1)
        self._embedding = self._embedding_executor()
        self._long_texts = FairExecutor(1, per_namespace=LONG_TEXTS_WAITING, name="brainstore-derivation-long")
        self._reader = self._reader_process()
        self._applier = threading.Thread(target=self._apply_prepared, name="brainstore-derivation-apply", daemon=True)
        self._applier.start()
        self._thread = threading.Thread(target=self._run, name="brainstore-derivation", daemon=True)
        self._thread.start()
        self._resume()
        # after the backlog read back is queued: it is no namespace's light work
        self._express = threading.Thread(target=self._run_express, name="brainstore-derivation-express", daemon=True)
        self._express.start()
        # A store other processes serve may be migrated beside this one (`brainstore migrate`): the scan
        # runs from the start, and takes up the backlog and the shared queue once the schema has them.
        if isinstance(self.store, SharedStore):
            self._scan_stop.clear()
            self._scanner = threading.Thread(target=self._scan, name="brainstore-derivation-scan", daemon=True)
            self._scanner.start()

    def _reader_process(self) -> ReaderProcess | None:
        """A process for the offline rules (pure Python, CPU-bound), started when the first long text
        comes, at background priority like the embedding (a long document read at the default
        priority would take a core from the embedding of every other tenant's Records); None for an
        extractor that waits on a model server (and may not pickle): it reads on the long texts'
        thread, bound by its own timeouts."""
        if isinstance(self.extractor, RuleExtractor):
            return ReaderProcess(seconds=READ_APART_SECONDS, nice=BACKGROUND_NICE, memory_bytes=READ_APART_BYTES)
        return None

    def _resume(self) -> None:
        """Queue what the store holds still to do (Records processing, Memories pending) and is not
        queued here. While the schema is behind derivation's, _load drops it again, and marks the
        process behind: the scan calls this once more when the schema has caught up."""
        version = self.store.schema_version()
        self._behind = version < max(StoreFeature)
        if version >= StoreFeature.CORE:
            for brain_uid, record_id in self.store.records_in_status("processing"):
                self.adopt_record(brain_uid, record_id, 0)
        if version >= StoreFeature.MEMORIES:
            for brain_uid, memory_id in self.store.memories_in_status("pending"):
                with self._idle:
                    if (brain_uid, memory_id) in self._queued_memories:
                        continue
                self.put_memory(brain_uid, memory_id)

    def _scan(self) -> None:
        """Take up the backlog a migration run beside this process made derivable, adopt the queued
        Records no process derives, and drop what other processes erased from this one's caches and
        traces."""
        while not self._scan_stop.wait(SCAN_SECONDS):
            try:
                if self._behind and self.store.schema_version() >= max(StoreFeature):
                    self._resume()
                shared = self._shared()  # from migration 5 on, read again each time: it may arrive live
                if shared is None:
                    continue
                self._renew_claims(shared)
                for brain_uid, record_id, seq in shared.unclaimed_records(GRACE_SECONDS, BATCH_RECORDS * 4):
                    self.adopt_record(brain_uid, record_id, seq)
                for brain_uid, memory_id in shared.stale_pending_memories(GRACE_SECONDS, BATCH_RECORDS * 4):
                    self.adopt_memory(brain_uid, memory_id)
                # what others changed or erased leaves this process's memory
                self.evidence.forget_erased_elsewhere()
                self.forget_gone_brains()
                shared.forget_stale_memories()
                self.on_scan()
            except Exception:
                log.exception("scanning the shared derivation queue failed; trying again")

    def _renew_claims(self, shared: SharedStore) -> None:
        """Hold the claims on the Records still queued here while the worker lives: a claim is taken when
        a Record is first read, and a document embedded slice by slice, a text waiting for the reader or
        a Record retried after a failure outlived its lease, and another process derived it again."""
        worker = self._thread  # stop() lets go of it
        if worker is None or not worker.is_alive():
            return  # a dead worker's Records are for the others once their leases end
        with self._idle:
            held = [record_id for records in self._queued_records.values() for record_id in records]
        shared.renew_claims(self.owner, held, LEASE_SECONDS)

    def stop(self) -> None:
        self._scan_stop.set()
        if self._scanner is not None:
            self._scanner.join(timeout=30)
            self._scanner = None
        with self._idle:
            self._stopping = True
            retries, self._retries = self._retries, set()
        for timer in retries:
            timer.cancel()  # still processing/pending in the store: a restart resumes it
        if self._thread is not None:
            self._queue.close()
            self._thread.join(timeout=30)  # it hands the applier its last batch, then None
            self._thread = None
        if self._express is not None:
            self._express.join(timeout=30)
            self._express = None
        self._embedding.shutdown(wait=False)
        if self._applier is not None:
            self._applier.join(timeout=30)
            self._applier = None
        if self._reader is not None:
            self._reader.close()  # a text being read ends now; its Record stays processing
        if self._long_texts is not None:
            self._long_texts.shutdown()  # the texts still waiting stay processing, and start() queues them
            self._long_texts = None
        with self._idle:
            self._outstanding.clear()
            self._queued_records.clear()
            self._forgotten.clear()
            self._queued_memories.clear()
            self._parked.clear()  # still processing/pending in the store: a restart resumes them
            self._idle.notify_all()
        shared = self._shared()
        if shared is not None:
            try:  # what this process claimed and did not finish is free for the others at once
                shared.release_claims(self.owner)
            except Exception:
                log.exception("releasing derivation claims failed; they expire in %.0f s", LEASE_SECONDS)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._outstanding, timeout=timeout)

    # --- queueing ---------------------------------------------------------------------------------------
    def _namespace(self, brain_uid: str) -> str:
        return self.namespace_of(brain_uid) or "?"

    def put_record(self, brain_uid: str, record_id: str, seq: int = 0, chars: int | None = None) -> None:
        """Queue a Record; ``chars``, its text's length, lets a batch count it before reading it."""
        job = Job("record", self._namespace(brain_uid), brain_uid, record_id, seq, chars)
        with self._idle:
            self._queued_records.setdefault(brain_uid, {})[record_id] = seq  # holds back its watermark
            if self._thread is None:
                return  # stopped: the Record stays processing in the store, and start() queues it
            self._outstanding[job.namespace] += 1
        self._queue.put(job)

    def put_memory(self, brain_uid: str, memory_id: str) -> None:
        if self._thread is None:
            return  # stopped: the Memory stays pending in the store, and start() queues it
        job = Job("memory", self._namespace(brain_uid), brain_uid, memory_id)
        with self._idle:
            self._outstanding[job.namespace] += 1
            self._queued_memories.add((brain_uid, memory_id))
        self._queue.put(job)

    def forgotten(self, brain_uid: str, record_id: str | None = None) -> None:
        """A Record (every Record of the Brain when ``record_id`` is None) was erased: its job, if one
        is queued here, is dropped with the text it holds where it next passes, instead of being read,
        embedded slice by slice and then skipped when applied (a long document forgotten mid-way went on
        for 3-6 s of both cores). A forgotten Brain's self name goes too. Call once the erase committed."""
        with self._idle:
            queued = self._queued_records.get(brain_uid, {})
            erased = list(queued) if record_id is None else [record_id] if record_id in queued else []
            self._forgotten.update((brain_uid, erased_id) for erased_id in erased)
            unparked = self._unpark_forgotten(brain_uid, record_id)
        self._drop(unparked)
        # Logged before what is held is dropped, and a holder checks the log and holds under its own
        # lock: a read the forget overlapped is either refused by the log or dropped here after it.
        with self._forgets_lock:
            self._forget_count += 1
            self._forgets.append((self._forget_count, brain_uid, record_id))
        if record_id is None:
            with self._self_names_lock:
                self._self_names.pop(brain_uid, None)
        with self._said_lock:
            for key in [k for k in self._said if k[0] == brain_uid and record_id in (None, k[1])]:
                self._drop_said(key)
            if record_id is None:
                self._said_checked.pop(brain_uid, None)

    def _unpark_forgotten(self, brain_uid: str, record_id: str | None) -> list[Job]:
        """Under _idle: the parked jobs of a forgotten Brain (or Record), taken out, to be dropped (_drop);
        what the Brain's other parked jobs read of a forgotten Record goes."""
        parked = self._parked.get(brain_uid)
        if parked is None:
            return []
        gone = [
            job for job in parked.jobs
            if record_id is None or (job.kind == "record" and job.item_id == record_id)
        ]
        if record_id is None:
            del self._parked[brain_uid]  # a try under way finds it gone, and its Brain too
        else:
            parked.back -= sum(1 for job in list(parked.jobs)[: parked.back] if job in gone)
            parked.jobs = deque(job for job in parked.jobs if job not in gone)
            for job in parked.jobs:
                job.said_apart.pop(record_id, None)
                if job.read is not None:
                    job.read.records.pop(record_id, None)
                    job.read.texts.pop(record_id, None)
                    job.read.said.pop(record_id, None)
        return gone

    def _forget_mark(self) -> int:
        """Taken before a read of a Brain's data that is to be held: see _forgotten_since."""
        with self._forgets_lock:
            return self._forget_count

    def _forgotten_since(self, mark: int, brain_uid: str, record_id: str | None = None) -> bool:
        """Whether the Brain (or, given ``record_id``, that Record of it) may have been forgotten since
        ``mark`` was taken. When the forgets since, every tenant's, are no longer all kept, whether it
        is gone is asked of the store (an erase commits before its forget is logged). Taken as forgotten,
        one tenant's 1,024 forgets (1.2 s of DELETEs on the memory store) during another's reading of a
        document apart threw that reading away and kept the next batches' from being held: the document
        was read 7 times instead of once (tests/api/test_derivation_schedule.py, the log cut to 4)."""
        with self._forgets_lock:
            if mark == self._forget_count:
                return False
            if self._forgets and self._forgets[0][0] <= mark + 1:
                return any(
                    count > mark and uid == brain_uid and forgotten in (None, record_id)
                    for count, uid, forgotten in self._forgets
                )
        try:
            if record_id is None:
                return self.store.brain_by_uid(brain_uid) is None
            return record_id not in self.store.record_visibilities(brain_uid, [record_id])
        except Exception:  # the store cannot tell either: taken as gone, so that nothing of it is held
            log.debug("could not tell whether %s of %s was forgotten", record_id, brain_uid, exc_info=True)
            return True

    def _drop_forgotten(self, jobs: list[Job]) -> list[Job]:
        """``jobs`` less those of forgotten Records, which are done with."""
        if not self._forgotten:  # read without the lock: a forget that lands meanwhile is seen next time
            return jobs
        with self._idle:
            gone = [job for job in jobs if job.kind == "record" and (job.brain_uid, job.item_id) in self._forgotten]
        for job in gone:
            job.record, job.text, job.assertions, job.drafts, job.vectors = None, None, None, [], []
            job.applying_failed, job.failure = "", None  # an error's message may quote the Record
            self._done(job)
        dropped = {id(job) for job in gone}
        return [job for job in jobs if id(job) not in dropped]

    def _outstanding_jobs(self, namespace: str) -> int:
        # Read without _idle: a job is counted before it is queued and uncounted once it is done, so a
        # namespace never looks light while one of its jobs is elsewhere.
        return self._outstanding.get(namespace, 0)

    def adopt_memory(self, brain_uid: str, memory_id: str) -> None:
        """Queue a Memory left pending (by a process that may have died), unless it is queued here.
        Another process re-deriving it too is harmless: it is re-read pending under the Brain's lock."""
        with self._idle:
            if (brain_uid, memory_id) in self._queued_memories:
                return
        self.put_memory(brain_uid, memory_id)

    def adopt_record(self, brain_uid: str, record_id: str, seq: int) -> None:
        """Queue a Record another process wrote and nobody derives, unless it is queued here already."""
        with self._idle:
            if record_id in self._queued_records.get(brain_uid, {}):
                return
        self.put_record(brain_uid, record_id, seq)

    def pending_through(self, brain_uid: str, seq: int) -> bool:
        """Whether a Record of the Brain written at or before ``seq`` is still being derived (in any
        process, with a shared store)."""
        with self._idle:
            if any(s <= seq for s in self._queued_records.get(brain_uid, {}).values()):
                return True
        shared = self._shared()
        return shared is not None and shared.derivation_pending_through(brain_uid, seq)

    def _done(self, job: Job) -> None:
        with self._idle:
            left = self._outstanding[job.namespace] - 1
            if left > 0:
                self._outstanding[job.namespace] = left
            else:
                self._outstanding.pop(job.namespace, None)
            if job.kind == "memory":
                self._queued_memories.discard((job.brain_uid, job.item_id))
            if job.kind == "record":
                held = self._queued_records.get(job.brain_uid)
                if held is not None:
                    held.pop(job.item_id, None)
                    if not held:
                        del self._queued_records[job.brain_uid]
                self._forgotten.discard((job.brain_uid, job.item_id))
            self._idle.notify_all()
        self._queue.wake()

    # --- the worker ---------------------------------------------------------------------------------------
    def _run(self) -> None:
        """Take, extract and embed batches, and hand what is finished to the applier.

        The next batch is read and extracted while the last one is embedded (on the embedding
        thread): extraction is pure Python on one core, and done in turn with the embedding it left
        a core idle for its whole length. It is taken as late as it can still be read before the
        embedder is free: taken at once, it would wait a whole embedding with its Records in it, and
        a quiet tenant's Record that comes meanwhile would wait for it too."""
        warm_up()  # here, off the request threads
        try:
            self.evidence.prepare_bulk()
        except Exception as exc:  # the first embedding meets it again, and its Records are retried
            log.warning("the embedder could not be prepared: %s", exc)
        embedding: _Embedding | None = None
        try:
            while True:
                if embedding is not None:
                    wait_futures([embedding.done], timeout=max(0.0, embedding.due - self._pace.read - time.monotonic()))
                batch = self._queue.take(BATCH_RECORDS, BATCH_CHARS, wait=embedding is None)
                if batch is None:
                    return
                started = time.monotonic()
                jobs = self._load_batch(batch) if batch else []
                self._pace.read = _Pace.moved(self._pace.read, time.monotonic() - started)
                try:
                    following = self._start_embedding(jobs, after=embedding) if jobs else None
                except RuntimeError:  # stop() gave up waiting for this thread: its Records stay processing
                    return
                if embedding is not None:
                    self._hand_over(embedding)
                embedding = following
        finally:
            if embedding is not None:
                self._hand_over(embedding)
            self._prepared.put(None)

    def _run_express(self) -> None:
        """The express lane: the light namespaces' jobs (EXPRESS_JOBS), read, embedded and applied at
        once on this thread, at the requests' priority, beside the worker's batches."""
        while (batch := self._queue.take_light(EXPRESS_CHARS)) is not None:
            try:
                self._derive_express(batch)
            finally:
                self._queue.release({job.namespace for job in batch})

    def _derive_express(self, batch: list[Job]) -> None:
        jobs = self._load_batch(batch)
        try:
            while unembedded := [job for job in jobs if not job.ready]:
                self._embed(unembedded)  # each call embeds at least one more chunk of every job
        except Exception:
            log.exception("embedding an express batch failed; retrying its work")
            for job in jobs:
                self._retry_later(job)
            return
        if jobs:
            self._apply_or_retry(jobs)

    def _start_embedding(self, jobs: list[Job], *, after: _Embedding | None) -> _Embedding:
        chars = sum(job.cost() for job in jobs)
        begins = time.monotonic() if after is None or after.done.done() else max(after.due, time.monotonic())
        current = _Embedding(jobs, begins + chars * self._pace.per_char)

        def embed() -> None:
            started = time.monotonic()
            self._embed(jobs)
            current.ended = time.monotonic()
            if chars:
                # the embedder runs a call's pieces in the order they come: the time this call spent
                # behind the one before it is not its own
                begun = max(started, after.ended) if after is not None and after.ended else started
                self._pace.per_char = _Pace.moved(self._pace.per_char, (current.ended - begun) / chars)

        current.done = self._embedding.submit(embed)
        return current

    def _load_batch(self, batch: list[Job]) -> list[Job]:
        try:
            return self._load(batch)
        except Exception:  # a bug must not kill the worker: retry each job on its own
            log.exception("reading a derivation batch failed; retrying its work")
            for job in batch:
                self._retry_later(job)
            return []

    def _hand_over(self, embedding: _Embedding) -> None:
        """Once a batch is embedded: its finished jobs to the applier, the rest of a long document
        back to the head of its namespace's queue."""
        jobs = embedding.jobs
        try:
            embedding.done.result()
        except Exception:
            log.exception("embedding a derivation batch failed; retrying its work")
            for job in jobs:
                self._retry_later(job)
            return
        jobs = self._drop_forgotten(jobs)
        for job in jobs:
            if not job.ready:
                self._queue.put(job, front=True)
        finished = [job for job in jobs if job.ready]
        if finished:
            self._prepared.put(finished)

    def _apply_prepared(self) -> None:
        """Apply the prepared batches in their order, and the parked Brains' jobs when they are due (the
        express lane parks too: the wait is bounded so that its parks are looked at)."""
        while True:
            with self._idle:
                due = min((parked.due for parked in self._parked.values()), default=math.inf)
            try:
                finished = self._prepared.get(timeout=min(max(0.0, due - time.monotonic()), HELD_DELAYS[0]))
            except queue.Empty:
                finished = []
            if finished is None:
                return
            if finished:
                self._apply_or_retry(finished)
            self._try_parked()

    def _apply_or_retry(self, finished: list[Job], *, returning: bool = False) -> None:
        # A job whose transaction failed alone before goes alone again: failing again in the batch it
        # would send every other job of it to a transaction of its own (a pending Memory that fails for
        # its own sake is retried every minute for as long as the process runs).
        alone = [job for job in finished if job.applying_failed]
        batch = [job for job in finished if not job.applying_failed]
        if len(batch) > 1:
            try:
                self._apply(batch, returning=returning)
                batch = []
            except Exception:
                log.warning("applying a batch of %d failed; applying its Records one by one", len(batch), exc_info=True)
        for job in batch + alone:
            try:
                self._apply([job], returning=returning)
            except Exception as exc:  # a bug must not kill the thread applying
                log.exception("derivation of %s %s failed", job.kind, job.item_id)
                self._failed_alone(job, exc)

    def _failed_alone(self, job: Job, failure: Exception) -> None:
        if self.store.unavailable(failure):  # the store's doing (down, full, timed out), not the Record's
            job.applying_failed, job.applying_failed_alike = "", 0
            self._retry_later(job)
            return
        said = f"{type(failure).__name__}: {failure}"
        job.applying_failed_alike = job.applying_failed_alike + 1 if said == job.applying_failed else 1
        job.applying_failed = said
        if job.kind == "record" and job.applying_failed_alike >= APPLY_ATTEMPTS:
            try:
                self._fail(job, failure, code="derivation_failed", why=f"applying it failed {APPLY_ATTEMPTS} times alike; ")
                return
            except Exception:  # the store refuses that too: not the Record's own failure, it seems
                log.exception("%s could not be marked failed either; it is tried again", job.item_id)
        self._retry_later(job)

    def _self_name(self, brain_uid: str) -> str | None:
        """A Brain's self never changes once created: read it once."""
        with self._self_names_lock:
            if brain_uid in self._self_names:
                self._self_names.move_to_end(brain_uid)
                return self._self_names[brain_uid]
        mark = self._forget_mark()
        brain = self.store.brain_by_uid(brain_uid)
        if brain is None:
            return None
        with self._self_names_lock:
            if not self._forgotten_since(mark, brain_uid):
                self._self_names[brain_uid] = brain.self_name
                while len(self._self_names) > SELF_NAMES_HELD:
                    self._self_names.popitem(last=False)
        return brain.self_name

    def forget_gone_brains(self) -> None:
        """What this process holds of the Brains, and of the Records, another process forgot goes
        (self names, queued jobs, readings of re-derivation sources): one statement for all held. The
        shared queue's scan runs it."""
        shared = self._shared()
        if shared is None:
            return
        with self._self_names_lock:
            since = dict.fromkeys(self._self_names, _NO_ERASURES)  # whether the Brain lives, only
        with self._said_lock:
            reading = {brain_uid for brain_uid, _ in self._said}
            self._said_checked = {uid: seq for uid, seq in self._said_checked.items() if uid in reading}
            since.update(self._said_checked)
        if not since:
            return
        for brain_uid, found in shared.erasures_since(since).items():
            if found is None:
                self.forgotten(brain_uid)
                continue
            head, erased = found
            for record_id in erased:
                self.forgotten(brain_uid, record_id)
            with self._said_lock:
                if brain_uid in self._said_checked:
                    self._said_checked[brain_uid] = max(self._said_checked[brain_uid], head)

    def _load(self, batch: list[Job]) -> list[Job]:
        """Read (one read per Brain) and extract the batch's Record jobs not read yet; the jobs with
        something (left) to do."""
        batch = self._drop_forgotten(batch)  # a long document's next slice, its Record erased since
        if self.store.schema_version() < max(StoreFeature):
            for job in batch:
                self._done(job)  # stays processing until the operator migrates
            # After the jobs are no longer queued here: a _resume that began before this still finds them.
            self._behind = True
            return []
        fresh: dict[str, list[Job]] = {}
        for job in batch:
            if job.kind == "record" and job.record is None:
                fresh.setdefault(job.brain_uid, []).append(job)
        dropped: set[int] = set()
        shared = self._shared()
        if shared is not None and fresh:
            claimed = shared.claim_records(
                self.owner, [job.item_id for jobs in fresh.values() for job in jobs], LEASE_SECONDS
            )
            for brain_uid in list(fresh):
                for job in fresh[brain_uid]:
                    if job.item_id not in claimed:
                        self._done(job)  # another process derives it (or did already)
                        dropped.add(id(job))
                fresh[brain_uid] = [job for job in fresh[brain_uid] if id(job) not in dropped]
        for brain_uid, jobs in fresh.items():
            records = self.store.records(brain_uid, [job.item_id for job in jobs])
            self_name = self._self_name(brain_uid)
            for job in jobs:
                record = records.get(job.item_id)
                if record is None or record.status != "processing":
                    self._done(job)  # forgotten meanwhile, or already derived
                    dropped.add(id(job))
                    continue
                if self._long_texts is not None and text_length(record) >= LONG_TEXT_CHARS:
                    # read off the worker; back at the head of its queue when done
                    self._extract_apart(job, self_name)
                    dropped.add(id(job))
                elif not self._extract(job, record, self_name):
                    dropped.add(id(job))
        pending = [job for job in batch if job.kind == "memory"]
        if pending:
            dropped |= self._read_for_rederive(pending)
        return [job for job in batch if id(job) not in dropped]

    def _extract(self, job: Job, record: Record, self_name: str | None) -> bool:
        """Read a Record's assertions and cut its chunks into ``job``; False when it cannot go on now
        (retried later, or failed)."""
        try:
            text, assertions = extract_record(
                self.extractor, record.content, self_name=self_name, occurred_at=record.occurred_at
            )
        except Exception as exc:
            self._not_read(job, exc)
            return False
        return self._cut(job, record, text, assertions)

    def _not_read(self, job: Job, failure: BaseException) -> None:
        """A Record's extraction raised: tried again later when the cause may not be the Record (the
        provider down, or the process reading it ended, a few times), failed otherwise."""
        if isinstance(failure, ExtractorUnavailable):
            log.warning("extractor unavailable for %s: %s", job.item_id, failure)
            self._retry_later(job)
        elif isinstance(failure, ReaderEnded):
            job.reader_endings += 1
            if job.reader_endings >= READER_ENDINGS:
                log.error("reading %s ended the process reading it %d times: failed", job.item_id, job.reader_endings)
                self._fail(job, ReaderEnded(f"reading its text ended the process reading it {job.reader_endings} times; the last: {failure}"))
            else:
                log.error("reading %s ended the process reading it (%s); trying again", job.item_id, failure)
                self._retry_later(job)
        else:
            log.error("extraction failed for %s", job.item_id, exc_info=failure)
            self._fail(job, failure if isinstance(failure, Exception) else RuntimeError(str(failure)))

    def _cut(self, job: Job, record: Record, text: SourceText, assertions: list[Assertion]) -> bool:
        try:
            drafts = draft_chunks(record, text)
        except Exception as exc:
            log.exception("chunking failed for %s", job.item_id)
            self._fail(job, exc)
            return False
        job.record, job.text, job.assertions, job.drafts = record, text, assertions, drafts
        return True

    def _extract_apart(self, job: Job, self_name: str | None) -> None:
        """Queue a long text to be read on its namespace's turn. Only the job waits: its text is read
        again then, so a tenant's backlog of documents does not wait in memory."""
        executor = self._long_texts
        if executor is None:
            return  # stopped: the Record stays processing in the store, and start() queues it
        try:
            executor.submit(job.namespace, lambda: self._read_apart(executor, job, self_name))
        except NamespaceBusy:
            self._retry_later(job)  # its namespace has LONG_TEXTS_WAITING already: in a while
        except RuntimeError:
            return  # shut down meanwhile, as above

    def _read_apart(self, executor: FairExecutor, job: Job, self_name: str | None) -> None:
        if self._stopping or executor is not self._long_texts:
            return  # stopped (and perhaps started again): the Record stays processing, start() queues it
        try:
            record = self.store.records(job.brain_uid, [job.item_id]).get(job.item_id)
        except Exception:  # the store unreachable: as for any batch
            log.exception("reading %s to extract it failed; retrying", job.item_id)
            self._retry_later(job)
            return
        if record is None or record.status != "processing":
            self._done(job)  # forgotten meanwhile, or derived by another process
            return
        try:
            if self._reader is None:
                text, assertions = extract_record(
                    self.extractor, record.content, self_name=self_name, occurred_at=record.occurred_at
                )
            else:
                text, assertions = self._reader.call(
                    extract_record, self.extractor, record.content, self_name=self_name, occurred_at=record.occurred_at
                )
        except Exception as exc:
            if not self._stopping:
                self._not_read(job, exc)
            return  # stopped: as above
        if self._cut(job, record, text, assertions):
            self._queue.put(job, front=True)

    def _fail(self, job: Job, exc: Exception, *, code: str = "extraction_failed", why: str = "") -> None:
        """Mark a Record failed, as an apply (in its Brain's order: behind the Brain's parked jobs)."""
        job.failure = {"code": code, "message": f"{why}{type(exc).__name__}: {exc}"[:500]}
        job.record, job.text, job.assertions, job.drafts, job.vectors = None, None, None, [], []
        try:
            self._apply([job])
        except Exception:
            job.failure = None  # not marked: the job is derived again when it is retried
            raise

    def _embed(self, jobs: list[Job]) -> None:
        """One embedding call for the slices this batch takes (every job gets at least one chunk)."""
        wanted: list[tuple[Job, int]] = []
        chars = 0
        for job in jobs:
            if job.kind != "record":
                continue
            start = job.embedded
            take = sliced = 0
            for draft in job.drafts[start:]:
                if take and (chars + len(draft.text) > BATCH_CHARS or sliced + len(draft.text) > SLICE_CHARS):
                    break
                take += 1
                chars += len(draft.text)
                sliced += len(draft.text)
            if take:
                wanted.append((job, take))
        if not wanted:
            return
        texts = [embedding_text(d) for job, n in wanted for d in job.drafts[job.embedded : job.embedded + n]]
        vectors = self.evidence.embed(texts)
        at = 0
        for job, n in wanted:
            job.vectors.append(vectors[at : at + n])
            at += n

    def _apply(self, jobs: Sequence[Job], *, returning: bool = False) -> None:
        """Apply ``jobs`` in one transaction; those of a parked Brain queue behind its parked jobs, and
        those of a Brain another transaction holds are parked. ``returning``: they are parked jobs
        being tried again (_try_parked)."""
        jobs = self._behind_parked(jobs, returning=returning)
        if not jobs:
            return
        by_brain: dict[str, list[Job]] = {}
        for job in jobs:
            by_brain.setdefault(job.brain_uid, []).append(job)
        applied: dict[str, tuple[list[PreparedEvidence], MemoryState]] = {}
        requeue: list[tuple[str, str]] = []
        held: set[str] = set()
        for job in jobs:
            if job.read is not None:
                job.read.alive.clear()  # known alive in this transaction only (a retry is another)
        # The Brains stay held from the transaction through the index update: a forget that came between
        # the commit and the update found no chunk to remove, and the update then added the forgotten
        # Record's chunks to the live index; a watermark's wait (settled) also ended before they were in.
        with self.evidence.mutating(by_brain):
            with self.store.atomic():
                now = self.rules.clock()
                statuses: list[RecordStatus] = []
                chunks: list[StoredChunk] = []
                held = self.store.try_lock_brains(sorted(by_brain), wait_at_most=HELD_WAIT_SECONDS)
                # Locked above, or gone: each lock_brain answers at once.
                for brain_uid, brain_jobs in sorted(by_brain.items()):
                    if brain_uid in held:
                        continue
                    if not self.store.lock_brain(brain_uid):
                        continue  # erased meanwhile: its Records went with it
                    records = [job for job in brain_jobs if job.kind == "record"]
                    current = self.store.records(brain_uid, [job.item_id for job in records])
                    live = [
                        job
                        for job in records
                        if (r := current.get(job.item_id)) is not None and r.status == "processing"
                    ]
                    state = memory_state(self.store, brain_uid)
                    state.prefetch(a for job in live if job.failure is None for a in job.assertions or ())
                    rederived = [job.item_id for job in brain_jobs if job.kind == "memory"]
                    state.prefetch_memories(rederived)
                    supporters = self._supporters(brain_uid, [m for m in map(state.get, rederived) if m is not None])
                    evidence: list[PreparedEvidence] = []
                    for job in brain_jobs:
                        if job.kind == "memory":
                            self._rederive(state, job.item_id, supporters, job.read)
                        elif job in live and job.failure is not None:
                            self.store.append_record_status(
                                brain_uid, job.item_id, "failed", seq=self.store.next_seq(brain_uid), error=job.failure
                            )
                        elif job in live:
                            prepared, memory_ids = self._derive(state, job)
                            evidence.append(prepared)
                            chunks += prepared.stored(brain_uid)
                            statuses.append(
                                RecordStatus(
                                    brain_uid,
                                    job.item_id,
                                    "ready",
                                    self.store.next_seq(brain_uid),
                                    None,
                                    tuple(memory_ids),
                                )
                            )
                    requeue.extend((brain_uid, m) for m in state.plan.rederive)
                    applied[brain_uid] = (evidence, state)
                write_plans(self.store, [state for _, state in applied.values()], now)
                self.store.insert_chunks(chunks)
                self.store.append_record_statuses(statuses)
            # after the commit (leaving the transaction) the indexes follow, the Brains still held
            for brain_uid, (evidence, state) in applied.items():
                self.evidence.apply(brain_uid, evidence, state.plan.revisions, [m for m, _ in state.plan.erased])
        if held:
            self._park([job for job in jobs if job.brain_uid in held], returning=returning)
        for job in jobs:
            if job.brain_uid not in held:
                self._done(job)
        for brain_uid, memory_id in requeue:
            self.put_memory(brain_uid, memory_id)
        self.on_applied(set(by_brain) - held)

    # --- Brains another transaction holds -----------------------------------------------------------------
    # A batch applies many tenants' Records in one transaction: waiting for one Brain another
    # transaction holds (on PostgreSQL another process's writer, an erase of a large Brain, an
    # operator's session) would hold up all of them, and every batch behind, for as long as it lasts.
    # That Brain's jobs are parked instead, whole: every later job of the Brain queues behind them, and
    # they are tried again together, in their order, so that its Records are applied in the order they
    # would have been without the hold (which Records a Memory cites first, and what a re-derivation
    # keeps, follow that order).
    def _behind_parked(self, jobs: Sequence[Job], *, returning: bool) -> list[Job]:
        """``jobs`` less those of parked Brains, which are queued behind those Brains' parked jobs (a
        parked job being tried again goes on unless one tried before it found its Brain held again)."""
        if not self._parked:  # read without the lock: only this apply's own Brains could be parked meanwhile
            return list(jobs)
        going: list[Job] = []
        gone: list[Job] = []
        with self._idle:
            for job in jobs:
                parked = self._parked.get(job.brain_uid)
                if parked is None or (returning and not parked.back):
                    going.append(job)
                    continue
                if self._forgotten_job(job):
                    gone.append(job)
                    continue
                if returning:
                    parked.jobs.insert(parked.back, job)
                    parked.back += 1
                else:
                    parked.jobs.append(job)
                self._keep_own(job)
        self._drop(gone)
        return going

    def _park(self, jobs: list[Job], *, returning: bool) -> None:
        """Park the jobs of Brains another transaction held, in their order; those of a try of parked
        jobs go back in front of the jobs that queued behind meanwhile. A Record erased, or a Brain, while
        they were tried is not parked again: what its jobs hold goes now."""
        now = time.monotonic()
        gone: list[Job] = []
        with self._idle:
            for job in jobs:
                parked = self._parked.get(job.brain_uid)
                # its Record forgotten, or its Brain during the try (checked under the lock forgotten takes)
                if self._forgotten_job(job) or (parked is None and returning):
                    gone.append(job)
                    continue
                self._keep_own(job)
                if parked is None:
                    self._parked[job.brain_uid] = _Parked(deque([job]), now + HELD_DELAYS[0])
                    log.info("Brain %s is held by another transaction: its derivation waits", job.brain_uid)
                elif returning:
                    if not parked.back:
                        parked.holds += 1
                        parked.due = now + HELD_DELAYS[min(parked.holds, len(HELD_DELAYS)) - 1]
                    parked.jobs.insert(parked.back, job)
                    parked.back += 1
                else:
                    parked.jobs.append(job)
        self._drop(gone)

    def _forgotten_job(self, job: Job) -> bool:
        """Under _idle: whether ``job``'s Record was forgotten since it was queued."""
        return job.kind == "record" and (job.brain_uid, job.item_id) in self._forgotten

    def _drop(self, jobs: list[Job]) -> None:
        """Done with ``jobs`` (forgotten), and with what they held."""
        for job in jobs:
            job.record, job.text, job.assertions, job.drafts, job.vectors = None, None, None, [], []
            job.read, job.said_apart, job.failure, job.applying_failed = None, {}, None, ""
            self._done(job)

    @staticmethod
    def _keep_own(job: Job) -> None:
        """What a parked job keeps: of the sources its batch read, only its own Brain's (the batch's are
        shared by its Brains, and an erased Brain's must not stay with another Brain's parked job)."""
        read = job.read
        if read is None:
            return
        own = {record_id for record_id, record in read.records.items() if record.brain_uid == job.brain_uid}
        own |= job.said_apart.keys()  # read apart for this job, its Brain's
        job.read = SourcesRead(
            records={r: read.records[r] for r in own},
            texts={r: t for r, t in read.texts.items() if r in own},
            said={r: said for r, said in read.said.items() if r in own},
        )

    def _try_parked(self) -> None:
        """On the applier: try again the parked jobs that are due, a batch of a Brain at a time, in order."""
        now = time.monotonic()
        with self._idle:
            due = [brain_uid for brain_uid, parked in self._parked.items() if parked.due <= now and not parked.returning]
        for brain_uid in due:
            if self._stopping:
                return
            with self._idle:
                parked = self._parked.get(brain_uid)
                if parked is None:
                    continue  # forgotten meanwhile
                taken = [parked.jobs.popleft() for _ in range(min(BATCH_RECORDS, len(parked.jobs)))]
                parked.returning, parked.back = True, 0
            try:
                self._apply_or_retry(taken, returning=True)
            finally:
                with self._idle:
                    if self._parked.get(brain_uid) is parked:
                        if not parked.jobs:
                            del self._parked[brain_uid]
                            log.info("Brain %s is no longer held: its derivation goes on", brain_uid)
                        else:
                            if not parked.back:  # all applied: those queued behind come next
                                parked.due = time.monotonic()
                            parked.returning, parked.back = False, 0
                self._queue.wake()

    def _derive(self, state: MemoryState, job: Job) -> tuple[PreparedEvidence, list[str]]:
        """One Record's assertions folded into the Brain's Memories; its chunks, and the Memory ids."""
        assert job.record is not None and job.text is not None and job.assertions is not None
        record, text = job.record, job.text
        corrects = record.content.get("corrects") if record.content.get("kind") == "correction" else None
        assertions = list(job.assertions)
        if corrects and all(assertion.retraction for assertion in assertions):
            # a bare "No, that's wrong": it withdraws the corrected Memory and says nothing else
            corrected = state.get(corrects)
            # only one it supersedes: a retraction says its words, and goes with them (RETRACTS)
            if corrected is not None and corrected.status == "active":
                assertions = [self.rules.retraction(corrected, record.id, text.text, record.occurred_at)]
        memory_ids: list[str] = []
        for assertion in assertions:
            memory_id = self.rules.apply(
                state, record.id, text.text, assertion, corrects, record.visibility, chat=text.kind == "message"
            )
            if memory_id not in memory_ids:
                memory_ids.append(memory_id)
        vectors = np.concatenate(job.vectors) if job.vectors else np.zeros((0, 1), dtype=np.float32)
        prepared = PreparedEvidence(
            record.id, job.drafts, vectors, self.evidence.embedder.model_name, leads(text.text, job.drafts)
        )
        return prepared, memory_ids

    def _rederive(
        self, state: MemoryState, memory_id: str, supporters: dict[str, list[str]], read: SourcesRead | None = None
    ) -> None:
        """Inside the transaction. ``supporters``: those of the batch's Memories (see _supporters), read
        in it; ``read``: its sources and what they say, read before it (what is missing is read here)."""
        memory = state.get(memory_id)
        if memory is None or memory.status != "pending":
            return
        self_name = self._self_name(state.brain_uid)
        read = read if read is not None else SourcesRead()
        sources, more_sources = self._rederive_sources(
            state.brain_uid, memory, self_name, read, supporters, in_transaction=True
        )
        self.rules.rederive(
            state, memory, sources, self.extractor, self_name, more_sources=more_sources, read=read.said
        )

    def _supporters(self, brain_uid: str, memories: Sequence[MemoryRevision]) -> dict[str, list[str]]:
        """The Records supporting each of the pending ``memories`` that more Records support than it
        cites (MORE_SUPPORT), as many as :meth:`_rederive_sources` wants of each, in one read of the
        Brain's Record events instead of one each."""
        more = [m for m in memories if m.status == "pending" and m.extra.get(MORE_SUPPORT)]
        if not more:
            return {}
        found = self.store.records_supporting(brain_uid, [m.memory_id for m in more], max(map(_supporters_wanted, more)))
        return {m.memory_id: found.get(m.memory_id, []) for m in more}

    def _rederive_sources(
        self,
        brain_uid: str,
        memory: MemoryRevision,
        self_name: str | None,
        read: SourcesRead,
        supporters: dict[str, list[str]],
        *,
        in_transaction: bool,
    ) -> tuple[list[tuple[str, SourceText]], bool]:
        """The Records a pending Memory is re-derived from ((record id, text), in the order they are
        read) and whether more support it than those. Records in ``read`` are not read again (in the
        transaction, only whether they still exist); those read are added to it. ``supporters``: see
        _supporters (a Memory it lacks is asked for alone)."""
        record_ids = list(dict.fromkeys(c.record_id for c in memory.citations))
        more_sources = False
        if memory.extra.get(MORE_SUPPORT):
            # more Records support it than it cites: they are read the most widely served first, then
            # in the order they came, as far as there are citations to fill (those it cites are among
            # them)
            wanted = _supporters_wanted(memory)
            if memory.memory_id not in supporters:
                supporters = self._supporters(brain_uid, [memory])
            supporting = supporters[memory.memory_id][:wanted]
            more_sources = len(supporting) == wanted
            record_ids = list(dict.fromkeys([*record_ids, *supporting]))
        known = [rid for rid in record_ids if rid in read.records]
        records = self.store.records(brain_uid, [rid for rid in record_ids if rid not in read.records])
        read.records.update(records)
        if in_transaction and known:  # a forget since they were read: a cheap read (no content) says which are gone
            unchecked = [rid for rid in known if rid not in read.alive]
            if unchecked:
                read.alive.update(self.store.record_visibilities(brain_uid, unchecked))
            records.update((rid, read.records[rid]) for rid in known if rid in read.alive)
        else:
            records.update((rid, read.records[rid]) for rid in known)
        live = [rid for rid in record_ids if rid in records]
        if more_sources or len(record_ids) > MAX_CITATIONS:
            live.sort(key=lambda rid: (-SERVED_RANK.get(records[rid].visibility, 0), records[rid].seq))
        for rid in live:
            if rid not in read.texts:
                record = records[rid]
                read.texts[rid] = source_text(record.content, self_name=self_name, occurred_at=record.occurred_at)
        return [(rid, read.texts[rid]) for rid in live], more_sources

    def _read_for_rederive(self, jobs: list[Job]) -> set[int]:
        """Before the transaction: read what the sources of the batch's pending Memories say, each
        source once for the batch. Read inside it, for every Memory, a document whose thousand Memories
        another Record also supports was read once per Memory there, holding the store's write lock,
        and every other tenant's writes, for half a minute a batch. Best effort: whatever fails here is
        read in the transaction, as before.

        At most REDERIVE_INLINE_CHARS of sources are read here: a job whose sources not read yet would
        take more is sent to have them read apart, on its namespace's turn (:meth:`_read_sources_apart`),
        and comes back to the head of its queue. The ids of the jobs sent so, to leave out of the batch."""
        read = SourcesRead()
        mark = self._forget_mark()  # before the sources are read: a forget after it keeps them out of _said
        by_brain: dict[str, list[Job]] = {}
        for job in jobs:
            job.read = read
            by_brain.setdefault(job.brain_uid, []).append(job)
            if job.said_apart:
                # what a source forgotten since it was read apart said is dropped, not held on with the job
                job.said_apart = {
                    record_id: said
                    for record_id, said in job.said_apart.items()
                    if not self._forgotten_since(job.said_mark, job.brain_uid, record_id)
                }
                job.said_mark = mark
                read.said.update(job.said_apart)
        memories: dict[str, dict[str, MemoryRevision]] = {}
        supporters: dict[str, dict[str, list[str]]] = {}
        try:
            for brain_uid, held in by_brain.items():
                memories[brain_uid] = self.store.memories(brain_uid, [job.item_id for job in held])
                known = {job.item_id: job.supporters for job in held if job.supporters is not None}
                unknown = [m for m in memories[brain_uid].values() if m.memory_id not in known]
                supporters[brain_uid] = {**known, **self._supporters(brain_uid, unknown)}
        except Exception:  # the store: met again, and handled, in the transaction
            log.debug("reading the pending Memories of a batch before applying it failed", exc_info=True)
            return set()
        inline = 0
        # (Brain, first source not read) -> the first job's sources not read, and the jobs sent for them
        apart: dict[tuple[str, str], tuple[list[tuple[str, int, SourceText]], list[Job]]] = {}
        for job in jobs:
            try:
                memory = memories[job.brain_uid].get(job.item_id)
                if memory is None or memory.status != "pending":
                    continue
                self_name = self._self_name(job.brain_uid)
                sources, _ = self._rederive_sources(
                    job.brain_uid, memory, self_name, read, supporters[job.brain_uid], in_transaction=False
                )
                for record_id, _ in sources:
                    if record_id not in read.said and (held := self._said_held(job.brain_uid, record_id)) is not None:
                        read.said[record_id] = held
                unread = [(record_id, text) for record_id, text in sources if record_id not in read.said]
                lengths = [len(text.text) for _, text in unread]
                chars = sum(lengths)
                if lengths and self._long_texts is not None and (
                    max(lengths) >= LONG_TEXT_CHARS or inline + chars > REDERIVE_INLINE_CHARS
                ):
                    job.supporters = supporters[job.brain_uid].get(job.item_id, [])
                    to_read = [(record_id, read.records[record_id].seq, text) for record_id, text in unread]
                    apart.setdefault((job.brain_uid, unread[0][0]), (to_read, []))[1].append(job)
                    continue
                inline += chars
                for record_id, text in unread:
                    seq = read.records[record_id].seq
                    read.said[record_id] = self._said_by(job.brain_uid, record_id, seq, text, self_name, mark)
            except Exception:  # the store or the extractor: met again, and handled, in the transaction
                log.debug("reading the sources of %s before applying it failed", job.item_id, exc_info=True)
        for to_read, waiting in apart.values():
            self._send_apart(waiting, to_read, mark)
        return {id(job) for _, waiting in apart.values() for job in waiting}

    def _said_held(self, brain_uid: str, record_id: str) -> dict[str, Assertion] | None:
        with self._said_lock:
            return self._used_said((brain_uid, record_id))

    def _used_said(self, key: tuple[str, str]) -> dict[str, Assertion] | None:
        """Under _said_lock: what the source says, if held, now its namespace's most recently used."""
        held = self._said.get(key)
        if held is None:
            return None
        self._said_used[held[0]].move_to_end(key)
        return held[2]

    def _hold_said(self, key: tuple[str, str], namespace: str, chars: int, said: dict[str, Assertion]) -> None:
        """Under _said_lock: hold a reading, then give up readings while over SAID_HELD_CHARS, each time
        the least recently used of the namespace holding the most (between equals, ``namespace``'s)."""
        self._said[key] = (namespace, chars, said)
        self._said_used.setdefault(namespace, OrderedDict())[key] = None
        self._said_chars[namespace] += chars
        while self._said_chars.total() > SAID_HELD_CHARS:
            heaviest = max(self._said_chars, key=lambda held: (self._said_chars[held], held == namespace))
            self._drop_said(next(iter(self._said_used[heaviest])))

    def _drop_said(self, key: tuple[str, str]) -> None:
        namespace, chars, _ = self._said.pop(key)
        used = self._said_used[namespace]
        del used[key]
        self._said_chars[namespace] -= chars
        if not used:
            del self._said_used[namespace], self._said_chars[namespace]

    def _send_apart(self, jobs: list[Job], unread: list[tuple[str, int, SourceText]], mark: int) -> None:
        """Have the long texts' thread read what ``unread`` (record id, change sequence, text: the sources
        of ``jobs``' Memories not read yet, those of one Brain) say, then put the jobs back."""
        executor = self._long_texts
        if executor is None:
            return  # stopped: the Memories stay pending in the store, and start() queues them
        try:
            executor.submit(jobs[0].namespace, lambda: self._read_sources_apart(executor, jobs, unread, mark))
        except NamespaceBusy:
            for job in jobs:
                self._retry_later(job)  # its namespace has LONG_TEXTS_WAITING already: in a while
        except RuntimeError:
            return  # shut down meanwhile, as above

    def _read_sources_apart(
        self, executor: FairExecutor, jobs: list[Job], unread: list[tuple[str, int, SourceText]], mark: int
    ) -> None:
        """On the long texts' thread: what the sources say, in their order, up to APART_SOURCE_CHARS (what
        is left is sent again when the jobs come back), by the offline rules in their own process."""
        if self._stopping or executor is not self._long_texts:
            return  # stopped (and perhaps started again): the Memories stay pending, start() queues them
        brain_uid = jobs[0].brain_uid
        self_name = self._self_name(brain_uid)
        reader = self._reader
        said: dict[str, dict[str, Assertion]] = {}
        chars = 0
        for record_id, seq, text in unread:
            if said and chars + len(text.text) > APART_SOURCE_CHARS:
                break
            try:
                if reader is None:
                    found = self._said_by(brain_uid, record_id, seq, text, self_name, mark)
                else:
                    found = self._said_by(
                        brain_uid, record_id, seq, text, self_name, mark,
                        read=lambda text=text: reader.call(_what_it_says, self.extractor, text, self_name),  # type: ignore[misc]
                    )
            except Exception as exc:
                if self._stopping:
                    return
                self._source_not_read(jobs, record_id, exc)
                return
            said[record_id] = found
            chars += len(text.text)
        if self._forgotten_since(mark, brain_uid):
            # its Brain forgotten: the jobs are dropped at their transaction, and hold nothing of it meanwhile
            said = {}
        said = {record_id: found for record_id, found in said.items() if not self._forgotten_since(mark, brain_uid, record_id)}
        for job in jobs:
            if not job.said_apart:
                job.said_mark = mark
            job.said_apart.update(said)
            self._queue.put(job, front=True)

    def _source_not_read(self, jobs: list[Job], record_id: str, failure: Exception) -> None:
        """Reading a re-derivation source apart raised: tried again later; after READER_ENDINGS failures
        that were not the extractor being unavailable, the source is taken as saying nothing new (the
        Memory keeps its stored citation of it), so that the Memory is not pending for ever."""
        log.warning("reading source %s of %d pending Memories apart failed: %s", record_id, len(jobs), failure)
        for job in jobs:
            if not isinstance(failure, ExtractorUnavailable):
                job.reader_endings += 1
                if job.reader_endings >= READER_ENDINGS:
                    if not job.said_apart:
                        job.said_mark = self._forget_mark()
                    job.said_apart[record_id] = {}
                    self._queue.put(job, front=True)
                    continue
            self._retry_later(job)

    def _said_by(
        self,
        brain_uid: str,
        record_id: str,
        seq: int,
        text: SourceText,
        self_name: str | None,
        mark: int,
        *,
        read: Callable[[], dict[str, Assertion]] | None = None,
    ) -> dict[str, Assertion]:
        """What a source says (fingerprint -> first assertion), read once for all the batches that
        re-derive its Memories: a document that a thousand of them were left to was read again for
        each batch of 64, 0.47 s of pure Python (the GIL) a batch, 8 s in all. A Record's content, and
        so what it says, never changes. ``seq``: the Record's change sequence (it can only be erased
        after it); ``mark``: _forget_mark before the source was read; ``read``: how to read it (by
        default, with the extractor on this thread)."""
        key = (brain_uid, record_id)
        with self._said_lock:
            held = self._used_said(key)
        if held is not None:
            return held
        said = read() if read is not None else _what_it_says(self.extractor, text, self_name)
        chars = len(text.text)
        namespace = self._namespace(brain_uid)
        with self._said_lock:
            if not self._forgotten_since(mark, brain_uid, record_id) and key not in self._said and chars <= SAID_HELD_CHARS:
                self._hold_said(key, namespace, chars, said)
                if self._shared() is not None:
                    self._said_checked[brain_uid] = min(self._said_checked.get(brain_uid, seq), seq)
        return said

    # --- re-derivation with the current extractor (brainstore rederive) ------------------------------
    def rederive_records(self, brain_uid: str, record_ids: Sequence[str]) -> dict[str, int]:
        """Derive Records that were derived before again, with the current extractor, in one
        transaction: the Memories each one alone supported are erased (undoing what they did to
        others, :meth:`MemoryRules.erase`), the others lose its citation, and its new assertions are
        applied by the same rules as a fresh Record's. Records, chunks and Objects stay as they are.

        User corrections stay: correction Records are not re-derived, and a Memory a correction
        superseded keeps its citation, and what the extractor reads again from the same words (same
        fingerprint, or an overlapping span) stays under the correction instead of coming back.
        A failed Record goes back to processing for the worker (it has no chunks yet); one still
        processing is the worker's already. Extraction runs before the transaction and may raise
        (ExtractorUnavailable ...): nothing is written then.
        Returns counts: records (re-derived), requeued (failed ones sent back), skipped."""
        counts = {"records": 0, "requeued": 0, "skipped": 0}
        self_name = self._self_name(brain_uid)
        extracted: list[tuple[Record, SourceText, list[Assertion]]] = []
        failed: list[str] = []
        records = sorted(self.store.records(brain_uid, record_ids).values(), key=lambda r: r.seq)
        for record in records:
            record_id = record.id
            if record.content.get("kind") == "correction" or record.status == "processing":
                counts["skipped"] += 1
            elif record.status == "failed":
                failed.append(record_id)
            else:
                text, assertions = extract_record(
                    self.extractor, record.content, self_name=self_name, occurred_at=record.occurred_at
                )
                extracted.append((record, text, assertions))
        requeue: list[tuple[str, int]] = []
        with self.evidence.mutating([brain_uid]):  # through the index update, as a batch's (_apply)
            with self.store.atomic():
                if not self.store.lock_brain(brain_uid):
                    return counts  # erased meanwhile
                now = self.rules.clock()
                current = self.store.records(brain_uid, [r.id for r, _, _ in extracted] + failed)
                state = memory_state(self.store, brain_uid)
                state.prefetch(a for _, _, assertions in extracted for a in assertions)
                statuses: list[RecordStatus] = []
                for record, text, assertions in extracted:
                    held = current.get(record.id)
                    if held is None or held.status != "ready":
                        counts["skipped"] += 1
                        continue
                    corrected = self._release(state, record.id, now)
                    memory_ids: list[str] = []
                    for assertion in assertions:
                        memory_id = _corrected_reading(corrected, assertion) or self.rules.apply(
                            state, record.id, text.text, assertion, visibility=record.visibility,
                            chat=text.kind == "message",
                        )
                        if memory_id not in memory_ids:
                            memory_ids.append(memory_id)
                    statuses.append(
                        RecordStatus(
                            brain_uid, record.id, "ready", self.store.next_seq(brain_uid), None, tuple(memory_ids)
                        )
                    )
                    counts["records"] += 1
                for record_id in failed:
                    held = current.get(record_id)
                    if held is None or held.status != "failed":
                        counts["skipped"] += 1
                        continue
                    seq = self.store.next_seq(brain_uid)
                    self.store.append_record_status(brain_uid, record_id, "processing", seq=seq)
                    requeue.append((record_id, seq))
                    counts["requeued"] += 1
                write_plans(self.store, [state], now)
                self.store.append_record_statuses(statuses)
            self.evidence.apply(brain_uid, [], state.plan.revisions, [m for m, _ in state.plan.erased])
        for record_id, seq in requeue:
            self.put_record(brain_uid, record_id, seq)
        for memory_id in state.plan.rederive:
            self.put_memory(brain_uid, memory_id)
        self.on_applied({brain_uid})
        return counts

    def _release(self, state: MemoryState, record_id: str, at: Any) -> list[tuple[MemoryRevision, str]]:
        """Take a Record's support out of its Memories (see :meth:`rederive_records`); the Memories
        kept because a user correction superseded them, with their fingerprints."""
        corrected: list[tuple[MemoryRevision, str]] = []
        for memory in state.citing(record_id):
            if self._corrected_by_user(state, memory):
                cited = tuple(c for c in memory.citations if c.record_id == record_id)
                corrected.append((replace(memory, citations=cited), revision_fingerprint(memory)))
                continue
            self.rules.withdraw(state, memory, record_id, at, rederive=False)
        return corrected

    def _corrected_by_user(self, state: MemoryState, memory: MemoryRevision) -> bool:
        successor = state.get(memory.superseded_by) if memory.superseded_by else None
        if successor is None:
            return False
        cited = self.store.records(state.brain_uid, [c.record_id for c in successor.citations])
        return any(
            r.content.get("kind") == "correction" and r.content.get("corrects") == memory.memory_id
            for r in cited.values()
        )

    def _retry_later(self, job: Job) -> None:
        delay = RETRY_DELAYS[min(job.failures, len(RETRY_DELAYS) - 1)]
        job.failures += 1
        log.warning("derivation of %s %s is retried in %.0f s", job.kind, job.item_id, delay)

        def requeue() -> None:
            with self._idle:
                if timer not in self._retries or self._stopping:
                    return
                self._retries.discard(timer)
            self._queue.put(job)

        timer = threading.Timer(delay, requeue)
        timer.daemon = True
        with self._idle:
            if self._stopping:
                return
            self._retries.add(timer)
        timer.start()
