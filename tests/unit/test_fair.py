"""Fair scheduling across namespaces: a backlog in one never queues in front of another's work."""

from __future__ import annotations

import threading

import pytest

from brainstore.service.derivation import FairQueue, Job
from brainstore.service.fair import FairExecutor, NamespaceBusy


def test_the_queue_takes_namespaces_round_robin() -> None:
    queue = FairQueue()
    for i in range(100):
        queue.put(Job("memory", "test:bulk", "brn_bulk", f"mem_{i}"))
    queue.put(Job("memory", "test:quiet", "brn_quiet", "mem_quiet"))
    first = queue.take(2, 1_000)
    assert first is not None and {j.namespace for j in first} == {"test:bulk", "test:quiet"}


def test_the_queue_bounds_a_batch_by_the_text_it_will_embed() -> None:
    queue = FairQueue()
    for i in range(10):
        job = Job("record", f"test:{i}", f"brn_{i}", f"rec_{i}")
        job.record = object()  # type: ignore[assignment]  # loaded: its cost is its chunks' text
        job.drafts = [type("D", (), {"text": "x" * 400})()]  # type: ignore[list-item]
        queue.put(job)
    batch = queue.take(64, 1_000)
    assert batch is not None and len(batch) == 2  # 400 + 400 fit, a third would not
    assert len(queue.take(64, 100) or []) == 1  # the first job always goes, whatever its size


def test_the_queue_counts_a_record_not_read_yet_by_the_length_it_was_queued_with() -> None:
    queue = FairQueue()
    for i in range(40):
        queue.put(Job("record", "test:bulk", "brn_bulk", f"rec_{i}", chars=100))
    assert len(queue.take(64, 4_000) or []) == 40  # 100 each, not a turn's worth of 200
    for i in range(40):
        queue.put(Job("record", "test:bulk", "brn_bulk", f"rec_{i}"))
    assert len(queue.take(64, 4_000) or []) == 20  # length unknown: UNKNOWN_RECORD_CHARS each
    assert len(queue.take(64, 4_000) or []) == 20
    for i in range(2):
        queue.put(Job("record", "test:bulk", "brn_bulk", f"rec_doc{i}", chars=150_000))
    assert len(queue.take(64, 4_000) or []) == 1  # a document counts one slice (SLICE_CHARS), not 150,000

def test_the_executor_serves_a_quiet_namespace_before_a_backlog() -> None:
    executor = FairExecutor(1, per_namespace=1000)
    gate, running = threading.Event(), threading.Event()
    order: list[str] = []
    executor.submit("test:bulk", lambda: running.set() or gate.wait())
    assert running.wait(5)  # the one worker is busy
    for i in range(20):
        executor.submit("test:bulk", lambda i=i: order.append(f"bulk{i}"))
    quiet = executor.submit("test:quiet", lambda: order.append("quiet"))
    gate.set()
    quiet.result(timeout=5)
    assert order.index("quiet") <= 1
    executor.shutdown()


def test_the_executor_caps_what_one_namespace_may_have_waiting() -> None:
    executor = FairExecutor(1, per_namespace=2)
    gate, running = threading.Event(), threading.Event()
    executor.submit("test:a", lambda: running.set() or gate.wait())
    assert running.wait(5)  # the one worker holds it: what follows waits
    executor.submit("test:a", lambda: None)
    executor.submit("test:a", lambda: None)
    with pytest.raises(NamespaceBusy):
        executor.submit("test:a", lambda: None)
    executor.submit("test:b", lambda: None).cancel()  # another namespace is not refused
    gate.set()
    executor.shutdown()
