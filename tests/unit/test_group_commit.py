"""Concurrent writes share commits, and each still answers for itself."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from brainstore.errors import error
from brainstore.service import group as group_module
from brainstore.service.group import GroupCommit
from brainstore.store.memory import MemoryStore


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.transactions = 0
        self.fail_next_commit = False
        self.interrupt_after_commit = False

    @contextmanager
    def atomic(self) -> Iterator[None]:
        outermost = self._undo is None
        with super().atomic():
            yield
            if outermost:
                self.transactions += 1
                if self.fail_next_commit:
                    self.fail_next_commit = False
                    raise RuntimeError("the disk is full")
        if outermost and self.interrupt_after_commit:
            raise KeyboardInterrupt  # after the transaction took effect


def test_concurrent_writes_share_commits_and_each_gets_its_own_answer() -> None:
    store = CountingStore()
    group = GroupCommit(store)
    results: dict[int, object] = {}
    gate = threading.Barrier(17)

    def write(i: int) -> None:
        gate.wait()

        def body() -> int:
            if i % 4 == 0:
                raise error("brain_not_found", f"brain_id: b{i}")  # checked before writing anything
            store.next_seq(f"brn_{i}")
            time.sleep(0.02)  # a commit that takes a while: others arrive meanwhile
            return i * 10

        try:
            results[i] = group.run(body, f"brn_{i}")
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    gate.wait()
    for t in threads:
        t.join()
    assert all(results[i] == i * 10 for i in range(16) if i % 4)
    assert all(getattr(results[i], "code", None) == "brain_not_found" for i in range(16) if i % 4 == 0)
    assert all(store.current_seq(f"brn_{i}") == (1 if i % 4 else 0) for i in range(16))
    assert store.transactions < 16  # some writes shared a commit


def test_a_failed_shared_commit_retries_each_write_alone() -> None:
    store = CountingStore()
    group = GroupCommit(store)
    store.fail_next_commit = True
    assert group.run(lambda: store.next_seq("brn_1"), "brn_1") == 1  # the group failed; the write alone succeeded
    assert store.current_seq("brn_1") == 1


def test_an_interrupt_as_the_commit_returns_is_raised_and_never_retried() -> None:
    """Ctrl-C landing as a shared commit returned was caught with the failures, each write tried again
    alone and the interrupt swallowed: `brainstore import` ran on past Ctrl-C, and the write that had
    committed was made twice (here: sequence 2)."""

    store = CountingStore()
    store.interrupt_after_commit = True
    group = GroupCommit(store)
    with pytest.raises(KeyboardInterrupt):
        group.run(lambda: store.next_seq("brn_1"), "brn_1")
    assert store.current_seq("brn_1") == 1  # written once


def test_a_group_runs_its_writes_in_brain_order_and_arrival_order_within_a_brain() -> None:
    """A group locks its Brains in the order derivation's batches do: two transactions that lock the
    same Brains never wait on each other in a cycle (a deadlock on PostgreSQL)."""
    store = CountingStore()
    group = GroupCommit(store)
    ran: list[str] = []
    leading, release = threading.Event(), threading.Event()

    def lead() -> str:
        leading.set()
        release.wait(10)  # the commit in progress, while the next group's writes arrive
        return "lead"

    leader = threading.Thread(target=group.run, args=(lead, "brn_m"))
    leader.start()
    assert leading.wait(10)
    arrivals = [("brn_c", "c1"), ("brn_a", "a1"), (None, "new"), ("brn_c", "c2"), ("brn_b", "b1"), ("brn_a", "a2")]
    answers: dict[str, str] = {}
    threads = []
    for brain_uid, name in arrivals:

        def write(name: str = name) -> str:
            ran.append(name)
            return name.upper()

        threads.append(
            threading.Thread(target=lambda w=write, b=brain_uid, n=name: answers.__setitem__(n, group.run(w, b)))
        )
        threads[-1].start()
        deadline = time.monotonic() + 10
        while len(group._pending) < len(threads) and time.monotonic() < deadline:  # it arrived: the next one may
            time.sleep(0.001)
    release.set()
    for t in (leader, *threads):
        t.join(10)
    assert ran == ["new", "a1", "a2", "b1", "c1", "c2"]
    assert answers == {name: name.upper() for _, name in arrivals}
    assert store.transactions == 2  # the leader's, then one for all that arrived meanwhile


def test_a_lone_writer_never_waits_to_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_module, "GATHER_SECONDS", 60.0)  # a wait would outlast the join below
    store = CountingStore()
    group = GroupCommit(store)
    writer = threading.Thread(target=lambda: [group.run(lambda: store.next_seq("brn_1"), "brn_1") for _ in range(20)])
    writer.start()
    writer.join(10)
    assert not writer.is_alive() and store.current_seq("brn_1") == 20 and store.transactions == 20


def test_a_leader_waits_for_the_writers_of_the_last_group_to_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # the group after the first waits this long for a fourth writer (the first one's) that never comes
    monkeypatch.setattr(group_module, "GATHER_SECONDS", 0.05)
    store = CountingStore()
    group = GroupCommit(store)
    leading, release = threading.Event(), threading.Event()

    def lead() -> int:
        leading.set()
        release.wait(10)  # the commit in progress, while three writers arrive
        return store.next_seq("brn_0")

    leader = threading.Thread(target=group.run, args=(lead, "brn_0"))
    leader.start()
    assert leading.wait(10)
    first = [threading.Thread(target=group.run, args=(lambda i=i: store.next_seq(f"brn_{i}"), f"brn_{i}")) for i in (1, 2, 3)]
    for t in first:
        t.start()
    deadline = time.monotonic() + 10
    while len(group._pending) < 3 and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    for t in (leader, *first):
        t.join(10)
    assert store.transactions == 2  # the leader's, then the three that arrived during it
    # The three come back one by one: the first to arrive waits for the other two instead of
    # committing alone.
    monkeypatch.setattr(group_module, "GATHER_SECONDS", 60.0)
    again = [threading.Thread(target=group.run, args=(lambda i=i: store.next_seq(f"brn_{i}"), f"brn_{i}")) for i in (1, 2, 3)]
    for t in again[:2]:
        t.start()
        time.sleep(0.05)
        assert store.transactions == 2  # still gathering
    again[2].start()
    for t in again:
        t.join(10)
    assert store.transactions == 3 and all(store.current_seq(f"brn_{i}") == 2 for i in (1, 2, 3))
