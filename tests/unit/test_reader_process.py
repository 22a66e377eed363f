"""The process that reads long texts: a call that kills it or outlasts its time ends it, only that call
learns of it, and the next call gets a new process."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from brainstore.derive import ExtractorUnavailable, ReaderEnded, ReaderProcess
from brainstore.derive.apart import ReaderUnavailable


def double(value: int) -> int:
    return value * 2


def pid() -> int:
    return os.getpid()


def refuse(message: str) -> None:
    raise ValueError(message)


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def exit_at_once() -> None:
    os._exit(3)


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes << 20))


def unpicklable() -> object:
    return threading.Lock()


@pytest.fixture
def reader() -> Iterator[ReaderProcess]:
    process = ReaderProcess(seconds=20)
    try:
        yield process
    finally:
        process.close()


def test_a_call_answers_from_another_process_and_raises_what_the_function_raised(reader: ReaderProcess) -> None:
    assert reader.call(double, 21) == 42
    child = reader.call(pid)
    assert child != os.getpid()
    with pytest.raises(ValueError, match="no thanks"):
        reader.call(refuse, "no thanks")
    with pytest.raises(RuntimeError, match="pickle"):
        reader.call(unpicklable)
    assert reader.call(pid) == child  # neither a raise nor an unpicklable answer ends the process


@pytest.mark.parametrize("ending", [kill_self, exit_at_once], ids=["killed", "exited"])
def test_a_call_that_ends_the_process_raises_reader_ended_and_the_next_call_gets_a_new_one(
    reader: ReaderProcess, ending: object
) -> None:
    first = reader.call(pid)
    with pytest.raises(ReaderEnded, match="ended"):
        reader.call(ending)  # type: ignore[arg-type]
    second = reader.call(pid)
    assert second not in (first, os.getpid())
    assert reader.call(double, 2) == 4


def test_a_call_past_its_time_ends_the_process() -> None:
    reader = ReaderProcess(seconds=1)
    try:
        first = reader.call(pid)
        started = time.monotonic()
        with pytest.raises(ReaderEnded, match="more than 1 s"):
            reader.call(sleep, 60)
        assert time.monotonic() - started < 20
        assert reader.call(pid) != first
        assert reader.call(sleep, 0) == "slept"
    finally:
        reader.close()


def test_a_process_that_died_between_calls_is_replaced_without_failing_the_next_call(reader: ReaderProcess) -> None:
    first = reader.call(pid)
    os.kill(first, signal.SIGKILL)
    time.sleep(0.2)
    assert reader.call(double, 5) == 10
    assert reader.call(pid) != first


def test_close_ends_a_call_in_progress_at_once_and_refuses_later_calls() -> None:
    reader = ReaderProcess(seconds=300)
    reader.call(pid)  # started
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            reader.call(sleep, 300)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    reader.close()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - started < 15
    assert len(outcome) == 1 and isinstance(outcome[0], ReaderEnded)
    with pytest.raises(RuntimeError, match="closed"):
        reader.call(pid)


def test_the_process_runs_at_the_priority_asked_for() -> None:
    reader = ReaderProcess(seconds=20, nice=7)
    try:
        assert reader.call(os.getpriority, os.PRIO_PROCESS, 0) == os.getpriority(os.PRIO_PROCESS, 0) + 7
    finally:
        reader.close()


def test_a_call_that_needs_more_memory_than_the_bound_raises_memory_error_and_the_process_goes_on() -> None:
    reader = ReaderProcess(seconds=20, memory_bytes=1 << 30)
    try:
        first = reader.call(pid)
        assert reader.call(allocate, 64) == 64 << 20
        with pytest.raises(MemoryError):
            reader.call(allocate, 2048)
        assert reader.call(pid) == first
    finally:
        reader.close()


def test_a_process_that_cannot_start_is_unavailable_not_ended_so_no_text_is_charged_with_it() -> None:
    reader = ReaderProcess(seconds=20, nice=object())  # type: ignore[arg-type]  # its first step raises
    try:
        with pytest.raises(ReaderUnavailable, match="did not start") as raised:
            reader.call(double, 1)
        assert isinstance(raised.value, ExtractorUnavailable)  # derivation tries it again later
        assert not isinstance(raised.value, ReaderEnded)
    finally:
        reader.close()
