"""The DuckDB store's current Memories held in memory (store.current): every read served from them must
equal what the statements alone read, across writes, rolled-back writes, every kind of erase and
writes racing the reads; an erase leaves none of the Brain's text held; and what is held stays within
its bounds, fairly across namespaces."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.domain import Brain, Citation, MemoryRevision
from brainstore.store import current as current_module
from brainstore.store.current import CurrentMemories, weight
from brainstore.store.duckdb import DuckDBStore
from tests.store.cache_ops import BRAINS, Versions, apply, check_every_step, erases, open_store
from tests.store.erasure import T0, mem

SUBJECTS = ("Alice", "alice", "Bob")
OWNERS = ("Weiß", "WEISS", "Ann", None)
RECORDS = ("rec_1", "rec_2", "rec_3")


def held(store: DuckDBStore) -> dict[str, Any]:
    return dict(store._current_memories._held)


def by_statements(store: DuckDBStore, call: Any, *args: Any, **kw: Any) -> Any:
    """The same read with nothing held: the store reads by statements alone."""
    saved = store._current_memories
    store._current_memories = CurrentMemories(as_stored=store._as_stored, max_brains=0, max_bytes=0)
    try:
        return call(*args, **kw)
    finally:
        store._current_memories = saved


def reads(store: DuckDBStore, uid: str) -> list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]]:
    """Every read the held Memories serve, with its arguments."""
    out: list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]] = [("all", store.all_memories, (uid,), {})]
    for after_id in (None, f"mem_{uid}_1", f"mem_{uid}_3"):
        for limit in (1, 3, 100):
            out.append(("page", store.list_memories, (uid,), {"after_id": after_id, "limit": limit}))
    for subject in SUBJECTS[1:]:
        out.append(("subject", store.list_memories, (uid,), {"after_id": "", "limit": 100, "subject": subject}))
    for owner in ("weiss", "ann"):
        out.append(("owner", store.list_memories, (uid,), {"after_id": "", "limit": 100, "owner": owner}))
    for records in (["rec_1"], ["rec_2", "rec_3"]):
        out.append(("citing", store.memories_citing_any, (uid, records), {}))
    for after_seq, limit in ((0, 100), (3, 2)):
        out.append(("changes", store.memory_changes, (uid, after_seq, limit), {}))
    return out


WRITE = st.tuples(
    st.just("write"),
    st.sampled_from(BRAINS),
    st.integers(0, 4),  # memory
    st.sampled_from(SUBJECTS),
    st.sampled_from(OWNERS),
    st.sampled_from(["active", "superseded", "pending"]),
    st.lists(st.sampled_from(RECORDS), min_size=1, max_size=2, unique=True),
)
OPS = st.lists(
    st.one_of(WRITE, *erases(BRAINS, RECORDS, WRITE), st.tuples(st.just("fill"), st.sampled_from(BRAINS))),
    min_size=1,
    max_size=20,
)


def write(store: DuckDBStore, versions: dict[tuple[str, str], int], op: tuple[Any, ...]) -> None:
    _, uid, n, subject, owner, status, cites = op
    memory_id = f"mem_{uid}_{n}"
    with store.atomic():
        if not store.lock_brain(uid):
            return
        version = versions.get((uid, memory_id), 0) + 1
        revision = replace(
            mem(memory_id, uid, version, f"{subject} said {n} v{version}", store.next_seq(uid), cites[0]),
            subject=subject,
            owner=owner,
            status=status,
            # a time west of UTC and extra as a tuple: held, they must read as the file gives them back
            valid_from=(T0 + timedelta(days=n)).astimezone(timezone(timedelta(hours=-5))),
            extra={"conflicts_with": ("mem_x",)} if n % 2 else {},
            citations=tuple(Citation(r, 0, 4, f"{subject[:3]}{r}") for r in cites),
        )
        store.insert_memory_revisions([revision])
        versions[(uid, memory_id)] = version


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_reads_served_from_held_memories_equal_the_statements(ops: list[tuple[Any, ...]]) -> None:
    def step(store: DuckDBStore, versions: Versions, op: tuple[Any, ...]) -> Versions:
        if op[0] != "fill":
            return apply(store, versions, op, write, store.all_memories)
        store.all_memories(op[1])
        assert op[1] in held(store)
        return versions

    def check(store: DuckDBStore) -> None:
        for uid in BRAINS:
            for label, call, args, kw in reads(store, uid):
                assert call(*args, **kw) == by_statements(store, call, *args, **kw), label
            with store.atomic():  # inside a transaction: never from what is held
                assert store.all_memories(uid) == by_statements(store, store.all_memories, uid)

    check_every_step(open_store, ops, step, check)


@pytest.mark.parametrize("erase", ["erase_memory", "erase_citations", "erase_brain"])
def test_an_erase_leaves_nothing_of_the_brain_held(tmp_path: Path, erase: str) -> None:
    store = open_store(tmp_path / "b.duckdb")
    secret = "Zanzibar-7f3e"
    for uid in BRAINS:
        write(store, {}, ("write", uid, 0, secret, "Ann", "active", ["rec_1"]))
        assert store.all_memories(uid) and uid in held(store)
    if erase == "erase_memory":
        store.erase_memories("b1", [("mem_b1_0", store.next_seq("b1"))], at=T0)
    elif erase == "erase_citations":
        store.erase_record_citations("b1", "rec_1")
    else:
        store.erase_brain("b1")
    assert "b1" not in held(store)  # nothing of the erased text stays in memory
    assert "b2" in held(store)  # another Brain's is not touched
    assert store.all_memories("b1") == []
    store.close()


def test_the_next_pages_of_a_walk_come_from_memory(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    for n in range(5):
        write(store, {}, ("write", "b1", n, "Alice", "Ann", "active", ["rec_1"]))
    first = store.list_memories("b1", after_id=None, limit=2)
    assert "b1" not in held(store)  # a first page reads its page alone
    rest = store.list_memories("b1", after_id=first[-1].memory_id, limit=10)
    assert "b1" in held(store)
    assert [m.memory_id for m in first + rest] == [f"mem_b1_{n}" for n in range(5)]
    store.close()


def test_a_read_overlapping_a_commit_of_its_brain_is_not_held(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    write(store, {}, ("write", "b1", 0, "Alice", "Ann", "active", ["rec_1"]))
    cache = store._current_memories
    fill = cache.begin_fill("b1")
    assert fill is not None
    stale = by_statements(store, store.all_memories, "b1")
    write(store, {("b1", "mem_b1_0"): 1}, ("write", "b1", 0, "Alice", "Ann", "superseded", ["rec_1"]))
    cache.end_fill(fill, stale, "ns")
    assert "b1" not in held(store)
    assert store.all_memories("b1")[0].status == "superseded"
    store.close()


def test_a_brain_being_committed_is_read_from_the_file(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    write(store, {}, ("write", "b1", 0, "Alice", "Ann", "active", ["rec_1"]))
    store.all_memories("b1")
    cache = store._current_memories
    commit = cache.committing({"b1": []}, set())
    assert cache.get("b1") is None and cache.begin_fill("b1") is None
    cache.committed(commit)
    assert cache.get("b1") is not None
    store.close()


def test_held_memories_stay_within_their_bounds_fairly(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    store._current_memories.max_brains = 3
    busy = [f"busy_{i}" for i in range(6)]
    for uid in busy:
        store.insert_brain(Brain(uid, "other", uid, None, None, None, T0))
    for uid in ("b1", "b2", *busy):
        write(store, {}, ("write", uid, 0, "Alice", "Ann", "active", ["rec_1"]))
        store.all_memories(uid)
        assert len(held(store)) <= 3
    assert list(held(store)) == ["b1", "b2", "busy_5"]  # "other" pushed out only its own
    store._current_memories.max_brains = 64
    store._current_memories.max_bytes = 4 * held(store)["b1"].weight  # four Memories (each weighs the same)
    for n in range(1, 4):  # a held Brain grows past the total by writes
        write(store, {}, ("write", "busy_5", n, "Alice", "Ann", "active", ["rec_1"]))
    assert sum(len(h.by_id) for h in held(store).values()) <= 4
    assert "b1" in held(store) and "busy_5" not in held(store)
    assert len(store.all_memories("busy_5")) == 4  # read again, its namespace the heaviest: not held
    assert "busy_5" not in held(store)
    store.close()


def test_a_memory_weighs_its_text(tmp_path: Path) -> None:
    """The bound is on bytes, not Memories: one Memory of a long statement counts as what it takes."""
    store = open_store(tmp_path / "b.duckdb")
    write(store, {}, ("write", "b1", 0, "Alice", "Ann", "active", ["rec_1"]))
    write(store, {}, ("write", "b2", 0, "A" * 300_000, "Ann", "active", ["rec_1"]))
    short, long = (store.all_memories(uid)[0] for uid in BRAINS)
    assert weight(long) - weight(short) >= 4 * 300_000 and held(store)["b1"].weight == weight(short)
    store._current_memories.max_bytes = 1 << 20
    store._current_memories.clear()
    store.all_memories("b2")
    assert "b2" not in held(store)  # alone over the bound
    store.all_memories("b1")
    assert "b1" in held(store)
    store.close()


def test_reads_racing_writes_end_equal_to_the_statements(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    versions: dict[tuple[str, str], int] = {}
    stop = threading.Event()
    failures: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                for uid in BRAINS:
                    store.all_memories(uid)
                    store.list_memories(uid, after_id="", limit=3)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for i in range(60):
            uid = BRAINS[i % 2]
            write(store, versions, ("write", uid, i % 7, "Alice", "Ann", ("active", "superseded")[i % 2], ["rec_1"]))
            if i % 20 == 19:
                store.erase_record_citations(uid, "rec_1")
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert not failures
    for uid in BRAINS:
        assert store.all_memories(uid) == by_statements(store, store.all_memories, uid)
        for label, call, args, kw in reads(store, uid):
            assert call(*args, **kw) == by_statements(store, call, *args, **kw), label
    store.close()


def test_a_held_revision_reads_as_the_file_gives_it_back(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    store.all_memories("b1")  # held while empty: the write below is applied to it
    assert "b1" in held(store)
    write(store, {}, ("write", "b1", 1, "Alice", "Ann", "active", ["rec_1", "rec_2"]))
    [from_memory] = store.all_memories("b1")
    [from_file] = by_statements(store, store.all_memories, "b1")
    assert isinstance(from_memory, MemoryRevision)
    assert from_memory == from_file
    assert from_memory.valid_from.isoformat() == from_file.valid_from.isoformat()  # UTC, not -05:00
    assert from_memory.extra == from_file.extra == {"conflicts_with": ["mem_x"]}
    store.close()


def test_a_commit_holds_a_new_brain_and_leaves_the_one_being_read_alone() -> None:
    """Readers use what they got outside any lock: a commit never changes it under them (a reader making
    the order of ids while a commit changed the Brain would have held that order without the new id)."""
    cache = CurrentMemories(as_stored=lambda r: r, max_brains=4)
    first, second = mem("mem_a", "b1", 1, "a", 1, "rec_1"), mem("mem_b", "b1", 1, "b", 2, "rec_1")
    fill = cache.begin_fill("b1")
    assert fill is not None
    cache.end_fill(fill, [first], "ns")
    reading = cache.get("b1")
    assert reading is not None
    cache.committed(cache.committing({"b1": [second, replace(first, version=2, status="superseded")]}, set()))
    assert reading.all() == [first]
    now = cache.get("b1")
    assert now is not None and now is not reading
    assert [(m.memory_id, m.version) for m in now.all()] == [("mem_a", 2), ("mem_b", 1)]
    assert now.page(after_id="mem_a", limit=5, subject=None, owner=None) == [second]


def test_a_brain_whose_fill_was_spoiled_is_not_filled_by_a_page_for_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page, a delta read or a Context's memories would read the whole Brain only to hold it; on a
    Brain whose Memories keep changing that costs a whole read each time, so they wait for it to settle."""
    store = open_store(tmp_path / "b.duckdb")
    for n in range(3):
        write(store, {}, ("write", "b1", n, "Alice", "Ann", "active", ["rec_1"]))
    cache = store._current_memories
    fill = cache.begin_fill("b1")
    assert fill is not None
    write(store, {}, ("write", "b1", 3, "Alice", "Ann", "active", ["rec_1"]))  # spoils it
    cache.end_fill(fill, [], "ns")
    assert len(store.list_memories("b1", after_id="mem_b1_0", limit=10)) == 3
    assert store.memories_citing_any("b1", ["rec_1"]) and "b1" not in held(store)  # read, not held
    assert len(store.all_memories("b1")) == 4 and "b1" in held(store)  # a whole read still holds
    monkeypatch.setattr(current_module, "SETTLE_SECONDS", 0.0)
    store._current_memories.clear()
    store.list_memories("b1", after_id="mem_b1_0", limit=10)
    assert "b1" in held(store)  # settled: the page fills it
    store.close()


def test_a_fill_a_commit_spoiled_answers_from_what_it_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not held, but not read twice either: the read that filled answers its caller."""
    store = open_store(tmp_path / "b.duckdb")
    for n in range(3):
        write(store, {}, ("write", "b1", n, "Alice", "Ann", "active", ["rec_1"]))
    reads: list[str] = []
    statements = store._current

    def read_then_commit(*args: Any, **kw: Any) -> Any:
        found = statements(*args, **kw)
        reads.append(args[0])
        if len(reads) == 1:  # a commit of the Brain lands while the fill reads it
            write(store, {}, ("write", "b1", 7, "Alice", "Ann", "active", ["rec_2"]))
        return found

    monkeypatch.setattr(store, "_current", read_then_commit)
    assert [m.memory_id for m in store.memories_citing_any("b1", ["rec_1"])] == [f"mem_b1_{n}" for n in range(3)]
    assert reads == ["b1"] and "b1" not in held(store)
    store.close()
