"""PostgreSQL's memory_heads (schema 6): each Memory's current revision, by the keys and the order of the
lookups of a key's newest Memories. The heads must always be the newest revision of every Memory, across
writes, rolled-back writes and every kind of erase, and the lookups down them must choose what the
ranking statement over every revision chooses, as must the scans for Memories pending re-derivation; the
migration that makes them must miss no revision a server writes while it runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore.domain import Brain
from brainstore.store.postgres import _HEAD_COLUMNS, HEADS, SHARED, PostgresStore
from tests.postgres_server import PostgresServer
from tests.store.cache_ops import BRAINS, Versions, apply, erases
from tests.store.erasure import T0
from tests.store.test_duckdb_memory_keys import ATTRIBUTES, FINGERPRINTS, SUBJECTS, WRITE, write


def heads(store: PostgresStore) -> list[tuple[Any, ...]]:
    return store._rows(f"SELECT {_HEAD_COLUMNS} FROM memory_heads ORDER BY memory_id")


def newest_revisions(store: PostgresStore) -> list[tuple[Any, ...]]:
    return store._rows(
        f"SELECT DISTINCT ON (memory_id) {_HEAD_COLUMNS} FROM memory_revisions ORDER BY memory_id, version DESC"
    )


def by_statements(store: PostgresStore, call: Any, *args: Any) -> Any:
    """The same lookup as a store that reads the schema as 5 answers it: by the ranking statement."""
    saved = store._schema, store._schema_read
    store._schema, store._schema_read = SHARED, time.monotonic()
    try:
        return call(*args)
    finally:
        store._schema, store._schema_read = saved


def agree(store: PostgresStore, uids: tuple[str, ...] = BRAINS) -> None:
    assert heads(store) == newest_revisions(store)
    for status in ("pending", "active"):
        assert store.memories_in_status(status) == by_statements(store, store.memories_in_status, status)
    assert store.stale_pending_memories(0.0, 100) == by_statements(store, store.stale_pending_memories, 0.0, 100)
    fingerprints = [f for f in FINGERPRINTS if f]
    keys = [(s, a) for s in SUBJECTS for a in ATTRIBUTES if a]
    for uid in uids:
        for n in (1, 2, 3):
            newest = partial(store.memories_by_fingerprints, newest=n)
            assert newest(uid, fingerprints) == by_statements(store, newest, uid, fingerprints)
            newest = partial(store.memories_by_attributes, newest=n)
            assert newest(uid, keys) == by_statements(store, newest, uid, keys)


@pytest.fixture
def store(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    name = postgres_server.database()
    opened = PostgresStore(postgres_server.url(name), pool_size=2)
    try:
        yield opened
    finally:
        opened.close()
        postgres_server.drop(name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(WRITE, *erases(BRAINS, ["rec_1", "rec_2"], WRITE)), min_size=1, max_size=16))
def test_the_heads_are_the_newest_revisions_and_rank_as_the_statement(
    postgres_server: PostgresServer, ops: list[tuple[Any, ...]]
) -> None:
    name = postgres_server.database()
    store = PostgresStore(postgres_server.url(name), pool_size=2)
    try:
        assert store.schema_version() >= HEADS
        for uid in BRAINS:
            store.insert_brain(Brain(uid, "ns", uid, None, None, None, T0))
        versions: Versions = {}
        for op in ops:
            versions = apply(
                store, versions, op, write, lambda uid: store.memories_by_fingerprints(uid, ["fp_a"], newest=1)
            )
            agree(store)
    finally:
        store.close()
        postgres_server.drop(name)


def test_a_database_migrated_to_the_heads_holds_every_memory_written_before(postgres_server: PostgresServer) -> None:
    name = postgres_server.database(migrated=False)
    store = PostgresStore(postgres_server.url(name), pool_size=2)
    try:
        store.migrate(up_to=SHARED)
        store.insert_brain(Brain("b1", "ns", "b1", None, None, None, T0))
        versions: Versions = {}
        for n, (fingerprint, status, end) in enumerate(
            [("fp_a", "active", None), ("fp_a", "active", 2), ("fp_a", "superseded", None), ("fp_b", "pending", 5)]
        ):
            for version in (1, 2):
                op = ("write", "b1", n, fingerprint, "Alice", "likes", status if version == 2 else "active", "rec_1", version, end)
                write(store, versions, op)
        assert store._rows("SELECT to_regclass('memory_heads')") == [(None,)]
        assert store.migrate(up_to=HEADS) == [HEADS]
        assert len(heads(store)) == 4
        agree(store, ("b1",))
    finally:
        store.close()
        postgres_server.drop(name)


def test_a_writer_that_read_the_schema_before_the_migration_still_keeps_the_heads(store: PostgresStore) -> None:
    """A process trusts a schema version behind for a few seconds; the write reads it again."""
    store.insert_brain(Brain("b1", "ns", "b1", None, None, None, T0))
    store._schema, store._schema_read = SHARED, time.monotonic()
    write(store, {}, ("write", "b1", 0, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
    assert [h[0] for h in heads(store)] == ["mem_b1_0"]


def test_the_migration_waits_for_the_revisions_written_before_it_commits(postgres_server: PostgresServer) -> None:
    """A server writing revisions while the schema is 5 commits them before the backfill reads them."""
    name = postgres_server.database(migrated=False)
    url = postgres_server.url(name)
    writer, migrator = PostgresStore(url, pool_size=2), PostgresStore(url, pool_size=2)
    written, release = threading.Event(), threading.Event()
    try:
        writer.migrate(up_to=SHARED)
        writer.insert_brain(Brain("b1", "ns", "b1", None, None, None, T0))

        def write_and_hold() -> None:
            with writer.atomic():
                write(writer, {}, ("write", "b1", 0, "fp_a", "Alice", "likes", "active", "rec_1", 0, None))
                written.set()
                release.wait(30)

        thread = threading.Thread(target=write_and_hold)
        thread.start()
        assert written.wait(30)
        migrating = threading.Thread(target=migrator.migrate, kwargs={"up_to": HEADS})
        migrating.start()
        migrating.join(timeout=1.0)
        assert migrating.is_alive()  # waiting for the writer's transaction
        release.set()
        thread.join(timeout=30)
        migrating.join(timeout=30)
        assert migrator.schema_version() == HEADS
        assert [h[0] for h in heads(migrator)] == ["mem_b1_0"]
        agree(migrator, ("b1",))
    finally:
        release.set()
        writer.close()
        migrator.close()
        postgres_server.drop(name)
