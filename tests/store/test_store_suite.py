"""ONE suite every Store implementation must pass: the protocol's invariants, not an engine's quirks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.domain import (
    Brain,
    ChunkDraft,
    Citation,
    IdempotentReply,
    MemoryRevision,
    ObjectVersion,
    Record,
    StoredChunk,
)
from brainstore.store.base import Store, tally_records
from brainstore.store.duckdb import DuckDBStore
from brainstore.store.memory import MemoryStore
from brainstore.store.postgres import PostgresStore
from tests.conftest import ENGINES

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=ENGINES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        s: Store = MemoryStore()
    elif request.param == "duckdb":
        s = DuckDBStore(tmp_path / "s.duckdb")
        s.migrate()  # type: ignore[attr-defined]
    else:
        s = PostgresStore(request.getfixturevalue("postgres_url"))  # a copy of a migrated database
    yield s
    s.close()


def brain(uid: str = "brn_1", ns: str = "test:acme", id_: str = "b1") -> Brain:
    return Brain(uid, ns, id_, None, "person", "Alice", T0)


def record(store: Store, rid: str, uid: str = "brn_1", origin: str = "api", **kw: object) -> Record:
    r = Record(
        id=rid,
        brain_uid=uid,
        content={"kind": "document", "text": f"text of {rid}"},
        source=kw.get("source"),  # type: ignore[arg-type]
        visibility=kw.get("visibility", "shareable"),  # type: ignore[arg-type]
        occurred_at=T0,
        created_at=T0,
        origin=origin,
        seq=store.next_seq(uid),
    )
    store.insert_record(r)
    return r


def revision(mid: str, version: int, seq: int, *, status: str = "active", cites: tuple[str, ...] = ("rec_1",)) -> MemoryRevision:
    return MemoryRevision(
        memory_id=mid,
        brain_uid="brn_1",
        version=version,
        statement=f"{mid} v{version}",
        subject="Alice",
        owner="Alice",
        attribute="lives_in",
        value="lisbon",
        valid_from=T0,
        valid_to=None,
        recorded_at=T0 + timedelta(seconds=version),
        status=status,
        citations=tuple(Citation(r, 0, 4, "text") for r in cites),
        supersedes=None,
        superseded_by=None,
        seq=seq,
        extra={"conflicts_with": []},
    )


def test_brains_by_namespace(store: Store) -> None:
    store.insert_brain(brain())
    assert store.get_brain("test:acme", "b1") == brain()
    assert store.brain_by_uid("brn_1") == brain()
    assert store.get_brain("live:acme", "b1") is None
    assert store.get_brain("test:acme", "b2") is None


def test_change_sequence_is_per_brain_and_monotonic(store: Store) -> None:
    assert store.current_seq("brn_1") == 0
    assert [store.next_seq("brn_1") for _ in range(3)] == [1, 2, 3]
    assert store.next_seq("brn_2") == 1
    assert store.current_seq("brn_1") == 3


def test_atomic_rolls_back_everything_inside_it(store: Store) -> None:
    store.insert_brain(brain())
    with pytest.raises(RuntimeError), store.atomic():
        record(store, "rec_1")
        store.append_record_status("brn_1", "rec_1", "ready", seq=store.next_seq("brn_1"))
        raise RuntimeError("boom")
    assert store.get_record("brn_1", "rec_1") is None
    assert store.current_seq("brn_1") == 0


def test_record_status_is_appended_not_updated(store: Store) -> None:
    store.insert_brain(brain())
    record(store, "rec_1")
    record(store, "rec_2")
    assert store.get_record("brn_1", "rec_1").status == "processing"  # type: ignore[union-attr]
    assert store.records_in_status("processing") == [("brn_1", "rec_1"), ("brn_1", "rec_2")]
    store.append_record_status("brn_1", "rec_1", "ready", seq=store.next_seq("brn_1"), memory_ids=["mem_a"])
    got = store.get_record("brn_1", "rec_1")
    assert got is not None and got.status == "ready" and got.memory_ids == ("mem_a",)
    assert store.records_in_status("processing") == [("brn_1", "rec_2")]
    assert store.records_in_status("ready") == [("brn_1", "rec_1")]
    assert store.get_record("brn_2", "rec_1") is None  # another Brain never sees it
    # failed, then sent back to derivation (brainstore rederive): processing again, for a restart too
    store.append_record_status("brn_1", "rec_2", "failed", seq=store.next_seq("brn_1"), error={"code": "x", "message": "y"})
    assert store.records_in_status("processing") == []
    store.append_record_status("brn_1", "rec_2", "processing", seq=store.next_seq("brn_1"))
    assert store.records_in_status("processing") == [("brn_1", "rec_2")]
    assert store.records_in_status("failed") == []


def test_the_store_tells_its_being_unavailable_from_refusing_the_work(store: Store) -> None:
    for unavailable in (OSError("No space left on device"), ConnectionResetError(), TimeoutError(), MemoryError()):
        assert store.unavailable(unavailable)
    for refused in (ValueError("text fields cannot contain NUL (0x00) bytes"), KeyError("x"), RuntimeError("a bug")):
        assert not store.unavailable(refused)
    if store.kind == "duckdb":
        import duckdb

        assert all(store.unavailable(e) for e in (duckdb.IOException("x"), duckdb.TransactionException("conflict")))
        assert not any(store.unavailable(e) for e in (duckdb.ConstraintException("x"), duckdb.ConversionException("x")))
    if store.kind == "postgres":
        import psycopg
        import psycopg_pool
        from psycopg import errors

        down = (errors.QueryCanceled(), errors.DeadlockDetected(), errors.AdminShutdown(), errors.DiskFull(),
                errors.LockNotAvailable(), psycopg.OperationalError("connection failed"), psycopg_pool.PoolTimeout())  # fmt: skip
        assert all(store.unavailable(e) for e in down)
        # "index row size exceeds btree maximum" is an OperationalError too, but the data's
        refused = (errors.ProgramLimitExceeded(), errors.UntranslatableCharacter(), errors.UniqueViolation())
        assert not any(store.unavailable(e) for e in refused)


def test_records_supporting_a_memory_are_those_whose_status_names_it_oldest_first(store: Store) -> None:
    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    for rid in ("rec_5", "rec_3", "rec_4", "rec_1", "rec_2"):  # sent in this order
        record(store, rid)
    record(store, "rec_9", uid="brn_2")
    named = {"rec_5": ["mem_a"], "rec_3": ["mem_b", "mem_a"], "rec_4": ["mem_ab"], "rec_1": ["mem_a"], "rec_2": ["mem_a"]}
    for rid, memory_ids in named.items():
        store.append_record_status("brn_1", rid, "ready", seq=store.next_seq("brn_1"), memory_ids=memory_ids)
    store.append_record_status("brn_2", "rec_9", "ready", seq=store.next_seq("brn_2"), memory_ids=["mem_a"])
    # re-derived since: its status names another Memory now
    store.append_record_status("brn_1", "rec_1", "ready", seq=store.next_seq("brn_1"), memory_ids=["mem_c"])
    store.erase_record("brn_1", "rec_2")
    assert store.records_supporting("brn_1", ["mem_a"], 10) == {"mem_a": ["rec_5", "rec_3"]}
    assert store.records_supporting("brn_1", ["mem_a"], 1) == {"mem_a": ["rec_5"]}
    assert store.records_supporting("brn_1", ["mem_ab"], 10) == {"mem_ab": ["rec_4"]}
    assert store.records_supporting("brn_1", ["mem_c"], 10) == {"mem_c": ["rec_1"]}
    assert store.records_supporting("brn_1", ["mem_none"], 10) == {}
    assert store.records_supporting("brn_1", [], 10) == {}
    # many at once: each as alone
    asked = ["mem_c", "mem_a", "mem_b", "mem_none", "mem_a", "mem_ab"]
    assert store.records_supporting("brn_1", asked, 1) == {"mem_a": ["rec_5"], "mem_b": ["rec_3"], "mem_ab": ["rec_4"], "mem_c": ["rec_1"]}
    assert store.records_supporting("brn_1", asked, 10) == {
        "mem_a": ["rec_5", "rec_3"], "mem_b": ["rec_3"], "mem_ab": ["rec_4"], "mem_c": ["rec_1"]
    }
    assert store.records_supporting("brn_2", asked, 10) == {"mem_a": ["rec_9"]}


def test_record_contents_are_read_together_within_one_brain(store: Store) -> None:
    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    for rid in ("rec_1", "rec_2", "rec_3"):
        record(store, rid)
    record(store, "rec_9", uid="brn_2")
    store.erase_record("brn_1", "rec_3")
    got = store.record_contents("brn_1", ["rec_1", "rec_2", "rec_3", "rec_9", "rec_none"])
    assert got == {rid: {"kind": "document", "text": f"text of {rid}"} for rid in ("rec_1", "rec_2")}
    assert store.record_contents("brn_1", []) == {}


def test_imported_records_are_found_by_source_and_external_id(store: Store) -> None:
    store.insert_brain(brain())
    record(store, "rec_1", origin="import", source={"name": "crm", "external_id": "42"})
    found = store.find_imported_record("brn_1", "crm", "42")
    assert found is not None and found.id == "rec_1"
    assert store.find_imported_record("brn_1", "crm", "43") is None


def test_object_versions_are_appended(store: Store) -> None:
    for v in (1, 2):
        store.insert_object_version(ObjectVersion("obj_1", "brn_1", "pref", "theme", v, {"v": v}, "k", T0, v))
    latest = store.latest_object("brn_1", "pref", "theme")
    assert latest is not None and latest.version == 2 and latest.value == {"v": 2}
    assert store.latest_object("brn_1", "pref", "THEME") is None
    assert [o.version for o in store.list_objects("brn_1")] == [2]


def test_objects_are_listed_by_type_then_key_the_first_limit(store: Store) -> None:
    for seq, (type_, key) in enumerate([("pref", "b"), ("note", "z"), ("pref", "a"), ("note", "a")], start=1):
        for v in (1, 2):
            store.insert_object_version(ObjectVersion(f"obj_{seq}", "brn_1", type_, key, v, {"v": v}, "k", T0, 2 * seq + v))
    everything = [(o.type, o.key, o.version) for o in store.list_objects("brn_1")]
    assert everything == [("note", "a", 2), ("note", "z", 2), ("pref", "a", 2), ("pref", "b", 2)]
    assert [(o.type, o.key, o.version) for o in store.list_objects("brn_1", limit=3)] == everything[:3]
    assert store.list_objects("brn_2", limit=3) == []


@pytest.mark.parametrize("by", ["attributes", "fingerprints"])
def test_the_newest_memories_of_a_key_are_those_weighed_whose_validity_ends_latest(store: Store, by: str) -> None:
    """newest= takes, of each (subject, attribute) or fingerprint, the active and pending Memories still
    open (the latest valid_from first), then those whose validity ended latest; by id. Every store ranks
    alike."""
    day = timedelta(days=1)
    shapes = {  # memory id: (valid_from, valid_to, status)
        "mem_1": (T0, None, "active"),
        "mem_2": (T0 + 2 * day, None, "active"),
        "mem_3": (T0 + 2 * day, None, "active"),  # ties mem_2: the later id first
        "mem_4": (T0 - 9 * day, T0 + 5 * day, "active"),  # ended, but after the others were closed
        "mem_5": (T0 - 9 * day, T0 - day, "active"),
        "mem_6": (T0 + 9 * day, None, "superseded"),
        "mem_8": (T0 - 20 * day, T0 - 10 * day, "pending"),  # awaiting re-derivation: weighed too
    }
    for seq, (mid, (start, end, status)) in enumerate(shapes.items(), start=1):
        shaped = replace(revision(mid, 1, seq, status=status), valid_from=start, valid_to=end)
        store.insert_memory_revision(shaped, "fp_alice")
    store.insert_memory_revision(replace(revision("mem_7", 1, 9), subject="Bob", valid_from=T0 - 99 * day), "fp_bob")

    def newest(n: int | None, *subjects: str) -> list[str]:
        if by == "attributes":
            found = store.memories_by_attributes("brn_1", [(s, "lives_in") for s in subjects], newest=n)
        else:
            found = store.memories_by_fingerprints("brn_1", [f"fp_{s.casefold()}" for s in subjects], newest=n)
        return [m.memory_id for m in found]

    assert newest(1, "ALICE") == ["mem_3"]
    assert newest(3, "alice") == ["mem_1", "mem_2", "mem_3"]
    assert newest(4, "alice") == ["mem_1", "mem_2", "mem_3", "mem_4"]
    assert newest(5, "alice") == ["mem_1", "mem_2", "mem_3", "mem_4", "mem_5"]
    assert newest(9, "alice") == ["mem_1", "mem_2", "mem_3", "mem_4", "mem_5", "mem_8"]
    assert newest(2, "alice", "bob") == ["mem_2", "mem_3", "mem_7"]
    assert newest(2, "carol") == []
    assert newest(None, "alice") == [f"mem_{i}" for i in (1, 2, 3, 4, 5, 6, 8)]


def test_idempotent_replies_round_trip(store: Store) -> None:
    reply = IdempotentReply("test:acme", "op:b1", "k", "fp", 202, {"id": "rec_1"}, "wm_x", T0)
    store.put_idempotent(reply)
    assert store.get_idempotent("test:acme", "op:b1", "k") == reply
    assert store.get_idempotent("live:acme", "op:b1", "k") is None


def test_memory_revisions_current_state_and_changes(store: Store) -> None:
    store.insert_memory_revision(revision("mem_a", 1, 1), "fp_a")
    store.insert_memory_revision(revision("mem_b", 1, 2, cites=("rec_1", "rec_2")), "fp_b")
    store.insert_memory_revision(revision("mem_a", 2, 3, status="superseded"), "fp_a")
    assert store.memory("brn_1", "mem_a").version == 2  # type: ignore[union-attr]
    assert [r.version for r in store.memory_revisions("brn_1", "mem_a")] == [1, 2]
    # getMemory reads the history alone: the current revision is its last, as memory() reads it
    assert store.memory_revisions("brn_1", "mem_a")[-1] == store.memory("brn_1", "mem_a")
    assert [m.memory_id for m in store.memories_by_fingerprints("brn_1", ["fp_b"])] == ["mem_b"]
    assert [m.memory_id for m in store.memories_by_fingerprints("brn_1", ["fp_a", "fp_b", "nope"])] == ["mem_a", "mem_b"]
    assert store.memories_by_fingerprints("brn_1", []) == []
    assert [m.memory_id for m in store.memories_by_attributes("brn_1", [("alice", "lives_in")])] == ["mem_a", "mem_b"]
    assert store.memories_by_attributes("brn_1", [("Bob", "lives_in"), ("alice", "works_at")]) == []
    assert [m.memory_id for m in store.memories_citing("brn_1", "rec_2")] == ["mem_b"]
    assert [m.memory_id for m in store.list_memories("brn_1", after_id=None, limit=10)] == ["mem_a", "mem_b"]
    assert [m.memory_id for m in store.list_memories("brn_1", after_id="mem_a", limit=10)] == ["mem_b"]
    assert [m.memory_id for m in store.list_memories("brn_1", after_id=None, limit=10, owner="ALICE")] == ["mem_a", "mem_b"]
    assert store.list_memories("brn_1", after_id=None, limit=10, subject="Bob") == []
    changes = store.memory_changes("brn_1", 1, 10)
    assert [(seq, mid) for seq, mid, _ in changes] == [(2, "mem_b"), (3, "mem_a")]
    store.erase_memories("brn_1", [("mem_b", 4)], at=T0)
    assert store.memory("brn_1", "mem_b") is None and store.memory_revisions("brn_1", "mem_b") == []
    assert store.memory_changes("brn_1", 3, 10) == [(4, "mem_b", None)]
    assert store.memories_citing("brn_1", "rec_2") == []
    store.erase_memories("brn_1", [], at=T0)


def test_many_memories_are_erased_at_once_each_at_its_own_seq(store: Store) -> None:
    from dataclasses import replace

    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    store.insert_memory_revisions(
        [replace(revision(f"mem_{n}", 1, n), fingerprint=f"fp_{n}") for n in range(1, 6)]
        + [replace(revision("mem_1", 2, 6), fingerprint="fp_1")]
        + [replace(revision("mem_9", 1, 1), brain_uid="brn_2", fingerprint="fp_9")]
    )
    store.erase_memories("brn_1", [("mem_3", 7), ("mem_1", 8), ("mem_9", 9), ("mem_5", 10)], at=T0)
    assert [m.memory_id for m in store.all_memories("brn_1")] == ["mem_2", "mem_4"]
    assert all(store.memory_revisions("brn_1", m) == [] for m in ("mem_1", "mem_3", "mem_5"))
    assert store.memory("brn_2", "mem_9") is not None  # another Brain's is left alone
    assert store.memory_changes("brn_1", 6, 10) == [(7, "mem_3", None), (8, "mem_1", None), (10, "mem_5", None)]
    assert store.memories_citing("brn_1", "rec_1") == store.all_memories("brn_1")


def test_many_memories_are_read_at_once_as_each_is_read_alone(store: Store) -> None:
    from dataclasses import replace

    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    store.insert_memory_revisions(
        [replace(revision(f"mem_{n}", 1, n), fingerprint=f"fp_{n}") for n in range(1, 5)]
        + [replace(revision("mem_1", 2, 5, status="pending"), fingerprint="fp_1")]
        + [replace(revision("mem_2", 2, 6, status="superseded"), fingerprint="fp_2")]
        + [replace(revision("mem_9", 1, 1), brain_uid="brn_2", fingerprint="fp_9")]
    )
    store.erase_memories("brn_1", [("mem_3", 7)], at=T0)
    asked = ["mem_1", "mem_2", "mem_3", "mem_4", "mem_9", "mem_none", "mem_1"]
    found = store.memories("brn_1", asked)
    assert found == {m: r for m in asked if (r := store.memory("brn_1", m)) is not None}
    assert sorted(found) == ["mem_1", "mem_2", "mem_4"]  # erased, another Brain's and unknown ones left out
    assert (found["mem_1"].version, found["mem_1"].status) == (2, "pending")
    assert store.memories("brn_2", asked) == {"mem_9": store.memory("brn_2", "mem_9")}
    assert store.memories("brn_1", []) == {}


def test_the_owner_filter_compares_casefolded_names(store: Store) -> None:
    """Casefold, not lower case: 'Weiß' is 'WEISS' (DuckDB's lower() keeps the 'ß')."""
    from dataclasses import replace

    store.insert_memory_revisions(
        [replace(revision("mem_a", 1, 1), owner="Weiß"), replace(revision("mem_b", 1, 2), owner="Strauss")]
    )
    for asked, found in (("WEISS", ["mem_a"]), ("weiß", ["mem_a"]), ("STRAUß", ["mem_b"]), ("Weis", [])):
        assert [m.memory_id for m in store.list_memories("brn_1", after_id=None, limit=10, owner=asked)] == found


def test_pending_memories_are_listed_for_resumption_but_not_read(store: Store) -> None:
    store.insert_memory_revision(revision("mem_a", 1, 1), "fp_a")
    store.insert_memory_revision(revision("mem_a", 2, 2, status="pending"), "fp_a")
    assert store.memories_in_status("pending") == [("brn_1", "mem_a")]
    assert store.list_memories("brn_1", after_id=None, limit=10) == []


def test_erase_brain_removes_every_row(store: Store) -> None:
    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    record(store, "rec_1")
    record(store, "rec_9", uid="brn_2")
    store.insert_object_version(ObjectVersion("obj_1", "brn_1", "t", "k", 1, 1, "k", T0, 1))
    store.insert_memory_revision(revision("mem_a", 1, 1), "fp_a")
    counts = store.erase_brain("brn_1")
    assert counts == {"records": 1, "memories": 1, "objects": 1}
    assert store.get_brain("test:acme", "b1") is None
    assert store.get_record("brn_1", "rec_1") is None
    assert store.memory("brn_1", "mem_a") is None
    assert store.current_seq("brn_1") == 0
    assert store.get_record("brn_2", "rec_9") is not None


def test_duckdb_erasure_leaves_no_content_in_the_file(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "s.duckdb")
    store.migrate()
    store.insert_brain(brain())
    secret = "the-launch-code-is-8812-zebra"
    r = Record("rec_1", "brn_1", {"kind": "document", "text": secret * 50}, None, "shareable", T0, T0, "api", 1)
    store.insert_record(r)
    store.erase_brain("brn_1")
    store.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert secret.encode() not in blob


def stored_chunk(record_id: str, start: int) -> StoredChunk:
    draft = ChunkDraft(
        record_id, start, start + 5, "hello", "Alice (1 January 2024): hello", T0, "Alice", None, "normal", "shareable"
    )
    return StoredChunk("brn_1", draft, "model-a", bytes(range(16)))


def test_chunks_come_back_in_the_order_their_records_were_sent(store: Store) -> None:
    store.insert_brain(brain())
    record(store, "rec_b")  # sent first, though its id sorts last
    record(store, "rec_a")
    # written out of order, and one of a Record the store does not hold (last)
    store.insert_chunks([stored_chunk("rec_a", 6), stored_chunk("rec_0", 0), stored_chunk("rec_b", 6)])
    store.insert_chunks([stored_chunk("rec_b", 0), stored_chunk("rec_a", 0)])
    assert [(c.draft.record_id, c.draft.start) for c in store.chunks("brn_1")] == [
        ("rec_b", 0),
        ("rec_b", 6),
        ("rec_a", 0),
        ("rec_a", 6),
        ("rec_0", 0),
    ]


def test_chunks_round_trip_and_erase_by_record(store: Store) -> None:
    store.insert_chunks([stored_chunk("rec_1", 0), stored_chunk("rec_1", 6), stored_chunk("rec_2", 0)])
    assert store.count_chunks("brn_1") == 3
    assert store.chunks("brn_1")[0] == stored_chunk("rec_1", 0)
    assert store.erase_chunks("brn_1", "rec_1") == 2
    assert [c.draft.record_id for c in store.chunks("brn_1")] == ["rec_2"]
    assert store.count_chunks("brn_2") == 0


def test_lock_brain_says_whether_the_brain_still_exists(store: Store) -> None:
    store.insert_brain(brain())
    with store.atomic():
        assert store.lock_brain("brn_1")
        assert not store.lock_brain("brn_gone")
    store.erase_brain("brn_1")
    with store.atomic():
        assert not store.lock_brain("brn_1")


def test_try_lock_brains_holds_the_brains_no_other_transaction_holds(store: Store) -> None:
    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    with store.atomic():
        assert store.try_lock_brains(["brn_1", "brn_2", "brn_gone"]) <= {"brn_gone"}  # none held
        assert store.lock_brain("brn_1") and store.lock_brain("brn_2") and not store.lock_brain("brn_gone")
        assert store.try_lock_brains(["brn_1"]) == set()  # its own


def test_live_seq_is_the_change_sequence_of_a_brain_that_still_exists(store: Store) -> None:
    assert store.live_seq("brn_1") is None
    store.insert_brain(brain())
    assert store.live_seq("brn_1") == 0
    store.next_seq("brn_1")
    store.next_seq("brn_2")  # a number of a Brain that does not exist is no life
    assert store.live_seq("brn_1") == 1
    assert store.live_seq("brn_2") is None
    with store.atomic():
        store.next_seq("brn_1")
        store.next_seq("brn_1")
        assert store.live_seq("brn_1") == 3  # as the transaction left it
    assert store.live_seq("brn_1") == 3
    store.erase_brain("brn_1")
    assert store.live_seq("brn_1") is None


def test_a_transaction_that_erases_a_brain_it_locked_holds_it_no_more(store: Store) -> None:
    store.insert_brain(brain())
    with store.atomic():
        assert store.lock_brain("brn_1")
        assert store.lock_brain("brn_1")  # again, as each write of a group commit does
        store.next_seq("brn_1")
        store.erase_brain("brn_1")
        assert not store.lock_brain("brn_1")
    assert store.get_brain("test:acme", "b1") is None
    assert store.current_seq("brn_1") == 0


def test_change_sequence_advances_inside_a_transaction_and_rolls_back_with_it(store: Store) -> None:
    store.next_seq("brn_1")
    with store.atomic():
        assert [store.next_seq("brn_1") for _ in range(3)] == [2, 3, 4]
        assert store.current_seq("brn_1") == 4  # the transaction sees its own advance
    assert store.current_seq("brn_1") == 4
    with pytest.raises(RuntimeError), store.atomic():
        store.next_seq("brn_1")
        raise RuntimeError("boom")
    assert store.current_seq("brn_1") == 4
    assert store.next_seq("brn_1") == 5


def test_record_visibilities_are_read_together_within_one_brain(store: Store) -> None:
    store.insert_brain(brain())
    record(store, "rec_1")
    store.insert_record(
        Record("rec_2", "brn_1", {"kind": "document", "text": "x"}, None, "local_only", T0, T0, "api", store.next_seq("brn_1"))
    )
    record(store, "rec_9", uid="brn_2")
    got = store.record_visibilities("brn_1", ["rec_1", "rec_2", "rec_9", "rec_none"])
    assert got == {"rec_1": "shareable", "rec_2": "local_only"}
    assert store.record_visibilities("brn_1", []) == {}


def test_idempotent_replies_are_erased_with_what_they_describe(store: Store) -> None:
    store.insert_brain(brain())
    made = IdempotentReply("test:acme", "op:b1", "k1", "fp", 202, {"id": "rec_1"}, None, T0, "brn_1", "rec_1")
    other = IdempotentReply("test:acme", "op:b1", "k2", "fp", 202, {"id": "rec_2"}, None, T0, "brn_1", "rec_2")
    elsewhere = IdempotentReply("test:acme", "op:b2", "k3", "fp", 202, {"id": "rec_3"}, None, T0, "brn_2", "rec_3")
    for reply in (made, other, elsewhere):
        store.put_idempotent(reply)
    assert store.get_idempotent("test:acme", "op:b1", "k1") == made
    assert store.erase_idempotent("brn_1", "rec_1") == 1
    assert store.get_idempotent("test:acme", "op:b1", "k1") is None
    assert store.get_idempotent("test:acme", "op:b1", "k2") == other
    store.erase_brain("brn_1")
    assert store.get_idempotent("test:acme", "op:b1", "k2") is None
    assert store.get_idempotent("test:acme", "op:b2", "k3") == elsewhere


def test_revisions_are_inserted_together_with_their_fingerprints(store: Store) -> None:
    from dataclasses import replace

    revs = [replace(revision("mem_a", 1, 1), fingerprint="fp_a"), replace(revision("mem_b", 1, 2), fingerprint="fp_b")]
    store.insert_memory_revisions(revs)
    assert [m.fingerprint for m in store.all_memories("brn_1")] == ["fp_a", "fp_b"]
    assert store.memories_by_fingerprints("brn_1", ["fp_b"]) == [revs[1]]
    assert store.memory("brn_1", "mem_a") == revs[0]
    with pytest.raises(RuntimeError), store.atomic():
        store.insert_memory_revisions([replace(revision("mem_c", 1, 3), fingerprint="fp_c")])
        raise RuntimeError("boom")
    assert store.memory("brn_1", "mem_c") is None


def test_one_insert_takes_revisions_of_several_brains_each_under_its_own(store: Store) -> None:
    from dataclasses import replace

    mine = replace(revision("mem_a", 1, 1, cites=("rec_a",)), fingerprint="fp")
    theirs = replace(revision("mem_b", 1, 1, cites=("rec_b",)), brain_uid="brn_2", fingerprint="fp")
    # looked up first, so that a store keeping each Brain's memory keys in memory holds them during the insert
    assert store.memories_by_fingerprints("brn_1", ["fp"]) == store.memories_by_fingerprints("brn_2", ["fp"]) == []
    store.insert_memory_revisions([mine, theirs])
    assert store.all_memories("brn_1") == [mine]
    assert store.all_memories("brn_2") == [theirs]
    assert store.memories_by_fingerprints("brn_1", ["fp"]) == [mine]
    assert store.memories_by_fingerprints("brn_2", ["fp"]) == [theirs]
    assert store.memory("brn_1", "mem_b") is None
    assert [m.memory_id for m in store.memories_citing("brn_2", "rec_b")] == ["mem_b"]
    assert store.memories_citing("brn_1", "rec_b") == []


def test_memories_citing_any_of_several_records_are_read_at_once(store: Store) -> None:
    """What a Context's memories component reads: the current revisions citing any Record of its
    evidence window, as memories_citing reads them one Record at a time."""
    from dataclasses import replace

    store.insert_memory_revisions(
        [
            replace(revision("mem_a", 1, 1, cites=("rec_1",)), fingerprint="a"),
            replace(revision("mem_a", 2, 2, cites=("rec_9",)), fingerprint="a"),  # no longer cites rec_1
            replace(revision("mem_b", 1, 3, cites=("rec_1", "rec_2")), fingerprint="b"),
            replace(revision("mem_c", 1, 4, cites=("rec_3",)), fingerprint="c"),
            replace(revision("mem_d", 1, 5, cites=("rec_2",)), brain_uid="brn_2", fingerprint="d"),
        ]
    )
    assert [m.memory_id for m in store.memories_citing_any("brn_1", ["rec_2", "rec_1", "rec_1"])] == ["mem_b"]
    assert [m.memory_id for m in store.memories_citing_any("brn_1", ["rec_3", "rec_9", "rec_x"])] == ["mem_a", "mem_c"]
    assert store.memories_citing_any("brn_1", []) == []
    for record_id in ("rec_1", "rec_2", "rec_3", "rec_9"):
        assert store.memories_citing_any("brn_1", [record_id]) == store.memories_citing("brn_1", record_id)
    assert [m.memory_id for m in store.memories_citing_any("brn_2", ["rec_1", "rec_2"])] == ["mem_d"]


def test_memories_referencing_any_of_some_are_found(store: Store) -> None:
    from dataclasses import replace

    store.insert_memory_revisions(
        [
            replace(revision("mem_a", 1, 1), status="superseded", superseded_by="mem_x", fingerprint="a"),
            replace(revision("mem_b", 1, 2), extra={"conflicts_with": ["mem_x"]}, fingerprint="b"),
            replace(revision("mem_c", 1, 3), extra={"closed_by": "mem_x"}, fingerprint="c"),
            replace(revision("mem_d", 1, 4), extra={"conflicts_with": ["mem_y"]}, fingerprint="d"),
            replace(revision("mem_e", 1, 5), extra={"conflicts_with": ["mem_x"]}, fingerprint="e"),
            replace(revision("mem_e", 2, 6), fingerprint="e"),  # no longer: the current revision counts
        ]
    )
    found = {m.memory_id for m in store.memories_referencing("brn_1", ["mem_x"])}
    assert {"mem_a", "mem_b", "mem_c"} <= found and "mem_d" not in found
    for memory in store.memories_referencing("brn_1", ["mem_x"]):  # a superset is allowed; every one current
        assert memory == store.memory("brn_1", memory.memory_id)
    found = {m.memory_id for m in store.memories_referencing("brn_1", ["mem_y", "mem_x", "mem_none"])}
    assert {"mem_a", "mem_b", "mem_c", "mem_d"} <= found
    assert store.memories_referencing("brn_1", []) == []
    assert store.memories_referencing("brn_2", ["mem_x", "mem_y"]) == []


def test_erasing_a_records_citations_scrubs_every_revision(store: Store) -> None:
    from dataclasses import replace

    store.insert_memory_revisions(
        [
            replace(revision("mem_a", 1, 1, cites=("rec_gone",)), fingerprint="a"),
            replace(revision("mem_a", 2, 2, cites=("rec_gone", "rec_kept")), fingerprint="a"),
            replace(revision("mem_a", 3, 3, cites=("rec_kept",)), fingerprint="a"),
            replace(revision("mem_b", 1, 4, cites=("rec_kept",)), fingerprint="b"),
        ]
    )
    store.erase_record_citations("brn_1", "rec_gone")
    history = store.memory_revisions("brn_1", "mem_a")
    # version 1 rested on the erased Record alone; version 2 says what no revision said before it was
    # cited: it may be its words
    assert [r.version for r in history] == [3]
    assert all(c.record_id == "rec_kept" for r in history for c in r.citations)
    assert store.memories_citing("brn_1", "rec_gone") == []
    assert [m.memory_id for m in store.memories_citing("brn_1", "rec_kept")] == ["mem_a", "mem_b"]


def test_a_revision_citing_an_erased_record_stays_only_if_it_says_what_was_said_before_it_was_cited(
    store: Store,
) -> None:
    """A Memory's statement and valid_from come from the Records that made or re-derived it: a revision
    that cited the erased Record is kept, without its citations, only when both are those of a revision
    from before it was cited (support by another Record changes neither)."""
    from dataclasses import replace

    def said(version: int, cites: tuple[str, ...], statement: str, valid_from: datetime = T0) -> MemoryRevision:
        return replace(
            revision("mem_a", version, version, cites=cites), statement=statement, valid_from=valid_from, fingerprint="a"
        )

    later = T0 - timedelta(days=400)
    store.insert_memory_revisions(
        [
            said(1, ("rec_kept",), "Alice adopted a ferret."),
            said(2, ("rec_kept", "rec_gone"), "Alice adopted a ferret."),  # supported: the same
            said(3, ("rec_kept", "rec_gone"), "Alice adopted a ferret in March 2018.", later),  # re-derived
            said(4, ("rec_kept", "rec_gone"), "Alice adopted a ferret.", later),  # its time
            said(5, ("rec_kept",), "Alice adopted a ferret."),  # after it (pending re-derivation)
        ]
    )
    store.erase_record_citations("brn_1", "rec_gone")
    history = store.memory_revisions("brn_1", "mem_a")
    assert [(r.version, [c.record_id for c in r.citations]) for r in history] == [
        (1, ["rec_kept"]),
        (2, ["rec_kept"]),
        (5, ["rec_kept"]),
    ]
    assert store.memory("brn_1", "mem_a") == history[-1]


def test_erasing_a_records_citations_from_many_revisions_at_once(store: Store) -> None:
    """Each revision keeps exactly the other Records' citations, in order, when it says what a revision
    from before the Record was cited said, or goes; another Brain's revisions citing a Record of that id
    are not touched."""
    from dataclasses import replace

    store.insert_memory_revisions(
        [
            replace(revision(f"mem_{n:02d}", v, 10 * n + v, cites=cites), statement=f"mem_{n:02d}", fingerprint=f"fp_{n}")
            for n in range(12)
            for v, cites in enumerate(
                [("rec_1",), ("rec_1", "rec_gone", "rec_2"), ("rec_gone", "rec_gone", "rec_3"), ("rec_gone",)][: 1 + n % 4],
                start=1,
            )
        ]
        + [replace(revision("mem_other", 1, 1, cites=("rec_gone",)), brain_uid="brn_2", fingerprint="o")]
    )
    store.erase_record_citations("brn_1", "rec_gone")
    for n in range(12):
        history = store.memory_revisions("brn_1", f"mem_{n:02d}")
        expected = [(1, ["rec_1"]), (2, ["rec_1", "rec_2"]), (3, ["rec_3"])][: 1 + n % 4]
        assert [(r.version, [c.record_id for c in r.citations]) for r in history] == expected
    assert store.memories_citing("brn_1", "rec_gone") == []
    assert [c.record_id for c in store.memory("brn_2", "mem_other").citations] == ["rec_gone"]  # type: ignore[union-attr]


def test_erasing_the_earlier_revisions_of_memories_leaves_each_its_newest(store: Store) -> None:
    from dataclasses import replace

    store.insert_memory_revisions(
        [
            replace(revision("mem_a", 1, 1, cites=("rec_1",)), fingerprint="a"),
            replace(revision("mem_a", 2, 2, cites=("rec_1", "rec_2")), fingerprint="a"),
            replace(revision("mem_a", 4, 3, cites=("rec_2",)), fingerprint="a"),
            replace(revision("mem_b", 1, 4, cites=("rec_1",)), fingerprint="b"),
            replace(revision("mem_b", 2, 5, cites=("rec_1",)), fingerprint="b"),
            replace(revision("mem_c", 1, 6, cites=("rec_1",)), fingerprint="c"),
        ]
    )
    store.erase_earlier_revisions("brn_1", ["mem_a", "mem_c", "mem_none"])
    assert [(r.version, r.statement) for r in store.memory_revisions("brn_1", "mem_a")] == [(4, "mem_a v4")]
    assert store.memory("brn_1", "mem_a") == replace(revision("mem_a", 4, 3, cites=("rec_2",)), fingerprint="a")
    assert [r.version for r in store.memory_revisions("brn_1", "mem_b")] == [1, 2]  # not named
    assert [r.version for r in store.memory_revisions("brn_1", "mem_c")] == [1]
    assert [m.memory_id for m in store.memories_citing("brn_1", "rec_2")] == ["mem_a"]
    store.erase_earlier_revisions("brn_2", ["mem_b"])  # another Brain's name for it
    store.erase_earlier_revisions("brn_1", [])
    assert [r.version for r in store.memory_revisions("brn_1", "mem_b")] == [1, 2]


def test_erasing_the_earlier_pending_revisions_of_memories_leaves_the_others(store: Store) -> None:
    from dataclasses import replace

    store.insert_memory_revisions(
        [
            replace(revision("mem_a", v, v, status=status), fingerprint="a")
            for v, status in enumerate(["active", "pending", "active", "pending", "pending"], start=1)
        ]
    )
    store.erase_earlier_revisions("brn_1", ["mem_a"], pending_only=True)
    assert [r.version for r in store.memory_revisions("brn_1", "mem_a")] == [1, 3, 5]  # the newest stays
    assert store.memory("brn_1", "mem_a") == replace(revision("mem_a", 5, 5, status="pending"), fingerprint="a")


def test_records_and_their_statuses_are_read_and_written_together(store: Store) -> None:
    from brainstore.domain import RecordStatus

    store.insert_brain(brain())
    for rid in ("rec_1", "rec_2", "rec_3"):
        record(store, rid)
    record(store, "rec_9", uid="brn_2")
    store.append_record_statuses(
        [
            RecordStatus("brn_1", "rec_1", "ready", store.next_seq("brn_1"), None, ("mem_a", "mem_b")),
            RecordStatus("brn_1", "rec_2", "failed", store.next_seq("brn_1"), {"code": "x", "message": "y"}),
        ]
    )
    got = store.records("brn_1", ["rec_1", "rec_2", "rec_3", "rec_9", "rec_none"])
    assert sorted(got) == ["rec_1", "rec_2", "rec_3"]
    assert (got["rec_1"].status, got["rec_1"].memory_ids) == ("ready", ("mem_a", "mem_b"))
    assert (got["rec_2"].status, got["rec_2"].error) == ("failed", {"code": "x", "message": "y"})
    assert got["rec_3"].status == "processing" and got["rec_3"] == store.get_record("brn_1", "rec_3")
    assert store.records("brn_1", []) == {}


def test_a_record_tally_counts_by_the_latest_status_and_the_source_trust(store: Store) -> None:
    from brainstore.domain import RecordTally

    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    assert store.record_tally("brn_1", 5) == RecordTally(0, 0, 0)
    low = {"name": "feed", "trust": "low"}
    for rid, source in [
        ("rec_5", low), ("rec_3", None), ("rec_4", {"trust": "high"}), ("rec_1", low), ("rec_2", {"name": "low"}),
        ("rec_6", low), ("rec_7", None),
    ]:  # sent in this order  # fmt: skip
        record(store, rid, source=source)
    record(store, "rec_9", uid="brn_2", source=low)
    for rid in ("rec_3", "rec_1", "rec_4", "rec_6"):
        store.append_record_status("brn_1", rid, "failed", seq=store.next_seq("brn_1"), error={"code": "x", "message": "y"})
    store.append_record_status("brn_2", "rec_9", "failed", seq=store.next_seq("brn_2"), error={"code": "x", "message": "y"})
    store.append_record_status("brn_1", "rec_4", "processing", seq=store.next_seq("brn_1"))  # sent back to derivation
    store.append_record_status("brn_1", "rec_4", "ready", seq=store.next_seq("brn_1"))
    store.append_record_status("brn_1", "rec_7", "ready", seq=store.next_seq("brn_1"))
    store.erase_record("brn_1", "rec_6")
    assert store.record_tally("brn_1", 5) == RecordTally(6, 2, 2, ("rec_3", "rec_1"), ("rec_5", "rec_1"))
    assert store.record_tally("brn_1", 1) == RecordTally(6, 2, 2, ("rec_3",), ("rec_5",))
    assert store.record_tally("brn_1", 0) == RecordTally(6, 2, 2)
    assert store.record_tally("brn_2", 5) == RecordTally(1, 1, 1, ("rec_9",), ("rec_9",))
    assert store.record_tally("brn_none", 5) == RecordTally(0, 0, 0)


def test_a_record_tally_leaves_out_the_withheld_visibilities(store: Store) -> None:
    """A hosted census neither counts nor names a local_only Record (getRecord refuses its id)."""
    from brainstore.domain import RecordTally

    store.insert_brain(brain())
    low = {"name": "feed", "trust": "low"}
    for rid, visibility in [
        ("rec_1", "local_only"), ("rec_2", "shareable"), ("rec_3", "redacted_summary"), ("rec_4", "local_only"),
        ("rec_5", "shareable"),
    ]:  # fmt: skip
        record(store, rid, source=low, visibility=visibility)
    for rid in ("rec_1", "rec_4", "rec_5"):
        store.append_record_status("brn_1", rid, "failed", seq=store.next_seq("brn_1"), error={"code": "x", "message": "y"})
    everything = RecordTally(5, 3, 5, ("rec_1", "rec_4", "rec_5"), ("rec_1", "rec_2", "rec_3", "rec_4", "rec_5"))
    assert store.record_tally("brn_1", 5) == everything
    assert store.record_tally("brn_1", 5, withheld=()) == everything
    assert store.record_tally("brn_1", 5, withheld=frozenset({"local_only"})) == RecordTally(
        3, 1, 3, ("rec_5",), ("rec_2", "rec_3", "rec_5")
    )
    assert store.record_tally("brn_1", 1, withheld=frozenset({"local_only"})) == RecordTally(3, 1, 3, ("rec_5",), ("rec_2",))
    assert store.record_tally("brn_1", 5, withheld=frozenset({"local_only", "redacted_summary"})) == RecordTally(
        2, 1, 2, ("rec_5",), ("rec_2", "rec_5")
    )
    assert store.record_tally("brn_1", 5, withheld=frozenset({"local_only"})) == tally_records(
        store.list_records("brn_1"), 5, withheld=frozenset({"local_only"})
    )


def test_record_seqs_walk_a_brains_records_by_change_sequence_a_page_at_a_time(store: Store) -> None:
    """What ``brainstore rederive`` walks instead of every Record read whole: ids and sequences only,
    past a cursor, in sequence order, at most a page; another Brain's and erased Records left out."""
    store.insert_brain(brain())
    store.insert_brain(brain("brn_2", id_="b2"))
    for rid in ("rec_c", "rec_a", "rec_e", "rec_b", "rec_d"):  # ids out of order: the sequence orders them
        record(store, rid)
        record(store, f"{rid}_2", uid="brn_2")
        store.append_record_status("brn_1", rid, "ready", seq=store.next_seq("brn_1"))  # a gap in the Records' seqs
    store.erase_record("brn_1", "rec_b")
    assert store.record_seqs("brn_1", after=0, limit=100) == [("rec_c", 1), ("rec_a", 3), ("rec_e", 5), ("rec_d", 9)]
    assert store.record_seqs("brn_1", after=0, limit=2) == [("rec_c", 1), ("rec_a", 3)]
    assert store.record_seqs("brn_1", after=3, limit=2) == [("rec_e", 5), ("rec_d", 9)]
    assert store.record_seqs("brn_1", after=2, limit=1) == [("rec_a", 3)]
    assert store.record_seqs("brn_1", after=9, limit=2) == []
    assert store.record_seqs("brn_none", after=0, limit=2) == []
    assert [rid for rid, _ in store.record_seqs("brn_2", after=0, limit=9)] == [
        "rec_c_2", "rec_a_2", "rec_e_2", "rec_b_2", "rec_d_2"
    ]  # fmt: skip
    assert store.count_records("brn_1") == 4
    assert store.count_records("brn_1", after=3) == 2
    assert store.count_records("brn_1", after=1, through=5) == 2
    assert store.count_records("brn_1", after=9) == 0
    assert store.count_records("brn_2", through=2) == 2
    assert store.count_records("brn_none") == 0


_TALLY_SOURCES = st.sampled_from([None, {"trust": "low"}, {"trust": "high"}, {"name": "low"}, {"trust": "Low"}, {"trust": ["low"]}])
_TALLY_STATUSES = st.lists(st.sampled_from(["ready", "failed", "processing"]), max_size=3)
_tally_brains = iter(range(10**9))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    records=st.lists(st.tuples(_TALLY_SOURCES, _TALLY_STATUSES, st.booleans()), max_size=12),
    examples=st.integers(0, 4),
)
def test_a_record_tally_says_what_the_records_read_whole_say(
    store: Store, records: list[tuple[dict | None, list[str], bool]], examples: int
) -> None:
    uid = f"brn_tally_{next(_tally_brains)}"  # one Brain an example: the store outlives them
    store.insert_brain(brain(uid, id_=uid))
    for n, (source, statuses, erased) in enumerate(records):
        rid = f"rec_{uid}_{n}"  # Record ids are unique across Brains
        record(store, rid, uid=uid, source=source)
        for status in statuses:
            store.append_record_status(uid, rid, status, seq=store.next_seq(uid))
        if erased:
            store.erase_record(uid, rid)
    assert store.record_tally(uid, examples) == tally_records(store.list_records(uid), examples)


def test_a_write_racing_erase_brain_is_erased_with_it_or_finds_the_brain_gone(store: Store) -> None:
    import threading
    import time
    from dataclasses import replace

    store.insert_brain(brain())
    written: list[str] = []
    refused: list[int] = []
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(10_000):
                rid = f"rec_{n}_{i}"
                with store.atomic():
                    if not store.lock_brain("brn_1"):
                        refused.append(n)
                        return
                    seq = store.next_seq("brn_1")
                    store.insert_record(
                        Record(rid, "brn_1", {"kind": "document", "text": rid}, None, "shareable", T0, T0, "api", seq)
                    )
                    store.insert_chunks([stored_chunk(rid, 0)])
                    store.insert_memory_revisions([replace(revision(f"mem_{n}_{i}", 1, seq, cites=(rid,)), fingerprint=rid)])
                    store.put_idempotent(IdempotentReply("test:acme", "op:b1", rid, "fp", 202, {"id": rid}, None, T0, "brn_1", rid))
                    time.sleep(0.001)  # hold the Brain a moment: the erase must wait for this write
                written.append(rid)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    counts = store.erase_brain("brn_1")
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(refused) == [0, 1, 2]  # every writer ended by finding the Brain gone
    assert written and counts["records"] == len(written)  # every committed write was erased with it
    assert counts["memories"] == len(written)
    assert store.brain_by_uid("brn_1") is None and store.list_records("brn_1") == []
    assert store.chunks("brn_1") == [] and store.all_memories("brn_1") == []
    assert store.current_seq("brn_1") == 0
    assert all(store.get_idempotent("test:acme", "op:b1", rid) is None for rid in written)


def test_objects_listed_within_max_bytes_pass_over_a_value_too_long_and_stop_where_the_values_fill_it(
    store: Store,
) -> None:
    for seq, (key, chars) in enumerate([("a", 10), ("b", 500), ("c", 40), ("d", 40), ("e", 5)], start=1):
        store.insert_object_version(ObjectVersion(f"obj_{seq}", "brn_1", "note", key, 1, "x" * chars, "k", T0, seq))
    stored = {key: chars + 2 for key, chars in [("a", 10), ("b", 500), ("c", 40), ("d", 40), ("e", 5)]}  # "x...x"
    listed = lambda max_bytes, limit=None: [o.key for o in store.list_objects("brn_1", limit, max_bytes=max_bytes)]  # noqa: E731
    assert listed(None) == ["a", "b", "c", "d", "e"]
    assert listed(stored["b"] + 200) == ["a", "b", "c", "d", "e"]
    # b alone is longer: passed over; a, c and d fill 96 bytes, e would make 103
    assert listed(100) == ["a", "c", "d"]
    assert listed(stored["a"] + stored["c"] + stored["d"] + stored["e"]) == ["a", "c", "d", "e"]
    assert listed(100, 2) == ["a", "c"]
    assert listed(5) == []
    assert store.list_objects("brn_2", max_bytes=100) == []
