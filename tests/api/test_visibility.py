"""Visibility applies on every read path, once: redacted_summary words are never served, and a hosted
deployment serves nothing of a local_only Record (Context components, listMemories, getMemory, the
Profile, structured values, unknowns, the budget)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brainstore.api.app import create_app
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.service import Service
from brainstore.service.planner import MAX_CITATIONS
from brainstore.store.memory import MemoryStore
from tests.conftest import Api, assert_error

MEDICATION = "sertraline"
CODE_WORD = "kumquat"


@pytest.fixture
def deployments(tmp_path: Path) -> Any:
    """One store, written through a local deployment and read through a hosted one."""
    registry = tmp_path / "keys.json"
    raw, _ = KeyRegistry(registry).create("test", "acme")
    local = Service(MemoryStore(), config=Config(engine="memory"))
    local.start()
    hosted = Service(local.store, config=Config(engine="memory", deployment="hosted", key_registry=registry))
    yield local, Api(create_app(local)), hosted, Api(create_app(hosted), key=raw)
    local.stop()
    hosted.stop()


def remember(api: Api, service: Service, text: str, visibility: str) -> dict[str, Any]:
    body = {"kind": "message", "role": "user", "text": text}
    rec = api.remember("alice", body, visibility=visibility, occurred_at="2024-03-04T09:00:00Z").body
    assert service.wait_idle()
    return api.get(f"/brains/alice/records/{rec['id']}").body


EVERYTHING = {"include": ["evidence", "memories", "profile"], "schema": {"type": "object", "properties": {"takes": {"type": "string"}}}}


def served_everywhere(api: Api, query: str) -> str:
    """Everything a reader can get: a Context with every component, listMemories, the Profile, getMemory
    of every listed Memory, and the traces."""
    parts = [api.post("/brains/alice/context", {"query": query, **EVERYTHING}).body]
    parts.append(api.post("/brains/alice/context", {"query": query, "mode": "thorough", **EVERYTHING}).body)
    listed = api.get("/brains/alice/memories").body
    parts.append(listed)
    parts += [api.get(f"/brains/alice/memories/{m['id']}").body for m in listed["data"]]
    parts.append(api.get("/brains/alice/profile").body)
    parts.append(api.get("/brains/alice/traces", params={"limit": "100"}).body)
    return json.dumps(parts)


def test_a_memory_past_its_citation_bound_is_served_wherever_one_of_its_records_may_be(deployments: Any) -> None:
    """Its first MAX_CITATIONS supporters local_only, a later shareable one is cited in the newest one's
    place; forgotten, re-derivation cites the next shareable supporter first."""
    local, local_api, _, hosted_api = deployments
    local_api.brain("alice", self_name="Alice")
    private = [remember(local_api, local, "I love cake.", "local_only")["id"] for _ in range(MAX_CITATIONS)]
    memory_id = local_api.get(f"/brains/alice/records/{private[0]}").body["memory_ids"][0]
    assert_error(hosted_api.get(f"/brains/alice/memories/{memory_id}"), 403, "local_only_record")
    shared = remember(local_api, local, "I love cake.", "shareable")["id"]
    later = remember(local_api, local, "I love cake.", "shareable")["id"]
    served = hosted_api.get(f"/brains/alice/memories/{memory_id}").body
    assert [c["record_id"] for c in served["citations"]] == [shared]
    cited = [c["record_id"] for c in local_api.get(f"/brains/alice/memories/{memory_id}").body["citations"]]
    assert cited == [*private[:-1], shared]
    local_api.delete(f"/brains/alice/records/{shared}")
    assert local.wait_idle()
    served = hosted_api.get(f"/brains/alice/memories/{memory_id}").body
    assert [c["record_id"] for c in served["citations"]] == [later]


def test_redacted_summary_words_are_never_served(deployments: Any) -> None:
    local, api, _, _ = deployments
    api.brain("alice", self_name="Alice")
    secret = remember(api, local, f"I take {MEDICATION} every morning.", "redacted_summary")
    remember(api, local, "I walk my dog every evening.", "shareable")
    everything = served_everywhere(api, "what does Alice take every morning")
    assert MEDICATION not in everything.lower()
    # It is still there, as a redaction that names who and when, and it stays cited.
    ctx = api.post("/brains/alice/context", {"query": "what does Alice take every morning", **EVERYTHING}).body
    redacted = [e for e in ctx["evidence"] if e["record_id"] == secret["id"]]
    assert redacted and redacted[0]["redacted"] and redacted[0]["text"].startswith("[redacted summary: Alice")
    listed = api.get("/brains/alice/memories").body["data"]
    [memory] = [m for m in listed if any(c["record_id"] == secret["id"] for c in m["citations"])]
    assert memory["statement"].startswith("[redacted summary") and memory["citations"][0]["quote"] == "[redacted]"


def test_unknowns_never_tell_what_a_redacted_record_holds(deployments: Any) -> None:
    local, api, _, _ = deployments
    api.brain("alice", self_name="Alice")
    remember(api, local, f"The password hint is {CODE_WORD}.", "redacted_summary")
    ctx = api.post("/brains/alice/context", {"query": f"password hint {CODE_WORD}"}).body
    assert ctx["evidence"] and all(e["redacted"] for e in ctx["evidence"])
    unknown_terms = {u.get("term", "").lower() for u in ctx["unknowns"]}
    assert CODE_WORD in unknown_terms  # the same answer it gives for a word no Record holds
    other = api.post("/brains/alice/context", {"query": "password hint zucchini"}).body
    assert "zucchini" in {u.get("term", "").lower() for u in other["unknowns"]}


def test_the_budget_counts_the_redaction_that_is_served(deployments: Any) -> None:
    local, api, _, _ = deployments
    api.brain("alice", self_name="Alice")
    for i in range(6):
        remember(api, local, f"Note {i}: the plan.", "redacted_summary")
    for tokens in (5, 20, 40, 80):
        ctx = api.post("/brains/alice/context", {"query": "the plan", "budget": {"tokens": tokens}}).body
        served = sum(len(e["text"]) for e in ctx["evidence"])
        assert ctx["budget"]["tokens"]["used"] <= tokens
        assert (served == 0) == (ctx["budget"]["tokens"]["used"] == 0)


def test_a_hosted_deployment_serves_nothing_of_a_local_only_record(deployments: Any) -> None:
    local, local_api, _, hosted_api = deployments
    local_api.brain("alice", self_name="Alice")
    private = remember(local_api, local, f"I take {MEDICATION} every morning.", "local_only")
    remember(local_api, local, "I walk my dog every evening.", "shareable")
    everything = served_everywhere(hosted_api, "what does Alice take every morning")
    assert MEDICATION not in everything.lower() and private["id"] not in everything
    assert_error(hosted_api.get(f"/brains/alice/records/{private['id']}"), 403, "local_only_record")
    for memory_id in private["memory_ids"]:
        assert_error(hosted_api.get(f"/brains/alice/memories/{memory_id}"), 403, "local_only_record")
    # The local deployment still serves it: visibility is about the reader, not the data.
    assert MEDICATION in served_everywhere(local_api, "what does Alice take every morning").lower()
    # The census counts the Memories each deployment serves.
    listed = {
        api: len(api.get("/brains/alice/memories", params={"limit": "100"}).body["data"])
        for api in (local_api, hosted_api)
    }
    assert listed[hosted_api] < listed[local_api]
    for api in (local_api, hosted_api):
        assert api.get("/brains/alice/census").body["counts"]["memories"] == listed[api]


def test_a_hosted_census_neither_counts_nor_names_a_local_only_record(deployments: Any) -> None:
    """The census counted a local_only Record on hosted and named its id as a low-trust example, though
    getRecord refuses that id and nothing else serves it."""
    local, local_api, _, hosted_api = deployments
    local_api.brain("alice", self_name="Alice")
    low = {"name": "diary", "trust": "low"}
    private = local_api.remember(
        "alice", {"kind": "message", "role": "user", "text": f"I take {MEDICATION} every morning."},
        visibility="local_only", source=low,
    ).body
    shared = local_api.remember(
        "alice", {"kind": "message", "role": "user", "text": "I walk my dog every evening."}, source=low
    ).body
    assert local.wait_idle()
    assert_error(hosted_api.get(f"/brains/alice/records/{private['id']}"), 403, "local_only_record")
    census = {api: api.get("/brains/alice/census").body for api in (local_api, hosted_api)}
    # local: both, as before
    assert census[local_api]["counts"]["records"] == 2 and census[local_api]["counts"]["low_trust_records"] == 2
    assert private["id"] in json.dumps(census[local_api]["noise"])
    # hosted: the shared one only
    hosted = census[hosted_api]
    assert hosted["counts"]["records"] == 1 and hosted["counts"]["low_trust_records"] == 1
    assert private["id"] not in json.dumps(hosted)
    assert [n["examples"] for n in hosted["noise"] if n["kind"] == "low_trust_sources"] == [[shared["id"]]]
    listed = hosted_api.get("/brains/alice/memories", params={"limit": "100"}).body["data"]
    assert hosted["counts"]["memories"] == len(listed)
    assert hosted["counts"]["duplicates"] == sum(1 for m in listed if len({c["record_id"] for c in m["citations"]}) > 1)
