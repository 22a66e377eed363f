"""Brains, Records and Objects through the HTTP contract, on both engines."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from brainstore.api.app import create_app
from brainstore.auth.keys import parse_key
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import KEY, Api, assert_error

# --- brains -----------------------------------------------------------------------------------------


def test_create_get_and_forget_a_brain(api: Api) -> None:
    r = api.post("/brains", {"id": "alice", "name": "Alice's memory", "self": {"type": "person", "name": "Alice"}})
    assert r.status == 201
    assert r.body["self"] == {"type": "person", "name": "Alice"}
    assert r.header("Brain-Watermark").startswith("wm_")
    assert api.get("/brains/alice").body == r.body
    assert_error(api.post("/brains", {"id": "alice"}), 409, "brain_exists")
    receipt = api.delete("/brains/alice")
    assert receipt.status == 200 and receipt.body["object"] == "deletion_receipt"
    assert_error(api.get("/brains/alice"), 404, "brain_not_found")
    assert_error(api.delete("/brains/alice"), 404, "brain_not_found")


def test_create_brain_idempotency(api: Api) -> None:
    first = api.post("/brains", {"id": "b1"}, headers={"Idempotency-Key": "k1"})
    replay = api.post("/brains", {"id": "b1"}, headers={"Idempotency-Key": "k1"})
    assert (replay.status, replay.body) == (201, first.body)
    assert_error(api.post("/brains", {"id": "b2"}, headers={"Idempotency-Key": "k1"}), 409, "idempotency_conflict")
    assert_error(api.post("/brains", {"id": "b1"}), 409, "brain_exists")


def test_forget_brain_removes_everything_under_it(api: Api) -> None:
    api.brain()
    rec = api.remember("b1", "I live in Lisbon.").body["id"]
    api.post("/brains/b1/objects", {"type": "pref", "key": "theme", "value": "dark"})
    receipt = api.delete("/brains/b1").body
    assert receipt["deleted"]["records"] == 1 and receipt["deleted"]["objects"] == 1
    api.brain()  # the same id again is a new, empty Brain
    assert_error(api.get(f"/brains/b1/records/{rec}"), 404, "record_not_found")
    assert_error(api.get("/brains/b1/objects/pref/theme"), 404, "object_not_found")


def test_a_forgotten_brains_self_name_leaves_the_derivation_it_was_read_for(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brainstore.service import derivation

    monkeypatch.setattr(derivation, "SELF_NAMES_HELD", 2)
    for n, name in enumerate(["Zelda Quist", "Ann", "Bo"]):
        api.brain(f"b{n}", self_name=name)
        api.remember(f"b{n}", "I moved to Lisbon.")
        assert service.wait_idle()
    held = repr(service.derivation._self_names)
    assert "Zelda Quist" not in held and "Ann" in held and "Bo" in held  # the least recently used goes
    assert api.delete("/brains/b1").status == 200
    assert "Ann" not in repr(service.derivation._self_names)


def test_a_self_name_read_while_its_brain_is_forgotten_is_not_held(api: Api, service: Service) -> None:
    api.brain("b1", self_name="Zelda Quist")
    brain = service.store.get_brain("test:acme", "b1")
    read = service.store.brain_by_uid

    def read_then_forgotten(uid: str) -> Any:
        found = read(uid)
        service.derivation.forgotten(uid)  # the Brain's forget commits while the read is on its way
        return found

    service.store.brain_by_uid = read_then_forgotten  # type: ignore[method-assign]
    assert service.derivation._self_name(brain.uid) == "Zelda Quist"
    assert "Zelda Quist" not in repr(service.derivation._self_names)


# --- records ----------------------------------------------------------------------------------------

CONTENTS: list[Any] = [
    "A plain string is a document.",
    {"kind": "message", "text": "I moved to Lisbon.", "role": "user"},
    {"kind": "message", "text": "Nice!", "role": "assistant", "speaker": "Bot"},
    {"kind": "document", "text": "Quarterly notes.", "title": "Q3"},
    {"kind": "event", "name": "login", "text": "Signed in from Porto", "data": {"ip": "127.0.0.1"}},
    {"kind": "fact", "text": "Alice is vegetarian."},
    {"kind": "fact", "subject": "Alice", "predicate": "works at", "value": "Acme"},
]


@pytest.mark.parametrize("content", CONTENTS)
def test_every_content_kind_is_accepted_and_read_back(api: Api, content: Any) -> None:
    api.brain("b1", self_name="Alice")
    r = api.remember("b1", content, occurred_at="2023-05-08T13:56:00Z", source={"name": "chat"})
    assert r.body["status"] == "processing" and r.body["id"].startswith("rec_")
    assert r.header("Brain-Watermark").startswith("wm_")
    expected = {"kind": "document", "text": content} if isinstance(content, str) else content
    got = api.get(f"/brains/b1/records/{r.body['id']}").body
    assert got["content"] == expected
    assert got["occurred_at"] == "2023-05-08T13:56:00Z"
    assert got["source"] == {"name": "chat", "trust": "normal"}


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"content": {"kind": "poem", "text": "x"}}, 400, "unknown_kind", "content.kind"),
        ({"content": {"text": "x"}}, 400, "invalid_request_body", "content.kind"),
        ({"content": {"kind": "message"}}, 400, "invalid_request_body", "content.text"),
        ({"content": {"kind": "message", "text": "x", "role": "robot"}}, 400, "invalid_request_body", "content.role"),
        ({"content": {"kind": "correction", "text": "x"}}, 400, "invalid_request_body", "content.corrects"),
        ({"content": {"kind": "correction", "corrects": "rec_1", "text": "x"}}, 400, "invalid_request_body", "content.corrects"),
        ({"content": {"kind": "fact", "subject": "A", "predicate": "is"}}, 400, "invalid_request_body", "content.value"),
        ({"content": 42}, 400, "invalid_request_body", "content"),
        ({}, 400, "invalid_request_body", "content"),
        ({"content": "x", "occurred_at": "yesterday"}, 400, "invalid_request_body", "occurred_at"),
        ({"content": "x", "occurred_at": "2023-05-08"}, 400, "invalid_request_body", "occurred_at"),
        ({"content": "x", "occurred_at": "2023-05-08T10:00:00"}, 400, "invalid_request_body", "occurred_at"),
        ({"content": "x", "visibility": "secret"}, 400, "invalid_request_body", "visibility"),
        ({"content": "x", "source": {"trust": "total"}}, 400, "invalid_request_body", "source.trust"),
        ({"content": "x", "tenant": "t1"}, 400, "invalid_request_body", "tenant"),
    ],
)
def test_invalid_records_are_refused_and_nothing_is_stored(
    api: Api, body: dict[str, Any], status: int, code: str, field: str
) -> None:
    api.brain()
    before = api.get("/brains/b1/census").body["counts"]["records"]
    err = assert_error(api.post("/brains/b1/records", body), status, code)
    assert err["message"].startswith(f"{field}: ")
    assert api.get("/brains/b1/census").body["counts"]["records"] == before


def test_records_become_ready(api: Api, service: Service) -> None:
    api.brain("b1", self_name="Alice")
    rec = api.remember("b1", {"kind": "message", "text": "I live in Lisbon.", "role": "user"}).body["id"]
    assert service.wait_idle()
    got = api.get(f"/brains/b1/records/{rec}").body
    assert got["status"] == "ready"
    assert got["memory_ids"] and all(m.startswith("mem_") for m in got["memory_ids"])


def test_remember_record_idempotency(api: Api) -> None:
    api.brain()
    headers = {"Idempotency-Key": "once"}
    first = api.post("/brains/b1/records", {"content": "hello there"}, headers=headers)
    replay = api.post("/brains/b1/records", {"content": "hello there"}, headers=headers)
    assert replay.status == 202 and replay.body["id"] == first.body["id"]
    assert_error(api.post("/brains/b1/records", {"content": "other"}, headers=headers), 409, "idempotency_conflict")
    assert api.get("/brains/b1/census").body["counts"]["records"] == 1


def test_a_write_that_ends_as_a_replay_queues_no_rolled_back_record(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shared commit failed as a whole after this write ran in it; run again alone, it found the key's
    # reply stored meanwhile (another process on one database): only the Record replied may be queued.
    api.brain()
    other = api.post("/brains/b1/records", {"content": "hello there"}, headers={"Idempotency-Key": "first"}).body
    store = service.store
    held = store.get_idempotent(api_principal().namespace, "rememberRecord:b1", "first")
    assert held is not None
    failures = iter([RuntimeError("the shared commit failed")])
    put_idempotent, get_idempotent = store.put_idempotent, store.get_idempotent
    meanwhile: list[Any] = []

    def failing_once(reply: Any) -> None:
        if (failure := next(failures, None)) is not None:
            meanwhile.append(replace(held, key=reply.key, fingerprint=reply.fingerprint))
            raise failure
        put_idempotent(reply)

    monkeypatch.setattr(store, "put_idempotent", failing_once)
    monkeypatch.setattr(store, "get_idempotent", lambda *key: meanwhile[0] if meanwhile else get_idempotent(*key))
    queued: list[str] = []
    put_record = service.derivation.put_record
    monkeypatch.setattr(service.derivation, "put_record", lambda b, r, *a: (queued.append(r), put_record(b, r, *a)))
    replayed = api.post("/brains/b1/records", {"content": "hello there"}, headers={"Idempotency-Key": "second"})
    assert (replayed.status, replayed.body["id"]) == (202, other["id"])
    assert queued == []
    assert api.get("/brains/b1/census").body["counts"]["records"] == 1


def test_forget_record_is_permanent(api: Api) -> None:
    api.brain()
    rec = api.remember("b1", "forget me").body["id"]
    receipt = api.delete(f"/brains/b1/records/{rec}")
    assert receipt.status == 200 and receipt.body["id"] == rec
    assert receipt.header("Brain-Watermark").startswith("wm_")
    assert_error(api.get(f"/brains/b1/records/{rec}"), 404, "record_not_found")
    assert_error(api.delete(f"/brains/b1/records/{rec}"), 404, "record_not_found")


def test_imported_records_are_not_erasable(api: Api, service: Service) -> None:
    api.brain()
    principal = api_principal()
    reply = service.remember_record(
        principal,
        "b1",
        content={"kind": "document", "text": "from the CRM"},
        source={"name": "crm", "external_id": "42", "trust": "normal"},
        visibility="shareable",
        occurred_at=None,
        origin="import",
    )
    rec = reply.body["id"]
    assert_error(api.delete(f"/brains/b1/records/{rec}"), 403, "record_not_erasable")
    assert api.get(f"/brains/b1/records/{rec}").status == 200


def api_principal() -> Any:
    from brainstore.auth.keys import ALL_SCOPES
    from brainstore.domain import Principal

    key = parse_key(KEY)
    return Principal(key.env, key.project, ALL_SCOPES, key.id, key.sha256)


def test_local_only_on_a_hosted_deployment(tmp_path: Any) -> None:
    registry = tmp_path / "keys.json"
    from brainstore.auth.registry import KeyRegistry

    raw, _ = KeyRegistry(registry).create("test", "acme")
    local = Service(MemoryStore(), config=Config(engine="memory"))
    hosted = Service(local.store, config=Config(engine="memory", deployment="hosted", key_registry=registry))
    local_api, hosted_api = Api(create_app(local)), Api(create_app(hosted), key=raw)
    local_api.brain()
    rec = local_api.remember("b1", "a private note", visibility="local_only").body["id"]
    assert_error(hosted_api.get(f"/brains/b1/records/{rec}"), 403, "local_only_record")
    err = assert_error(
        hosted_api.post("/brains/b1/records", {"content": "x", "visibility": "local_only"}), 403, "local_only_record"
    )
    assert err["type"] == "policy"
    assert len(local.store.list_records(local.store.get_brain("test:acme", "b1").uid)) == 1


# --- objects ----------------------------------------------------------------------------------------


def test_objects_gain_versions(api: Api) -> None:
    api.brain()
    first = api.post("/brains/b1/objects", {"type": "pref", "key": "theme", "value": {"mode": "dark"}})
    assert first.status == 201 and first.body["version"] == 1
    assert first.body["accepted_by"] == parse_key(KEY).id and "s3cret" not in first.body["accepted_by"]
    second = api.post("/brains/b1/objects", {"type": "pref", "key": "theme", "value": "light", "if_version": 1})
    assert second.body["version"] == 2 and second.body["id"] == first.body["id"]
    assert api.get("/brains/b1/objects/pref/theme").body["value"] == "light"
    err = assert_error(
        api.post("/brains/b1/objects", {"type": "pref", "key": "theme", "value": "x", "if_version": 1}),
        409,
        "stale_version",
    )
    assert err["current_version"] == 2
    assert api.get("/brains/b1/objects/pref/theme").body["version"] == 2
    assert_error(api.get("/brains/b1/objects/pref/Theme"), 404, "object_not_found")


def test_an_object_value_comes_back_exactly(api: Api) -> None:
    # beyond 64 bits, a float's shortest form, and text that is not ASCII: the same JSON value read back
    value = {"big": 2**70, "negative": -(2**65), "ratio": 0.1 + 0.2, "tiny": 5e-324, "text": "caf\u00e9 \U0001f600"}
    api.brain()
    assert api.post("/brains/b1/objects", {"type": "pref", "key": "odd", "value": value}).status == 201
    reply = api.get("/brains/b1/objects/pref/odd")
    assert reply.status == 200 and reply.body["value"] == value


@pytest.mark.parametrize(
    ("if_version", "reason"),
    [(True, "must be an integer"), (False, "must be an integer"), ("1", "must be an integer"),
     (1.5, "must be an integer"), (-1, "must be at least 0")],
)  # fmt: skip
def test_if_version_must_be_a_natural_number(api: Api, if_version: Any, reason: str) -> None:
    api.brain()
    err = assert_error(
        api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": 1, "if_version": if_version}),
        400,
        "invalid_request_body",
    )
    assert err["message"] == f"if_version: {reason}"


def test_accept_object_idempotency(api: Api) -> None:
    api.brain()
    h = {"Idempotency-Key": "obj-1"}
    first = api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": 1}, headers=h)
    replay = api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": 1}, headers=h)
    assert replay.body == first.body and replay.body["version"] == 1
    assert_error(api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": 2}, headers=h), 409, "idempotency_conflict")
