"""What the DuckDB store's in-memory caches (memory keys, current Memories held) are checked against
the statements under: writes, writes rolled back, erases rolled back, and every kind of erase, as
hypothesis draws them (test_duckdb_memory_keys, test_duckdb_current_memories)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from brainstore.domain import Brain
from brainstore.store.duckdb import DuckDBStore
from tests.store.erasure import T0

Versions = dict[tuple[str, str], int]
BRAINS = ("b1", "b2")


def open_store(path: Path) -> DuckDBStore:
    """A migrated store holding the Brains in BRAINS (namespace "ns")."""
    store = DuckDBStore(path, purge_delay=3600)
    store.migrate()
    for uid in BRAINS:
        store.insert_brain(Brain(uid, "ns", uid, None, None, None, T0))
    return store


class Boom(Exception):
    pass


def erases(brains: Sequence[str], records: Sequence[str], write: st.SearchStrategy[Any]) -> list[st.SearchStrategy[Any]]:
    """The ops besides writes: a write rolled back, an erase rolled back (after a read inside it), and
    the erase of a Memory, of a Record's citations and of a Brain (made again at once)."""
    return [
        st.tuples(st.just("rolled_back"), write),
        st.tuples(st.just("rolled_back_erase"), st.sampled_from(brains), st.integers(0, 4)),
        st.tuples(st.just("erase_memory"), st.sampled_from(brains), st.integers(0, 4)),
        st.tuples(st.just("erase_citations"), st.sampled_from(brains), st.sampled_from(records)),
        st.tuples(st.just("erase_brain"), st.sampled_from(brains)),
    ]


def apply(
    store: DuckDBStore,
    versions: Versions,
    op: tuple[Any, ...],
    write: Callable[[DuckDBStore, Versions, tuple[Any, ...]], None],
    read_inside: Callable[[str], object],
) -> Versions:
    """Run ``op`` (a "write" by ``write``); ``read_inside(brain_uid)`` reads inside a rolled-back
    erase. The versions the Brains' Memories are at after it."""
    kind = op[0]
    if kind == "write":
        write(store, versions, op)
    elif kind == "rolled_back":
        with pytest.raises(Boom), store.atomic():
            write(store, dict(versions), op[1])
            raise Boom
    elif kind == "rolled_back_erase":
        with pytest.raises(Boom), store.atomic():
            store.erase_memories(op[1], [(f"mem_{op[1]}_{op[2]}", store.next_seq(op[1]))], at=T0)
            read_inside(op[1])
            raise Boom
    elif kind == "erase_memory":
        store.erase_memories(op[1], [(f"mem_{op[1]}_{op[2]}", store.next_seq(op[1]))], at=T0)
    elif kind == "erase_citations":
        store.erase_record_citations(op[1], op[2])
    elif kind == "erase_brain":
        store.erase_brain(op[1])
        store.insert_brain(Brain(op[1], "ns", op[1], None, None, None, T0))
        return {k: v for k, v in versions.items() if k[0] != op[1]}
    return versions


def check_every_step(
    open_store: Callable[[Path], DuckDBStore],
    ops: Sequence[tuple[Any, ...]],
    step: Callable[[DuckDBStore, Versions, tuple[Any, ...]], Versions],
    check: Callable[[DuckDBStore], None],
) -> None:
    """On a new store, run each op by ``step`` and then ``check`` what the store answers."""
    with tempfile.TemporaryDirectory() as directory:
        store = open_store(Path(directory) / "b.duckdb")
        versions: Versions = {}
        try:
            for op in ops:
                versions = step(store, versions, op)
                check(store)
        finally:
            store.close()
