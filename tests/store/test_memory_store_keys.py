"""The in-memory store's lookup keys (by fingerprint, by subject and attribute, by cited Record): each
holds exactly the Memories whose remaining revisions give it, across writes, rolled-back writes and
erases, and every kind of erase. A key holds the subject's text, and a fingerprint is an unsalted hash
of the statement (a guessed value is confirmed offline): nothing of an erased revision may stay in them.
(The DuckDB store's held keys are dropped whole by an erase, test_duckdb_memory_keys; the database
stores' keys are columns of the revisions' rows, which an erase deletes.)"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.api.app import create_app
from brainstore.domain import Brain, Citation
from brainstore.store.memory import MemoryStore
from tests.conftest import Api, open_engine
from tests.store.cache_ops import BRAINS, Boom, Versions, erases
from tests.store.cache_ops import apply as apply_op
from tests.store.erasure import T0, mem


def open_store() -> MemoryStore:
    store = MemoryStore()
    for uid in BRAINS:
        store.insert_brain(Brain(uid, "ns", uid, None, None, None, T0))
    return store


def write(store: MemoryStore, versions: Versions, op: tuple[Any, ...]) -> None:
    _, uid, n, fingerprint, subject, attribute, status, cites = op
    memory_id = f"mem_{uid}_{n}"
    with store.atomic():
        version = versions.get((uid, memory_id), 0) + 1
        revision = replace(
            mem(memory_id, uid, version, f"{subject} {attribute} {n}", store.next_seq(uid), cites[0]),
            subject=subject,
            attribute=attribute,
            status=status,
            fingerprint=fingerprint,
            citations=tuple(Citation(c, 0, 4, subject[:4]) for c in cites),
        )
        store.insert_memory_revisions([revision])
        versions[(uid, memory_id)] = version


def held(store: MemoryStore) -> tuple[dict[Any, set[str]], ...]:
    return tuple(
        {key: set(members) for key, members in table.items()}
        for table in (store._by_fingerprint, store._by_attribute, store._by_record)
    )


def given_by_histories(store: MemoryStore) -> tuple[dict[Any, set[str]], ...]:
    """The keys the revisions the store holds give their Memories, and no other."""
    fingerprints: dict[Any, set[str]] = {}
    attributes: dict[Any, set[str]] = {}
    records: dict[Any, set[str]] = {}
    for memory_id, history in store._history.items():
        for r in history:
            fingerprints.setdefault((r.brain_uid, r.fingerprint), set()).add(memory_id)
            if r.attribute:
                attributes.setdefault((r.brain_uid, r.subject.casefold(), r.attribute), set()).add(memory_id)
            for c in r.citations:
                records.setdefault((r.brain_uid, c.record_id), set()).add(memory_id)
    return fingerprints, attributes, records


WRITE = st.tuples(
    st.just("write"),
    st.sampled_from(BRAINS),
    st.integers(0, 4),  # memory
    st.sampled_from(("fp_a", "fp_b", "fp_c", "")),
    st.sampled_from(("Alice", "alice", "Bob")),
    st.sampled_from(("likes", "lives_in", None)),
    st.sampled_from(["active", "superseded", "pending"]),
    st.sampled_from([("rec_1",), ("rec_2",), ("rec_1", "rec_2")]),
)
OPS = st.lists(
    st.one_of(
        WRITE,
        *erases(BRAINS, ["rec_1", "rec_2"], WRITE),
        st.tuples(st.just("erase_earlier"), st.sampled_from(BRAINS), st.integers(0, 4), st.booleans()),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_the_keys_hold_exactly_what_the_remaining_revisions_give(ops: list[tuple[Any, ...]]) -> None:
    store = open_store()
    versions: Versions = {}
    for op in ops:
        if op[0] == "erase_earlier":
            _, uid, n, pending_only = op
            store.erase_earlier_revisions(uid, [f"mem_{uid}_{n}"], pending_only=pending_only)
        else:
            before = held(store)
            versions = apply_op(store, versions, op, write, lambda uid: store.memories_by_fingerprints(uid, ["fp_a"]))  # type: ignore[arg-type]
            if op[0].startswith("rolled_back"):
                assert held(store) == before  # a rollback gives back every key it took, and takes those it gave
        assert held(store) == given_by_histories(store), op
        assert all(members for table in (store._by_fingerprint, store._by_attribute, store._by_record) for members in table.values())


SECRET = "Zoltan Quimby"


def keys_naming(store: MemoryStore, memory_id: str) -> list[tuple[str, Any]]:
    return [
        (name, key)
        for name, table in (("fingerprint", store._by_fingerprint), ("attribute", store._by_attribute), ("record", store._by_record))
        for key, members in table.items()
        if memory_id in members or SECRET.casefold() in str(key) or "fp_secret" in str(key)
    ]


def test_an_erased_memory_leaves_no_key_and_a_shared_key_keeps_the_others() -> None:
    store = open_store()
    write(store, {}, ("write", "b1", 0, "fp_secret", SECRET, "diagnosis", "active", ("rec_1",)))
    write(store, {}, ("write", "b1", 1, "fp_a", "Alice", "likes", "active", ("rec_1",)))
    assert keys_naming(store, "mem_b1_0")
    store.erase_memories("b1", [("mem_b1_0", store.next_seq("b1"))], at=T0)
    assert keys_naming(store, "mem_b1_0") == []
    assert store._by_record[("b1", "rec_1")] == {"mem_b1_1": None}  # the key another Memory gives stays
    assert [m.memory_id for m in store.memories_by_fingerprints("b1", ["fp_a"])] == ["mem_b1_1"]


def test_revisions_erased_with_a_records_citations_take_their_keys() -> None:
    store = open_store()
    versions: Versions = {}
    write(store, versions, ("write", "b1", 0, "fp_a", "Alice", "likes", "active", ("rec_kept",)))
    # re-derived from the forgotten Record: another statement, its subject's words
    write(store, versions, ("write", "b1", 0, "fp_secret", SECRET, "diagnosis", "active", ("rec_kept", "rec_gone")))
    write(store, versions, ("write", "b1", 1, "fp_secret", SECRET, "diagnosis", "active", ("rec_gone",)))
    store.erase_record_citations("b1", "rec_gone")
    assert [r.version for r in store.memory_revisions("b1", "mem_b1_0")] == [1]
    assert keys_naming(store, "mem_b1_1") == []
    assert held(store) == given_by_histories(store) == (
        {("b1", "fp_a"): {"mem_b1_0"}},
        {("b1", "alice", "likes"): {"mem_b1_0"}},
        {("b1", "rec_kept"): {"mem_b1_0"}},
    )
    assert "mem_b1_1" not in store._brain_memories["b1"]  # no revision of it is left


def test_earlier_revisions_erased_take_the_keys_only_they_gave() -> None:
    store = open_store()
    versions: Versions = {}
    write(store, versions, ("write", "b1", 0, "fp_secret", SECRET, "diagnosis", "pending", ("rec_1",)))
    write(store, versions, ("write", "b1", 0, "fp_a", "Alice", "likes", "active", ("rec_2",)))
    store.erase_earlier_revisions("b1", ["mem_b1_0"], pending_only=True)
    assert keys_naming(store, "mem_b1_0") == [
        ("fingerprint", ("b1", "fp_a")), ("attribute", ("b1", "alice", "likes")), ("record", ("b1", "rec_2"))
    ]  # fmt: skip


def test_a_rolled_back_erase_gives_every_key_back() -> None:
    store = open_store()
    versions: Versions = {}
    write(store, versions, ("write", "b1", 0, "fp_secret", SECRET, "diagnosis", "pending", ("rec_1",)))
    write(store, versions, ("write", "b1", 0, "fp_a", "Alice", "likes", "active", ("rec_1", "rec_2")))
    write(store, versions, ("write", "b1", 1, "fp_a", "Alice", "likes", "active", ("rec_2",)))
    before = held(store)
    with pytest.raises(Boom), store.atomic():
        store.erase_earlier_revisions("b1", ["mem_b1_0"])
        store.erase_record_citations("b1", "rec_2")
        store.erase_memories("b1", [("mem_b1_0", store.next_seq("b1")), ("mem_b1_1", store.next_seq("b1"))], at=T0)
        assert held(store) == ({}, {}, {})
        raise Boom
    assert held(store) == before
    assert {m.memory_id for m in store.memories_by_fingerprints("b1", ["fp_a"])} == {"mem_b1_0", "mem_b1_1"}


def test_forget_record_leaves_no_key_of_the_memory_it_erased(tmp_path: Path) -> None:
    """The review's reproducer: the subject's words and the value's fingerprint stayed in the engine."""
    service = open_engine("memory", tmp_path)
    try:
        api = Api(create_app(service))
        api.brain("b1", self_name="Alice")
        fact = {"kind": "fact", "subject": SECRET, "predicate": "diagnosis", "value": "bipolar II"}
        record_id = api.remember("b1", fact).body["id"]
        api.remember("b1", "I had soup for lunch.")
        assert service.wait_idle()
        erased = [m["id"] for m in api.get("/brains/b1/memories").body["data"] if SECRET in m["statement"]]
        assert erased
        assert api.delete(f"/brains/b1/records/{record_id}").body["deleted"]["memories"] == 1
        assert service.wait_idle()
        store = service.store
        assert isinstance(store, MemoryStore)
        assert [k for k in store._by_attribute if SECRET.casefold() in k[1]] == []
        assert [k for table in held(store) for k, members in table.items() if members & set(erased)] == []
        assert held(store) == given_by_histories(store)
    finally:
        service.stop()
        service.store.close()
