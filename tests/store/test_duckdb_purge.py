"""Deletes that really delete: DuckDBStore compacts erased rows' bytes out of the file (see store/duckdb.py)."""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from brainstore.domain import Citation, ObjectVersion
from brainstore.store import duckdb as duckdb_store
from brainstore.store.duckdb import DuckDBStore, migrations
from tests.store.erasure import (
    ERASES,
    MAIN,
    OTHER,
    PLACES,
    ROWS,
    SKIP,
    T0,
    chunk,
    make_secret,
    mem,
    populate,
    rec,
    reply,
    text,
)


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
        store.erase_memories(MAIN, [("mem_secret", store.next_seq(MAIN))], at=T0)
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
        store.erase_memories(MAIN, [("mem_secret", store.next_seq(MAIN))], at=T0)
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
        monkeypatch.setattr(store, "_copy", boom)
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
    erase_brain_in_a_process_that_dies(path, secret)
    store = DuckDBStore(path)
    try:
        assert not store.dirty and files_holding(tmp_path, secret) == []
        assert store.brain_by_uid(OTHER) is None and len(store.list_records(MAIN)) == ROWS + 1
    finally:
        store.close()


def erase_brain_in_a_process_that_dies(path: Path, secret: str, before: str = "") -> None:
    """erase_brain(OTHER) in another process, which dies without closing the store; ``before``: lines
    run first on its store ``s`` (they may make it die sooner)."""
    script = (
        "import itertools, os, sys\n"
        "from brainstore.store import duckdb as duckdb_store\n"
        "s = duckdb_store.DuckDBStore(sys.argv[1], purge_delay=3600)\n"
        f"{before}"
        f"s.erase_brain({OTHER!r})\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert path.with_name(path.name + ".purge").exists() and files_holding(path.parent, secret)


def write_everywhere(store: DuckDBStore, n: int) -> None:
    """One transaction that writes to every content table, as derivation and the API do."""
    rnd = random.Random(n)
    with store.atomic():
        seq = store.next_seq(MAIN)
        rid = f"rec_late{n:03d}"
        store.insert_record(rec(rid, MAIN, text(rnd), seq))
        store.append_record_status(MAIN, rid, "ready", seq=seq, memory_ids=[f"mem_late{n:03d}"])
        revision = mem(f"mem_late{n:03d}", MAIN, 1, text(rnd, 120), seq, rid)
        also = Citation("rec_0001", 0, 4, revision.statement[:4])  # so erasing rid's citations updates it
        store.insert_memory_revision(replace(revision, citations=(*revision.citations, also)), f"fpl{n}")
        store.insert_chunks([chunk(MAIN, rid, 0, text(rnd, 150)), chunk(MAIN, rid, 150, text(rnd, 150))])
        store.insert_object_version(
            ObjectVersion(f"obj_l{n}", MAIN, "note", f"k{n}", 1, {"n": n, "t": text(rnd, 30)}, "api", T0, seq)
        )
        store.put_idempotent(reply(MAIN, f"k-late{n}", text(rnd, 40), rid))


def in_another_thread(action: Any, timeout: float = 20.0) -> None:
    """Run ``action`` on another thread and wait for it: a write that waits on the compaction fails here."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "a write waited for the compaction"
    assert errors == []


def populated_twins(tmp_path: Path, seed: int, places: tuple[str, ...] = PLACES) -> tuple[Path, Path, str]:
    """A populated store's file, an identical one beside it (to make the same writes on without
    compacting), and the secret in them."""
    path, twin = tmp_path / "s.duckdb", tmp_path / "twin" / "s.duckdb"
    secret = make_secret(random.Random(seed))
    open_populated(path, secret, places).close()
    twin.parent.mkdir()
    shutil.copyfile(path, twin)
    return path, twin, secret


def before_each_copy(store: DuckDBStore, monkeypatch: pytest.MonkeyPatch, action: Callable[[], Any]) -> None:
    """Run ``action`` whenever a compaction of ``store`` has pinned its snapshot and is about to copy it:
    what ``action`` commits goes to the journal."""
    copy = store._copy

    def copying(copier: Any, name: str) -> None:
        action()
        copy(copier, name)

    monkeypatch.setattr(store, "_copy", copying)


def test_writes_go_on_while_compaction_copies_and_every_one_reaches_the_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, twin, secret = populated_twins(tmp_path, 6, ("erase_record",))
    store = DuckDBStore(path, purge_delay=3600)
    store.erase_record(MAIN, "rec_secret")
    replay = store._replay
    rounds: list[int] = []
    # Committed after the snapshot: more than the last round takes, so one round runs before it.
    before_each_copy(store, monkeypatch, lambda: in_another_thread(lambda: [write_everywhere(store, n) for n in range(40)]))

    def replaying(replayer: Any, journal: Any, start: int) -> int:
        rounds.append(start)
        end = replay(replayer, journal, start)
        if len(rounds) == 1:  # the first round runs with writers going on: these are the last one's
            in_another_thread(lambda: [write_everywhere(store, n) for n in range(40, 43)])
        return end

    monkeypatch.setattr(store, "_replay", replaying)
    store.compact()
    assert rounds == [0, 40]
    assert not store.dirty and files_holding(tmp_path, secret) == []
    monkeypatch.undo()
    write_everywhere(store, 43)  # the new file takes writes
    store.close()

    reference = DuckDBStore(twin, purge_delay=3600)  # the same writes, no compaction
    reference.erase_record(MAIN, "rec_secret")
    for n in range(44):
        write_everywhere(reference, n)
    reference.close()
    assert dump(path) == dump(twin)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb", "twin"]


def test_an_erase_committed_while_compaction_copies_is_purged_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(8))
    store = open_populated(path, secret, ("erase_brain",), purge_delay=3600)
    write_everywhere(store, 0)
    store.erase_record(MAIN, "rec_late000")  # makes the store dirty; the secret is not erased yet
    before_each_copy(store, monkeypatch, lambda: in_another_thread(lambda: store.erase_brain(OTHER)))
    try:
        store.compact()
        monkeypatch.undo()
        # The copy was made before the erase: its bytes may be there still, so the store stays dirty.
        assert store.dirty and (tmp_path / "s.duckdb.purge").exists()
        assert store.brain_by_uid(OTHER) is None and store.get_record(MAIN, "rec_late000") is None
        store.compact()
        assert not store.dirty and files_holding(tmp_path, secret) == []
        assert not (tmp_path / "s.duckdb.purge").exists()
    finally:
        store.close()
    assert files_holding(tmp_path, secret) == []


def test_a_background_compaction_whose_journal_fails_to_replay_is_retried_holding_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(9))
    store = open_populated(path, secret, ("erase_record",), purge_delay=0.05)
    replay = store._replay
    held: list[bool] = []

    def note_the_lock_and_write_once() -> None:
        held.append(store._write_lock._is_owned())  # type: ignore[attr-defined]
        if len(held) == 1:
            in_another_thread(lambda: write_everywhere(store, 0))

    def replaying(replayer: Any, journal: Any, start: int) -> int:
        if journal[start:]:
            raise RuntimeError("a statement that does not replay")
        return replay(replayer, journal, start)

    before_each_copy(store, monkeypatch, note_the_lock_and_write_once)
    monkeypatch.setattr(store, "_replay", replaying)
    try:
        store.erase_record(MAIN, "rec_secret")
        started = time.monotonic()
        while store.dirty and time.monotonic() - started < 20:
            time.sleep(0.05)
        assert held == [False, True]  # the retry copied with writers held off: nothing to replay
        assert not store.dirty and files_holding(tmp_path, secret) == []
        assert store.get_record(MAIN, "rec_late000") is not None
    finally:
        store.close()


def _apply(store: DuckDBStore, kind: str, n: int) -> None:
    if kind == "write":
        write_everywhere(store, n)
    elif kind == "erase_record":
        store.erase_record(MAIN, f"rec_late{n:03d}")
    elif kind == "erase_memory":
        store.erase_memories(MAIN, [(f"mem_late{n:03d}", store.next_seq(MAIN))], at=T0)
    elif kind == "erase_chunks":
        store.erase_chunks(MAIN, f"rec_late{n:03d}")
    elif kind == "erase_citations":
        store.erase_record_citations(MAIN, f"rec_late{n:03d}")
    else:
        store.append_record_status(MAIN, f"rec_late{n:03d}", "failed", seq=store.next_seq(MAIN))


def test_writes_and_erases_racing_repeated_compactions_leave_the_file_a_store_without_them_would_have(
    tmp_path: Path,
) -> None:
    path, twin, _ = populated_twins(tmp_path, 10)
    store = DuckDBStore(path, purge_delay=0.02)
    rnd = random.Random(11)
    stop = threading.Event()
    compactions: list[BaseException | None] = []

    def compacting() -> None:
        while not stop.is_set():
            try:
                store.compact()
                compactions.append(None)
            except BaseException as exc:
                compactions.append(exc)
            time.sleep(rnd.random() * 0.1)

    compactor = threading.Thread(target=compacting)
    compactor.start()
    done: list[tuple[str, int]] = []
    live: list[int] = []
    try:
        for n in range(200):
            kind = rnd.choice(["write"] * 4 + ["erase_record", "erase_memory", "erase_chunks", "erase_citations", "status"])
            if kind == "write":
                live.append(n)
            elif not live:
                continue
            else:
                n = rnd.choice(live)
                if kind == "erase_record":
                    live.remove(n)
            _apply(store, kind, n)
            done.append((kind, n))
    finally:
        stop.set()
        compactor.join()
        store.close()
    assert len(compactions) > 3 and not any(compactions)
    reference = DuckDBStore(twin, purge_delay=3600)
    for kind, n in done:
        _apply(reference, kind, n)
    reference.close()
    assert dump(path) == dump(twin)


def test_compactions_rest_four_times_as_long_as_the_last_one_took(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tenant forgetting something every moment must not keep a core copying the file."""
    path = tmp_path / "s.duckdb"
    store = open_populated(path, make_secret(random.Random(12)), purge_delay=0.02)
    copy = store._copy
    spans: list[tuple[float, float]] = []

    def slow_copy(copier: Any, name: str) -> None:
        started = time.monotonic()
        time.sleep(0.3)  # a large file
        copy(copier, name)
        spans.append((started, time.monotonic()))

    monkeypatch.setattr(store, "_copy", slow_copy)
    try:
        for n in range(3):
            write_everywhere(store, n)
        for n in range(3):
            store.erase_record(MAIN, f"rec_late{n:03d}")
            while store.dirty:  # the next erase comes right after this one is purged
                time.sleep(0.01)
        assert len(spans) == 3
        for (first, end), (second, _) in itertools.pairwise(spans):
            assert second - end >= 4 * (end - first)
    finally:
        store.close()


def test_writers_wait_while_the_journal_holds_more_than_its_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes at full speed during a long copy must not grow the process without bound."""
    import brainstore.store.duckdb as module

    path, twin, _ = populated_twins(tmp_path, 13)
    store = DuckDBStore(path, purge_delay=3600)
    monkeypatch.setattr(module, "_JOURNAL_LIMIT", 1)  # one transaction fills it
    committed: list[int] = []
    writer = threading.Thread(target=lambda: [(write_everywhere(store, n), committed.append(n)) for n in range(5)])

    def start_writing() -> None:
        writer.start()
        deadline = time.monotonic() + 20
        while not committed and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert committed == [0]  # the second transaction waits for room

    before_each_copy(store, monkeypatch, start_writing)
    try:
        store.compact()
        writer.join(20)
        assert committed == [0, 1, 2, 3, 4]
    finally:
        store.close()
    reference = DuckDBStore(twin, purge_delay=3600)
    for n in range(5):
        write_everywhere(reference, n)
    reference.close()
    assert dump(path) == dump(twin)


def test_a_compactions_copy_is_readable_by_its_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy holds every tenant's text while it is made; the store is also used outside the CLI,
    whose umask makes it private anyway."""
    import os
    import stat

    path = tmp_path / "s.duckdb"
    store = open_populated(path, make_secret(random.Random(14)), purge_delay=3600)
    copy, replay = store._copy, store._replay
    modes: dict[str, int] = {}

    def note_modes() -> None:
        for p in tmp_path.iterdir():
            if ".compact" in p.name:
                modes[p.name] = modes.get(p.name, 0) | stat.S_IMODE(p.stat().st_mode)

    def copying(copier: Any, name: str) -> None:
        note_modes()
        in_another_thread(lambda: write_everywhere(store, 0))
        copy(copier, name)
        note_modes()

    def replaying(replayer: Any, journal: Any, start: int) -> int:
        end = replay(replayer, journal, start)
        note_modes()
        return end

    monkeypatch.setattr(store, "_copy", copying)
    monkeypatch.setattr(store, "_replay", replaying)
    previous = os.umask(0o022)
    try:
        store.compact()
    finally:
        os.umask(previous)
        store.close()
    assert "s.duckdb.compact" in modes
    assert {name: oct(mode) for name, mode in modes.items() if mode & 0o077} == {}


def test_the_swap_which_holds_off_reads_finds_the_wal_already_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes during the copy fill the WAL (nothing is checkpointed while the snapshot is pinned); it is
    written into the old file under the write lock, with reads going on, not during the swap."""
    path = tmp_path / "s.duckdb"
    store = open_populated(path, make_secret(random.Random(15)), purge_delay=3600)
    swap = store._swap
    wal_at_swap: list[int] = []
    before_each_copy(store, monkeypatch, lambda: in_another_thread(lambda: [write_everywhere(store, n) for n in range(20)]))

    def swapping() -> None:
        wal = Path(f"{path}.wal")
        wal_at_swap.append(wal.stat().st_size if wal.exists() else 0)
        swap()

    monkeypatch.setattr(store, "_swap", swapping)
    try:
        store.compact()
        assert store.get_record(MAIN, "rec_late019") is not None
    finally:
        store.close()
    assert wal_at_swap == [0]


def with_more_of_the_brain(store: DuckDBStore, secret: str, n: int = 7) -> None:
    """``n`` more Records (and a chunk each) of the Brain erase_brain forgets, each quoting the secret."""
    with store.atomic():
        for i in range(n):
            rid = f"rec_more{i}"
            store.insert_record(rec(rid, OTHER, f"{secret} {i}", store.next_seq(OTHER)))
            store.append_record_status(OTHER, rid, "ready", seq=store.next_seq(OTHER))
            store.insert_chunks([chunk(OTHER, rid, 0, f"{secret} chunk {i}")])


def rows_of(store: DuckDBStore, brain_uid: str) -> dict[str, int]:
    with store._shared():
        cursor = store._cursor()
        found = {t: cursor.execute(f"SELECT count(*) FROM {t} WHERE brain_uid = ?", [brain_uid]).fetchone()[0] for t in store._brain_tables()}
    return {t: n for t, n in found.items() if n}


def test_a_brains_rows_go_a_slice_a_transaction_other_writes_going_on_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting a large Brain's rows in one transaction held the write lock, every tenant's writes
    waiting, for 0.4 s at 100,000 chunks: the Brain goes at once, its rows a slice at a time."""
    monkeypatch.setattr(duckdb_store, "ERASE_SLICE_ROWS", 2)
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(21))
    store = open_populated(path, secret, ("erase_brain",), purge_delay=0)
    with_more_of_the_brain(store, secret)
    sliced, compactions = [], []
    erase_slice, compact = store._erase_slice, store._compact

    def slicing(table: str, brain_uid: str, indexed: bool) -> int:
        assert store.brain_by_uid(OTHER) is None  # the Brain went first, and its replies with it
        assert store.get_idempotent("test:acme", f"rememberRecord:{OTHER}", "k-brain") is None
        n = len(sliced)
        in_another_thread(lambda: write_everywhere(store, n))  # the write lock is free between slices
        sliced.append(table)
        return erase_slice(table, brain_uid, indexed)

    monkeypatch.setattr(store, "_erase_slice", slicing)
    monkeypatch.setattr(store, "_compact", lambda: compactions.append(1) or compact())
    try:
        assert store.erase_brain(OTHER) == {"records": 8, "memories": 1, "objects": 1}
        assert sliced.count("records") == 5 and "idempotency" not in sliced  # 8 rows: 2, 2, 2, 2, 0
        assert sliced.count("chunks") == 1  # no index to keep: at once
        assert rows_of(store, OTHER) == {} and compactions == [1] and not store.dirty
        assert files_holding(tmp_path, secret) == []
        assert len(store.list_records(MAIN)) == ROWS + 1 + len(sliced)  # the writes made between slices
    finally:
        store.close()
    assert files_holding(tmp_path, secret) == []


def test_a_brain_whose_slices_failed_is_finished_by_the_next_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb_store, "ERASE_SLICE_ROWS", 2)
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(22))
    store = open_populated(path, secret, ("erase_brain",), purge_delay=3600)
    with_more_of_the_brain(store, secret)
    erase_slice = store._erase_slice
    calls = itertools.count()

    def failing(table: str, brain_uid: str, indexed: bool) -> int:
        if next(calls) == 1:
            raise duckdb.IOException("disk gone for a moment")
        return erase_slice(table, brain_uid, indexed)

    monkeypatch.setattr(store, "_erase_slice", failing)
    try:
        with pytest.raises(duckdb.IOException):
            store.erase_brain(OTHER)
        assert store.brain_by_uid(OTHER) is None and rows_of(store, OTHER) and store.dirty
        store.compact()
        assert rows_of(store, OTHER) == {} and not store.dirty
        assert files_holding(tmp_path, secret) == []
        assert len(store.list_records(MAIN)) == ROWS + 1
    finally:
        store.close()


def test_a_process_that_dies_between_a_brains_slices_finishes_them_at_next_open(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(23))
    store = open_populated(path, secret, ("erase_brain",), purge_delay=3600)
    with_more_of_the_brain(store, secret)
    store.close()
    dies_at_the_third_slice = (
        "duckdb_store.ERASE_SLICE_ROWS = 2\n"
        "erase_slice, calls = s._erase_slice, itertools.count()\n"
        "def dying(table, uid, indexed):\n"
        "    if next(calls) == 2:\n"
        "        os._exit(0)\n"
        "    return erase_slice(table, uid, indexed)\n"
        "s._erase_slice = dying\n"
    )
    erase_brain_in_a_process_that_dies(path, secret, dies_at_the_third_slice)
    store = DuckDBStore(path)
    try:
        assert rows_of(store, OTHER) == {} and not store.dirty
        assert files_holding(tmp_path, secret) == []
        assert store.brain_by_uid(OTHER) is None and len(store.list_records(MAIN)) == ROWS + 1
    finally:
        store.close()


def test_the_memory_limit_holds_on_the_file_a_compaction_swaps_in(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    secret = make_secret(random.Random(5))
    store = open_populated(path, secret, purge_delay=3600, memory_limit_mib=96)
    try:
        limit = "SELECT current_setting('memory_limit')"
        assert store._rows(limit) == [("96.0 MiB",)]
        kept = store.list_records(MAIN)
        store.erase_brain(OTHER)
        store.compact()
        assert files_holding(tmp_path, secret) == [path.name]  # MAIN's copy of it stays
        assert store._rows(limit) == [("96.0 MiB",)]
        assert store.list_records(MAIN) == kept
    finally:
        store.close()
    with pytest.raises(ValueError, match="memory_limit_mib"):
        DuckDBStore(path, memory_limit_mib=-1)
