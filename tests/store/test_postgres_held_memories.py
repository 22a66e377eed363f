"""PostgreSQL's current Memories held in memory (store.current.CheckedMemories): two stores with their
own pools stand in for two processes on one database. What one holds is served only while no process
changed the Brain (its change sequence, which every change of its Memories advances in the same
transaction, as the service writes them); a sweep drops what another process's erase made stale."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

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
        store.erase_memory(uid, memory_id, seq=store.next_seq(uid), at=T0)


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
    assert "b1" not in one._checked.held_generations() or one._checked.held_generations()["b1"] != one.current_seq("b1")
    assert len(one.memories_citing_any("b1", ["rec_1"])) == 4
    assert len(one.all_memories("b1")) == 4  # a whole read holds what it read
    assert one._checked.held_generations()["b1"] == one.current_seq("b1")
    monkeypatch.setattr(current_module, "SETTLE_SECONDS", 0.0)
    write(two, "b1", 4, 1)
    one.list_memories("b1", after_id="mem_b1_0", limit=10)
    assert one._checked.held_generations()["b1"] == one.current_seq("b1")  # settled: the page fills it
