"""When a Brain's index files are written again in the background (EvidenceIndexes._save_soon): once
the changes asking for it pause, and at the latest a bounded time after the first of them. A save of
a large index holds the GIL for most of a second, so a steady stream of forgets must not bring one
each."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from brainstore.service import evidence
from brainstore.service.evidence import EvidenceIndexes
from brainstore.store.memory import MemoryStore


@pytest.fixture
def saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[EvidenceIndexes, list[float]]:
    """Indexes whose saves are timed (seconds after the fixture was made) instead of written."""
    monkeypatch.setattr(evidence, "SAVE_DELAY", 0.3)
    monkeypatch.setattr(evidence, "SAVE_AT_MOST", 1.0)
    indexes = EvidenceIndexes(MemoryStore(), index_root=tmp_path / "index")
    started, saved = time.monotonic(), []

    def save_one(brain_uid: str) -> None:
        saved.append(time.monotonic() - started)

    monkeypatch.setattr(indexes, "_save_one", save_one)
    return indexes, saved


def test_a_burst_of_changes_is_saved_once_after_it_pauses(saves: tuple[EvidenceIndexes, list[float]]) -> None:
    indexes, saved = saves
    for _ in range(5):
        indexes._save_soon("brn_a")
        time.sleep(0.1)
    assert saved == []  # each change put the save off again
    time.sleep(0.8)
    assert len(saved) == 1 and saved[0] >= 0.4 + 0.3 - 0.05


def test_changes_that_never_pause_are_saved_at_the_latest_a_while_after_the_first(
    saves: tuple[EvidenceIndexes, list[float]],
) -> None:
    indexes, saved = saves
    began = time.monotonic()
    while time.monotonic() - began < 2.2:
        indexes._save_soon("brn_a")
        time.sleep(0.1)
    # A save 1 s after each first change left unsaved, not one for every change, nor none at all.
    assert 1 <= len(saved) <= 3 and saved[0] >= 1.0 - 0.05
    time.sleep(0.6)
    assert len(saved) <= 3 + 1


def test_a_dropped_brain_is_not_saved(saves: tuple[EvidenceIndexes, list[float]]) -> None:
    indexes, saved = saves
    indexes._save_soon("brn_a")
    indexes.drop("brn_a")
    time.sleep(0.6)
    assert saved == []


def test_a_held_index_left_without_its_graph_gets_one_when_next_searched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index whose graph is due but whose graph thread is gone (a fork copies no thread) has it built
    once a Context asks for the index again."""
    from brainstore.retrieval import index as index_module
    from brainstore.retrieval.index import BrainIndex
    from tests.unit.test_retrieval import DIM, MODEL, drafts_for, unit

    monkeypatch.setattr(index_module, "FLAT_MAX", 2)
    indexes = EvidenceIndexes(MemoryStore(), index_root=None)
    index = BrainIndex(DIM, MODEL)
    for n in range(5):
        index.add(drafts_for(f"r{n}", f"Note number {n} about the garden."), unit(n)[None, :])
    indexes._indexes["brn_a"] = index  # as a fork leaves it: held, its graph asked for by no thread
    assert index.needs_graph and indexes._grapher is None
    assert indexes.index("brn_a") is index
    deadline = time.monotonic() + 10
    while index.needs_graph:
        assert time.monotonic() < deadline, "no graph was built"
        time.sleep(0.01)
    assert [c.record_id for c in index.chunks() if c.id == index.vector(unit(3), 1)[0][0]] == ["r3"]


def test_graphs_are_built_smallest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Of the Brains whose graphs are due, the one of fewest chunks goes first: a huge one asked first
    does not keep the others exact (and slower) for its whole build."""
    from brainstore.retrieval import index as index_module
    from brainstore.retrieval.index import BrainIndex
    from tests.unit.test_retrieval import DIM, MODEL, drafts_for, unit

    monkeypatch.setattr(index_module, "FLAT_MAX", 2)
    indexes = EvidenceIndexes(MemoryStore(), index_root=None)
    for uid, size in (("brn_big", 9), ("brn_small", 3), ("brn_mid", 5)):
        index = indexes._indexes[uid] = BrainIndex(DIM, MODEL)
        for n in range(size):
            index.add(drafts_for(f"r{n}", f"Note number {n}."), unit(n)[None, :])
        indexes._graphs_due[uid] = None
    built: list[str] = []
    build_graph = BrainIndex.build_graph
    sizes = {len(index): uid for uid, index in indexes._indexes.items()}

    def recorded(self: BrainIndex, stop: object) -> bool:
        built.append(sizes[len(self)])
        return build_graph(self, stop)  # type: ignore[arg-type]

    monkeypatch.setattr(BrainIndex, "build_graph", recorded)
    # its own thread (which it gives a background priority), started with every graph due already
    loop = threading.Thread(target=indexes._graph_loop)
    loop.start()
    loop.join(30)
    assert built == ["brn_small", "brn_mid", "brn_big"]
    assert not any(index.needs_graph for index in indexes._indexes.values())


def test_after_stop_no_graph_is_built_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build under way when the service stops gives up at its next slice, and no save falls due after
    the stop: whoever embeds the service may remove its data directory then."""
    from brainstore.retrieval import index as index_module
    from brainstore.retrieval.index import BrainIndex
    from tests.unit.test_retrieval import DIM, MODEL, drafts_for, unit

    monkeypatch.setattr(index_module, "FLAT_MAX", 2)
    monkeypatch.setattr(index_module, "_GRAPH_SLICE", 2)
    monkeypatch.setattr(evidence, "SAVE_DELAY", 0.05)
    indexes = EvidenceIndexes(MemoryStore(), index_root=tmp_path / "index")
    index = indexes._indexes["brn_a"] = BrainIndex(DIM, MODEL)
    for n in range(9):
        index.add(drafts_for(f"r{n}", f"Note number {n}."), unit(n)[None, :])
    small = indexes._indexes["brn_b"] = BrainIndex(DIM, MODEL)  # a matrix: saved as it is when due
    small.add(drafts_for("r0", "A short note."), unit(0)[None, :])
    slices, go_on = threading.Semaphore(0), threading.Event()
    build_graph = BrainIndex.build_graph

    def paused(self: BrainIndex, stop: Any) -> bool:
        def between_slices() -> bool:
            slices.release()
            go_on.wait(10)
            return stop()

        return build_graph(self, between_slices)

    monkeypatch.setattr(BrainIndex, "build_graph", paused)
    indexes._graph_soon("brn_a", index)
    assert slices.acquire(timeout=10)
    indexes.stop()
    for brain_uid in ("brn_a", "brn_b"):  # as changes just before the stop would have asked
        indexes._save_soon(brain_uid)
    go_on.set()
    time.sleep(0.5)
    assert index.needs_graph and not (tmp_path / "index").exists()
    indexes._graph_soon("brn_a", index)  # asked again after the stop: nothing
    time.sleep(0.2)
    assert index.needs_graph and indexes._grapher is None
