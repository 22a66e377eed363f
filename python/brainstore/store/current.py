"""Each recently read Brain's current Memories, held in memory by a store whose reads of them are costly.

Every read of current Memories ranks the Brain's revisions and builds a Python object for each: at
20,000 Memories a profile, a census or a Context with ``profile`` read them all (0.3 s on DuckDB and on
PostgreSQL), and each DuckDB listMemories page ranked them again (0.06 s). What such a read found is
held, so that the next reads of that Brain are lookups: by :class:`CurrentMemories` in a store that one
process writes (DuckDB), by :class:`CheckedMemories` in one that several write (PostgreSQL, below).
:class:`CurrentMemories`:

* A Brain is held only from a read that no commit of its Memories overlapped (:meth:`begin_fill` and
  :meth:`end_fill`): a commit that lands while the read runs spoils it, since the read's snapshot may
  predate it.
* A commit that writes revisions marks its Brains before it commits and applies them to what is held
  after (:meth:`committing`, :meth:`committed`): between the two, a read of those Brains goes to the
  store, so a reader that saw the commit (a Record ready) never reads the Memories of before it.
* A commit that erased anything in a Brain forgets it, and a commit that fails forgets what it
  touched: the held text of an erased Memory or Record goes with the erase.
* At most ``max_brains`` Brains and ``max_bytes`` in all (each Memory weighed by :func:`weight`, its
  text counted, so long statements count as what they take); over a bound, the namespace holding the
  most gives up its least recently read Brain (:func:`evict_fairly`), so a tenant reading many Brains,
  or one huge one, never pushes out another's few.

Thread-safe; the store calls :meth:`committing` and :meth:`committed` under its write lock.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from brainstore.domain import MemoryRevision

__all__ = ["HELD_BRAINS", "HELD_BYTES", "CheckedMemories", "CurrentMemories", "HeldBrain", "evict_fairly", "weight"]

Held = TypeVar("Held")

# What a process holds at most, in Brains and in bytes (see weight), whichever store holds them.
HELD_BRAINS = 64
HELD_BYTES = 100 << 20

# A read that fills a Brain only so that later reads are lookups (a listMemories page, a delta read, a
# Context's memories component) reads the whole Brain, which costs more than its own answer (20,000
# Memories: 0.3 s against 0.02-0.09 s); on a Brain whose Memories keep changing what it held would not
# last. So such a read fills a Brain only when no fill of it was spoiled, and nothing held of it went
# stale, in the last this many seconds; a read of every Memory (a profile) always holds what it read.
SETTLE_SECONDS = 5.0

log = logging.getLogger("brainstore.store.current")


def evict_fairly(
    held: OrderedDict[str, Held],
    namespaces: dict[str, str],
    size: Callable[[Held], int],
    *,
    max_brains: int,
    max_total: int,
    newcomer: str | None = None,
    keep_newcomer: bool = False,
) -> None:
    """Drop Brains from ``held`` (least recently used first) until at most ``max_brains`` are held and
    their sizes sum to at most ``max_total``: over a bound, the namespace that holds the most of what
    is over (Brains, or size) gives up its least recently used Brain; between equals, the namespace of
    ``newcomer`` (just added or grown), which itself goes only when not ``keep_newcomer``."""
    brains: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for uid, item in held.items():
        namespace = namespaces.get(uid, "")
        brains[namespace] += 1
        sizes[namespace] += size(item)
    total = sum(sizes.values())
    kept = newcomer if keep_newcomer else None
    growing = namespaces.get(newcomer, "") if newcomer is not None else None
    # The counts are kept as Brains go, not counted again for each: 90,000 held indexes took 122 ms
    # to give one up, the GIL held throughout.
    while len(held) > max_brains or total > max_total:
        heaviest = brains if len(held) > max_brains else sizes
        alone = namespaces.get(kept, "") if kept in held and brains[namespaces.get(kept, "")] == 1 else None
        candidates = [ns for ns in brains if ns != alone]  # namespaces with a Brain they may give up
        if not candidates:
            return
        best = max((heaviest[ns], ns == growing) for ns in candidates)
        chosen = {ns for ns in candidates if (heaviest[ns], ns == growing) == best}
        victim = next(uid for uid in held if uid != kept and namespaces.get(uid, "") in chosen)  # oldest first
        namespace = namespaces.pop(victim, "")
        gone = size(held.pop(victim))
        total -= gone
        sizes[namespace] -= gone
        brains[namespace] -= 1
        if not brains[namespace]:
            del brains[namespace], sizes[namespace]


@dataclass
class HeldBrain:
    """One Brain's current revisions (every status), by memory id. Never changed once held: readers use
    it outside any lock, and a commit holds a new one in its place (applied)."""

    by_id: dict[str, MemoryRevision]
    weight: int = -1  # the revisions' weights summed (-1: counted when made)
    # the ids sorted and their revisions in that order, made by the first read that needs them
    _order_made: tuple[list[str], list[MemoryRevision]] | None = field(default=None, repr=False)
    # record id -> the positions in that order of the revisions citing it, likewise
    _citing_made: dict[str, list[int]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.weight < 0:
            self.weight = sum(map(weight, self.by_id.values()))

    def _order(self) -> tuple[list[str], list[MemoryRevision]]:
        made = self._order_made
        if made is None:  # two readers may both make it: the same lists
            ids = sorted(self.by_id)
            made = self._order_made = (ids, [self.by_id[memory_id] for memory_id in ids])
        return made

    def all(self) -> list[MemoryRevision]:
        """Ordered by memory id, as the store reads them."""
        return list(self._order()[1])

    def page(
        self, *, after_id: str | None, limit: int, subject: str | None, owner: str | None
    ) -> list[MemoryRevision]:
        """As the store's listMemories page: active or superseded, past ``after_id``, of the subject and
        owner (each casefolded) when given, at most ``limit``, ordered by memory id."""
        ids, ordered = self._order()
        start = bisect.bisect_right(ids, after_id) if after_id is not None else 0
        subject_key = subject.casefold() if subject is not None else None
        owner_key = owner.casefold() if owner is not None else None
        found: list[MemoryRevision] = []
        for memory in ordered[start:] if limit > 0 else ():
            if memory.status not in ("active", "superseded"):
                continue
            if subject_key is not None and memory.subject.casefold() != subject_key:
                continue
            if owner_key is not None and (memory.owner is None or memory.owner.casefold() != owner_key):
                continue
            found.append(memory)
            if len(found) >= limit:
                break
        return found

    def citing_any(self, record_ids: Iterable[str]) -> list[MemoryRevision]:
        """Those whose current revision cites any of ``record_ids``, ordered by memory id (a Context's
        memories component asks this of its window's Records: on 20,000 Memories a scan of them all
        took 14 ms a Context)."""
        ordered = self._order()[1]
        citing = self._citing_made
        if citing is None:  # two readers may both make it: the same dict
            citing = {}
            for position, memory in enumerate(ordered):
                for record_id in dict.fromkeys(c.record_id for c in memory.citations):
                    citing.setdefault(record_id, []).append(position)
            self._citing_made = citing
        positions = sorted({p for record_id in set(record_ids) for p in citing.get(record_id, ())})
        return [ordered[p] for p in positions]

    def applied(self, revisions: Iterable[MemoryRevision]) -> HeldBrain:
        """A new HeldBrain with ``revisions`` over these (a lower version than one held is ignored)."""
        by_id, total = dict(self.by_id), self.weight
        for revision in revisions:
            held = by_id.get(revision.memory_id)
            if held is None or revision.version >= held.version:
                by_id[revision.memory_id] = revision
                total += weight(revision) - (weight(held) if held is not None else 0)
        return HeldBrain(by_id, total)


def weight(memory: MemoryRevision) -> int:
    """At least the bytes a held revision takes: 2 KB of objects (20,000 derived Memories of a
    36-character statement and a 32-character quote took 1.96 KB each) and 4 bytes a character of its
    texts, the most a character takes."""
    texts = len(memory.statement) + len(memory.subject) + len(memory.value or "")
    return 2048 + 4 * (texts + sum(len(c.quote) for c in memory.citations))


class _Unsettled:
    """When each Brain last changed under a fill or a held copy (see SETTLE_SECONDS); its owner's lock
    guards it. Entries older than SETTLE_SECONDS are dropped as others come."""

    def __init__(self) -> None:
        self._at: dict[str, float] = {}

    def mark(self, brain_uid: str) -> None:
        now = time.monotonic()
        self._at[brain_uid] = now
        if len(self._at) > 1024:
            self._at = {uid: at for uid, at in self._at.items() if now - at < SETTLE_SECONDS}

    def settled(self, brain_uid: str) -> bool:
        at = self._at.get(brain_uid)
        return at is None or time.monotonic() - at >= SETTLE_SECONDS


@dataclass
class Fill:
    """A read of one Brain's current Memories meant to be held (see CurrentMemories.begin_fill)."""

    brain_uid: str
    spoiled: bool = False


@dataclass
class Commit:
    """A commit's Memory changes, between CurrentMemories.committing and committed (or abandoned)."""

    written: dict[str, list[MemoryRevision]]
    dropped: set[str]

    @property
    def brains(self) -> set[str]:
        return set(self.written) | self.dropped


class CurrentMemories:
    def __init__(
        self,
        *,
        as_stored: Callable[[MemoryRevision], MemoryRevision],
        max_brains: int = HELD_BRAINS,
        max_bytes: int = HELD_BYTES,
    ) -> None:
        """``as_stored`` turns a revision as written into the revision a read of the store returns
        (times in UTC, citations and extra as stored), so a held Brain answers what the store would."""
        self.max_brains = max_brains
        self.max_bytes = max_bytes
        self._as_stored = as_stored
        self._lock = threading.Lock()
        self._held: OrderedDict[str, HeldBrain] = OrderedDict()  # least recently read first
        self._namespaces: dict[str, str] = {}
        self._fills: dict[str, list[Fill]] = {}
        self._committing: Counter[str] = Counter()
        self._unsettled = _Unsettled()

    # --- reads ---------------------------------------------------------------------------------------
    def get(self, brain_uid: str) -> HeldBrain | None:
        """The Brain's held Memories, unless it is not held or a commit of it is under way."""
        with self._lock:
            held = self._held.get(brain_uid)
            if held is None or self._committing[brain_uid]:
                return None
            self._held.move_to_end(brain_uid)
            return held

    def settled(self, brain_uid: str) -> bool:
        """Whether a read may fill the Brain only to speed up later reads (see SETTLE_SECONDS)."""
        with self._lock:
            return self._unsettled.settled(brain_uid)

    def begin_fill(self, brain_uid: str) -> Fill | None:
        """Before a read of every current Memory of the Brain: what end_fill needs to hold what it
        finds, or None while a commit of the Brain is under way (the read is not held)."""
        if self.max_brains <= 0 or self.max_bytes <= 0:
            return None
        with self._lock:
            if self._committing[brain_uid]:
                return None
            fill = Fill(brain_uid)
            self._fills.setdefault(brain_uid, []).append(fill)
            return fill

    def end_fill(self, fill: Fill, found: Sequence[MemoryRevision] | None, namespace: str) -> None:
        """After the read: hold ``found`` (None: the read failed, or the Brain is gone) unless a commit
        of the Brain overlapped the read, or it alone weighs more than ``max_bytes``."""
        held = HeldBrain({m.memory_id: m for m in found}) if found is not None else None
        with self._lock:
            fills = self._fills.get(fill.brain_uid, [])
            if fill in fills:
                fills.remove(fill)
            if not fills:
                self._fills.pop(fill.brain_uid, None)
            if held is None or fill.spoiled or held.weight > self.max_bytes:
                return
            self._held[fill.brain_uid] = held
            self._held.move_to_end(fill.brain_uid)
            self._namespaces[fill.brain_uid] = namespace
            self._bound(newcomer=fill.brain_uid)  # which may give way too: its reader has what it read

    # --- writes --------------------------------------------------------------------------------------
    def committing(self, written: Mapping[str, list[MemoryRevision]], dropped: set[str]) -> Commit | None:
        """Just before a commit that wrote revisions (``written``, by Brain) or erased in Brains
        (``dropped``): until committed() or abandoned(), reads of those Brains are not served here."""
        if not written and not dropped:
            return None
        commit = Commit({uid: list(revisions) for uid, revisions in written.items()}, set(dropped))
        with self._lock:
            self._committing.update(commit.brains)
        return commit

    def committed(self, commit: Commit | None) -> None:
        """Just after the commit: its revisions applied to the Brains held, its erased Brains forgotten,
        and every read of its Brains in flight spoiled."""
        if commit is None:
            return
        with self._lock:
            before = {
                uid: self._held[uid] for uid in commit.written if uid not in commit.dropped and uid in self._held
            }
        after: dict[str, HeldBrain] = {}
        for uid, held in before.items():  # outside the lock: a copy of the Brain's dict
            try:
                after[uid] = held.applied(self._as_stored(r) for r in commit.written[uid])
            except Exception:  # the Brain is read from the store again, never answered wrong
                log.exception("holding the revisions a commit wrote to %s failed", uid)
        with self._lock:
            for uid in commit.dropped:
                self._forget(uid)
            for uid in commit.written:
                if uid in commit.dropped or uid not in self._held:
                    continue
                fresh = after.get(uid)
                # what was held is replaced only as it was: a read that began before this commit may
                # have been held meanwhile
                if fresh is None or self._held[uid] is not before.get(uid) or fresh.weight > self.max_bytes:
                    self._forget(uid)
                    continue
                self._held[uid] = fresh  # in its place in the order of use
            self._spoil(commit.brains)
            self._committing.subtract(commit.brains)
            self._committing += Counter()  # drop the zero counts
            self._bound()

    def abandoned(self, commit: Commit | None) -> None:
        """The commit failed: what it touched is forgotten, not guessed at."""
        if commit is None:
            return
        with self._lock:
            for uid in commit.brains:
                self._forget(uid)
            self._committing.subtract(commit.brains)
            self._committing += Counter()

    def clear(self) -> None:
        with self._lock:
            for uid in list(self._held):
                self._forget(uid)

    # --- under the lock ------------------------------------------------------------------------------
    def _forget(self, brain_uid: str) -> None:
        self._held.pop(brain_uid, None)
        self._namespaces.pop(brain_uid, None)
        self._spoil((brain_uid,))

    def _spoil(self, brain_uids: Iterable[str]) -> None:
        for uid in brain_uids:
            for fill in self._fills.get(uid, ()):
                fill.spoiled = True
                self._unsettled.mark(uid)

    def _bound(self, newcomer: str | None = None) -> None:
        evict_fairly(
            self._held,
            self._namespaces,
            lambda held: held.weight,
            max_brains=self.max_brains,
            max_total=self.max_bytes,
            newcomer=newcomer,
        )


class CheckedMemories:
    """Current Memories held by a store that several processes write (PostgreSQL), where no process
    sees the others' commits: each Brain is held with a generation, a counter that every commit
    changing the Brain's Memories advances in its own transaction (the store's change sequence), read
    *before* the Memories, so what is held is at least as new as its generation; it is served only
    while the store's counter is still that. The same bounds and fairness as :class:`CurrentMemories`.
    A transaction of this process that moved the counter on from the generation held carries what is
    held along (:meth:`advance`), so a Brain this process writes stays held; one that erased in the
    Brain drops it, and so does one that finds another generation held. :meth:`held_generations` and
    :meth:`forget_unless` let the store drop, every few seconds, what other processes' erases made
    stale, so erased text does not stay held until the Brain is read again."""

    def __init__(
        self,
        *,
        as_stored: Callable[[MemoryRevision], MemoryRevision] = lambda revision: revision,
        max_brains: int = HELD_BRAINS,
        max_bytes: int = HELD_BYTES,
    ) -> None:
        """``as_stored``: as in :class:`CurrentMemories`, for the revisions :meth:`advance` takes."""
        self.max_brains = max_brains
        self.max_bytes = max_bytes
        self._as_stored = as_stored
        self._lock = threading.Lock()
        self._held: OrderedDict[str, tuple[int, HeldBrain]] = OrderedDict()  # least recently read first
        self._namespaces: dict[str, str] = {}
        self._unsettled = _Unsettled()

    def get(self, brain_uid: str, generation: int) -> HeldBrain | None:
        """The Brain's held Memories if they were read at ``generation`` (the store's now)."""
        with self._lock:
            held = self._held.get(brain_uid)
            if held is None:
                return None
            if held[0] != generation:
                self._unsettled.mark(brain_uid)
                return None
            self._held.move_to_end(brain_uid)
            return held[1]

    def settled(self, brain_uid: str) -> bool:
        """Whether a read may fill the Brain only to speed up later reads (see SETTLE_SECONDS)."""
        with self._lock:
            return self._unsettled.settled(brain_uid)

    def hold(self, brain_uid: str, generation: int, found: Sequence[MemoryRevision], namespace: str) -> HeldBrain:
        held = HeldBrain({m.memory_id: m for m in found})
        if self.max_brains <= 0 or held.weight > self.max_bytes:
            return held
        with self._lock:
            current = self._held.get(brain_uid)
            if current is None or current[0] <= generation:  # never replace newer with older
                self._held[brain_uid] = (generation, held)
                self._held.move_to_end(brain_uid)
                self._namespaces[brain_uid] = namespace
                self._bound(newcomer=brain_uid)
        return held

    def forget(self, brain_uid: str) -> None:
        with self._lock:
            self._drop(brain_uid)

    def advance(self, brain_uid: str, since: int, to: int, revisions: Sequence[MemoryRevision]) -> None:
        """After this process committed a transaction that took the Brain's counter from ``since`` to
        ``to`` and wrote ``revisions`` and nothing else to its Memories: what is held at ``since``
        becomes what is held at ``to``. The counter's row is locked from its first advance to the
        commit, so nothing else changed the Brain between the two. Held at another generation, the Brain
        is forgotten."""
        with self._lock:
            held = self._held.get(brain_uid)
            if held is None:
                return
            if held[0] != since:
                self._drop(brain_uid)
                return
        try:  # outside the lock: a copy of the Brain's dict
            fresh = held[1].applied(self._as_stored(r) for r in revisions) if revisions else held[1]
        except Exception:  # after a commit, which must not fail for it: the Brain is read again instead
            log.exception("holding the revisions a commit wrote to %s failed", brain_uid)
            self.forget(brain_uid)
            return
        with self._lock:
            current = self._held.get(brain_uid)
            if current is not held:  # held again meanwhile: kept only if read after this commit
                if current is not None and current[0] < to:
                    self._drop(brain_uid)
                return
            if fresh.weight > self.max_bytes:
                self._drop(brain_uid)
                return
            self._held[brain_uid] = (to, fresh)  # in its place in the order of use
            if fresh is not held[1]:
                self._bound()

    def held_generations(self) -> dict[str, int]:
        with self._lock:
            return {uid: held[0] for uid, held in self._held.items()}

    def forget_unless(self, generations: Mapping[str, int]) -> None:
        """Forget each held Brain whose generation is not the one ``generations`` gives (absent: -1)."""
        with self._lock:
            for uid in [uid for uid, held in self._held.items() if generations.get(uid, -1) != held[0]]:
                self._drop(uid)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._namespaces.clear()

    def _drop(self, brain_uid: str) -> None:
        """Under the lock: the Brain held no more."""
        self._held.pop(brain_uid, None)
        self._namespaces.pop(brain_uid, None)

    def _bound(self, newcomer: str | None = None) -> None:
        """Under the lock: the bounds kept, as CurrentMemories keeps them."""
        evict_fairly(
            self._held,
            self._namespaces,
            lambda item: item[1].weight,
            max_brains=self.max_brains,
            max_total=self.max_bytes,
            newcomer=newcomer,
        )
