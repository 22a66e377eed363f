"""The DuckDB store's memory keys (_MemoryKeys): a lookup of current Memories by fingerprint or by subject
and attribute must find exactly what the statements alone find, across writes, rolled-back writes and
every kind of erase; and an erase leaves none of the Brain's text in them."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.domain import Brain, Citation
from brainstore.store import duckdb as duckdb_store
from brainstore.store.duckdb import DuckDBStore
from tests.store.cache_ops import BRAINS, Versions, apply, check_every_step, erases, open_store
from tests.store.erasure import T0, mem

FINGERPRINTS = ("fp_a", "fp_b", "fp_c", "")
SUBJECTS = ("Alice", "alice", "Bob")
ATTRIBUTES = ("likes", "lives_in", None)


def by_statements(store: DuckDBStore, call: Any, *args: Any) -> Any:
    """The same lookup with the Brain's keys not held: the store reads by statements alone."""
    saved = dict(store._memory_keys)
    limit = duckdb_store.MEMORY_KEY_REVISIONS
    try:
        store._memory_keys.clear()
        duckdb_store.MEMORY_KEY_REVISIONS = -1
        return call(*args)
    finally:
        duckdb_store.MEMORY_KEY_REVISIONS = limit
        store._memory_keys.clear()
        store._memory_keys.update(saved)


WRITE = st.tuples(
    st.just("write"),
    st.sampled_from(BRAINS),
    st.integers(0, 5),  # memory
    st.sampled_from(FINGERPRINTS),
    st.sampled_from(SUBJECTS),
    st.sampled_from(ATTRIBUTES),
    st.sampled_from(["active", "superseded", "pending"]),
    st.sampled_from(["rec_1", "rec_2"]),
    st.integers(0, 3),  # valid from, days after T0
    st.sampled_from([None, 2, 5]),  # valid to, days after T0: the newest of a key rank by it
)
OPS = st.lists(
    st.one_of(WRITE, *erases(BRAINS, ["rec_1", "rec_2"], WRITE)),
    min_size=1,
    max_size=16,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_lookups_by_held_keys_find_what_the_statements_find(ops: list[tuple[Any, ...]]) -> None:
    def step(store: DuckDBStore, versions: Versions, op: tuple[Any, ...]) -> Versions:
        # a lookup inside a rolled-back erase reads the keys after it
        return apply(store, versions, op, write, lambda uid: store.memories_by_fingerprints(uid, ["fp_a"]))

    def check(store: DuckDBStore) -> None:
        for uid in BRAINS:
            fingerprints = [f for f in FINGERPRINTS if f]
            keys = [(s, a) for s in SUBJECTS for a in ATTRIBUTES if a]
            assert store.memories_by_fingerprints(uid, fingerprints) == by_statements(
                store, store.memories_by_fingerprints, uid, fingerprints
            )
            assert store.memories_by_attributes(uid, keys) == by_statements(store, store.memories_by_attributes, uid, keys)
            for n in (1, 2):
                newest = partial(store.memories_by_attributes, newest=n)
                assert newest(uid, keys) == by_statements(store, newest, uid, keys)
                newest = partial(store.memories_by_fingerprints, newest=n)
                assert newest(uid, fingerprints) == by_statements(store, newest, uid, fingerprints)
            with store.atomic():  # inside a transaction too
                assert store.memories_by_fingerprints(uid, fingerprints[:1]) == by_statements(
                    store, store.memories_by_fingerprints, uid, fingerprints[:1]
                )

    check_every_step(open_store, ops, step, check)


RANKED_WRITE = st.tuples(
    st.just("write"),
    st.just("b1"),
    st.integers(0, 5),
    st.sampled_from(("fp_a", "fp_b")),
    st.sampled_from(("Alice", "alice")),
    st.sampled_from(("likes", None)),
    st.sampled_from(["active", "active", "superseded", "pending"]),
    st.sampled_from(["rec_1", "rec_2"]),
    st.integers(0, 3),
    st.sampled_from([None, 2, 5]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(RANKED_WRITE, *erases(["b1"], ["rec_1"], RANKED_WRITE)[:3]), min_size=2, max_size=24))
def test_the_newest_of_a_key_chosen_by_the_held_keys_are_those_the_statements_rank(ops: list[tuple[Any, ...]]) -> None:
    """Many Memories of few keys, each revised to other validities and statuses: the keys choose the
    newest of each as the ranking statement does."""

    def step(store: DuckDBStore, versions: Versions, op: tuple[Any, ...]) -> Versions:
        return apply(store, versions, op, write, lambda uid: store.memories_by_fingerprints(uid, ["fp_a"], newest=1))

    def check(store: DuckDBStore) -> None:
        for n in (1, 2, 3):
            for lookup, keys in (
                (store.memories_by_fingerprints, ["fp_a", "fp_b"]),
                (store.memories_by_attributes, [("ALICE", "likes")]),
            ):
                newest = partial(lookup, newest=n)
                assert newest("b1", keys) == by_statements(store, newest, "b1", keys)

    check_every_step(open_store, ops, step, check)


def write(store: DuckDBStore, versions: dict[tuple[str, str], int], op: tuple[Any, ...]) -> None:
    _, uid, n, fingerprint, subject, attribute, status, cites, start, end = op
    memory_id = f"mem_{uid}_{n}"
    with store.atomic():
        if not store.lock_brain(uid):
            return
        version = versions.get((uid, memory_id), 0) + 1
        revision = replace(
            mem(memory_id, uid, version, f"{subject} {attribute} {n}", store.next_seq(uid), cites),
            subject=subject,
            attribute=attribute,
            status=status,
            fingerprint=fingerprint,
            valid_from=T0 + timedelta(days=start),
            valid_to=None if end is None else T0 + timedelta(days=end),
            citations=(Citation(cites, 0, 4, subject[:4]),),
        )
        store.insert_memory_revisions([revision])
        versions[(uid, memory_id)] = version


@pytest.mark.parametrize("erase", ["erase_memory", "erase_citations", "erase_brain"])
def test_an_erase_drops_the_brains_keys(tmp_path: Path, erase: str) -> None:
    store = open_store(tmp_path / "b.duckdb")
    secret = "Zanzibar-7f3e"
    for uid in BRAINS:
        write(store, {}, ("write", uid, 0, "fp_a", secret, "lives_in", "active", "rec_1", 0, None))
    assert store.memories_by_attributes("b1", [(secret, "lives_in")])
    assert store.memories_by_attributes("b2", [(secret, "lives_in")])
    if erase == "erase_memory":
        store.erase_memories("b1", [("mem_b1_0", store.next_seq("b1"))], at=T0)
    elif erase == "erase_citations":
        store.erase_record_citations("b1", "rec_1")
    else:
        store.erase_brain("b1")
    assert "b1" not in store._memory_keys  # nothing of the erased Memory's subject stays in memory
    assert "b2" in store._memory_keys  # another Brain's keys are not touched
    assert store.memories_by_attributes("b1", [(secret, "lives_in")]) == []
    store.close()


def test_the_keys_held_stay_within_their_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duckdb_store, "MEMORY_KEY_TOTAL", 5)
    store = open_store(tmp_path / "b.duckdb")
    for uid in ("b3", "b4"):
        store.insert_brain(Brain(uid, "ns", uid, None, None, None, T0))
    for uid in ("b1", "b2", "b3", "b4"):
        for n in range(2):
            write(store, {}, ("write", uid, n, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
        assert len(store.memories_by_fingerprints(uid, ["fp_a"])) == 2
        assert sum(k.size for k in store._memory_keys.values() if k is not None) <= 5
    assert list(store._memory_keys) == ["b3", "b4"]  # the least recently used went first
    assert len(store.memories_by_fingerprints("b1", ["fp_a"])) == 2  # read again when needed
    store.close()


def test_a_tenant_that_touches_many_brains_gives_up_its_own_keys_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb_store, "MEMORY_KEY_BRAINS", 3)
    store = open_store(tmp_path / "b.duckdb")  # b1, b2 in namespace "ns"
    busy = [f"busy_{i}" for i in range(6)]
    for uid in busy:
        store.insert_brain(Brain(uid, "other", uid, None, None, None, T0))
    for uid in ("b1", "b2", *busy):
        write(store, {}, ("write", uid, 0, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
        assert len(store.memories_by_fingerprints(uid, ["fp_a"])) == 1
        assert len(store._memory_keys) <= 3
    assert list(store._memory_keys) == ["b1", "b2", "busy_5"]  # "other" pushed out only its own
    monkeypatch.setattr(duckdb_store, "MEMORY_KEY_BRAINS", 64)
    monkeypatch.setattr(duckdb_store, "MEMORY_KEY_TOTAL", 4)
    for n in range(1, 4):  # one Brain of "other" grows past the total
        write(store, {}, ("write", "busy_5", n, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
    store._memory_keys.pop("busy_5")  # read again: 4 revisions
    assert len(store.memories_by_fingerprints("busy_5", ["fp_a"])) == 4
    assert len(store.memories_by_fingerprints("b1", ["fp_a"])) == 1  # b1 is read again, and held
    assert "b1" in store._memory_keys and "busy_5" not in store._memory_keys  # the heaviest gave way
    store.close()


def test_a_brain_with_too_many_revisions_is_looked_up_by_statements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb_store, "MEMORY_KEY_REVISIONS", 2)
    store = open_store(tmp_path / "b.duckdb")
    versions: dict[tuple[str, str], int] = {}
    for n in range(3):
        write(store, versions, ("write", "b1", n, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
    found = store.memories_by_fingerprints("b1", ["fp_a"])
    assert [m.memory_id for m in found] == ["mem_b1_0", "mem_b1_1", "mem_b1_2"]
    assert store._memory_keys["b1"] is None
    write(store, versions, ("write", "b1", 3, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
    assert len(store.memories_by_fingerprints("b1", ["fp_a"])) == 4
    store.close()
