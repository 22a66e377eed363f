"""The evidence index's readers-writer lock: many readers at once, one writer alone, and nobody left
waiting when the holder it waits for leaves."""

from __future__ import annotations

import threading
import time

from brainstore.retrieval.index import _RWLock

WAIT = 5.0  # generous: a thread that is not woken fails the test by timing out, not by hanging it


def _in_thread(target) -> threading.Thread:  # type: ignore[no-untyped-def]
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_readers_hold_it_together() -> None:
    lock = _RWLock()
    inside = threading.Barrier(3, timeout=WAIT)

    def read() -> None:
        with lock.read():
            inside.wait()  # breaks (raises) unless all three are inside at once

    threads = [_in_thread(read) for _ in range(2)]
    read()
    for thread in threads:
        thread.join(WAIT)
    assert not inside.broken


def test_a_writer_waits_for_the_last_reader_and_is_woken_by_it() -> None:
    lock = _RWLock()
    wrote = threading.Event()

    def write() -> None:
        with lock.write():
            wrote.set()

    with lock.read():
        with lock.read():  # a second reader on the same thread: the writer waits for both
            writer = _in_thread(write)
            time.sleep(0.05)
            assert not wrote.is_set()
        time.sleep(0.05)
        assert not wrote.is_set()
    assert wrote.wait(WAIT)
    writer.join(WAIT)
    assert lock._readers == 0 and lock._writer is None and lock._waiting == 0


def test_readers_wait_for_the_writer_and_are_woken_by_it() -> None:
    lock = _RWLock()
    read = threading.Semaphore(0)

    def reader() -> None:
        with lock.read():
            read.release()

    with lock.write():
        readers = [_in_thread(reader) for _ in range(3)]
        time.sleep(0.05)
        assert not read.acquire(blocking=False)
    for _ in readers:
        assert read.acquire(timeout=WAIT)
    for thread in readers:
        thread.join(WAIT)
    assert lock._readers == 0 and lock._waiting == 0


def test_the_writer_reenters_and_reads_its_own_index() -> None:
    lock = _RWLock()
    other_read = threading.Event()

    def reader() -> None:
        with lock.read():
            other_read.set()

    with lock.write():
        with lock.write(), lock.read():
            assert lock._writer == threading.get_ident() and lock._readers == 0
        thread = _in_thread(reader)
        time.sleep(0.05)
        assert not other_read.is_set()  # still held: the inner write and read released nothing
    assert other_read.wait(WAIT)
    thread.join(WAIT)


def test_many_readers_and_writers_exclude_each_other() -> None:
    lock = _RWLock()
    state = {"readers": 0, "writers": 0}
    count = threading.Lock()
    violations: list[str] = []

    def reader() -> None:
        for _ in range(300):
            with lock.read():
                with count:
                    state["readers"] += 1
                    if state["writers"]:
                        violations.append("read during a write")
                with count:
                    state["readers"] -= 1

    def writer() -> None:
        for _ in range(100):
            with lock.write():
                with count:
                    state["writers"] += 1
                    if state["readers"] or state["writers"] > 1:
                        violations.append("write not alone")
                time.sleep(0)
                with count:
                    state["writers"] -= 1

    threads = [_in_thread(reader) for _ in range(4)] + [_in_thread(writer) for _ in range(2)]
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert violations == []
    assert lock._readers == 0 and lock._writer is None and lock._waiting == 0
