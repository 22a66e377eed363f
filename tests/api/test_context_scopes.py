"""A Context serves only what the key may read by the components' own routes (spec, Authentication 4).

A key with context:read alone read Objects, Memories and the Profile through createContext's include:
getObject, listMemories and getProfile refused it, createContext did not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brainstore.api.app import create_app
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import Api, assert_error

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}

# (request body beyond the query, the scope it needs besides context:read)
COMPONENTS = [
    ({"include": ["objects"]}, "objects:read"),
    ({"include": ["memories"]}, "memories:read"),
    ({"include": ["profile"]}, "memories:read"),
    ({"include": ["evidence"], "schema": SCHEMA}, "memories:read"),
    ({"include": ["evidence", "objects"], "mode": "thorough"}, "objects:read"),
]


class Keys:
    def __init__(self, api: Api, registry: KeyRegistry, service: Service) -> None:
        self.api, self.registry, self.service = api, registry, service
        self.admin, _ = registry.create("test", "acme")

    def key(self, *scopes: str) -> str:
        raw, _ = self.registry.create("test", "acme", frozenset({"context:read", *scopes}))
        return raw


@pytest.fixture
def keys(tmp_path: Path) -> Iterator[Keys]:
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    service = Service(MemoryStore(), config=Config(engine="memory", key_registry=path))
    service.start()
    keys = Keys(Api(create_app(service), key=None), registry, service)
    api, admin = keys.api, keys.admin
    assert api.post("/brains", {"id": "alice", "self": {"type": "person", "name": "Alice"}}, key=admin).status == 201
    text = "I live in Lisbon and my bank PIN is 4711."
    r = api.post("/brains/alice/records", {"content": {"kind": "message", "role": "user", "text": text}}, key=admin)
    assert r.status == 202, r.body
    r = api.post("/brains/alice/objects", {"type": "payroll", "key": "alice", "value": {"salary": 250000}}, key=admin)
    assert r.status == 201, r.body
    assert service.wait_idle()
    yield keys
    service.stop()


def context(keys: Keys, key: str, body: dict[str, Any], **kw: Any) -> Any:
    return keys.api.post("/brains/alice/context", {"query": "Where does Alice live? PIN salary", **body}, key=key, **kw)


def context_traces(keys: Keys) -> list[dict[str, Any]]:
    listed = keys.api.get("/brains/alice/traces", params={"limit": "100"}, key=keys.admin)
    assert listed.status == 200, listed.body
    return [t for t in listed.body["data"] if t["kind"] == "context"]


@pytest.mark.parametrize(("body", "scope"), COMPONENTS)
def test_a_component_the_key_may_not_read_is_refused_naming_its_scope(
    keys: Keys, body: dict[str, Any], scope: str
) -> None:
    narrow = keys.key()
    refused = assert_error(context(keys, narrow, body), 403, "missing_scope")
    assert refused["type"] == "permission"
    assert scope in refused["message"], refused["message"]
    assert "salary" not in str(refused) and "Lisbon" not in str(refused)
    assert context_traces(keys) == []  # no Context was assembled, nor kept for a later getTrace
    # the same call with the scope is served
    served = context(keys, keys.key(scope), body)
    assert served.status == 200, served.body
    assert len(context_traces(keys)) == 1


def test_the_other_component_scope_does_not_stand_in(keys: Keys) -> None:
    refused = assert_error(context(keys, keys.key("memories:read"), {"include": ["objects"]}), 403, "missing_scope")
    assert "objects:read" in refused["message"]
    refused = assert_error(context(keys, keys.key("objects:read"), {"include": ["profile"]}), 403, "missing_scope")
    assert "memories:read" in refused["message"]
    wide = keys.key("memories:read", "objects:read")
    served = context(keys, wide, {"include": ["evidence", "memories", "objects", "profile"], "schema": SCHEMA})
    assert served.status == 200, served.body
    assert [o["key"] for o in served.body["objects"]] == ["alice"]
    assert served.body["profile"] is not None and served.body["structured"] is not None


def test_evidence_needs_context_read_only(keys: Keys) -> None:
    narrow = keys.key()
    for body in ({}, {"include": ["evidence"]}, {"include": ["evidence"], "mode": "thorough"}):
        served = context(keys, narrow, body)
        assert served.status == 200, served.body
        assert served.body["evidence"], served.body
        assert served.body["objects"] == [] and served.body["memories"] == [] and served.body["profile"] is None


def test_the_scope_is_checked_before_the_watermark_the_stream_and_the_brain(keys: Keys) -> None:
    narrow = keys.key()
    body = {"include": ["objects"], "mode": "thorough", "budget": {"ms": 60000}}
    # refused before the Brain-Watermark is read (let alone waited for): not 400 invalid_watermark
    refused = assert_error(
        context(keys, narrow, body, headers={"Brain-Watermark": "wm_not_a_watermark"}), 403, "missing_scope"
    )
    assert "objects:read" in refused["message"]
    stream = context(keys, narrow, body, headers={"Accept": "text/event-stream"})
    assert_error(stream, 403, "missing_scope")
    # nor does the answer tell whether the Brain exists
    missing = keys.api.post("/brains/nobody/context", {"query": "x", "include": ["memories"]}, key=narrow)
    assert_error(missing, 403, "missing_scope")
    assert context_traces(keys) == []


def test_a_trace_shows_a_key_only_the_components_its_scopes_cover(keys: Keys) -> None:
    # another key's Context, read through getTrace and listTraces by a key with context:read alone,
    # served its Objects, Memories, Profile and structured values
    wide = keys.key("memories:read", "objects:read")
    body = {"include": ["evidence", "memories", "objects", "profile"], "schema": SCHEMA}
    served = context(keys, wide, body)
    assert served.status == 200, served.body
    assert "250000" in str(served.body["objects"]) and served.body["memories"]
    narrow = keys.key()
    one = keys.api.get(f"/brains/alice/traces/{served.body['id']}", key=narrow)
    assert one.status == 200, one.body
    listed = keys.api.get("/brains/alice/traces", key=narrow)
    assert listed.status == 200, listed.body
    for trace in (one.body, next(t for t in listed.body["data"] if t["id"] == served.body["id"])):
        shown = trace["context"]
        assert shown["objects"] == [] and shown["memories"] == [] and shown["profile"] is None
        assert shown["structured"] is None and "250000" not in str(trace)
        assert shown["evidence"] == served.body["evidence"]  # what context:read reads stays
    # each scope uncovers its own components
    objects_only = keys.api.get(f"/brains/alice/traces/{served.body['id']}", key=keys.key("objects:read")).body
    assert objects_only["context"]["objects"] == served.body["objects"] and objects_only["context"]["memories"] == []
    assert keys.api.get(f"/brains/alice/traces/{served.body['id']}", key=wide).body["context"] == served.body


def test_a_trace_s_unknowns_tell_a_key_nothing_of_the_components_it_may_not_read(keys: Keys) -> None:
    """The unknowns were judged on everything the Context served: a key with context:read alone found
    "salary" missing from a trace's unknowns although no evidence it may read says it, so the hidden
    Object did; and the schema's properties missing from them were those Memories gave a value."""
    wide = keys.key("memories:read", "objects:read")
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "pet": {"type": "string"}}}
    body = {"include": ["evidence", "objects"], "schema": schema}
    served = keys.api.post("/brains/alice/context", {"query": "Lisbon salary pension", **body}, key=wide)
    assert served.status == 200, served.body
    terms = {u["term"] for u in served.body["unknowns"] if "reason" in u and "evidence" in u["reason"]}
    assert "pension" in terms and "salary" not in terms  # the Object says it, and the wide key reads it
    narrow = keys.key()
    one = keys.api.get(f"/brains/alice/traces/{served.body['id']}", key=narrow).body
    listed = next(t for t in keys.api.get("/brains/alice/traces", key=narrow).body["data"] if t["id"] == served.body["id"])
    for trace in (one, listed):
        shown = trace["context"]["unknowns"]
        assert {"salary", "pension"} <= {u.get("term") for u in shown}  # judged on what this key reads
        assert not any("schema" in u["reason"] for u in shown)  # which properties were filled: hidden too
    objects_only = keys.api.get(f"/brains/alice/traces/{served.body['id']}", key=keys.key("objects:read")).body
    assert "salary" not in {u.get("term") for u in objects_only["context"]["unknowns"]}
    assert keys.api.get(f"/brains/alice/traces/{served.body['id']}", key=wide).body["context"] == served.body
