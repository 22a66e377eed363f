"""PostgreSQL's current Memories held in memory (store.current.CheckedMemories): two stores with their
own pools stand in for two processes on one database. What one holds is served only while no process
changed the Brain (its change sequence, which every change of its Memories advances in the same
transaction, as the service writes them); a sweep drops what another process's erase made stale."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.domain import Brain, Citation
from brainstore.store import current as current_module
from brainstore.store.current import CheckedMemories
from brainstore.store.postgres import PostgresStore
from tests.store.erasure import T0, mem

SECRET = "Zanzibar-7f3e"


@pytest.fixture
def processes(postgres_url: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    one, two = PostgresStore(postgres_url, pool_size=2), PostgresStore(postgres_url, pool_size=2)
    for uid in ("b1", "b2"):
        one.insert_brain(Brain(uid, "ns", uid, None, None, None, T0))
    yield one, two
    one.close()
    two.close()


def by_statements(store: PostgresStore, call: Any, *args: Any, **kw: Any) -> Any:
    saved = store._checked
    store._checked = CheckedMemories(max_brains=0, max_bytes=0)
    try:
        return call(*args, **kw)
    finally:
        store._checked = saved


def write(store: PostgresStore, uid: str, n: int, version: int, *, statement: str = "", cites: str = "rec_1") -> None:
    with store.atomic():  # as the service writes a revision: with the next number of the Brain's sequence
        revision = mem(f"mem_{uid}_{n}", uid, version, statement or f"fact {n} v{version}", store.next_seq(uid), cites)
        store.insert_memory_revisions([replace(revision, citations=(Citation(cites, 0, 4, (statement or "fact")[:8]),))])


def forget_record(store: PostgresStore, uid: str, record_id: str) -> None:
    with store.atomic():  # as forgetRecord does
        store.next_seq(uid)
        store.erase_record_citations(uid, record_id)


def forget_memory(store: PostgresStore, uid: str, memory_id: str) -> None:
    with store.atomic():
        store.erase_memories(uid, [(memory_id, store.next_seq(uid))], at=T0)


def agree(store: PostgresStore, uid: str) -> None:
    """Every read the held Memories serve equals the statements' answer."""
    reads: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
        (store.all_memories, (uid,), {}),
        (store.list_memories, (uid,), {"after_id": "", "limit": 2}),
        (store.list_memories, (uid,), {"after_id": f"mem_{uid}_0", "limit": 10, "owner": "ALICE"}),
        (store.memories_citing_any, (uid, ["rec_2"]), {}),
    ]
    for call, args, kw in reads:
        assert call(*args, **kw) == by_statements(store, call, *args, **kw)


def held_now(store: PostgresStore, uid: str) -> bool:
    """Whether a read of the Brain now is served from what the store holds."""
    return store._checked.held_generations().get(uid) == store.current_seq(uid)


def test_what_one_process_holds_follows_the_others_writes_and_erases(
    processes: tuple[PostgresStore, PostgresStore],
) -> None:
    one, two = processes
    for n in range(3):
        write(two, "b1", n, 1)
    assert len(one.all_memories("b1")) == 3
    assert "b1" in one._checked.held_generations()
    agree(one, "b1")
    write(two, "b1", 1, 2, cites="rec_2")  # another process revises a Memory
    agree(one, "b1")
    assert [m.version for m in one.all_memories("b1")] == [1, 2, 1]
    write(one, "b1", 3, 1, cites="rec_2")  # this process writes
    agree(one, "b1")
    forget_record(two, "b1", "rec_2")
    agree(one, "b1")
    forget_memory(two, "b1", "mem_b1_0")
    agree(one, "b1")
    assert [m.memory_id for m in one.all_memories("b1")] == ["mem_b1_1", "mem_b1_2"]
    two.erase_brain("b1")
    assert one.all_memories("b1") == []
    agree(one, "b2")


def test_a_read_given_the_brains_sequence_asks_the_database_nothing_while_the_brain_is_held(
    processes: tuple[PostgresStore, PostgresStore],
) -> None:
    one, two = processes
    for n in range(3):
        write(two, "b1", n, 1)
    assert len(one.all_memories("b1")) == 3  # held now
    asked: list[str] = []
    read = one._rows
    one._rows = lambda sql, params=None: asked.append(sql) or read(sql, params)  # type: ignore[method-assign]
    seq = two.current_seq("b1")  # as a Context or a listMemories has just read it
    assert len(one.all_memories("b1", seq=seq)) == 3
    assert len(one.memories_citing_any("b1", ["rec_1"], seq=seq)) == 3
    assert len(one.list_memories("b1", after_id=None, limit=2, seq=seq)) == 2
    assert asked == []
    write(two, "b1", 3, 1)  # the caller that read the Brain's new end reads the Memories again
    assert len(one.all_memories("b1", seq=two.current_seq("b1"))) == 4 and asked


def test_another_process_erase_leaves_nothing_held_after_the_sweep(
    processes: tuple[PostgresStore, PostgresStore],
) -> None:
    one, two = processes
    write(two, "b1", 0, 1, statement=f"Alice keeps {SECRET}", cites="rec_1")
    write(two, "b2", 0, 1, statement="Alice keeps bees", cites="rec_1")
    assert SECRET in repr(one.all_memories("b1")) and one.all_memories("b2")
    forget_record(two, "b1", "rec_1")
    assert SECRET in repr(one._checked._held)  # held until read again, or until the sweep
    one.forget_stale_memories()
    assert SECRET not in repr(one._checked._held)
    assert set(one._checked.held_generations()) == {"b2"}  # a Brain nobody changed stays held
    two.erase_brain("b2")
    one.forget_stale_memories()
    assert one._checked.held_generations() == {}


def test_a_held_brain_is_never_read_inside_a_transaction(processes: tuple[PostgresStore, PostgresStore]) -> None:
    one, _ = processes
    write(one, "b1", 0, 1)
    one.all_memories("b1")
    with one.atomic():
        write(one, "b1", 1, 1)
        assert [m.memory_id for m in one.all_memories("b1")] == ["mem_b1_0", "mem_b1_1"]  # its own write
    assert len(one.all_memories("b1")) == 2


def test_a_brain_another_process_keeps_changing_is_not_filled_by_a_page_for_a_while(
    processes: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = processes
    for n in range(3):
        write(two, "b1", n, 1)
    one.all_memories("b1")
    write(two, "b1", 3, 1)  # what one holds goes stale
    assert len(one.list_memories("b1", after_id="mem_b1_0", limit=10)) == 3  # the statements' page
    assert not held_now(one, "b1")
    assert len(one.memories_citing_any("b1", ["rec_1"])) == 4
    assert len(one.all_memories("b1")) == 4  # a whole read holds what it read
    assert held_now(one, "b1")
    monkeypatch.setattr(current_module, "SETTLE_SECONDS", 0.0)
    write(two, "b1", 4, 1)
    one.list_memories("b1", after_id="mem_b1_0", limit=10)
    assert held_now(one, "b1")  # settled: the page fills it


class Boom(Exception):
    pass


def test_a_brain_this_process_writes_stays_held_with_its_own_writes(
    processes: tuple[PostgresStore, PostgresStore],
) -> None:
    one, two = processes
    for n in range(3):
        write(one, "b1", n, 1)
    one.all_memories("b1")
    write(one, "b1", 3, 1)  # this process's revision: carried along to its number
    assert held_now(one, "b1")
    agree(one, "b1")
    with one.atomic():  # a number taken without a Memory (a Record)
        one.next_seq("b1")
    assert held_now(one, "b1")
    write(one, "b1", 1, 2, statement="fact 1 revised", cites="rec_2")
    assert held_now(one, "b1")
    assert [m.version for m in one._checked.get("b1", one.current_seq("b1")).all()] == [1, 2, 1, 1]  # type: ignore[union-attr]
    agree(one, "b1")
    with pytest.raises(Boom), one.atomic():  # rolled back: what is held stays as it was
        write(one, "b1", 4, 1)
        raise Boom
    assert held_now(one, "b1")
    agree(one, "b1")
    write(two, "b1", 4, 1)  # another process's revision, then this one's after it
    write(one, "b1", 5, 1)
    assert "b1" not in one._checked.held_generations()  # it held the Brain as it was before the other's
    assert len(one.all_memories("b1")) == 6
    assert held_now(one, "b1")
    forget_record(one, "b1", "rec_2")  # an erase in the Brain drops it
    assert "b1" not in one._checked.held_generations()
    agree(one, "b1")
    one.all_memories("b1")
    with one.atomic():  # a revision written with no number taken is not followed
        revision = mem("mem_b1_9", "b1", 1, "fact 9", 0, "rec_1")
        one.insert_memory_revisions([replace(revision, citations=(Citation("rec_1", 0, 4, "fact"),))])
    assert "b1" not in one._checked.held_generations()
    agree(one, "b1")


OP = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 1), st.integers(0, 3), st.sampled_from(["rec_1", "rec_2"])),
    st.tuples(st.just("number"), st.integers(0, 1)),
    st.tuples(st.just("rolled_back"), st.integers(0, 1), st.integers(0, 3)),
    st.tuples(st.just("forget_record"), st.integers(0, 1), st.sampled_from(["rec_1", "rec_2"])),
    st.tuples(st.just("forget_memory"), st.integers(0, 1), st.integers(0, 3)),
    st.tuples(st.just("read"), st.integers(0, 1)),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OP, min_size=1, max_size=20))
def test_what_two_processes_hold_is_what_the_statements_read(postgres_server: Any, ops: list[tuple[Any, ...]]) -> None:
    """Whatever two processes write, roll back, erase and read, in any order, each serves from what it
    holds exactly what the statements read."""
    name = postgres_server.database()
    url = postgres_server.url(name)
    stores = (PostgresStore(url, pool_size=2), PostgresStore(url, pool_size=2))
    versions: dict[int, int] = {}
    try:
        stores[0].insert_brain(Brain("b1", "ns", "b1", None, None, None, T0))
        for op in ops:
            store = stores[op[1]]
            if op[0] == "write":
                versions[op[2]] = versions.get(op[2], 0) + 1
                write(store, "b1", op[2], versions[op[2]], cites=op[3])
            elif op[0] == "number":
                with store.atomic():
                    store.next_seq("b1")
            elif op[0] == "rolled_back":
                with pytest.raises(Boom), store.atomic():
                    write(store, "b1", op[2], versions.get(op[2], 0) + 1)
                    raise Boom
            elif op[0] == "forget_record":
                forget_record(store, "b1", op[2])
            elif op[0] == "forget_memory":
                forget_memory(store, "b1", f"mem_b1_{op[2]}")
                versions.pop(op[2], None)
            else:
                store.all_memories("b1")
            for each in stores:
                agree(each, "b1")
    finally:
        for each in stores:
            each.close()
        postgres_server.drop(name)


def test_a_brain_read_again_while_this_process_erases_in_it_is_dropped_at_the_commit(
    processes: tuple[PostgresStore, PostgresStore],
) -> None:
    one, _ = processes
    write(one, "b1", 0, 1, statement=f"Alice keeps {SECRET}", cites="rec_1")
    write(one, "b1", 1, 1, cites="rec_2")
    with one.atomic():
        forget_record(one, "b1", "rec_1")
        reader = threading.Thread(target=one.all_memories, args=("b1",))  # another request's read meanwhile
        reader.start()
        reader.join()
        assert SECRET in repr(one._checked._held)  # it read (and held) the Brain as last committed
    assert SECRET not in repr(one._checked._held)
    agree(one, "b1")
