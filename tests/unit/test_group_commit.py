"""Concurrent writes share commits, and each still answers for itself."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

import pytest

from brainstore.errors import error
from brainstore.service import group as group_module
from brainstore.service.group import GroupCommit, _Slot
from brainstore.store.memory import MemoryStore


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.transactions = 0
        self.fail_next_commit = False
        self.interrupt_after_commit = False
        self.held: set[str] = set()  # Brains another transaction holds
        self.asked: list[list[str]] = []

    def try_lock_brains(self, brain_uids: Sequence[str]) -> set[str]:
        self.asked.append(list(brain_uids))
        return self.held & set(brain_uids)

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
            self.interrupt_after_commit = False
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


def _arriving_while_a_group_commits(
    group: GroupCommit, arrivals: list[tuple[str | None, str]], write: Callable[[str], str]
) -> tuple[dict[str, object], dict[str, int]]:
    """Run ``write(name)`` for each (brain_uid, name) of ``arrivals``, all arriving while a group commits
    (so they make the next one); returns each one's answer (or exception) and its caller's thread."""
    leading, release = threading.Event(), threading.Event()

    def lead() -> str:
        leading.set()
        release.wait(10)
        return "lead"

    leader = threading.Thread(target=group.run, args=(lead, "brn_m"))
    leader.start()
    assert leading.wait(10)
    answers: dict[str, object] = {}
    callers: dict[str, int] = {}

    def call(brain_uid: str | None, name: str) -> None:
        callers[name] = threading.get_ident()
        try:
            answers[name] = group.run(lambda: write(name), brain_uid)
        except BaseException as exc:
            answers[name] = exc

    threads = [threading.Thread(target=call, args=arrival) for arrival in arrivals]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(group._pending) < len(threads) and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()
    for t in (leader, *threads):
        t.join(10)
    return answers, callers


def test_a_write_whose_brain_another_transaction_holds_runs_apart_in_its_callers_thread() -> None:
    """A group that waited for a held Brain held up every later group: other tenants' writes."""
    store = CountingStore()
    store.held = {"brn_held"}
    group = GroupCommit(store)
    ran_in: dict[str, tuple[int, int]] = {}

    def write(name: str) -> str:
        ran_in[name] = (threading.get_ident(), store.transactions)
        store.next_seq(f"brn_{name[0]}")
        return name.upper()

    arrivals: list[tuple[str | None, str]] = [("brn_a", "a1"), ("brn_held", "h1"), (None, "new"), ("brn_b", "b1")]
    answers, callers = _arriving_while_a_group_commits(group, arrivals, write)
    assert answers == {name: name.upper() for _, name in arrivals}
    assert store.asked[-1] == ["brn_a", "brn_b", "brn_held"]  # the group's Brains, in order, at once
    assert ran_in["h1"] == (callers["h1"], 2)  # after the leader's and its group's commits, by its caller
    assert store.transactions == 3 and all(store.current_seq(f"brn_{b}") == 1 for b in "ahb")


def test_a_failed_shared_commit_retries_each_write_by_its_own_caller() -> None:
    store = CountingStore()
    group = GroupCommit(store)
    ran_in: dict[str, list[int]] = {}

    def write(name: str) -> str:
        ran_in.setdefault(name, []).append(threading.get_ident())
        if len(ran_in[name]) == 1 and name == "a1":
            store.fail_next_commit = True  # the shared transaction fails as it commits
        store.next_seq(f"brn_{name[0]}")
        return name.upper()

    arrivals: list[tuple[str | None, str]] = [("brn_a", "a1"), ("brn_b", "b1"), ("brn_c", "c1")]
    answers, callers = _arriving_while_a_group_commits(group, arrivals, write)
    assert answers == {name: name.upper() for _, name in arrivals}
    assert all(ran_in[name][-1] == callers[name] and len(ran_in[name]) == 2 for _, name in arrivals)
    assert all(store.current_seq(f"brn_{b}") == 1 for b in "abc")  # the failed transaction left nothing


def test_an_interrupted_group_leaves_the_writes_that_ran_apart_to_run() -> None:
    """They wrote nothing in the interrupted transaction: they are no write of unknown outcome."""
    store = CountingStore()
    store.held = {"brn_held"}
    store.interrupt_after_commit = True
    group = GroupCommit(store)
    written, apart = _Slot(lambda: store.next_seq("brn_a"), "brn_a"), _Slot(lambda: store.next_seq("brn_held"), "brn_held")
    with pytest.raises(KeyboardInterrupt):
        group._commit([written, apart])
    assert getattr(written.error, "code", None) == "internal_error" and store.current_seq("brn_a") == 1
    assert apart.apart and apart.error is None and store.current_seq("brn_held") == 0
    assert group._alone(apart) == 1 and store.current_seq("brn_held") == 1


def test_the_writes_of_one_held_brain_run_apart_one_at_a_time_and_other_brains_beside_them() -> None:
    """Each waits for its Brain on a pooled connection: a held Brain's writers must not take them all."""

    class EveryBrainHeld:
        def atomic(self) -> AbstractContextManager[None]:
            return nullcontext()  # transactions that run side by side, as PostgreSQL's do

        def try_lock_brains(self, brain_uids: Sequence[str]) -> set[str]:
            return set(brain_uids)

    group = GroupCommit(EveryBrainHeld())  # type: ignore[arg-type]
    lock = threading.Lock()
    running: dict[str, int] = {"brn_x": 0, "brn_z": 0}
    most: dict[str, int] = {"brn_x": 0, "brn_z": 0, "both": 0}

    def write(brain_uid: str) -> None:
        with lock:
            running[brain_uid] += 1
            most[brain_uid] = max(most[brain_uid], running[brain_uid])
            most["both"] = max(most["both"], sum(running.values()))
        time.sleep(0.05)  # waiting for the Brain
        with lock:
            running[brain_uid] -= 1

    threads = [threading.Thread(target=group.run, args=(lambda b=b: write(b), b)) for b in ("brn_x", "brn_z") * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most == {"brn_x": 1, "brn_z": 1, "both": 2} and group._apart == {}


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
