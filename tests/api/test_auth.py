"""Authentication and authorization, exactly as the spec's Authentication section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brainstore.api.app import create_app
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import KEY, LIVE_KEY, OTHER_PROJECT_KEY, Api, assert_error


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer sk_test_acme",
        "Bearer sk_prod_acme_secret",
        "Bearer sk_test__secret",
        "Bearer sk_test_acme_",
        "Bearer pk_test_acme_secret",
        "Bearer sk_test_acme_sec_ret",
    ],
)
def test_unparsable_credentials_are_refused_before_routing(api: Api, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    for path in ("/brains/b1", "/no/such/route"):
        r = api.get(path, key=False, headers=headers)
        body = assert_error(r, 401, "invalid_api_key")
        assert body["type"] == "authentication"


@given(st.text(max_size=60))
def test_arbitrary_credentials_never_authenticate_unless_well_formed(credential: str) -> None:
    api = Api(create_app(Service(MemoryStore())))
    r = api.get("/brains/b1", key=False, headers={"Authorization": f"Bearer {credential}"})
    parts = credential.strip().split("_")
    well_formed = len(parts) == 4 and parts[0] == "sk" and parts[1] in ("test", "live") and all(parts)
    if not well_formed:
        assert r.status == 401 and r.body["code"] == "invalid_api_key"
    else:
        assert r.status == 404 and r.body["code"] == "brain_not_found"


def test_environments_and_projects_are_separate_namespaces(api: Api) -> None:
    api.brain("shared")
    assert api.get("/brains/shared").status == 200
    assert_error(api.get("/brains/shared", key=LIVE_KEY), 404, "brain_not_found")
    assert_error(api.get("/brains/shared", key=OTHER_PROJECT_KEY), 404, "brain_not_found")
    # The same id can exist independently in another namespace.
    assert api.post("/brains", {"id": "shared"}, key=LIVE_KEY).status == 201


def _registry_app(tmp_path: Path, **config: object) -> tuple[Api, KeyRegistry, Path]:
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    service = Service(MemoryStore(), config=Config(engine="memory", key_registry=path, **config))  # type: ignore[arg-type]
    return Api(create_app(service), key=None), registry, path


def test_registry_accepts_only_issued_keys_and_revocation_needs_no_restart(tmp_path: Path) -> None:
    api, registry, _ = _registry_app(tmp_path)
    raw, entry = registry.create("test", "acme")
    assert api.post("/brains", {"id": "b1"}, key=raw).status == 201
    assert_error(api.get("/brains/b1", key=KEY), 401, "invalid_api_key")  # well-formed but not issued
    registry.revoke(entry.id)
    body = assert_error(api.get("/brains/b1", key=raw), 401, "key_revoked")
    assert raw not in json.dumps(body)
    stored = (tmp_path / "keys.json").read_text()
    assert raw not in stored and entry.sha256 in stored


def test_unreadable_registry_refuses_every_key(tmp_path: Path) -> None:
    api, registry, path = _registry_app(tmp_path)
    raw, _ = registry.create("test", "acme")
    path.write_text("{not json")
    assert_error(api.get("/brains/b1", key=raw), 500, "key_registry_unreadable")
    path.unlink()
    assert_error(api.get("/brains/b1", key=raw), 500, "key_registry_unreadable")


def test_missing_scope_names_the_scope(tmp_path: Path) -> None:
    api, registry, _ = _registry_app(tmp_path)
    writer, _ = registry.create("test", "acme")
    reader, _ = registry.create("test", "acme", frozenset({"records:read"}))
    assert api.post("/brains", {"id": "b1"}, key=writer).status == 201
    assert api.get("/brains/b1", key=reader).status == 200
    body = assert_error(api.post("/brains/b1/records", {"content": "x"}, key=reader), 403, "missing_scope")
    assert "records:write" in body["message"]
    body = assert_error(api.get("/brains/b1/memories", key=reader), 403, "missing_scope")
    assert "memories:read" in body["message"]


def test_a_key_bound_to_one_brain_reaches_only_that_brain(tmp_path: Path) -> None:
    api, registry, _ = _registry_app(tmp_path)
    admin, _ = registry.create("test", "acme")
    bound, _ = registry.create("test", "acme", brain="mine")
    api.post("/brains", {"id": "mine"}, key=admin)
    api.post("/brains", {"id": "theirs"}, key=admin)
    assert api.get("/brains/mine", key=bound).status == 200
    assert_error(api.get("/brains/theirs", key=bound), 404, "brain_not_found")


def test_a_key_bound_to_one_brain_leaves_no_trace_in_another_nor_pushes_its_traces_out(tmp_path: Path) -> None:
    api, registry, _ = _registry_app(tmp_path, trace_buffer=20)
    admin, _ = registry.create("test", "acme")
    mine, _ = registry.create("test", "acme", brain="mine")
    theirs, _ = registry.create("test", "acme", brain="theirs")
    api.post("/brains", {"id": "mine"}, key=admin)
    api.post("/brains", {"id": "theirs"}, key=admin)
    context = api.post("/brains/theirs/context", {"query": "what does Bob like?"}, key=theirs).body["id"]
    refused = [
        api.get("/brains/theirs/records/rec_planted", key=mine).body["request_id"],
        api.post("/brains", {"id": "theirs"}, key=mine).body["request_id"],
    ]
    # were listed as Brain theirs's own, the second naming Brain 'mine'
    listed = api.get("/brains/theirs/traces", key=theirs).body["data"]
    assert [t["id"] for t in listed] == [context]
    assert all(api.get(f"/brains/mine/traces/{r}", key=mine).status == 200 for r in refused)
    for n in range(40):  # 20 were enough to push Brain theirs's Context trace out of the project's buffer
        api.get(f"/brains/mine/records/rec_{n}", key=mine)
    assert api.get(f"/brains/theirs/traces/{context}", key=theirs).status == 200


def test_rate_limit_is_a_fixed_window_per_key() -> None:
    service = Service(MemoryStore(), config=Config(engine="memory", rate_limit_per_minute=3))
    api = Api(create_app(service))
    statuses = [api.get("/brains/nope").status for _ in range(3)]
    assert statuses == [404, 404, 404]
    r = api.get("/brains/nope")
    body = assert_error(r, 429, "too_many_requests")
    assert body["retry_after_seconds"] > 0
    assert int(r.header("Retry-After")) >= 1
    # Another key has its own counter.
    assert api.get("/brains/nope", key=LIVE_KEY).status == 404
