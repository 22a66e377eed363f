"""Ctrl-C inside a DuckDB statement is an interrupt, not a failed statement.

DuckDB (2.0) consumes the KeyboardInterrupt a signal handler raises while a statement runs and raises
RuntimeError('Query interrupted') instead: an Exception, which the group commit took for a failed commit
(each write tried again alone, the command ran on) and the API for an internal_error (retried by the
embedded bench). The store raises KeyboardInterrupt again. No signal is sent here: the thread's cursor
is replaced by one whose chosen statement raises what DuckDB raises then.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from brainstore.api.app import create_app
from brainstore.client import Client, in_process
from brainstore.domain import Brain
from brainstore.service.group import GroupCommit
from brainstore.store.duckdb import DuckDBStore
from tests.conftest import KEY, open_engine
from tests.store.erasure import T0


class _Interrupting:
    """This thread's cursor, with the first statement ``when`` picks raising ``failure`` instead."""

    def __init__(self, cursor: Any, when: Callable[[str], bool], failure: BaseException) -> None:
        self._cursor = cursor
        self._when = when
        self._failure: BaseException | None = failure
        self.statements: list[str] = []

    def execute(self, query: str, parameters: Any = None) -> Any:
        self.statements.append(query)
        if self._failure is not None and self._when(query):
            failure, self._failure = self._failure, None
            raise failure
        return self._cursor.execute(query, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def _interrupt(store: DuckDBStore, when: Callable[[str], bool], failure: BaseException | None = None) -> _Interrupting:
    store.current_seq("warm")  # this thread's cursor exists
    cursor = _Interrupting(store._local.cursor, when, failure or RuntimeError("Query interrupted"))
    store._local.cursor = cursor
    return cursor


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = DuckDBStore(tmp_path / "brainstore.duckdb", purge_delay=3600)
    opened.migrate()
    opened.insert_brain(Brain("brn_1", "ns", "b1", None, None, None, T0))
    yield opened
    opened.close()


def test_an_interrupted_commit_of_a_group_is_raised_and_not_retried(store: DuckDBStore) -> None:
    """The group's INSERT of its change sequence interrupted: the group commit tried the write again
    alone, it committed (sequence 1) and the interrupt was gone."""
    cursor = _interrupt(store, lambda query: query.startswith("INSERT INTO changes"))
    writes: list[int] = []

    def write() -> int:
        writes.append(1)
        return store.next_seq("brn_1")

    with pytest.raises(KeyboardInterrupt):
        GroupCommit(store).run(write, "brn_1")
    assert writes == [1]
    assert store.current_seq("brn_1") == 0  # rolled back
    assert cursor.statements[-1] == "ROLLBACK"


def test_an_interrupt_inside_a_transaction_passes_the_callers_that_take_failures(store: DuckDBStore) -> None:
    _interrupt(store, lambda query: query.lstrip().upper().startswith("SELECT"))
    caught: list[Exception] = []
    with pytest.raises(KeyboardInterrupt), store.atomic():
        try:
            store.count_records("brn_1")
        except Exception as exc:  # what derivation, the API and the group commit do with a failure
            caught.append(exc)
    assert caught == []


def test_an_interrupted_write_inside_a_transaction_passes_the_callers_that_take_failures(store: DuckDBStore) -> None:
    """A store call inside a transaction enters it again (no gate of its own): the interrupt is raised
    there too, before the code between it and the transaction's end sees a RuntimeError."""
    _interrupt(store, lambda query: query.startswith("INSERT INTO record_events"))
    caught: list[Exception] = []
    with pytest.raises(KeyboardInterrupt), store.atomic():
        try:
            store.append_record_status("brn_1", "rec_1", "ready", seq=1)
        except Exception as exc:
            caught.append(exc)
    assert caught == []


def test_a_read_interrupted_outside_a_transaction_raises_keyboard_interrupt(store: DuckDBStore) -> None:
    _interrupt(store, lambda query: query.lstrip().upper().startswith("SELECT"))
    with pytest.raises(KeyboardInterrupt) as info:
        store.count_records("brn_1")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert store.count_records("brn_1") == 0  # the store goes on


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("the disk is full"), duckdb.InterruptException("INTERRUPT Error: Interrupted!"), ValueError("Query interrupted")],
)
def test_other_failures_stay_what_they_are(store: DuckDBStore, failure: Exception) -> None:
    """Only DuckDB's plain RuntimeError('Query interrupted') is a signal's: Connection.interrupt()
    (InterruptException) and every other failure go on as they are."""
    _interrupt(store, lambda query: query.lstrip().upper().startswith("SELECT"), failure)
    with pytest.raises(type(failure)) as info:
        store.count_records("brn_1")
    assert info.value is failure


def test_the_embedded_client_raises_the_interrupt_instead_of_retrying_an_internal_error(tmp_path: Path) -> None:
    """The embedded bench's path (Client -> in-process API -> DuckDB): the interrupted write was tried
    again alone by the group commit and answered 202, the bench going on past Ctrl-C."""
    service = open_engine("duckdb", tmp_path)
    try:
        with Client("http://embedded/v1", KEY, transport=in_process(create_app(service))) as client:
            client.create_brain("alice")
            assert isinstance(service.store, DuckDBStore)
            _interrupt(service.store, lambda query: query.startswith("INSERT INTO records"))
            with pytest.raises(KeyboardInterrupt):
                client.remember_record("alice", "I moved to Lisbon in 2021.")
            assert client.get_census("alice")["counts"]["records"] == 0
    finally:
        service.stop()
        service.store.close()
