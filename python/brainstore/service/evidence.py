"""Evidence indexes: every Brain's chunk index (BM25 + hnswlib) and memory lane, and the embedder.

The indexes are a cache of the store: the store holds every chunk with its embedding, and an index is
rebuilt from it (or loaded from its saved files when they match) the first time a Brain is searched.

Invariants:
- An index changes only after the transaction that stored its change has committed (:meth:`apply`
  runs after commit, :meth:`forget_record` after the erase), so a rolled-back write is never served
  and a retried one is never added twice (a Record already in the index is skipped).
- Changes are serialized per Brain with :meth:`mutating`: a writer holds it across its transaction
  and the index update, so a delete can never slip between a commit and its index update and leave an
  erased Record's chunks behind. A build from the store (:meth:`index`, :meth:`memory_lane`) holds its
  Brain's lock too, so no change of that Brain lands meanwhile; other Brains' writers go on (one lock
  for every Brain let a cold Brain's first Context, loading or rebuilding its index for seconds to
  minutes, hold up every other tenant's derivation).
- "ready implies findable": a writer marks the Brains it is applying before it commits
  (:meth:`mutating`); a reader that has seen a Record ready passes :meth:`settled` before it searches.
- Saved index files hold Record text: a forget deletes them at once, after the Record left the live
  index, and they are written again from the live index in the background (:meth:`_save_soon`), never
  holding an erased chunk's text or vector (:meth:`BrainIndex.save`). A saved index is a cache of the
  store: loaded, it is reconciled with the store's chunks (Records erased since the save removed, Records
  added since added, each from its stored vectors), so neither a forget nor a crash costs a rebuild of
  the vector graph (217 s for 100,000 chunks on a loaded 2-core machine, nearly all of it hnswlib's
  add_items; reading the chunks from DuckDB took 4 s of it).
- A rebuild (a crash before the files were written, or every process start on a shared store) waits
  for the store's rows only: the vectors are scored exactly from a matrix while their graph is built
  on a thread of its own (:meth:`_graph_soon`), which then writes the files.
- No Context waits for disk once the process is up: :meth:`preload` loads every saved index when the
  service starts.

Several processes on one database (a :class:`~brainstore.service.common.SharedStore`): each process's
indexes are a cache of the store that also follows what the others commit. Each built index and memory
lane remembers the Brain's change sequence it reflects (read before the rows it was built from), and
:meth:`catch_up` brings it forward from the store's change log: the Records erased since (removed), the
chunks of Records made ready since (added, each Record once), the Memory revisions and tombstones since
(upserted, removed). Every step is idempotent, so reading the sequence first and the rows after is safe.
A Brain with Records erased elsewhere is brought forward at the shared queue's scan too
(:meth:`forget_erased_elsewhere`), so their text leaves memory though no Context comes.
With a shared store nothing is saved to disk: another process may erase what a file would keep.
"""

from __future__ import annotations

import gc
import itertools
import logging
import shutil
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from brainstore.derive import SourceText, source_text
from brainstore.domain import MemoryRevision, Record, StoredChunk
from brainstore.retrieval.chunking import ChunkDraft, chunk_record, embedding_text, leads
from brainstore.retrieval.embedder import Embedder, background_priority, load_embedder
from brainstore.retrieval.index import BrainIndex, ChunkTally
from brainstore.retrieval.memory_lane import LaneEntry, MemoryLane
from brainstore.retrieval.pipeline import lexical_query
from brainstore.service.common import SharedStore, shared_store
from brainstore.store.base import Store, StoreFeature
from brainstore.store.current import evict_fairly

log = logging.getLogger("brainstore.evidence")

# Chunks that come into the indexes between two freezes of the long-lived heap (_keep_out_of_full_collections).
FREEZE_AFTER_CHUNKS = 20_000

# What a Brain's index and memory lane hold beside their chunks (62-75 KB measured with one chunk), in
# chunks' worth (about 4.4 KB each at 100,000): the resident budget counts it, so Brains of a few
# chunks each cannot fill memory under a budget counted in chunks.
INDEX_OVERHEAD_CHUNKS = 16
# An eviction frees this share of resident_chunks beyond what the bound asks. Choosing what leaves
# visits every held index: with 20,000 held, two passes of 22 ms for each Brain loaded past the bound,
# the GIL held, when each one freed only its own room.
EVICTION_HEADROOM = 1 / 64

MEMORY_LANE_K = 40
# A Memory lifts every chunk of a Record of at most this many chunks, and of a longer one only the chunks
# its citation quotes, this many at most: a Memory citing a 200,000-character message lifted its 2,000
# chunks, and 40 such Memories made every Context of their Brain rank 147,000 chunks more (90 ms).
MEMORY_LANE_WHOLE = 8
# A save of a Brain's index waits until no change asked for one for SAVE_DELAY seconds, so that a
# burst of forgets writes the files once, and at most SAVE_AT_MOST seconds after the first change it
# has to write. A save of 100,000 chunks holds the GIL for about 0.8 s (hnswlib's save_index 0.45 s
# of it), a stall for every Context served meanwhile: with a save 1 s after each change, a Record
# forgotten every 2 s meant a save every 2 s. Until the save the Brain has no index files (the
# forget deleted them): a crash meanwhile costs a rebuild from the store at the next start.
SAVE_DELAY = 5.0
SAVE_AT_MOST = 60.0
# Memory changes read in one catch-up at most; a gap wider than that rebuilds the lane instead.
CATCH_UP_MEMORIES = 50_000


@dataclass(frozen=True)
class PreparedEvidence:
    """A Record's chunks and their embeddings, made before its transaction (no store access)."""

    record_id: str
    drafts: list[ChunkDraft]
    embeddings: np.ndarray
    model: str
    leads: list[str | None]  # the whitespace before each draft in the Record (chunking.leads)

    def stored(self, brain_uid: str) -> list[StoredChunk]:
        return [
            StoredChunk(brain_uid, d, self.model, np.ascontiguousarray(v, dtype="<f4").tobytes())
            for d, v in zip(self.drafts, self.embeddings, strict=True)
        ]


def draft_chunks(record: Record, text: SourceText) -> list[ChunkDraft]:
    source = record.source or {}
    return chunk_record(
        record.id, text, source_name=source.get("name"), trust=source.get("trust", "normal"), visibility=record.visibility
    )


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile
        return 0.0


class EvidenceIndexes:
    def __init__(
        self,
        store: Store,
        *,
        index_root: Path | None,
        embedder: Embedder | None = None,
        embedder_spec: str | None = None,
        resident_chunks: int = 0,
    ) -> None:
        self.store = store
        self.index_root = index_root
        # At most this many chunks in the indexes held in memory (0: no limit); beyond it the least
        # recently searched Brains' indexes of the namespace holding the most leave memory, down to
        # EVICTION_HEADROOM below it (see _evict), to be loaded again when needed.
        self.resident_chunks = resident_chunks
        self._namespaces: dict[str, str] = {}  # brain uid -> namespace, of held indexes (see _evict)
        self._evicting = threading.Lock()
        self._embedder = embedder
        self._embedder_spec = embedder_spec
        self._embedder_lock = threading.Lock()
        self._indexes: dict[str, BrainIndex] = {}
        self._held = ChunkTally()  # the chunks of the indexes in _indexes
        self._lanes: dict[str, MemoryLane] = {}
        self._lock = threading.RLock()  # the two dicts above, _brain_locks and _file_locks
        # Each Brain's lock for changes and builds (see _brain). A lock lives while someone holds or
        # waits for it, so the map does not keep one for every Brain ever seen.
        self._brain_locks: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._applying: Counter[str] = Counter()
        self._settled = threading.Condition(threading.Lock())
        # With a shared store: the change sequence each built index / lane reflects.
        self._index_seq: dict[str, int] = {}
        self._lane_seq: dict[str, int] = {}
        # Brains whose index files are to be written again, and when (see _save_soon).
        # Each: when its save is due, and when the first change it writes asked for it.
        self._save_due: dict[str, tuple[float, float]] = {}
        self._saves = threading.Condition(threading.Lock())
        self._saver: threading.Thread | None = None
        # Each Brain's lock while its index files are written or deleted (a 100,000-chunk index takes
        # about 2 s to write): a save never waits for, or holds up, a Context (which may take its
        # Brain's lock to build a memory lane), nor another Brain's forget.
        self._file_locks: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._unfrozen_chunks = 0  # under _lock
        # Brains whose vectors outgrew the matrix, in the order they did, for the graph thread (see
        # _graph_soon).
        self._graphs_due: dict[str, None] = {}
        self._graphs = threading.Lock()
        self._grapher: threading.Thread | None = None
        self._graphing: str | None = None  # the Brain whose graph is being built
        self._stopped = False  # no graph is built after stop() (until start())

    def _shared(self) -> SharedStore | None:
        return shared_store(self.store)

    # --- the embedder ---------------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    self._embedder = load_embedder(self._embedder_spec)
        return self._embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed(list(texts))

    def prepare_bulk(self) -> None:
        """Ready what :meth:`embed` runs before the first Record needs it: a new server's first Record
        waited about a second for the offline model's passage session. An embedder with no such step
        (a hosted provider) has nothing to do."""
        prepare = getattr(self.embedder, "prepare_bulk", None)
        if prepare is not None:
            prepare()

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)

    # --- serializing changes --------------------------------------------------------------------------
    def _lock_of(self, brain_uid: str, locks: weakref.WeakValueDictionary[str, Any] | None = None) -> Any:
        """The Brain's lock in ``locks`` (its change lock by default), made when nobody holds one."""
        locks = self._brain_locks if locks is None else locks
        with self._lock:
            lock = locks.get(brain_uid)
            if lock is None:
                lock = locks[brain_uid] = threading.RLock()
            return lock

    @contextmanager
    def _brain(self, brain_uids: Iterable[str]) -> Iterator[None]:
        """The locks of these Brains, taken in uid order (as every holder of several takes them)."""
        with ExitStack() as held:
            for uid in sorted(set(brain_uids)):
                held.enter_context(self._lock_of(uid))
            yield

    @contextmanager
    def mutating(self, brain_uids: Iterable[str] = ()) -> Iterator[None]:
        """Held by a writer across its transaction and its index update (see the module docstring)."""
        uids = list(dict.fromkeys(brain_uids))
        with self._brain(uids):
            with self._settled:
                self._applying.update(uids)
            try:
                yield
            finally:
                with self._settled:
                    self._applying.subtract(uids)
                    self._applying += Counter()  # drop zero counts
                    self._settled.notify_all()

    def settled(self, brain_uid: str, timeout: float = 30.0) -> None:
        """Wait until no committed change of the Brain is still on its way into the index."""
        with self._settled:
            self._settled.wait_for(lambda: not self._applying[brain_uid], timeout=timeout)

    # --- the chunk index --------------------------------------------------------------------------------
    def _index_dir(self, brain_uid: str) -> Path | None:
        if self.index_root is None or self._shared() is not None:
            return None
        return self.index_root / brain_uid

    def index(self, brain_uid: str) -> BrainIndex:
        with self._lock:
            held = self._indexes.get(brain_uid)
            if held is not None and self.resident_chunks:  # the most recently used last, for _evict
                self._indexes[brain_uid] = self._indexes.pop(brain_uid)
        if held is not None:
            if held.needs_graph:  # asked for already, unless the thread was lost (in a fork)
                self._graph_soon(brain_uid, held)
            return held
        with self._brain([brain_uid]):  # a rebuild reads the store: no change of it may land meanwhile
            with self._lock:
                held = self._indexes.get(brain_uid)
                if held is not None:
                    return held
            shared = self._shared()
            seq = self.store.current_seq(brain_uid) if shared is not None else 0
            index = self._load_or_rebuild(brain_uid)
            index.count_into(self._held)
            with self._lock:
                self._indexes[brain_uid] = index
                self._index_seq[brain_uid] = seq
                over = self.resident_chunks and self._held_chunks() > self.resident_chunks
            self._keep_out_of_full_collections(len(index))
            self._graph_soon(brain_uid, index)
        if over:
            # off this thread: a Context must not wait for other Brains' index files to be written
            threading.Thread(target=self._evict, name="brainstore-index-evict", daemon=True).start()
        return index

    def _held_chunks(self) -> int:
        """The chunks of every index in memory, each index counted INDEX_OVERHEAD_CHUNKS more (caller
        holds ``_lock``)."""
        return int(self._held) + INDEX_OVERHEAD_CHUNKS * len(self._indexes)

    def _evict(self) -> None:
        """Take Brains' indexes (and memory lanes) out of memory until the rest hold at most
        ``resident_chunks`` chunks less EVICTION_HEADROOM: the namespace whose indexes hold the most gives up its least
        recently searched first (evict_fairly), so that a tenant searching many Brains, or one huge
        one, never pushes another's few out of memory; the most recently searched always stays. Each
        is saved first, so that loading it again reads its files instead of rebuilding it from the store.

        A Brain whose lock is held (a writer, a build) is skipped rather than waited for: this thread
        takes one Brain's lock at a time and never blocks on one, so it cannot deadlock with holders
        of several. The Brain's own writers wait while its index is saved (about 2 s at 100,000
        chunks)."""
        if not self._evicting.acquire(blocking=False):
            return  # one eviction at a time; the one running looks again after each pass
        try:
            while True:
                with self._lock:
                    sizes = OrderedDict((uid, len(index) + INDEX_OVERHEAD_CHUNKS) for uid, index in self._indexes.items())
                freed = 0
                for brain_uid in self._victims(sizes):
                    lock = self._lock_of(brain_uid)
                    if not lock.acquire(blocking=False):
                        continue
                    try:
                        freed += self._evict_one(brain_uid)
                    finally:
                        lock.release()
                if not freed:  # within the limit, or every other Brain busy: the next load looks again
                    return
        finally:
            self._evicting.release()

    def _victims(self, sizes: OrderedDict[str, int]) -> list[str]:
        """Of the held indexes' sizes (least recently searched first), those to leave memory."""
        for brain_uid in sizes.keys() - self._namespaces.keys():
            brain = self.store.brain_by_uid(brain_uid)
            self._namespaces[brain_uid] = brain.namespace if brain is not None else ""
        kept = OrderedDict(sizes)
        newest = next(reversed(kept), None)
        evict_fairly(
            kept,
            dict(self._namespaces),
            lambda chunks: chunks,
            max_brains=len(kept),
            max_total=self.resident_chunks - int(self.resident_chunks * EVICTION_HEADROOM),
            newcomer=newest,
            keep_newcomer=True,
        )
        for gone in self._namespaces.keys() - sizes.keys():
            del self._namespaces[gone]
        return [brain_uid for brain_uid in sizes if brain_uid not in kept]

    def _evict_one(self, brain_uid: str) -> int:
        """Under the Brain's lock: its index saved and out of memory; the chunks it held."""
        with self._lock:
            index = self._indexes.get(brain_uid)
        if index is None:
            return 0
        self._save_one(brain_uid)
        self._cancel_save(brain_uid)
        with self._lock:
            if self._indexes.get(brain_uid) is not index:
                return 0
            del self._indexes[brain_uid]
            self._index_seq.pop(brain_uid, None)
            self._lanes.pop(brain_uid, None)
            self._lane_seq.pop(brain_uid, None)
        index.count_into(None)
        return len(index) + INDEX_OVERHEAD_CHUNKS

    def _keep_out_of_full_collections(self, new_chunks: int) -> None:
        """Once enough chunks came in, move every object the garbage collector tracks out of its full
        collections (``gc.freeze``).

        An index's chunks live as long as it does, and a full collection walks every tracked object:
        with 100,000 chunks held, each stopped the process for 110-150 ms, about once in 150 Contexts.
        Frozen objects are still freed as soon as nothing refers to them. Garbage in reference cycles
        would never be, and it may hold an erased Record's text (a traceback's locals, say): a full
        collection runs first, which walks only what came since the last freeze."""
        with self._lock:
            self._unfrozen_chunks += new_chunks
            if self._unfrozen_chunks < FREEZE_AFTER_CHUNKS:
                return
            self._unfrozen_chunks = 0
        gc.collect()
        gc.freeze()

    def _load_or_rebuild(self, brain_uid: str) -> BrainIndex:
        model = self.embedder.model_name
        directory = self._index_dir(brain_uid)
        count = self.store.count_chunks(brain_uid) if self.store.schema_version() >= StoreFeature.CHUNKS else 0
        index = BrainIndex.load(directory, model) if directory is not None and count else None
        if index is not None and len(index) != count:
            index = self._reconcile(brain_uid, index)
        if index is None:
            index = self._rebuild(brain_uid)
            if directory is not None and directory.exists():
                # Files that do not match the store hold what was erased since they were written (the
                # Brain's last Record, forgotten while its index was out of memory): they go now, and the
                # index rebuilt is saved again when it holds anything.
                self._remove_files(directory)
        if len(index) and index.unsaved:  # built, reconciled, or loaded from an older format
            self._save_soon(brain_uid)
        return index

    def _reconcile(self, brain_uid: str, index: BrainIndex) -> BrainIndex | None:
        """Bring a loaded index to the store's chunks: Records erased since it was saved leave it (and
        its files go), Records added since come in with their stored vectors. None when it still does
        not match (a Record chunked differently since): then it is rebuilt."""
        stored = self.store.chunks(brain_uid)
        present = {c.draft.record_id for c in stored}
        held = index.record_ids()
        erased = held - present
        for record_id in erased:
            index.remove_record(record_id)
        fresh = [c for c in stored if c.draft.record_id not in held]
        if fresh:
            drafts = [c.draft for c in fresh]
            index.add(drafts, self._stored_vectors(fresh), self._stored_leads(brain_uid, drafts))
        if len(index) != len(stored):
            return None
        directory = self._index_dir(brain_uid)
        if erased and directory is not None:
            self._remove_files(directory)
        self._save_soon(brain_uid)
        return index

    def _rebuild(self, brain_uid: str) -> BrainIndex:
        """From the stored chunks; chunks embedded by another model are embedded again."""
        embedder = self.embedder
        index = BrainIndex(embedder.dimension, embedder.model_name)
        if self.store.schema_version() < StoreFeature.CHUNKS:
            return index
        stored = self.store.chunks(brain_uid)
        if not stored:
            return index
        drafts = [c.draft for c in stored]
        index.add(drafts, self._stored_vectors(stored), self._stored_leads(brain_uid, drafts))
        return index

    def _stored_vectors(self, stored: Sequence[StoredChunk]) -> np.ndarray:
        """The stored chunks' vectors; those another model embedded are embedded again."""
        embedder = self.embedder
        vectors = np.zeros((len(stored), embedder.dimension), dtype=np.float32)
        stale = []
        for i, chunk in enumerate(stored):
            if chunk.model == embedder.model_name and len(chunk.embedding) == 4 * embedder.dimension:
                vectors[i] = np.frombuffer(chunk.embedding, dtype=np.float32)
            else:
                stale.append(i)
        if stale:
            vectors[stale] = embedder.embed([embedding_text(stored[i].draft) for i in stale])
        return vectors

    def _stored_leads(self, brain_uid: str, drafts: list[ChunkDraft]) -> list[str | None]:
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

    def prepare(self, items: Sequence[tuple[Record, SourceText]]) -> list[PreparedEvidence]:
        """Chunk and embed several Records in ONE embedding call (no store access)."""
        drafts = [draft_chunks(record, text) for record, text in items]
        texts = [embedding_text(d) for ds in drafts for d in ds]
        embedder = self.embedder
        vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dimension), dtype=np.float32)
        out, at = [], 0
        for (record, text), ds in zip(items, drafts, strict=True):
            out.append(PreparedEvidence(record.id, ds, vectors[at : at + len(ds)], embedder.model_name, leads(text.text, ds)))
            at += len(ds)
        return out

    def apply(self, brain_uid: str, evidence: Sequence[PreparedEvidence], memories: Sequence[MemoryRevision], erased: Sequence[str]) -> None:
        """After a commit: add its Records' chunks and Memory changes to the Brain's live indexes.

        A Brain being written gets its index now (built from the store, which has the chunks already,
        so none is added twice), not at its first Context; an unbuilt memory lane is built from the
        store when first searched.
        """
        index = self.index(brain_uid) if any(e.drafts for e in evidence) else None
        with self._lock:
            lane = self._lanes.get(brain_uid)
        if index is not None:
            fresh = [e for e in evidence if e.drafts and not index.record_chunks(e.record_id)]
            if fresh:
                try:
                    index.add(
                        [d for e in fresh for d in e.drafts],
                        np.concatenate([e.embeddings for e in fresh]),
                        [lead for e in fresh for lead in e.leads],
                    )
                except Exception:
                    self.drop(brain_uid)  # rebuilt from the store on next use
                    raise
                self._keep_out_of_full_collections(sum(len(e.drafts) for e in fresh))
                self._graph_soon(brain_uid, index)
        if lane is not None:
            for memory in memories:
                self._lane_apply(lane, memory)
            for memory_id in erased:
                lane.remove(memory_id)

    # --- the memory lane ---------------------------------------------------------------------------------
    def memory_lane(self, brain_uid: str) -> MemoryLane:
        with self._lock:
            lane = self._lanes.get(brain_uid)
            if lane is not None:
                return lane
        with self._brain([brain_uid]):
            with self._lock:
                lane = self._lanes.get(brain_uid)
                if lane is not None:
                    return lane
            shared = self._shared()
            seq = self.store.current_seq(brain_uid) if shared is not None else 0
            lane = MemoryLane()
            if self.store.schema_version() >= StoreFeature.MEMORIES:
                for memory in self.store.all_memories(brain_uid):
                    self._lane_apply(lane, memory)
            with self._lock:
                self._lanes[brain_uid] = lane
                self._lane_seq[brain_uid] = seq
            return lane

    @staticmethod
    def _lane_apply(lane: MemoryLane, memory: MemoryRevision) -> None:
        if memory.status != "active" or not memory.citations:
            lane.remove(memory.memory_id)
            return
        lane.upsert(
            LaneEntry(
                memory.memory_id,
                tuple(dict.fromkeys((c.record_id, c.start, c.end) for c in memory.citations)),
                memory.valid_from.timestamp(),
                memory.valid_to.timestamp() if memory.valid_to else None,
            ),
            memory.statement,
        )

    def memory_hits(self, brain_uid: str, index: BrainIndex, query: str, at: datetime) -> list[tuple[int, float]]:
        """The memory lane as a chunk lane: the chunks of the Records that matching Memories cite, all of
        a Record of at most MEMORY_LANE_WHOLE chunks (a turn), else the first MEMORY_LANE_WHOLE of those
        holding the cited words."""
        hits: list[tuple[int, float]] = []
        seen: set[int] = set()
        for entry, score in self.memory_lane(brain_uid).search(lexical_query(query), MEMORY_LANE_K, at.timestamp()):
            for record_id, start, end in entry.cited:
                for chunk_id in index.record_chunks(record_id, around=(start, end), whole=MEMORY_LANE_WHOLE):
                    if chunk_id not in seen:
                        seen.add(chunk_id)
                        hits.append((chunk_id, score))
        return hits

    # --- forgetting -------------------------------------------------------------------------------------
    def forget_record(self, brain_uid: str, record_id: str) -> None:
        """After the erase committed (the caller holds :meth:`mutating`): the Record's chunks leave the
        live index at once; the saved files, which hold them, are deleted and written again from the
        live index in the background. An index not yet loaded is loaded now (its files reconciled with
        the store drop the Record), so the next Context neither rebuilds it nor reads its files."""
        with self._lock:
            held = self._indexes.get(brain_uid)
        directory = self._index_dir(brain_uid)
        if held is None and directory is not None and directory.exists():
            held = self.index(brain_uid)
        removed = held.remove_record(record_id) if held is not None else []
        if removed and directory is not None:
            self._remove_files(directory)
            self._save_soon(brain_uid)

    # --- graphs in the background ------------------------------------------------------------------------
    def start(self) -> None:
        with self._graphs:
            self._stopped = False

    def stop(self) -> None:
        """No graph is built after this, and none is saved: a build under way gives up at its next
        slice. Whoever embeds the service may remove its data directory once it stopped."""
        with self._graphs:
            self._stopped = True
            self._graphs_due.clear()

    def _graph_soon(self, brain_uid: str, index: BrainIndex) -> None:
        """Have the Brain's vectors moved into a graph on a thread of its own when they outgrew the
        matrix (:meth:`BrainIndex.build_graph`): neither the Context that rebuilt a Brain's index nor the
        writer that grew it waits for the graph. Its files are written once the graph is built."""
        if not index.needs_graph:
            return
        with self._graphs:
            if brain_uid == self._graphing or self._stopped:
                return
            self._graphs_due[brain_uid] = None
            if self._grapher is None or not self._grapher.is_alive():  # none yet, or lost in a fork
                self._grapher = threading.Thread(target=self._graph_loop, name="brainstore-index-graph", daemon=True)
                self._grapher.start()

    def _graph_loop(self) -> None:
        """Until none is due: build each Brain's graph in turn, the smallest first (the thread ends
        when idle), at background priority, as derivation's embedding runs. Smallest first: a process
        on a shared store rebuilds every Brain it serves, and one tenant's Brain of a million chunks
        (12 minutes) would keep every Brain that came after it exact, and slower, that long."""
        background_priority()
        while True:
            with self._graphs:
                if not self._graphs_due:
                    self._grapher = None
                    return
                due = list(self._graphs_due)
            with self._lock:
                brain_uid = min(due, key=lambda uid: len(self._indexes[uid]) if uid in self._indexes else 0)
            with self._graphs:  # only this thread takes from it (stop() may have emptied it meanwhile)
                self._graphs_due.pop(brain_uid, None)
                self._graphing = brain_uid
            try:
                self._build_graph(brain_uid)
            except Exception:
                log.exception("building the vector graph of %s failed; its matrix goes on answering", brain_uid)
            finally:
                with self._graphs:
                    self._graphing = None

    def _build_graph(self, brain_uid: str) -> None:
        with self._lock:
            index = self._indexes.get(brain_uid)
        if index is None:
            return

        def gone() -> bool:  # erased or evicted, or the service stopped: the graph would serve no one
            with self._lock:
                return self._stopped or self._indexes.get(brain_uid) is not index

        if index.build_graph(stop=gone):
            self._save_soon(brain_uid)

    # --- saving in the background -------------------------------------------------------------------------
    def _save_soon(self, brain_uid: str) -> None:
        """Write the Brain's index files again from its live index, once no change asked for it for
        :data:`SAVE_DELAY` seconds, :data:`SAVE_AT_MOST` after the first change at the latest."""
        if self._index_dir(brain_uid) is None:
            return
        now = time.monotonic()
        with self._saves:
            _, first = self._save_due.get(brain_uid, (now, now))
            self._save_due[brain_uid] = (min(now + SAVE_DELAY, first + SAVE_AT_MOST), first)
            if self._saver is None or not self._saver.is_alive():  # none yet, or lost in a fork
                self._saver = threading.Thread(target=self._save_loop, name="brainstore-index-save", daemon=True)
                self._saver.start()
            self._saves.notify_all()

    def _cancel_save(self, brain_uid: str) -> None:
        with self._saves:
            self._save_due.pop(brain_uid, None)

    def _save_loop(self) -> None:
        """Until nothing is due: save each Brain when its time comes (the thread ends when idle)."""
        while True:
            with self._saves:
                if not self._save_due:
                    self._saver = None
                    return
                brain_uid, (due, _) = min(self._save_due.items(), key=lambda item: item[1])
                wait = due - time.monotonic()
                if wait > 0:
                    self._saves.wait(wait)
                    continue
                del self._save_due[brain_uid]
            if self._stopped:  # stop() saved what there was: nothing is written after it
                continue
            try:
                self._save_one(brain_uid)
            except Exception:
                log.exception("saving the index of %s failed; it is rebuilt from the store if needed", brain_uid)

    def _remove_files(self, directory: Path) -> None:
        """Delete a Brain's index files (``directory`` is named after the Brain)."""
        with self._lock_of(directory.name, self._file_locks):
            shutil.rmtree(directory, ignore_errors=True)

    def _save_one(self, brain_uid: str) -> None:
        # A forget deletes the files after the Record left the live index, and a drop after the index
        # left the dict, both under the Brain's files lock: a save that ran before either is deleted by
        # it, one that runs after cannot hold what they erased.
        with self._lock_of(brain_uid, self._file_locks):
            with self._lock:
                index = self._indexes.get(brain_uid)
            directory = self._index_dir(brain_uid)
            # Unchanged since its files were written or read: writing 100,000 chunks again took 2.1-2.4 s
            # of a stop for each such Brain (gunicorn kills a worker 10 s into its stop).
            # Not while its graph is still to be built (it is saved once built): an eviction or a stop
            # would wait for the build.
            if index is not None and directory is not None and len(index) and index.unsaved and not index.needs_graph:
                index.save(directory)

    def preload(self, stopping: threading.Event | None = None) -> None:
        """Load every saved index (reconciled with the store), so that no Context waits on disk for
        it. Files of a Brain that no longer exists are deleted."""
        root = self.index_root
        if root is None or self._shared() is not None or not root.is_dir():
            return
        if self.store.schema_version() < StoreFeature.CHUNKS:
            return
        # the most recently saved first: with a resident_chunks budget, those are the ones kept
        directories = sorted((p for p in root.iterdir() if p.is_dir()), key=_modified, reverse=True)
        for directory in directories:
            if stopping is not None and stopping.is_set():
                return
            brain_uid = directory.name
            try:
                if self.store.brain_by_uid(brain_uid) is None:
                    self._remove_files(directory)
                    continue
                with self._lock:
                    full = self.resident_chunks and self._held_chunks() >= self.resident_chunks
                if not full:
                    self.index(brain_uid)
            except Exception:
                log.exception("preloading the index of %s failed; it is loaded when first searched", brain_uid)
        if self._indexes:
            self.embed_query("warm up")  # onnxruntime's first run costs about 100 ms more than the next

    def drop(self, brain_uid: str) -> None:
        """Forget a Brain's indexes in memory and on disk (erased, or to be rebuilt from the store)."""
        self._cancel_save(brain_uid)
        with self._lock:
            index = self._indexes.pop(brain_uid, None)
            self._lanes.pop(brain_uid, None)
            self._index_seq.pop(brain_uid, None)
            self._lane_seq.pop(brain_uid, None)
        if index is not None:
            index.count_into(None)
        directory = self._index_dir(brain_uid)
        if directory is not None and directory.exists():
            self._remove_files(directory)

    def drop_lane(self, brain_uid: str) -> None:
        with self._lock:
            self._lanes.pop(brain_uid, None)
            self._lane_seq.pop(brain_uid, None)

    # --- following other processes (shared store) --------------------------------------------------------
    def catch_up(self, brain_uid: str, target: int | None = None, *, head: int | None = None) -> None:
        """Before serving from the Brain's cached index and lane: bring them up to the store.

        With ``target`` (a Brain-Watermark's position, already derived), up to at least it, and no
        store read at all when the cache covers it already. Without, up to everything committed when it
        is called: one read of the Brain's head (an index lookup), or ``head`` as the caller just read
        it, and the rows behind it only when another process changed the Brain. So an erasure anywhere
        is never served from this cache, and a Record another process reports ready is found here too.
        A no-op for a store only this process serves.
        """
        shared = self._shared()
        if shared is None:
            return
        with self._lock:
            built = [seqs[brain_uid] for seqs in (self._index_seq, self._lane_seq) if brain_uid in seqs]
        if not built:
            return  # built from the store when first used
        low = min(built)
        if target is not None and low >= target:
            return
        if head is None:
            head = self.store.current_seq(brain_uid)
        if head <= low:
            return
        with self._brain([brain_uid]):  # no local change lands between reading the rows and applying them
            self._catch_up_index(shared, brain_uid, head)
            self._catch_up_lane(brain_uid, head)

    def _catch_up_index(self, shared: SharedStore, brain_uid: str, head: int) -> None:
        with self._lock:
            index = self._indexes.get(brain_uid)
            since = self._index_seq.get(brain_uid, head)
        if index is None or since >= head:
            return
        for record_id in shared.erased_records(brain_uid, since):
            index.remove_record(record_id)
        stored = [c for c in shared.chunks_ready_after(brain_uid, since) if not index.record_chunks(c.draft.record_id)]
        if stored:
            drafts = [c.draft for c in stored]
            try:
                index.add(drafts, self._stored_vectors(stored), self._stored_leads(brain_uid, drafts))
            except Exception:
                self.drop(brain_uid)  # rebuilt from the store on next use
                raise
            self._graph_soon(brain_uid, index)
        with self._lock:
            if self._indexes.get(brain_uid) is index:
                self._index_seq[brain_uid] = head

    def _catch_up_lane(self, brain_uid: str, head: int) -> None:
        with self._lock:
            lane = self._lanes.get(brain_uid)
            since = self._lane_seq.get(brain_uid, head)
        if lane is None or since >= head:
            return
        changes = self.store.memory_changes(brain_uid, since, CATCH_UP_MEMORIES)
        if len(changes) >= CATCH_UP_MEMORIES:
            self.drop_lane(brain_uid)  # rebuilt from the store when next searched
            return
        for _, memory_id, memory in changes:
            if memory is None:
                lane.remove(memory_id)
            else:
                self._lane_apply(lane, memory)
        with self._lock:
            if self._lanes.get(brain_uid) is lane:
                self._lane_seq[brain_uid] = head

    def forget_erased_elsewhere(self) -> None:
        """What another process erased leaves this process's memory, not only its next Context: the
        caches of Brains it erased, and those of Brains where it erased Records, brought up to the
        store (their chunks and the Memories that cited them go). One statement for every Brain held."""
        shared = self._shared()
        if shared is None:
            return
        with self._lock:
            since: dict[str, int] = {}
            for seqs in (self._index_seq, self._lane_seq):
                for brain_uid, seq in seqs.items():
                    since[brain_uid] = min(seq, since.get(brain_uid, seq))
        for brain_uid, found in shared.erasures_since(since).items():
            if found is None:
                with self._brain([brain_uid]):
                    self.drop(brain_uid)
            elif found[1]:
                self.catch_up(brain_uid, head=found[0])

    def save(self) -> None:
        """Write every live index changed since its files were written or read, now (at stop); no
        background save is due after it."""
        with self._saves:
            self._save_due.clear()
        with self._lock:
            held = list(self._indexes)
        for brain_uid in held:
            self._save_one(brain_uid)
