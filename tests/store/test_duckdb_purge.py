"""Deletes that really delete: DuckDBStore compacts erased rows' bytes out of the file (see store/duckdb.py)."""

from __future__ import annotations

import random
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

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
from brainstore.store.duckdb import DuckDBStore, migrations

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
MAIN, OTHER = "brn_main", "brn_secret"
ROWS = 300


def text(rnd: random.Random, n: int = 200) -> str:
    return "".join(rnd.choice(string.ascii_letters + string.digits + " ") for _ in range(n))


def make_secret(rnd: random.Random) -> str:
    return "SECRET-" + "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(48))


def rec(rid: str, uid: str, body: str, seq: int) -> Record:
    return Record(rid, uid, {"kind": "document", "text": body}, None, "shareable", T0, T0, "api", seq)


def mem(mid: str, uid: str, version: int, statement: str, seq: int, cites: str) -> MemoryRevision:
    return MemoryRevision(
        memory_id=mid,
        brain_uid=uid,
        version=version,
        statement=statement,
        subject="Alice",
        owner="Alice",
        attribute="note",
        value=statement[:40],
        valid_from=T0,
        valid_to=None,
        recorded_at=T0,
        status="active",
        citations=(Citation(cites, 0, 4, statement[:4]),),
        supersedes=None,
        superseded_by=None,
        seq=seq,
        extra={"conflicts_with": []},
    )


def chunk(uid: str, rid: str, start: int, body: str) -> StoredChunk:
    draft = ChunkDraft(rid, start, start + len(body), body, f"Alice: {body}", T0, "Alice", None, "normal", "shareable")
    return StoredChunk(uid, draft, "model-a", bytes(random.Random(start).randrange(256) for _ in range(64)))


PLACES = ("erase_record", "erase_memory", "erase_chunks", "erase_brain", "erase_idempotent")


def reply(uid: str, key: str, body: str, resource: str | None) -> IdempotentReply:
    return IdempotentReply("test:acme", f"rememberRecord:{uid}", key, "fp", 202, {"text": body}, None, T0, uid, resource)


def populate(store: DuckDBStore, secret: str, rnd: random.Random, places: tuple[str, ...] = PLACES) -> None:
    """Many random rows in every content table of two Brains, and the secret only in the rows that the
    erases named in ``places`` remove (the others get random text of the same shape)."""
    for uid in (MAIN, OTHER):
        store.insert_brain(Brain(uid, "test:acme", uid, None, "person", "Alice", T0))
    seq = 0
    for i in range(ROWS):
        seq += 1
        store.insert_record(rec(f"rec_{i:04d}", MAIN, text(rnd), seq))
        if i % 3 == 0:
            store.append_record_status(MAIN, f"rec_{i:04d}", "ready", seq=seq, memory_ids=[f"mem_{i:04d}"])
        store.insert_memory_revision(
            mem(f"mem_{i:04d}", MAIN, 1, text(rnd, 120), seq, f"rec_{i:04d}"), f"fp{i}"
        )
    store.insert_chunks([chunk(MAIN, f"rec_{i:04d}", 0, text(rnd, 150)) for i in range(ROWS)])
    store.insert_object_version(
        ObjectVersion("obj_1", MAIN, "profile", "alice", 1, {"bio": text(rnd)}, "api", T0, 1)
    )

    def padded(place: str) -> str:
        middle = secret if place in places else make_secret(rnd)
        return f"{text(rnd, 80)} {middle} {text(rnd, 80)}"

    # In the main Brain: one record (with an event), one memory (two revisions), the record's chunks.
    store.insert_record(rec("rec_secret", MAIN, padded("erase_record"), seq + 1))
    store.append_record_status(MAIN, "rec_secret", "ready", seq=seq + 1)
    store.insert_memory_revision(
        mem("mem_secret", MAIN, 1, padded("erase_memory"), seq + 2, "rec_0001"), "fps"
    )
    store.insert_memory_revision(
        mem("mem_secret", MAIN, 2, padded("erase_memory"), seq + 3, "rec_0001"), "fps"
    )
    store.insert_chunks(
        [
            chunk(MAIN, "rec_secret", 0, padded("erase_chunks")),
            chunk(MAIN, "rec_secret", 500, padded("erase_chunks")),
        ]
    )
    store.put_idempotent(reply(MAIN, "k-secret", padded("erase_idempotent"), "rec_secret"))
    store.put_idempotent(reply(MAIN, "k-other", text(rnd), "rec_0001"))
    # A whole Brain holding it everywhere.
    store.insert_record(rec("rec_other", OTHER, padded("erase_brain"), 1))
    store.insert_memory_revision(mem("mem_other", OTHER, 1, padded("erase_brain"), 2, "rec_other"), "fpo")
    store.insert_chunks([chunk(OTHER, "rec_other", 0, padded("erase_brain"))])
    bio = {"bio": padded("erase_brain")}
    store.insert_object_version(ObjectVersion("obj_2", OTHER, "profile", "x", 1, bio, "api", T0, 3))
    store.put_idempotent(reply(OTHER, "k-brain", padded("erase_brain"), "rec_other"))
    for _ in range(3):
        store.next_seq(OTHER)


# (erase it, the id whose rows go away, the tables they go from)
ERASES: dict[str, tuple[Callable[[DuckDBStore], Any], str, set[str]]] = {
    "erase_record": (
        lambda s: s.erase_record(MAIN, "rec_secret"),
        "rec_secret",
        {"records", "record_events"},
    ),
    "erase_brain": (lambda s: s.erase_brain(OTHER), OTHER, set()),  # every table
    "erase_memory": (
        lambda s: s.erase_memory(MAIN, "mem_secret", seq=s.next_seq(MAIN), at=T0),
        "mem_secret",
        {"memory_revisions", "memory_links"},
    ),
    "erase_chunks": (lambda s: s.erase_chunks(MAIN, "rec_secret"), "rec_secret", {"chunks"}),
    "erase_idempotent": (lambda s: s.erase_idempotent(MAIN, "rec_secret"), "rec_secret", {"idempotency"}),
}
SKIP = {"memory_tombstones", "changes"}  # erase_memory adds a content-free tombstone and takes a seq


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read straight from the file (no store involved)."""
    with duckdb.connect(str(path), read_only=True) as conn:
        tables = [t for (t,) in conn.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}


def files_holding(directory: Path, needle: str) -> list[str]:
    return [p.name for p in directory.iterdir() if p.is_file() and needle.encode() in p.read_bytes()]


def open_populated(path: Path, secret: str, places: tuple[str, ...] = PLACES, **kw: Any) -> DuckDBStore:
    store = DuckDBStore(path, purge_delay=3600)
    store.migrate()
    with store.atomic():
        populate(store, secret, random.Random(7), places)
    store.close()  # checkpoints: every row, the secret included, is in the main file
    assert files_holding(path.parent, secret) == [path.name]
    return DuckDBStore(path, **kw)


def reads(store: DuckDBStore) -> dict[str, Any]:
    """What the Store protocol reads back for the main Brain."""
    return {
        "records": store.list_records(MAIN),
        "memories": store.all_memories(MAIN),
        "chunks": store.chunks(MAIN),
        "objects": store.list_objects(MAIN),
        "schema": store.schema_version(),
    }


@pytest.mark.parametrize("how", ["compact", "purge_delay=0"])
@pytest.mark.parametrize("method", sorted(ERASES))
def test_erased_content_leaves_every_file(tmp_path: Path, method: str, how: str) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(method))
    open_populated(path, secret, (method,)).close()
    before = dump(path)
    store = DuckDBStore(path, purge_delay=3600 if how == "compact" else 0)
    expected_reads = reads(store)
    erase, ident, tables = ERASES[method]
    erase(store)
    if how == "compact":
        # DELETE alone leaves the bytes in the file: this is what compaction is for.
        assert store.dirty and files_holding(tmp_path, secret)
        store.compact()
    assert not store.dirty
    assert files_holding(tmp_path, secret) == []  # gone already, with the store still open
    store.close()
    assert files_holding(tmp_path, secret) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]

    after = dump(path)
    assert after.keys() == before.keys()
    assert after["schema_migrations"] == before["schema_migrations"] and len(after["schema_migrations"]) == len(migrations())
    for table, rows in before.items():
        if table in SKIP:
            continue
        gone = [r for r in rows if (not tables or table in tables) and ident in r]
        assert after[table] == [r for r in rows if r not in gone], table
        if table in tables:
            assert gone, table
    store = DuckDBStore(path)
    try:
        got = reads(store)
        if method == "erase_record":
            expected_reads["records"] = [r for r in expected_reads["records"] if r.id != "rec_secret"]
        if method == "erase_memory":
            expected_reads["memories"] = [
                m for m in expected_reads["memories"] if m.memory_id != "mem_secret"
            ]
        if method == "erase_chunks":
            expected_reads["chunks"] = [c for c in expected_reads["chunks"] if c.draft.record_id != "rec_secret"]
        assert got == expected_reads
        assert store.brain_by_uid(OTHER) is None if method == "erase_brain" else store.brain_by_uid(OTHER)
        # Constraints survive the copy.
        with pytest.raises(duckdb.ConstraintException):
            store.insert_record(rec("rec_0000", MAIN, "dup", 1))
    finally:
        store.close()


def test_erase_inside_an_outer_transaction_purges_after_its_commit(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(1))
    store = open_populated(path, secret, purge_delay=0)
    try:
        with pytest.raises(RuntimeError), store.atomic():
            store.erase_record(MAIN, "rec_secret")
            raise RuntimeError("rolled back")
        assert not store.dirty and store.get_record(MAIN, "rec_secret") is not None
        with store.atomic():
            store.erase_chunks(MAIN, "rec_secret")
            store.erase_record(MAIN, "rec_secret")
            assert not store.dirty  # nothing is purged before the commit
            assert store.get_record(MAIN, "rec_secret") is None
        assert not store.dirty
        assert store.get_record(MAIN, "rec_secret") is None
        assert store.get_record(MAIN, "rec_0001") is not None
        # The memory and the reply still quoting it are the service's to erase: the only places left.
        store.erase_memory(MAIN, "mem_secret", seq=store.next_seq(MAIN), at=T0)
        store.erase_idempotent(MAIN, "rec_secret")  # the reply of the write that made the Record
        store.erase_brain(OTHER)
        assert files_holding(tmp_path, secret) == []
    finally:
        store.close()


def test_debounced_purge(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(2))
    store = open_populated(path, secret, purge_delay=0.2)
    try:
        started = time.monotonic()
        store.erase_chunks(MAIN, "rec_secret")
        store.erase_record(MAIN, "rec_secret")
        store.erase_memory(MAIN, "mem_secret", seq=store.next_seq(MAIN), at=T0)
        store.erase_idempotent(MAIN, "rec_secret")
        store.erase_brain(OTHER)
        assert store.dirty  # not before purge_delay
        while store.dirty and time.monotonic() - started < 10:
            time.sleep(0.02)
        assert not store.dirty
        assert files_holding(tmp_path, secret) == []
        assert len(store.list_records(MAIN)) == ROWS
    finally:
        store.close()
    assert files_holding(tmp_path, secret) == []


def test_readers_and_a_writer_keep_working_while_compaction_swaps_files(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    store = open_populated(path, make_secret(random.Random(3)), purge_delay=3600)
    expected = reads(store)
    stop = threading.Event()
    errors: list[BaseException] = []
    counts = {"reads": 0, "writes": 0}

    def reader() -> None:
        try:
            while not stop.is_set():
                assert store.list_records(MAIN) == expected["records"]
                assert store.get_record(MAIN, "rec_0042") == expected["records"][42]
                assert store.count_chunks(MAIN) == len(expected["chunks"])
                assert store.all_memories(MAIN) == expected["memories"]
                counts["reads"] += 1
        except BaseException as exc:
            errors.append(exc)

    def writer() -> None:
        try:
            n = 0
            while not stop.is_set():
                with store.atomic():
                    store.insert_record(rec(f"rec_w{n}", OTHER, f"written {n}", store.next_seq(OTHER)))
                n += 1
            counts["writes"] = n
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    try:
        for _ in range(6):
            time.sleep(0.05)
            store.compact()
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert counts["reads"] > 0 and counts["writes"] > 0
    written = {r.id for r in store.list_records(OTHER)}
    assert {f"rec_w{n}" for n in range(counts["writes"])} <= written
    store.close()
    store = DuckDBStore(path)
    try:
        assert reads(store) == expected
        assert len(store.list_records(OTHER)) == counts["writes"] + 1
    finally:
        store.close()


@pytest.mark.parametrize("failing", ["copy", "swap"])
def test_a_failed_compaction_keeps_the_old_file_and_stays_dirty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(4))
    store = open_populated(path, secret, ("erase_brain",), purge_delay=3600)
    expected = reads(store)
    store.erase_brain(OTHER)
    import brainstore.store.duckdb as module

    def boom(*_: object, **__: object) -> None:
        raise OSError("disk full")

    if failing == "copy":
        monkeypatch.setattr(store, "_copy_to_tmp", boom)
    else:
        monkeypatch.setattr(module.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        store.compact()
    monkeypatch.undo()
    assert store.dirty
    assert (tmp_path / "s.duckdb.purge").exists()
    assert reads(store) == expected
    store.insert_record(rec("rec_after", MAIN, "after", 10_000))
    store.compact()
    assert not store.dirty and files_holding(tmp_path, secret) == []
    assert store.get_record(MAIN, "rec_after") is not None
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]


def test_a_process_that_dies_before_compacting_purges_at_next_open(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(5))
    open_populated(path, secret, ("erase_brain",)).close()
    script = (
        "import os, sys\n"
        "from brainstore.store.duckdb import DuckDBStore\n"
        "s = DuckDBStore(sys.argv[1], purge_delay=3600)\n"
        "s.erase_brain('brn_secret')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert (tmp_path / "s.duckdb.purge").exists() and files_holding(tmp_path, secret)
    store = DuckDBStore(path)
    try:
        assert not store.dirty and files_holding(tmp_path, secret) == []
        assert store.brain_by_uid(OTHER) is None and len(store.list_records(MAIN)) == ROWS + 1
    finally:
        store.close()
