"""A DuckDB store behind on its schema answers 501 not_implemented until `brainstore migrate` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from brainstore.api.app import create_app
from brainstore.cli import main
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.base import StoreFeature
from brainstore.store.duckdb import DuckDBStore
from brainstore.store.postgres import PostgresStore
from tests.conftest import Api, assert_error


def test_routes_needing_newer_tables_answer_501_until_migrated(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "brainstore.duckdb")
    store.migrate(up_to=1)
    service = Service(store, config=Config(engine="duckdb", data_dir=tmp_path))
    api = Api(create_app(service))
    api.brain()
    rec = api.remember("b1", "kept while the schema is behind").body["id"]
    err = assert_error(api.get("/brains/b1/memories"), 501, "not_implemented")
    assert err["type"] == "internal" and "migrate" in err["message"]
    assert_error(api.get("/brains/b1/memories/mem_x"), 501, "not_implemented")
    store.close()

    assert main(["migrate", "--data-dir", str(tmp_path)]) == 0

    store = DuckDBStore(tmp_path / "brainstore.duckdb")
    service = Service(store, config=Config(engine="duckdb", data_dir=tmp_path))
    service.start()  # resumes the Record left processing
    api = Api(create_app(service))
    assert api.get("/brains/b1/memories").status == 200
    assert service.wait_idle()
    assert api.get(f"/brains/b1/records/{rec}").body["status"] == "ready"
    service.stop()
    store.close()


def test_an_empty_database_serves_nothing_but_501(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "brainstore.duckdb")
    api = Api(create_app(Service(store, config=Config(engine="duckdb", data_dir=tmp_path))))
    assert_error(api.post("/brains", {"id": "b1"}), 501, "not_implemented")
    store.close()


def test_owners_written_before_schema_6_are_filtered_by_their_casefold_after_it(tmp_path: Path) -> None:
    from dataclasses import replace

    from brainstore.store.duckdb import OWNER_KEYS
    from tests.store.erasure import mem

    store = DuckDBStore(tmp_path / "brainstore.duckdb")
    store.migrate(up_to=OWNER_KEYS - 1)
    store.insert_memory_revisions(
        [replace(mem("mem_a", "b1", 1, "a", 1, "rec_1"), owner="Weiß"), replace(mem("mem_b", "b1", 1, "b", 2, "rec_1"), owner="Ann")]
    )
    assert [m.memory_id for m in store.list_memories("b1", after_id=None, limit=5, owner="ann")] == ["mem_b"]
    assert store.migrate(up_to=OWNER_KEYS) == [OWNER_KEYS]
    store.insert_memory_revisions([replace(mem("mem_c", "b1", 1, "c", 3, "rec_1"), owner="WEISS")])
    for asked, found in (("weiss", ["mem_a", "mem_c"]), ("Weiß", ["mem_a", "mem_c"]), ("ANN", ["mem_b"])):
        assert [m.memory_id for m in store.list_memories("b1", after_id=None, limit=5, owner=asked)] == found
    store.close()


def test_objects_written_before_schema_7_are_listed_by_their_size_before_and_after_it(tmp_path: Path) -> None:
    from brainstore.domain import ObjectVersion
    from brainstore.store.duckdb import OBJECT_BYTES
    from tests.store.erasure import T0

    def listed(max_bytes: int) -> list[str]:
        return [o.key for o in store.list_objects("b1", max_bytes=max_bytes)]

    store = DuckDBStore(tmp_path / "brainstore.duckdb")
    store.migrate(up_to=OBJECT_BYTES - 1)
    for seq, (key, value) in enumerate([("a", "é" * 10), ("b", "x" * 100), ("c", "y")], start=1):
        store.insert_object_version(ObjectVersion(f"obj_{key}", "b1", "note", key, 1, value, "k", T0, seq))
    assert listed(30) == ["a", "c"]  # "é" is two bytes: 22 and 3 of them
    assert listed(24) == ["a"]
    assert store.migrate() == [OBJECT_BYTES]
    assert store._rows("SELECT key, value_bytes FROM object_versions ORDER BY key") == [("a", 22), ("b", 102), ("c", 3)]
    store.insert_object_version(ObjectVersion("obj_d", "b1", "note", "d", 1, "ü", "k", T0, 4))
    assert store._rows("SELECT value_bytes FROM object_versions WHERE key = 'd'") == [(4,)]
    assert listed(30) == ["a", "c", "d"] and listed(24) == ["a"]
    store.close()


@pytest.mark.parametrize("kind", ["duckdb", "postgres"])
def test_an_idempotency_key_answers_501_until_its_reply_can_be_erased(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Before ERASURE (schema 4) a stored reply has no Brain or Record to be erased by: forgetRecord and
    forgetBrain would leave it, and a replay serve what they erased."""
    store: Any
    if kind == "duckdb":
        store = DuckDBStore(tmp_path / "brainstore.duckdb")
    else:
        server = request.getfixturevalue("postgres_server")
        name = server.database(migrated=False)
        request.addfinalizer(lambda: server.drop(name))
        store = PostgresStore(server.url(name), pool_size=2)
    store.migrate(up_to=StoreFeature.ERASURE - 1)
    service = Service(store, config=Config(engine=kind, data_dir=tmp_path))
    api = Api(create_app(service))
    try:
        key = {"Idempotency-Key": "k1"}
        assert_error(api.post("/brains", {"id": "b1", "name": "Secret"}, headers=key), 501, "not_implemented")
        assert api.post("/brains", {"id": "b1"}).status == 201
        remember = api.post("/brains/b1/records", {"content": "Alice's PIN is 4321."}, headers=key)
        err = assert_error(remember, 501, "not_implemented")
        assert "migrate" in err["message"]
        assert_error(api.post("/brains/b1/objects", {"type": "note", "key": "n", "value": 1}, headers=key), 501, "not_implemented")
        assert api.remember("b1", "kept without a key").status == 202
        assert store._rows("SELECT count(*) FROM idempotency")[0][0] == 0  # nothing a delete could not erase
    finally:
        service.stop()
        store.close()
