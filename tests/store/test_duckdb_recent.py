"""The DuckDB store's cache of the Records this process wrote (RECENT_RECORDS), the Records'
visibilities it holds (HELD_VISIBILITIES) and its buffered Record inserts: reads by id must say exactly
what the file says, a rolled-back write leaves nothing, and an erased Record leaves no byte in the
caches."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.domain import Brain, ChunkDraft, Record, RecordStatus, StoredChunk
from brainstore.store import duckdb as duckdb_store
from brainstore.store.duckdb import DuckDBStore
from tests.store.erasure import T0, rec


def open_store(path: Path) -> DuckDBStore:
    store = DuckDBStore(path, purge_delay=3600)
    store.migrate()
    return store


def brain(store: DuckDBStore, uid: str) -> None:
    store.insert_brain(Brain(uid, "ns", uid, None, None, None, T0))


def from_file(store: DuckDBStore, brain_uid: str, record_ids: list[str]) -> dict[str, Record]:
    """The same read, from the file: the cache is bypassed."""
    found = store._read_records(brain_uid, "list_contains(?::VARCHAR[], {id})", [sorted(set(record_ids))])
    return {record.id: record for record in found}


class Boom(Exception):
    pass


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(["b1", "b2"]), st.integers(1, 4), st.booleans()),
        st.tuples(st.just("status"), st.integers(0, 40), st.sampled_from(["ready", "failed", "processing"])),
        st.tuples(st.just("erase"), st.integers(0, 40)),
        st.tuples(st.just("erase_brain"), st.sampled_from(["b1", "b2"])),
        st.tuples(st.just("rolled_back"), st.sampled_from(["b1", "b2"])),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_reads_by_id_say_what_the_file_says(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        store = open_store(Path(directory) / "b.duckdb")
        try:
            brain(store, "b1")
            brain(store, "b2")
            written: list[tuple[str, str]] = []  # (brain, record id), erased ones included
            for n, op in enumerate(ops):
                if op[0] == "write":
                    _, uid, count, long = op
                    body = "x" * (duckdb_store.RECENT_CONTENT_CHARS + 1) if long else f"turn {n}"
                    with store.atomic():
                        if not store.lock_brain(uid):
                            continue
                        for i in range(count):
                            rid = f"rec_{n}_{i}"
                            store.insert_record(rec(rid, uid, body, store.next_seq(uid)))
                            written.append((uid, rid))
                        ids = [rid for _, rid in written]
                        assert store.records(uid, ids) == from_file(store, uid, ids)  # its own writes
                elif op[0] == "status" and written:
                    uid, rid = written[op[1] % len(written)]
                    with store.atomic():
                        seq = store.next_seq(uid)
                        store.append_record_statuses([RecordStatus(uid, rid, op[2], seq, None, (f"mem_{seq}",))])
                elif op[0] == "erase" and written:
                    uid, rid = written[op[1] % len(written)]
                    store.erase_record(uid, rid)
                elif op[0] == "erase_brain":
                    store.erase_brain(op[1])
                    brain(store, op[1])  # the same uid again: its old Records must not come back
                elif op[0] == "rolled_back":
                    with pytest.raises(Boom), store.atomic():
                        rid = f"rec_{n}_gone"
                        store.insert_record(rec(rid, op[1], "never committed", store.next_seq(op[1])))
                        written.append((op[1], rid))
                        raise Boom
                for uid in ("b1", "b2"):
                    ids = [rid for _, rid in written]
                    assert store.records(uid, ids) == from_file(store, uid, ids)
                    assert store.record_visibilities(uid, ids) == store._read_visibilities(uid, ids)
                    for rid in ids[-3:]:
                        assert store.get_record(uid, rid) == from_file(store, uid, [rid]).get(rid)
                    with store.atomic():  # a transaction that has not written reads the last commit
                        assert store.records(uid, ids) == from_file(store, uid, ids)
                    # the sequence's end is in the file, whether a Record or a changes row holds it
                    issued = store.current_seq(uid)
                    store._seq_cache.pop(uid, None)
                    assert store.current_seq(uid) == issued
        finally:
            store.close()


def test_a_recent_record_is_read_without_the_file_and_an_older_one_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path / "b.duckdb")
    brain(store, "b1")
    store.insert_record(rec("rec_1", "b1", "hello", store.next_seq("b1")))
    with store.atomic():
        store.append_record_statuses([RecordStatus("b1", "rec_1", "ready", store.next_seq("b1"), None, ("mem_1",))])
    expected = from_file(store, "b1", ["rec_1"])["rec_1"]
    assert expected.status == "ready"

    def no_file(*args: Any) -> list[Record]:
        raise AssertionError("read from the file")

    with monkeypatch.context() as patch:
        patch.setattr(store, "_read_records", no_file)
        assert store.get_record("b1", "rec_1") == expected
    assert store.get_record("b2", "rec_1") is None  # another Brain's id reads as absent, from the file
    store.close()
    store = open_store(tmp_path / "b.duckdb")  # a new process knows nothing recent
    monkeypatch.setattr(store, "_read_records", no_file)
    with pytest.raises(AssertionError, match="read from the file"):
        store.get_record("b1", "rec_1")
    store.close()


def test_a_transaction_reads_the_records_it_buffered(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.duckdb")
    brain(store, "b1")
    with store.atomic():
        store.insert_record(rec("rec_1", "b1", "one", store.next_seq("b1")))
        store.insert_record(rec("rec_2", "b1", "two", store.next_seq("b1")))
        assert [r.id for r in store.list_records("b1")] == ["rec_1", "rec_2"]
        assert store.get_record("b1", "rec_2") is not None
        store.insert_record(rec("rec_3", "b1", "three", store.next_seq("b1")))
    assert [r.content["text"] for r in store.list_records("b1")] == ["one", "two", "three"]
    store.close()


@pytest.mark.parametrize("how", ["record", "brain"])
def test_an_erased_record_leaves_no_byte_in_the_cache(tmp_path: Path, how: str) -> None:
    store = open_store(tmp_path / "b.duckdb")
    brain(store, "b1")
    secret = "SECRET-cache-4f1e9c2a"
    store.insert_record(rec("rec_1", "b1", f"my pin is {secret}", store.next_seq("b1")))
    store.insert_record(rec("rec_2", "b1", "nothing to hide", store.next_seq("b1")))
    assert secret in repr(store._recent)
    if how == "record":
        store.erase_record("b1", "rec_1")
        assert store.get_record("b1", "rec_1") is None
        assert store.get_record("b1", "rec_2") is not None
    else:
        store.erase_brain("b1")
        assert not store._recent
    assert secret not in repr(store._recent)
    store.close()


def test_visibilities_are_held_once_read_or_written_and_dropped_with_their_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(tmp_path / "b.duckdb")
    for uid in ("b1", "b2", "b3"):
        brain(store, uid)
    for i, uid in enumerate(("b1", "b1", "b2")):
        store.insert_record(replace(rec(f"rec_{i}", uid, "text", store.next_seq(uid)), visibility=("local_only", "shareable")[i % 2]))
    store.close()
    store = open_store(tmp_path / "b.duckdb")  # a new process holds nothing: it reads, then holds
    reads: list[list[str]] = []
    read = store._read_visibilities
    monkeypatch.setattr(store, "_read_visibilities", lambda uid, ids: reads.append(list(ids)) or read(uid, ids))
    assert store.record_visibilities("b1", ["rec_0", "rec_1", "rec_2"]) == {"rec_0": "local_only", "rec_1": "shareable"}
    assert store.record_visibilities("b1", ["rec_0", "rec_1"]) == {"rec_0": "local_only", "rec_1": "shareable"}
    assert reads == [["rec_0", "rec_1", "rec_2"]]
    store.insert_record(rec("rec_3", "b1", "text", store.next_seq("b1")))  # held as it is written
    assert store.record_visibilities("b1", ["rec_3"]) == {"rec_3": "shareable"} and len(reads) == 1
    store.erase_record("b1", "rec_0")
    assert store.record_visibilities("b1", ["rec_0", "rec_1"]) == {"rec_1": "shareable"}
    assert "rec_0" not in repr(store._visibilities)
    with store.atomic():  # a transaction that erased a Record reads what it sees, not what is held
        store.erase_record("b1", "rec_1")
        assert store.record_visibilities("b1", ["rec_1", "rec_3"]) == {"rec_3": "shareable"}
    assert store.record_visibilities("b2", ["rec_2"]) == {"rec_2": "local_only"}
    store.erase_brain("b2")
    assert "b2" not in store._visibilities and store.record_visibilities("b2", ["rec_2"]) == {}

    # A read that overlaps an erase holds nothing it read: the erased Record may be in it.
    store.insert_record(rec("rec_4", "b3", "text", store.next_seq("b3")))
    store._visibilities.pop("b3")
    store._visibilities_held = sum(len(held) for held in store._visibilities.values())

    def erase_meanwhile(uid: str, ids: list[str]) -> dict[str, str]:
        found = read(uid, ids)
        store.erase_record("b3", "rec_4")
        return found

    monkeypatch.setattr(store, "_read_visibilities", erase_meanwhile)
    assert store.record_visibilities("b3", ["rec_4"]) == {"rec_4": "shareable"}  # read before the erase
    assert "rec_4" not in repr(store._visibilities)
    store.close()


def test_held_visibilities_are_bounded_giving_up_the_brains_used_least_recently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb_store, "HELD_VISIBILITIES", 4)
    store = open_store(tmp_path / "b.duckdb")
    for uid in ("b1", "b2", "b3"):
        brain(store, uid)
        for i in range(3):
            store.insert_record(rec(f"rec_{uid}_{i}", uid, "text", store.next_seq(uid)))
    assert store._visibilities_held == sum(len(held) for held in store._visibilities.values()) <= 4
    assert list(store._visibilities) == ["b3"] and len(store._visibilities["b3"]) == 3  # whole Brains go
    ids = [f"rec_b1_{i}" for i in range(3)]
    assert store.record_visibilities("b1", ids) == dict.fromkeys(ids, "shareable")
    assert list(store._visibilities) == ["b1"]
    assert store._visibilities_held == sum(len(held) for held in store._visibilities.values()) <= 4
    store.close()


def test_a_brain_whose_visibilities_are_read_is_kept_before_one_only_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quiet tenant reads its Brain's Memories again and again and writes nothing: its held
    visibilities must not go before those of a Brain written once since."""
    monkeypatch.setattr(duckdb_store, "HELD_VISIBILITIES", 6)
    store = open_store(tmp_path / "b.duckdb")
    for uid in ("b1", "b2", "b3"):
        brain(store, uid)
    for uid in ("b1", "b2"):
        for i in range(3):
            store.insert_record(rec(f"rec_{uid}_{i}", uid, "text", store.next_seq(uid)))
    ids = [f"rec_b1_{i}" for i in range(3)]
    assert store.record_visibilities("b1", ids) == dict.fromkeys(ids, "shareable")
    store.insert_record(rec("rec_b3_0", "b3", "text", store.next_seq("b3")))
    assert list(store._visibilities) == ["b1", "b3"]
    store.close()


def test_store_calls_inside_a_transaction_take_no_lock_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction holds the write lock and the gate until it ends: the store calls inside it (a
    group commit's writes, about a dozen a Record) neither take them again nor set anything up, and a
    failure inside one still undoes the whole transaction."""
    store = open_store(tmp_path / "b.duckdb")
    brain(store, "b1")
    entered = []
    shared = store._shared
    monkeypatch.setattr(store, "_shared", lambda: entered.append(1) or shared())
    store.current_seq("b1")  # read once, held since
    with store.atomic():
        entered.clear()
        assert store.lock_brain("b1")
        store.insert_record(rec("rec_1", "b1", "one", store.next_seq("b1")))
        assert entered == []
    with pytest.raises(Boom), store.atomic():
        store.insert_record(rec("rec_2", "b1", "two", store.next_seq("b1")))
        with store.atomic():
            raise Boom
    assert [r.id for r in store.list_records("b1")] == ["rec_1"]
    assert store.current_seq("b1") == 1
    store.close()


def test_rows_inserted_in_bulk_read_back_as_written_without_a_cast_a_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk insert binds each column as a list, uncast (the insert casts to the column's type; a
    cast of each list cost about 25 us a column): every type reads back as it was written, a column
    of NULLs only, microseconds and a BLOB included."""
    store = open_store(tmp_path / "b.duckdb")
    brain(store, "b1")
    sql: list[str] = []
    cur = store._cur
    monkeypatch.setattr(store, "_cur", lambda: sql.append("") or _Noting(cur(), sql))
    at = datetime(2023, 5, 8, 13, 56, 7, 123456, tzinfo=UTC)
    records = [replace(rec(f"rec_{i}", "b1", f"text {i}", 0), occurred_at=at, created_at=at) for i in range(3)]
    drafts = [ChunkDraft(r.id, 0, 6, "text 0", "[Sam] text 0", at, None, None, "normal", "shareable") for r in records]
    with store.atomic():
        for record in records:
            store.insert_record(replace(record, seq=store.next_seq("b1")))
        store.insert_chunks([StoredChunk("b1", d, "model", bytes(range(i, i + 8))) for i, d in enumerate(drafts)])
    bulk = [q for q in sql if q.startswith("INSERT") and "unnest" in q]
    assert len(bulk) == 2 and not any("::" in q for q in bulk)
    read = store._read_records("b1", "list_contains(?::VARCHAR[], {id})", [[r.id for r in records]])
    assert [(r.id, r.content, r.source, r.occurred_at, r.created_at, r.seq) for r in read] == [
        (r.id, r.content, None, at, at, i + 1) for i, r in enumerate(records)
    ]
    stored = {c.draft.record_id: c for c in store.chunks("b1")}
    assert [(stored[d.record_id].draft, stored[d.record_id].embedding) for d in drafts] == [
        (d, bytes(range(i, i + 8))) for i, d in enumerate(drafts)
    ]
    store.close()


class _Noting:
    """A cursor whose statements are noted."""

    def __init__(self, cursor: Any, sql: list[str]) -> None:
        self._cursor, self._sql = cursor, sql

    def execute(self, query: str, parameters: Any = None) -> Any:
        self._sql.append(query)
        return self._cursor.execute(query, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def test_a_buffered_insert_that_fails_at_commit_leaves_nothing(tmp_path: Path) -> None:
    """Record rows go in at the transaction's next statement or its commit: a row the database refuses
    there fails the whole transaction, which leaves no row and nothing in the cache."""
    store = open_store(tmp_path / "b.duckdb")
    brain(store, "b1")
    store.insert_record(rec("rec_1", "b1", "kept", store.next_seq("b1")))
    with pytest.raises(duckdb_store.duckdb.ConstraintException), store.atomic():
        store.insert_record(rec("rec_2", "b1", "refused with its neighbour", store.next_seq("b1")))
        store.insert_record(rec("rec_1", "b1", "a second rec_1", store.next_seq("b1")))
    assert "rec_2" not in store._recent
    assert store.get_record("b1", "rec_2") is None
    assert [r.content["text"] for r in store.list_records("b1")] == ["kept"]
    store.insert_record(rec("rec_3", "b1", "the store goes on", store.next_seq("b1")))
    assert [r.id for r in store.list_records("b1")] == ["rec_1", "rec_3"]
    store.close()


def test_brains_and_their_sequences_held_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key making Brain after Brain grew the Brains held and their change sequences without bound."""
    monkeypatch.setattr(duckdb_store, "BRAINS_HELD", 3)
    store = open_store(tmp_path / "b.duckdb")
    uids = [f"b{i}" for i in range(6)]
    for uid in uids:
        brain(store, uid)
        store.insert_record(rec(f"rec_{uid}", uid, "text", store.next_seq(uid)))
    for uid in uids:
        assert store.get_brain("ns", uid) is not None and store.brain_by_uid(uid) is not None
        assert store.current_seq(uid) == 1
    assert len(store._brains_by_uid) == len(store._brains) == 3
    assert {b.uid for b in store._brains.values()} == set(store._brains_by_uid)
    assert len(store._seq_cache) <= 3
    for uid in uids:  # one given up is read again, as it is in the file
        assert store.brain_by_uid(uid) == Brain(uid, "ns", uid, None, None, None, T0)
        assert store.lock_brain(uid) and store.current_seq(uid) == 1
        assert store.next_seq(uid) == 2
    store.close()


def test_another_brain_s_record_is_read_from_the_file_as_an_unknown_id_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(tmp_path / "b.duckdb")
    try:
        brain(store, "b1")
        brain(store, "b2")
        with store.atomic():
            store.insert_record(rec("rec_a", "b1", "mine", store.next_seq("b1")))
        read: list[str] = []
        read_records = store._read_records

        def counted(brain_uid: str, where: str, params: Any) -> list[Record]:
            read.append(brain_uid)
            return read_records(brain_uid, where, params)

        monkeypatch.setattr(store, "_read_records", counted)
        assert store.records("b1", ["rec_a"]).keys() == {"rec_a"}
        assert read == []  # its own Brain's: from the cache
        # answered from the cache, another Brain's id came back faster than an unknown one: a tenant
        # could tell which ids exist elsewhere
        assert store.records("b2", ["rec_a"]) == {}
        assert store.records("b2", ["rec_unknown"]) == {}
        assert read == ["b2", "b2"]
    finally:
        store.close()
