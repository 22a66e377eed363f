"""Fair scheduling across namespaces: a backlog in one never queues in front of another's work."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime

import pytest

from brainstore.derive import source_text
from brainstore.domain import Record
from brainstore.service.derivation import EXPRESS_CHARS, EXPRESS_JOBS, FairQueue, Job, text_length
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


@pytest.mark.parametrize(
    "content",
    [
        {"kind": "message", "text": "I had tea with Sam.", "speaker": "Ana"},
        {"kind": "document", "text": "Minutes of the meeting."},
        {"kind": "event", "name": "x" * 5_000},
        {"kind": "event", "name": "deploy", "text": "y" * 5_000},
        {"kind": "fact", "subject": "Ana", "predicate": "lives in", "value": "z" * 1_000},
        {"kind": "fact", "text": "Ana lives in Porto."},
    ],
)
def test_a_record_is_queued_with_the_length_of_the_text_it_is_read_as(content: dict[str, str]) -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    record = Record("rec_1", "brn_1", content, None, "shareable", when, when, "api", 1)
    assert text_length(record) == len(source_text(content, self_name=None, occurred_at=when).text) > 10


class Jobs:
    """A FairQueue and the count of each namespace's jobs not done yet, as Derivation keeps it."""

    def __init__(self) -> None:
        self.outstanding: Counter[str] = Counter()
        self.queue = FairQueue(lambda namespace: self.outstanding[namespace])

    def put(self, namespace: str, item: str, chars: int | None = 30) -> Job:
        job = Job("record", namespace, f"brn_{namespace}", item, chars=chars)
        self.outstanding[namespace] += 1
        self.queue.put(job)
        return job

    def done(self, job: Job) -> None:
        self.outstanding[job.namespace] -= 1
        self.queue.wake()

    def take_light(self) -> list[Job]:
        """take_light(), failing instead of blocking when no namespace is light."""
        taken: list[list[Job] | None] = []
        waiter = threading.Thread(target=lambda: taken.append(self.queue.take_light(EXPRESS_CHARS)), daemon=True)
        waiter.start()
        waiter.join(5)
        if waiter.is_alive():
            self.queue.close()  # it returns None
            waiter.join(5)
        assert taken and taken[0] is not None, "no namespace was light"
        return taken[0]


def test_a_namespace_whose_whole_backlog_is_light_is_left_to_the_express_lane() -> None:
    jobs = Jobs()
    for i in range(10):
        jobs.put("bulk", f"rec_b{i}")
    first = jobs.put("quiet", "rec_q1")
    assert {j.namespace for j in jobs.queue.take(64, 100_000) or []} == {"bulk"}
    assert jobs.take_light() == [first]
    # held by the express lane: its next job waits for it, on both paths
    second = jobs.put("quiet", "rec_q2")
    assert jobs.queue.take(64, 100_000, wait=False) == []
    taken: list[Job] = []
    waiter = threading.Thread(target=lambda: taken.extend(jobs.take_light()), daemon=True)
    waiter.start()
    jobs.queue.release({"quiet"})
    waiter.join(0.2)
    assert waiter.is_alive()  # released, but its first job is not done: not light yet
    jobs.done(first)
    waiter.join(10)
    assert taken == [second]


def test_a_namespace_with_work_elsewhere_or_too_much_of_it_is_batched() -> None:
    jobs = Jobs()
    jobs.outstanding["retried"] += 1  # one job waits for a retry
    jobs.put("retried", "rec_r1")
    for i in range(EXPRESS_JOBS + 1):
        jobs.put("many", f"rec_m{i}")
    jobs.put("long", "rec_l1", chars=EXPRESS_CHARS + 1)
    light = jobs.put("light", "rec_x1", chars=EXPRESS_CHARS)
    batch = jobs.queue.take(64, 100_000) or []
    assert {j.namespace for j in batch} == {"retried", "many", "long"} and len(batch) == EXPRESS_JOBS + 3
    assert jobs.take_light() == [light]


def test_a_namespace_holding_a_record_of_unknown_length_is_batched() -> None:
    jobs = Jobs()
    guessed = jobs.put("restarted", "rec_u1", chars=None)  # read back at a start: guessed at a turn's length
    light = jobs.put("light", "rec_x1")
    assert jobs.queue.take(64, 100_000, wait=False) == [guessed]
    assert jobs.take_light() == [light]


def test_the_express_lane_takes_several_light_namespaces_up_to_its_text_bound() -> None:
    jobs = Jobs()
    for i in range(5):
        jobs.put(f"tenant{i}", f"rec_{i}", chars=EXPRESS_CHARS // 2)
    assert [j.item_id for j in jobs.take_light()] == ["rec_0", "rec_1"]
    assert [j.item_id for j in jobs.take_light()] == ["rec_2", "rec_3"]


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
