"""Group commit: concurrent writes share one transaction, and "a 202 means committed" still holds.

A write waits at most for the transaction that was already committing when it arrived, then goes in
the next one with every write that arrived meanwhile (the leader/follower scheme of database logs):
an idle server commits each write at once, a busy one pays one commit for many, and its leader first
gives the writers the last commit answered a moment to come back (``GATHER_SECONDS``). Each write
still answers for itself: a write that raises a BrainstoreError (a check before it wrote anything)
fails alone; if the shared transaction fails, every write of the group is tried again in a
transaction of its own, so one bad write never fails another. An interrupt (Ctrl-C, SystemExit) is
never retried: it may come after the COMMIT took effect.

A group waits for no Brain another transaction holds: it first locks its Brains without waiting
(``Store.try_lock_brains``), and a write whose Brain is held (on PostgreSQL, by another process's
writer, an erase of a large Brain, an operator's session) leaves the group, to run in a transaction of
its own in its caller's thread, which waits for the Brain and delays only that Brain's writes. Groups
commit one at a time, so a group that waited held up every tenant's writes in the process: with one
Brain's row locked for 8 s from another session, a write to another Brain took 8.05 s. The writes
that a failed group tries again alone run the same way, each in its caller's thread.

A group runs its writes in the order of the Brains they lock (``brain_uid``), arrival order within a
Brain, as derivation's batches do: two transactions that lock several Brains then take them in the
same order and never wait on each other in a cycle (on PostgreSQL a cycle is a deadlock the server
breaks after a second by failing one of them). A group's own locks are taken without waiting, so
they close no cycle whatever their order; the order still holds for the locks its writes take after.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from brainstore.errors import BrainstoreError, error
from brainstore.store.base import Store

T = TypeVar("T")
# Writes in one transaction at most: bounds how long the write lock is held.
MAX_GROUP = 64
# How long a leader waits, at most, for as many writes as the last group and those that arrived while
# it committed: a busy server's clients send their next write as soon as the last is answered. Taking
# only what had arrived, 8 clients posting LoCoMo turns to DuckDB made groups of 3.6 writes on average
# (a commit costs about 2 ms of statements, a write in it 0.1 more); waiting up to 2 ms, 4.0; 5 ms,
# 5.9, and the request threads' CPU went from 1.68 to 1.47 ms a Record (3 paired runs). A lone writer
# never waits: the last group was its own.
GATHER_SECONDS = 0.005


@dataclass(eq=False)
class _Slot(Generic[T]):
    write: Callable[[], T]
    brain_uid: str
    done: bool = False
    apart: bool = False  # to run in a transaction of its own, in its caller's thread
    result: Any = None
    error: BaseException | None = None


@dataclass(eq=False)
class _Turns:
    """The writes of one Brain running apart, one at a time: each waits for the Brain on a pooled
    connection, and the writers of one held Brain must not take every connection from the others."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    queued: int = 0


class GroupCommit:
    def __init__(self, store: Store) -> None:
        self.store = store
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # a group is committed
        self._arrived = threading.Condition(lock)  # a write arrived while a leader gathers
        self._pending: list[_Slot[Any]] = []
        self._committing = False
        self._gathering = False
        # writes seen together lately: the last group and those that arrived while it committed
        self._writers = 1
        self._apart: dict[str, _Turns] = {}  # by Brain, those with writes running apart

    def run(self, write: Callable[[], T], brain_uid: str | None) -> T:
        """Run ``write`` inside a transaction shared with concurrent writes; returns once committed.

        ``write`` must check before it writes: a BrainstoreError it raises must leave nothing behind
        in the shared transaction. ``brain_uid`` is the Brain it locks (None: none yet, as when it
        makes one).
        """
        slot: _Slot[T] = _Slot(write, brain_uid or "")
        with self._cond:
            self._pending.append(slot)
            if self._gathering:
                self._arrived.notify()
            while self._committing and not slot.done:
                self._cond.wait()
            if not slot.done:  # nobody is committing: lead the next group, this write included
                self._committing = True
                expected = min(self._writers, MAX_GROUP)
                if len(self._pending) < expected:
                    self._gathering = True
                    self._arrived.wait_for(lambda: len(self._pending) >= expected, GATHER_SECONDS)
                    self._gathering = False
                group, self._pending = self._pending[:MAX_GROUP], self._pending[MAX_GROUP:]
        if not slot.done:
            try:
                self._commit(group)
            finally:
                with self._cond:
                    self._committing = False
                    self._writers = len(group) + len(self._pending)
                    self._cond.notify_all()
        if slot.apart:
            return self._alone(slot)
        if slot.error is not None:
            raise slot.error
        return slot.result  # type: ignore[no-any-return]

    def _alone(self, slot: _Slot[T]) -> T:
        """Run ``slot``'s write in a transaction of its own, after the others of its Brain running apart."""
        if not slot.brain_uid:  # it makes its Brain: none to wait for
            with self.store.atomic():
                return slot.write()
        with self._cond:
            turns = self._apart.setdefault(slot.brain_uid, _Turns())
            turns.queued += 1
        try:
            with turns.lock, self.store.atomic():
                return slot.write()
        finally:
            with self._cond:
                turns.queued -= 1
                if not turns.queued:
                    del self._apart[slot.brain_uid]

    def _commit(self, group: list[_Slot[Any]]) -> None:
        try:
            try:
                with self.store.atomic():
                    held = self.store.try_lock_brains(sorted({slot.brain_uid for slot in group} - {""}))
                    for slot in sorted(group, key=lambda queued: queued.brain_uid):  # stable: arrival order within a Brain
                        if slot.brain_uid in held:
                            slot.apart = True
                            continue
                        try:
                            slot.result = slot.write()
                        except BrainstoreError as exc:
                            slot.error = exc
            except Exception:
                # The shared transaction failed as a whole: each write again, alone (by its caller: one
                # whose Brain is held by then waits for it without holding up the others).
                for slot in group:
                    slot.result, slot.error, slot.apart = None, None, True
        except BaseException as exc:
            # Ctrl-C (KeyboardInterrupt) or SystemExit: it may come as the COMMIT returns, so whether
            # the transaction committed is unknown, and no write is tried again. Each was retried alone
            # and the interrupt swallowed: `brainstore import` ran on past Ctrl-C, and a Record whose
            # transaction had committed was written twice. It reaches the leader's caller; the other
            # writes of the group answer internal_error, as a write cut off mid-commit does. Those that
            # left the group for a held Brain wrote nothing in it, and still run apart.
            for slot in group:
                if not slot.apart:
                    slot.result = None
                    slot.error = error(
                        "internal_error",
                        f"the write's transaction was interrupted ({type(exc).__name__}): it may or may not "
                        "be stored",
                    )
            raise
        finally:
            for slot in group:
                slot.done = True
