"""createContext and traces through the contract, on both engines."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore import kernels
from brainstore.api.app import create_app
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import Api, assert_error

TURNS = [
    ("Caroline", "2023-05-08T13:56:00Z", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "2023-05-08T13:57:00Z", "That sounds great! I painted a lake sunrise last year."),
    ("Caroline", "2023-05-25T10:00:00Z", "I am researching adoption agencies, I want to be a mum."),
    ("Melanie", "2023-06-02T09:00:00Z", "We went camping at the beach with the kids last week."),
    ("Caroline", "2023-06-20T18:30:00Z", "My sister loves sushi, we had dinner at a sushi bar."),
]


def seed(api: Api, service: Service, brain: str = "b1", **record: Any) -> list[str]:
    api.brain(brain, self_name="Caroline")
    ids = []
    for speaker, at, text in TURNS:
        role = "user" if speaker == "Caroline" else "other"
        content = {"kind": "message", "text": text, "speaker": speaker, "role": role}
        source = {"name": "chat" if speaker == "Caroline" else "forum"}
        ids.append(api.remember(brain, content, occurred_at=at, source=source, **record).body["id"])
    assert service.wait_idle()
    return ids


def context(api: Api, brain: str = "b1", **body: Any) -> dict[str, Any]:
    r = api.post(f"/brains/{brain}/context", body)
    assert r.status == 200, r.body
    return r.body


def record_text(content: dict[str, Any]) -> str:
    """The Record text a citation's span indexes, by the rule openapi.yaml states under Span."""
    if content["kind"] == "event":
        return f"{content['name']}: {content['text']}" if content.get("text") else content["name"]
    if content["kind"] == "fact" and "subject" in content:
        return " ".join(content[k].strip() for k in ("subject", "predicate", "value"))
    return content["text"]


@pytest.mark.parametrize(
    "content",
    [
        {"kind": "event", "name": "trip to Tokyo", "text": "We flew to Tokyo with Bob."},
        {"kind": "event", "name": "Ann moved to Lisbon"},
        {"kind": "fact", "subject": " Ann ", "predicate": "likes", "value": "green tea"},
        {"kind": "fact", "text": "Ann likes green tea."},
        {"kind": "document", "text": "Ann likes green tea. She lives in Lisbon."},
    ],
)
def test_every_citation_indexes_the_record_text_openapi_defines(api: Api, service: Service, content: dict) -> None:
    # an event's and a triple's citations indexed a text no endpoint showed, nor openapi defined: a
    # client could not check a quote against its Record
    api.brain("b1", self_name="Ann")
    rec = api.remember("b1", content, occurred_at="2023-10-04T10:00:00Z").body["id"]
    assert service.wait_idle()
    record = api.get(f"/brains/b1/records/{rec}").body
    text = record_text(record["content"])
    ctx = context(api, query="Ann Tokyo Lisbon green tea", include=["evidence", "memories"])
    cited = [c for c in ctx["citations"] if c["record_id"] == rec]
    cited += [c for m in api.get("/brains/b1/memories").body["data"] for c in m["citations"]]
    assert cited
    for citation in cited:
        assert text[citation["span"]["start"] : citation["span"]["end"]] == citation["quote"]


def test_consecutive_sentences_of_a_turn_come_back_as_one_exactly_cited_passage(api: Api, service: Service) -> None:
    api.brain("b1", self_name="Dave")
    text = (
        "Restoring the old Mustang took me the whole winter in the garage.\n"
        "The Mustang engine now purrs like new after the rebuild.   "
        "Next spring I will drive it down the coast, maybe with Calvin along."
    )
    content = {"kind": "message", "text": text, "speaker": "Dave", "role": "user"}
    rec = api.remember("b1", content, occurred_at="2023-10-04T10:00:00Z").body["id"]
    api.remember("b1", {"kind": "message", "text": "Calvin played a show in Tokyo.", "speaker": "Calvin"})
    assert service.wait_idle()
    ctx = context(api, query="Mustang engine restoring garage winter rebuild")
    [item] = [e for e in ctx["evidence"] if e["record_id"] == rec]
    citation = ctx["citations"][item["citation"]]
    start, end = citation["span"]["start"], citation["span"]["end"]
    assert item["span"] == citation["span"]
    # one header, the sentences joined; the quote is the Record's own text, whitespace and all
    assert item["text"].startswith("Dave (4 October 2023): Restoring the old Mustang")
    assert item["text"].count("Dave (") == 1 and "The Mustang engine now purrs" in item["text"]
    assert citation["quote"] == text[start:end] and "\n" in citation["quote"]
    assert ctx["budget"]["tokens"]["used"] <= ctx["budget"]["tokens"]["limit"]
    # each chunk is indexed once, the first Record of a Brain included
    uid = service.store.get_brain("test:acme", "b1").uid
    assert len(service.evidence.index(uid)) == service.store.count_chunks(uid) == 4
    # an index rebuilt from the stored chunks quotes the same text (the whitespace comes from the
    # Records, read once at the rebuild, not at each Context)
    service.evidence.drop(uid)
    rebuilt = context(api, query="Mustang engine restoring garage winter rebuild")
    assert [c["quote"] for c in rebuilt["citations"]] == [c["quote"] for c in ctx["citations"]]


def test_fast_context_is_cited_evidence_and_asserts_nothing(api: Api, service: Service) -> None:
    ids = seed(api, service)
    ctx = context(api, query="When did Caroline go to the LGBTQ support group?")
    assert ctx["status"] == "ready" and ctx["mode"] == "fast" and ctx["answer"] is None
    assert ctx["id"].startswith("ctx_") and ctx["watermark"].startswith("wm_")
    assert ctx["evidence"] and ctx["evidence"][0]["record_id"] == ids[0]
    for item in ctx["evidence"]:
        citation = ctx["citations"][item["citation"]]
        assert citation["record_id"] == item["record_id"] and citation["record_id"] in ids
    assert ctx["cost"] == {"model_calls": 1, "embedding_calls": 1, "generative_calls": 0}
    assert ctx["budget"]["tokens"]["tokenizer"] == "cl100k_base"
    assert 0 < ctx["budget"]["tokens"]["used"] <= ctx["budget"]["tokens"]["limit"] == 2000


def test_a_period_the_query_names_lifts_what_was_said_in_it(api: Api, service: Service) -> None:
    api.brain("b1", self_name="Caroline")
    content = {"kind": "message", "text": "We adopted a puppy from the shelter.", "speaker": "Caroline", "role": "user"}
    early = api.remember("b1", content, occurred_at="2023-03-10T10:00:00Z").body["id"]
    late = api.remember("b1", content, occurred_at="2024-03-10T10:00:00Z").body["id"]
    assert service.wait_idle()

    def first(query: str, **body: Any) -> str:
        return context(api, query=query, **body)["evidence"][0]["record_id"]

    assert first("What did Caroline adopt in March 2023?") == early
    assert first("What did Caroline adopt in March 2024?") == late
    # a relative period is resolved at as_of
    assert first("What did Caroline adopt last month?", as_of="2023-04-15T00:00:00Z") == early
    assert first("What did Caroline adopt last month?", as_of="2024-04-15T00:00:00Z") == late


def test_a_query_in_the_first_person_prefers_what_the_brain_s_self_said(api: Api, service: Service) -> None:
    said = {}
    for brain, me in (("b1", "Caroline"), ("b2", "Melanie")):
        api.brain(brain, self_name=me)
        said[brain] = {
            speaker: api.remember(brain, {"kind": "message", "text": "We adopted a puppy from the shelter.",
                                          "speaker": speaker, "role": "user" if speaker == me else "other"},
                                  occurred_at=at).body["id"]
            for speaker, at in (("Caroline", "2023-03-10T10:00:00Z"), ("Melanie", "2023-03-11T10:00:00Z"))
        }  # fmt: skip
    assert service.wait_idle()
    for brain, me in (("b1", "Caroline"), ("b2", "Melanie")):
        assert context(api, brain, query="When did I adopt my puppy?")["evidence"][0]["record_id"] == said[brain][me]


def test_a_miss_is_a_ready_context_with_an_explicit_unknown(api: Api) -> None:
    api.brain()
    ctx = context(api, query="What is Bob's favourite colour?")
    assert ctx["status"] == "ready" and ctx["evidence"] == [] and ctx["citations"] == []
    assert ctx["unknowns"] and "not mean it is false" in ctx["unknowns"][0]["reason"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.integers(min_value=1, max_value=120))
def test_the_token_budget_is_never_exceeded(api: Api, service: Service, tokens: int) -> None:
    if api.get("/brains/b1").status == 404:
        seed(api, service)
    ctx = context(api, query="sushi camping adoption painting", budget={"tokens": tokens}, include=["evidence", "memories", "profile"])
    assert ctx["budget"]["tokens"]["used"] <= tokens


def test_filters_since_until_sources_are_enforced_and_the_rest_recorded(api: Api, service: Service) -> None:
    ids = seed(api, service)
    ctx = context(
        api,
        query="sushi camping adoption painting support group",
        filter={"since": "2023-05-20T00:00:00Z", "until": "2023-06-10T00:00:00Z", "owner": "Caroline", "subjects": ["x"]},
    )
    assert {e["record_id"] for e in ctx["evidence"]} <= {ids[2], ids[3]}
    assert ctx["filter"]["recorded"]["owner"] == "Caroline" and ctx["filter"]["enforced"]["since"]
    ctx = context(api, query="sushi camping adoption painting support group", filter={"sources": ["forum"]})
    assert ctx["evidence"] and {e["record_id"] for e in ctx["evidence"]} <= {ids[1], ids[3]}


def test_memories_come_with_their_lineage_inside_the_evidence_window(api: Api, service: Service) -> None:
    seed(api, service)
    ctx = context(api, query="What does Caroline's sister love?", include=["evidence", "memories"])
    window = {e["record_id"] for e in ctx["evidence"]}
    assert ctx["memories"], ctx
    for memory in ctx["memories"]:
        assert {c["record_id"] for c in memory["citations"]} <= window
    sister = [m for m in ctx["memories"] if "sister loves sushi" in m["statement"]]
    assert sister and all(m["owner"] != "Caroline" for m in sister)


def test_as_of_applies_to_memories(api: Api, service: Service) -> None:
    api.brain("b1", self_name="Ann")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I live in Lisbon."}, occurred_at="2020-01-01T00:00:00Z")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I moved to Porto in 2022."}, occurred_at="2022-06-01T00:00:00Z")
    assert service.wait_idle()
    then = context(api, query="Where does Ann live? Lisbon Porto", include=["evidence", "memories"], as_of="2021-01-01T00:00:00Z")
    assert [m for m in then["memories"] if "Lisbon" in m["statement"]]
    assert not [m for m in then["memories"] if "Porto" in m["statement"]]


def test_as_of_applies_to_the_profile_and_the_structured_value(api: Api, service: Service) -> None:
    """As of a day, the profile holds the self's Memories valid then, ended since or not, and no value
    comes from evidence of a later day (served as evidence all the same)."""
    api.brain("b1", self_name="Ann")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I live in Lisbon."}, occurred_at="2020-01-01T00:00:00Z")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I moved to Porto in 2022."}, occurred_at="2022-06-01T00:00:00Z")
    assert service.wait_idle()

    def at(as_of: str) -> tuple[list[str], dict[str, Any]]:
        ctx = context(
            api,
            query="Where does Ann live? Lisbon Porto",
            include=["evidence", "profile"],
            schema={"type": "object", "properties": {"city": {"type": "string"}}},
            as_of=as_of,
        )
        return [line["statement"] for line in ctx["profile"]["lines"]], ctx["structured"]["value"]

    profile, value = at("2021-01-01T00:00:00Z")
    assert len(profile) == 1 and "Lisbon" in profile[0] and value == {"city": "Lisbon"}
    profile, value = at("2023-01-01T00:00:00Z")
    assert all("Lisbon" not in line for line in profile) and value == {"city": "Porto"}
    assert at("2019-01-01T00:00:00Z") == ([], {})


def test_as_of_applies_to_the_thorough_answer(api: Api, service: Service) -> None:
    """A thorough answer as of a day is composed from the evidence of that day and before: what was
    said later is served as evidence, but it answers another moment (the answer said Porto as of 2021)."""
    api.brain("b1", self_name="Ann")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I live in Lisbon."}, occurred_at="2020-01-01T00:00:00Z")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I live in Porto now."}, occurred_at="2022-06-01T00:00:00Z")
    assert service.wait_idle()

    def answer(**knobs: Any) -> dict[str, Any]:
        ctx = context(api, query="Where does Ann live?", mode="thorough", include=["evidence"], **knobs)
        served = " ".join(e["text"] for e in ctx["evidence"])
        assert "I live in Lisbon." in served and "I live in Porto now." in served
        return ctx["answer"]

    assert "Porto" in answer()["text"]
    then = answer(as_of="2021-01-01T00:00:00Z")
    assert "Lisbon" in then["text"] and "Porto" not in then["text"]
    assert answer(as_of="2019-01-01T00:00:00Z") is None


def test_read_your_writes_with_brain_watermark(api: Api, service: Service) -> None:
    api.brain()
    service.derivation.stop()  # derivation held: the watermark cannot be reached yet
    write = api.post("/brains/b1/records", {"content": "The launch code is zebra."})
    watermark = write.header("Brain-Watermark")
    pending = api.post("/brains/b1/context", {"query": "launch code"}, headers={"Brain-Watermark": watermark})
    assert pending.status == 202 and pending.body["status"] == "pending"
    service.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        trace = api.get(f"/brains/b1/traces/{pending.body['id']}").body
        if trace["context"]["status"] == "ready":
            break
        time.sleep(0.05)
    assert trace["context"]["evidence"][0]["record_id"] == write.body["id"]
    now = api.post("/brains/b1/context", {"query": "launch code"}, headers={"Brain-Watermark": watermark})
    assert now.status == 200 and now.body["evidence"]
    assert_error(
        api.post("/brains/b1/context", {"query": "x"}, headers={"Brain-Watermark": "wm_bogus"}), 400, "invalid_watermark"
    )


def test_streaming_rules(api: Api, service: Service) -> None:
    seed(api, service)
    sse = {"Accept": "text/event-stream"}
    assert_error(api.post("/brains/b1/context", {"query": "sushi"}, headers=sse), 406, "streaming_not_applicable")
    assert_error(
        api.post("/brains/b1/context", {"query": "sushi", "mode": "fast"}, headers=sse), 406, "streaming_not_applicable"
    )
    result = api.client.simulate_post(
        "/v1/brains/b1/context",
        json={"query": "sushi", "mode": "thorough"},
        headers={"Authorization": f"Bearer {api.key}", **sse},
    )
    assert result.status_code == 200 and result.headers["content-type"].startswith("text/event-stream")
    events = [block.split("\n") for block in result.text.strip().split("\n\n")]
    names = [lines[0].removeprefix("event: ") for lines in events]
    assert names[0] == "context.started" and names[-1] == "context.completed"
    completed = json.loads(events[-1][1].removeprefix("data: "))["context"]
    assert completed["answer"]["citations"]


@pytest.mark.parametrize(
    ("accept", "streams"),
    [
        ("Text/Event-Stream", True),  # media types are case-insensitive (RFC 9110, 8.3.1)
        ("application/json;q=0.5, TEXT/event-stream", True),
        ("text/event-stream; charset=utf-8", True),
        ("application/json, text/event-stream;q=0", False),  # q=0: not acceptable (RFC 9110, 12.4.2)
        ("application/json, text/event-stream; Q=0.000", False),
        ("*/*", False),  # only a client that names the stream gets one
    ],
)
def test_streaming_follows_the_accept_header_as_http_reads_it(
    api: Api, service: Service, accept: str, streams: bool
) -> None:
    """A client naming text/event-stream in another case got JSON for a thorough Context, and a fast
    one answered instead of 406; one refusing it with q=0 got the stream, or a 406 for a fast one."""
    seed(api, service)
    headers = {"Authorization": f"Bearer {api.key}", "Accept": accept}
    thorough = api.client.simulate_post("/v1/brains/b1/context", json={"query": "sushi", "mode": "thorough"}, headers=headers)
    assert thorough.status_code == 200
    assert thorough.headers["content-type"].startswith("text/event-stream" if streams else "application/json")
    fast = api.post("/brains/b1/context", {"query": "sushi"}, headers={"Accept": accept})
    if streams:
        assert_error(fast, 406, "streaming_not_applicable")
    else:
        assert fast.status == 200


def test_thorough_composes_an_extractive_cited_answer(api: Api, service: Service) -> None:
    seed(api, service)
    ctx = context(api, query="What did Melanie paint?", mode="thorough")
    cited = {c["id"] for c in ctx["citations"]}
    assert ctx["answer"]["text"] and set(ctx["answer"]["citations"]) <= cited
    assert ctx["cost"]["generative_calls"] == 0


def test_schema_yields_structured_or_unavailable(api: Api, service: Service) -> None:
    api.brain("b1", self_name="Ann")
    api.remember("b1", {"kind": "message", "role": "user", "text": "I live in Lisbon."})
    assert service.wait_idle()
    ok = context(api, query="where", schema={"type": "object", "properties": {"lives_in": {"type": "string"}}})
    assert ok["structured"]["status"] == "ready" and ok["structured"]["value"] == {"lives_in": "Lisbon"}
    bad = context(api, query="where", schema={"type": "object", "properties": {"x": {"type": 12}}})
    assert bad["structured"]["status"] == "unavailable" and bad["structured"]["reason"]
    unmet = context(api, query="where", schema={"type": "object", "required": ["age"], "properties": {"age": {"type": "integer"}}})
    assert unmet["structured"]["status"] == "unavailable"


def test_forgotten_records_leave_the_context_at_once(api: Api, service: Service) -> None:
    ids = seed(api, service)
    assert ids[4] in {e["record_id"] for e in context(api, query="sushi bar dinner")["evidence"]}
    api.delete(f"/brains/b1/records/{ids[4]}")
    assert ids[4] not in {e["record_id"] for e in context(api, query="sushi bar dinner")["evidence"]}


def test_hosted_omits_local_only_and_redacts_redacted_summary(tmp_path: Any) -> None:
    registry = tmp_path / "keys.json"
    raw, _ = KeyRegistry(registry).create("test", "acme")
    local = Service(MemoryStore(), config=Config(engine="memory"))
    local.start()
    hosted = Service(local.store, config=Config(engine="memory", deployment="hosted", key_registry=registry))
    local_api, hosted_api = Api(create_app(local)), Api(create_app(hosted), key=raw)
    local_api.brain()
    private = local_api.remember("b1", "The vault code is 4471.", visibility="local_only").body["id"]
    summary = local_api.remember("b1", "The vault manager is Dana.", visibility="redacted_summary").body["id"]
    assert local.wait_idle()
    ctx = context(hosted_api, query="vault code manager")
    assert private not in {e["record_id"] for e in ctx["evidence"]}
    redacted = [e for e in ctx["evidence"] if e["record_id"] == summary]
    assert redacted and redacted[0]["redacted"] and "Dana" not in json.dumps(ctx)
    assert private in {e["record_id"] for e in context(local_api, query="vault code manager")["evidence"]}
    local.stop()


def test_context_traces(api: Api, service: Service) -> None:
    seed(api, service)
    first = context(api, query="sushi")
    second = context(api, query="camping")
    trace = api.get(f"/brains/b1/traces/{first['id']}").body
    assert trace["kind"] == "context" and trace["lanes"] and trace["scores"]
    assert {lane["name"] for lane in trace["lanes"]} >= {"lexical", "vector"}
    # each scored chunk names the lanes that found it, at its rank there; every lane's first hit is scored
    found = [(name, hit["rank"]) for score in trace["scores"] for name, hit in score["lanes"].items()]
    assert {name for name, _ in found} <= {lane["name"] for lane in trace["lanes"]}
    assert {(lane["name"], 0) for lane in trace["lanes"] if lane["candidates"]} <= set(found)
    assert len(set(found)) == len(found)
    assert trace["context"]["id"] == first["id"] and trace["cost"]["generative_calls"] == 0
    listed = [t["id"] for t in api.get("/brains/b1/traces").body["data"]]
    assert listed.index(second["id"]) < listed.index(first["id"])


def test_a_context_is_answered_before_its_trace_is_written(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client has the whole body while the trace is still being written; a reader who asks
    meanwhile waits for it (here a short wait gives up), and one who asks after finds it."""
    import falcon.testing

    from brainstore.service import traces

    seed(api, service)
    monkeypatch.setattr(traces, "RESERVED_WAIT", 0.05)
    env = falcon.testing.create_environ(
        method="POST",
        path="/v1/brains/b1/context",
        body=json.dumps({"query": "sushi"}),
        headers={"Authorization": f"Bearer {api.key}", "Content-Type": "application/json"},
    )
    body = api.app(env, lambda status, headers, exc_info=None: None)
    items = iter(body)
    answer = json.loads(next(items))  # what the server writes to the client
    assert service.traces.get(answer["id"], "test:acme", "b1") is None  # reserved, not written yet
    assert list(items) == []  # the server asks for more: the work after the response runs
    body.close()
    trace = api.get(f"/brains/b1/traces/{answer['id']}").body
    assert trace["context"] == answer and trace["scores"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": 3}, "query"),
        ({"query": "x", "mode": "slow"}, "mode"),
        ({"query": "x", "budget": {"tokens": 0}}, "budget.tokens"),
        ({"query": "x", "budget": {"tokens": True}}, "budget.tokens"),
        ({"query": "x", "include": ["gossip"]}, "include"),
        ({"query": "x", "purpose": "espionage"}, "purpose"),
        ({"query": "x", "filter": {"since": "last week"}}, "filter.since"),
        ({"query": "x", "as_of": "now"}, "as_of"),
        ({"query": "x", "limit": 3}, "limit"),
    ],
)
def test_invalid_context_requests(api: Api, body: dict[str, Any], field: str) -> None:
    api.brain()
    err = assert_error(api.post("/brains/b1/context", body), 400, "invalid_request_body")
    assert err["message"].startswith(f"{field}: ")


def test_a_rebuilt_brain_past_the_matrix_is_answered_before_its_graph_is_built(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Brain's first Context after its index files were lost waits for the store's rows, not for its
    vector graph (a minute at 100,000 chunks): the matrix answers, the same evidence, while the graph
    is built on a thread of its own, which then writes the files."""
    from brainstore.retrieval import index as index_module
    from brainstore.retrieval.index import BrainIndex
    from brainstore.service import evidence
    from tests.conftest import open_engine

    monkeypatch.setattr(index_module, "FLAT_MAX", 4)
    monkeypatch.setattr(evidence, "SAVE_DELAY", 0.05)
    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    seed(api, service)
    query = "When did Caroline go to the LGBTQ support group?"
    before = context(api, query=query)
    uid = service.store.get_brain("test:acme", "b1").uid
    service.evidence.drop(uid)  # the files too: the next Context rebuilds it from the store
    building, release = threading.Event(), threading.Event()
    build_graph = BrainIndex.build_graph

    def held_build(self: BrainIndex, stop: Any = lambda: False) -> bool:
        if self.needs_graph:
            building.set()
            assert release.wait(30)
        return build_graph(self, stop)

    monkeypatch.setattr(BrainIndex, "build_graph", held_build)
    try:
        rebuilt = context(api, query=query)
        assert building.wait(10)
        assert [e["record_id"] for e in rebuilt["evidence"]] == [e["record_id"] for e in before["evidence"]]
        index = service.evidence.index(uid)
        assert index.needs_graph and not (tmp_path / "index" / uid).exists()
    finally:
        release.set()
    deadline = time.monotonic() + 20
    while index.needs_graph or not (tmp_path / "index" / uid / "vectors.hnsw").exists():
        assert time.monotonic() < deadline, "the graph was not built and saved"
        time.sleep(0.02)
    assert [e["record_id"] for e in context(api, query=query)["evidence"]] == [e["record_id"] for e in before["evidence"]]
    service.stop()
    service.store.close()


def test_forgetting_removes_the_saved_index_files_that_held_the_text(tmp_path: Any) -> None:
    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    api.brain()
    secret = "the vault code is 4471-zebra-kappa"
    rec = api.remember("b1", secret).body["id"]
    api.remember("b1", "an unrelated note about lunch")
    assert service.wait_idle()
    service.evidence.save()
    index_files = [p for p in (tmp_path / "index").rglob("*") if p.is_file()]
    assert any(secret.encode() in p.read_bytes() for p in index_files)
    api.delete(f"/brains/b1/records/{rec}")
    leftovers = [p for p in (tmp_path / "index").rglob("*") if p.is_file()] if (tmp_path / "index").exists() else []
    assert not any(secret.encode() in p.read_bytes() for p in leftovers)
    assert rec not in {e["record_id"] for e in context(api, query="vault code")["evidence"]}
    service.stop()  # saves the rebuilt index: still without the forgotten text
    assert not any(secret.encode() in p.read_bytes() for p in (tmp_path / "index").rglob("*") if p.is_file())
    service.store.close()


def test_a_failed_embedding_is_retried_until_the_record_is_ready(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brainstore.service import derivation

    monkeypatch.setattr(derivation, "RETRY_DELAYS", (0.05,))
    real, calls = service.evidence.embed, []

    def flaky(texts: Any) -> Any:
        calls.append(list(texts))
        if len(calls) <= 2:
            raise ConnectionError("embedding endpoint unreachable")
        return real(texts)

    monkeypatch.setattr(service.evidence, "embed", flaky)
    api.brain("b1")
    rec = api.remember("b1", "I keep bees on the roof.").body["id"]
    assert service.wait_idle(timeout=10)
    assert len(calls) == 3
    assert api.get(f"/brains/b1/records/{rec}").body["status"] == "ready"
    assert [e["record_id"] for e in context(api, query="bees roof")["evidence"]] == [rec]


def _noting(monkeypatch: pytest.MonkeyPatch, service: Service, method: str) -> list[Any]:
    """What the service's embedder is given through ``method`` from now on, call by call."""
    embedder, given = service.evidence.embedder, []
    real = getattr(embedder, method)
    monkeypatch.setattr(embedder, method, lambda arg: given.append(arg) or real(arg))
    return given


def _remember_turns(api: Api, turns: list[tuple[str, str]], *, hours_apart: int = 0) -> None:
    """(speaker, text) as message Records of Brain b1, from 10:00 on 8 May 2023."""
    for n, (speaker, text) in enumerate(turns):
        content = {"kind": "message", "text": text, "speaker": speaker}
        api.remember("b1", content, occurred_at=f"2023-05-08T{10 + n * hours_apart}:00:00Z")


def test_chunks_are_embedded_as_speaker_and_text_without_the_day(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _noting(monkeypatch, service, "embed")
    api.brain("b1")
    content = {"kind": "message", "text": "I keep bees on the roof.", "speaker": "Ann", "role": "user"}
    rec = api.remember("b1", content, occurred_at="2023-05-08T10:00:00Z").body["id"]
    assert service.wait_idle()
    assert [text for texts in calls for text in texts] == ["Ann: I keep bees on the roof."]
    [item] = context(api, query="bees roof")["evidence"]
    assert item["record_id"] == rec and item["text"] == "Ann (8 May 2023): I keep bees on the roof."


def test_a_speaker_labelled_by_a_full_name_is_named_in_full_once_then_by_first_name(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _noting(monkeypatch, service, "embed")
    api.brain("b1")
    said = [
        ("Caroline Reyes", "I keep bees on the roof."),
        ("Melanie Okafor", "Do the bees sting you on the roof?"),
        ("Caroline Reyes", "The bees on the roof never sting."),
    ]
    _remember_turns(api, said, hours_apart=1)
    assert service.wait_idle()
    # questions name people by first name, and so do their passages' vectors
    assert [text for texts in calls for text in texts] == [
        "Caroline: I keep bees on the roof.",
        "Melanie: Do the bees sting you on the roof?",
        "Caroline: The bees on the roof never sting.",
    ]
    body = context(api, query="bees roof")
    assert [(e["text"], e["speaker"]) for e in body["evidence"]] == [
        ("Caroline Reyes (8 May 2023): I keep bees on the roof.", "Caroline Reyes"),
        ("Melanie Okafor: Do the bees sting you on the roof?", "Melanie Okafor"),
        ("Caroline: The bees on the roof never sting.", "Caroline Reyes"),
    ]
    assert body["budget"]["tokens"]["used"] == sum(kernels.count_tokens([e["text"] for e in body["evidence"]]))


def test_a_question_naming_a_speaker_by_another_name_than_their_label_is_embedded_with_the_label(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _noting(monkeypatch, service, "embed_query")
    api.brain("b1")
    turns = [
        ("user_81", "I adopted a beagle last week."),
        ("user_92", "Hey Audrey, that is wonderful news!"),
        ("user_81", "Thanks, she is a handful."),
        ("user_92", "Beagles are lovely, Audrey!"),
    ]
    _remember_turns(api, turns)
    assert service.wait_idle()
    ctx = context(api, query="What dog did Audrey adopt?")
    assert asked == ["What dog did user_81 adopt?"]  # as "user_81: I adopted a beagle last week." was
    assert ctx["evidence"][0]["text"].startswith("user_81 (8 May 2023): I adopted a beagle")


def test_a_pasted_transcript_is_read_as_its_speakers_turns(api: Api, service: Service) -> None:
    api.brain("b1")
    text = (
        "Call with Melanie, 8 May\n\n"
        "Caroline: I adopted a beagle last week.\n"
        "Melanie: That is great! I painted a lake sunrise.\n"
        "Caroline: My sister moved to Porto.\n"
    )
    rec = api.remember("b1", {"kind": "document", "text": text}, occurred_at="2023-05-08T10:00:00Z").body["id"]
    assert service.wait_idle()
    memories = api.get("/brains/b1/memories").body["data"]
    owned = {m["statement"]: m["owner"] for m in memories}
    assert owned.get("Melanie painted a lake sunrise.") == "Melanie", owned  # not "The author painted ..."
    assert any(owner == "Caroline" and "beagle" in statement for statement, owner in owned.items()), owned
    quotes = [c["quote"] for m in memories for c in m["citations"]]
    assert "I painted a lake sunrise" in quotes and all(q in text for q in quotes)
    ctx = context(api, query="What did Melanie paint?")
    items = {item["text"] for item in ctx["evidence"]}
    assert "Melanie: That is great! I painted a lake sunrise." in items or (
        "Melanie (8 May 2023): That is great! I painted a lake sunrise." in items
    ), items
    by_speaker = {item["speaker"] for item in ctx["evidence"]}
    assert {"Caroline", "Melanie"} <= by_speaker
    for citation in ctx["citations"]:  # each quotes one line's words, exactly
        assert citation["record_id"] == rec
        assert text[citation["span"]["start"] : citation["span"]["end"]] == citation["quote"]
        assert "\n" not in citation["quote"]


def test_the_evidence_names_a_day_once_and_again_when_the_line_that_named_it_is_gone(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brainstore.service.context import Contexts

    api.brain("b1")
    said = [("Ann", "I keep bees on the roof."), ("Bob", "Do the bees sting you on the roof?")]
    ids = [
        api.remember(
            "b1", {"kind": "message", "text": text, "speaker": who, "role": "user"}, occurred_at=f"2023-05-08T1{n}:00:00Z"
        ).body["id"]
        for n, (who, text) in enumerate(said)
    ]  # fmt: skip
    assert service.wait_idle()
    body = context(api, query="bees roof")
    assert [e["text"] for e in body["evidence"]] == ["Ann (8 May 2023): I keep bees on the roof.", "Bob: Do the bees sting you on the roof?"]
    assert body["budget"]["tokens"]["used"] == sum(kernels.count_tokens([e["text"] for e in body["evidence"]]))
    # Ann's Record forgotten while the Context is assembled: Bob's line names the day itself
    quote = Contexts._quote
    monkeypatch.setattr(
        Contexts, "_quote", staticmethod(lambda index, passage: None if passage.chunk.record_id == ids[0] else quote(index, passage))
    )
    body = context(api, query="bees roof")
    assert [e["text"] for e in body["evidence"]] == ["Bob (8 May 2023): Do the bees sting you on the roof?"]
    assert body["budget"]["tokens"]["used"] == kernels.token_count(body["evidence"][0]["text"])


def test_a_failed_derivation_never_serves_uncommitted_chunks_and_its_retry_adds_them_once(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brainstore.service import derivation

    monkeypatch.setattr(derivation, "RETRY_DELAYS", (0.3,))
    real, failed = service.store.append_record_statuses, threading.Event()

    def fail_once(events: Any) -> Any:
        if any(e.status == "ready" for e in events) and not failed.is_set():
            failed.set()
            raise RuntimeError("the disk is full")  # inside the derivation's transaction
        return real(events)

    api.brain("b1")
    api.remember("b1", "an unrelated note about lunch")  # the Brain's index exists before the failure
    assert service.wait_idle()
    monkeypatch.setattr(service.store, "append_record_statuses", fail_once)
    rec = api.remember("b1", "I keep bees on the roof.").body["id"]
    assert failed.wait(10)
    # Rolled back: the Record is still processing and none of its chunks is served.
    assert api.get(f"/brains/b1/records/{rec}").body["status"] == "processing"
    assert rec not in {e["record_id"] for e in context(api, query="bees roof")["evidence"]}
    assert service.wait_idle(timeout=10)
    assert api.get(f"/brains/b1/records/{rec}").body["status"] == "ready"
    uid = service.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    assert len(service.evidence.index(uid)) == service.store.count_chunks(uid)
    assert [e["record_id"] for e in context(api, query="bees roof")["evidence"]].count(rec) == 1


def test_a_record_whose_transaction_fails_alike_every_time_is_failed_and_holds_no_watermark_back(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brainstore.service import derivation

    monkeypatch.setattr(derivation, "RETRY_DELAYS", (0.02,))
    real, refused = service.store.insert_chunks, []

    def refuse_the_poison(chunks: Any) -> Any:
        if any("POISON" in chunk.draft.text for chunk in chunks):
            refused.append(len(chunks))
            raise ValueError("text fields cannot contain NUL (0x00) bytes")  # the same each time
        return real(chunks)

    monkeypatch.setattr(service.store, "insert_chunks", refuse_the_poison)
    api.brain("b1")
    poison = api.remember("b1", "POISON: I keep bees on the roof.").body["id"]
    write = api.remember("b1", "The bees swarmed in May.")
    assert service.wait_idle(timeout=30)
    record = api.get(f"/brains/b1/records/{poison}").body
    assert record["status"] == "failed" and record["error"]["code"] == "derivation_failed"
    assert record["error"]["message"] == (
        f"applying it failed {derivation.APPLY_ATTEMPTS} times alike; "
        "ValueError: text fields cannot contain NUL (0x00) bytes"
    )
    assert len(refused) >= derivation.APPLY_ATTEMPTS
    assert api.get(f"/brains/b1/records/{write.body['id']}").body["status"] == "ready"
    answer = api.post("/brains/b1/context", {"query": "bees"}, headers={"Brain-Watermark": write.header("Brain-Watermark")})
    assert answer.status == 200, answer.body
    assert poison not in {e["record_id"] for e in answer.body["evidence"]}


@pytest.mark.parametrize("refusal", [OSError("No space left on device"), RuntimeError("the database is read-only")])
def test_a_store_that_refuses_every_write_for_a_while_fails_no_record(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch, refusal: Exception
) -> None:
    """Unavailable (an OSError): never counted against the Record. Otherwise the fifth failure alike
    tries to mark it failed, which the store refuses too."""
    from brainstore.service import derivation

    monkeypatch.setattr(derivation, "RETRY_DELAYS", (0.02,))
    refusals, healed = [], threading.Event()

    def refusing(real: Any) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            if not healed.is_set():
                refusals.append(real.__name__)
                if len(refusals) >= 4 * derivation.APPLY_ATTEMPTS:
                    healed.set()
                raise refusal
            return real(*args, **kwargs)

        return refuse

    api.brain("b1")
    for name in ("insert_chunks", "append_record_statuses", "append_record_status"):
        monkeypatch.setattr(service.store, name, refusing(getattr(service.store, name)))
    rec = api.remember("b1", "I keep bees on the roof.").body["id"]
    assert healed.wait(30)
    assert service.wait_idle(timeout=30)
    assert api.get(f"/brains/b1/records/{rec}").body["status"] == "ready"
    # tried to mark it failed, and could not; or, the store unavailable, never tried
    assert ("append_record_status" in refusals) == (not service.store.unavailable(refusal))


def test_a_job_that_failed_alone_goes_alone_and_the_rest_of_its_batch_together(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the batch, a job failing again (a pending Memory that fails for its own sake comes back every
    minute) would send every other job of it to a transaction of its own."""
    from brainstore.service.derivation import Job

    api.brain("b1")
    service.derivation.stop()  # the batch below is made and applied by hand
    poison = api.remember("b1", "POISON: I keep bees on the roof.").body["id"]
    healthy = [api.remember("b1", f"Note {i}: the hive {i} swarmed.").body["id"] for i in range(4)]
    real, applied = service.store.insert_chunks, []

    def refuse_the_poison(chunks: Any) -> Any:
        texts = [chunk.draft.text for chunk in chunks]
        applied.append(texts)
        if any("POISON" in text for text in texts):
            raise ValueError("text fields cannot contain NUL (0x00) bytes")
        return real(chunks)

    monkeypatch.setattr(service.store, "insert_chunks", refuse_the_poison)
    worker = service.derivation
    uid = service.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    jobs = worker._load_batch([Job("record", worker._namespace(uid), uid, rid) for rid in [poison, *healthy]])
    while unembedded := [job for job in jobs if not job.ready]:
        worker._embed(unembedded)
    jobs[0].applying_failed = "ValueError: text fields cannot contain NUL (0x00) bytes"  # alone, before
    worker._apply_or_retry(jobs)
    assert [len(texts) for texts in applied] == [4, 1]  # the batch in one transaction, then the poison
    assert all(api.get(f"/brains/b1/records/{rec}").body["status"] == "ready" for rec in healthy)
    assert api.get(f"/brains/b1/records/{poison}").body["status"] == "processing"
    monkeypatch.setattr(service.store, "insert_chunks", real)
    service.derivation.start()  # resumed from the store: nothing was lost
    assert service.wait_idle(timeout=30)
    assert api.get(f"/brains/b1/records/{poison}").body["status"] == "ready"


def test_a_failed_batch_of_a_backlog_is_applied_again_record_by_record(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, failed = service.store.append_record_statuses, threading.Event()

    def fail_once(events: Any) -> Any:
        if len(events) > 1 and not failed.is_set():
            failed.set()
            raise RuntimeError("the disk is full")  # inside a batch's transaction
        return real(events)

    api.brain("b1")
    monkeypatch.setattr(service.store, "append_record_statuses", fail_once)
    service.derivation.stop()  # the Records below wait in the store: a backlog, derived in batches
    ids = [api.remember("b1", f"Note {i}: the bees on roof {i} swarmed.").body["id"] for i in range(12)]
    service.derivation.start()
    assert service.wait_idle(timeout=30)
    assert failed.is_set()
    assert all(api.get(f"/brains/b1/records/{rec}").body["status"] == "ready" for rec in ids)
    uid = service.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    assert len(service.evidence.index(uid)) == service.store.count_chunks(uid) == len(ids)
    served = [e["record_id"] for e in context(api, query="bees roof swarmed")["evidence"]]
    assert served and len(served) == len(set(served))


def test_a_watermark_reached_while_the_request_waits_is_answered_by_the_request(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    import brainstore.service.context as contexts

    api.brain()
    service.derivation.stop()  # derivation held until the Context waits for it
    write = api.post("/brains/b1/records", {"content": "The launch code is zebra."})
    watermark = write.header("Brain-Watermark")
    monkeypatch.setattr(contexts, "MAX_SYNC_WAIT", 30.0)  # the request outwaits a slow start
    # A background completion, if one were asked for, would run at once: before the waiting request
    # thread is scheduled again, it would claim the Context and leave the request a 202.
    monkeypatch.setattr(service.contexts.completions, "submit", lambda namespace, work: work())
    answers: list[Any] = []
    asking = threading.Thread(
        target=lambda: answers.append(
            api.post(
                "/brains/b1/context",
                {"query": "launch code", "budget": {"ms": 60_000}},
                headers={"Brain-Watermark": watermark},
            )
        )
    )
    asking.start()
    deadline = time.monotonic() + 10
    while not service.contexts._waiters and time.monotonic() < deadline:
        time.sleep(0.005)
    assert service.contexts._waiters, "the Context did not wait for the watermark"
    service.start()
    asking.join(60)
    [answer] = answers
    assert answer.status == 200, answer.body
    assert answer.body["evidence"][0]["record_id"] == write.body["id"]
    assert not service.contexts._waiters


def test_a_request_that_fails_while_it_waits_leaves_its_context_to_the_background(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    import brainstore.service.context as contexts

    api.brain()
    service.derivation.stop()
    watermark = api.post("/brains/b1/records", {"content": "The launch code is zebra."}).header("Brain-Watermark")
    monkeypatch.setattr(contexts, "MAX_SYNC_WAIT", 30.0)
    completed: list[str] = []
    assemble = service.contexts._assemble_and_trace
    monkeypatch.setattr(
        service.contexts,
        "_assemble_and_trace",
        lambda brain, namespace, context_id, *rest: completed.append(context_id) or assemble(brain, namespace, context_id, *rest),
    )
    wait_inline = service.contexts._wait_inline

    def fails_once_reached(waiter: Any, seconds: float) -> None:
        wait_inline(waiter, seconds)
        raise RuntimeError("the request thread failed after the watermark was reached")

    monkeypatch.setattr(service.contexts, "_wait_inline", fails_once_reached)
    answers: list[Any] = []
    asking = threading.Thread(
        target=lambda: answers.append(
            api.post("/brains/b1/context", {"query": "launch code", "budget": {"ms": 60_000}}, headers={"Brain-Watermark": watermark})
        )
    )
    asking.start()
    deadline = time.monotonic() + 10
    while not service.contexts._waiters and time.monotonic() < deadline:
        time.sleep(0.005)
    [[waiter]] = service.contexts._waiters.values()
    service.start()
    asking.join(60)
    assert answers[0].status == 500
    deadline = time.monotonic() + 30
    while not completed and time.monotonic() < deadline:  # on_applied left it to the request thread
        time.sleep(0.02)
    assert completed == [waiter.context_id] and not service.contexts._waiters


def test_contexts_waiting_on_a_watermark_never_make_another_tenants_context_pending(
    api: Api, service: Service
) -> None:
    from tests.conftest import OTHER_PROJECT_KEY

    other = Api(api.app, key=OTHER_PROJECT_KEY)
    api.brain("b1")
    other.brain("b2")
    other.remember("b2", "I keep bees on the roof.")
    assert service.wait_idle()
    service.derivation.stop()  # nothing more is derived: the first tenant's watermarks stay unreached
    watermark = api.post("/brains/b1/records", {"content": "The launch code is zebra."}).header("Brain-Watermark")
    for _ in range(8):
        waiting = api.post("/brains/b1/context", {"query": "launch code"}, headers={"Brain-Watermark": watermark})
        assert waiting.status == 202
    answered = other.post("/brains/b2/context", {"query": "bees", "mode": "thorough"})
    assert answered.status == 200 and answered.body["evidence"]
    service.start()
    assert service.wait_idle()


def _traces_settled(api: Api, brain: str, ids: list[str]) -> list[dict[str, Any]]:
    """The Contexts' traces once none says it waits for its watermark (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        traces = [api.get(f"/brains/{brain}/traces/{i}").body for i in ids]
        waiting = [t for t in traces if t["context"].get("reason") == "waiting for derivation to reach Brain-Watermark"]
        if not waiting or time.monotonic() > deadline:
            return traces
        time.sleep(0.05)


def test_a_project_s_contexts_waiting_for_a_watermark_are_bounded_and_each_one_completes(
    api: Api, service: Service
) -> None:
    """Each Context waiting for a Brain-Watermark holds its request until derivation reaches it: one key
    held 150 (1.2 GiB), and the completions past the project's queue of 64 were dropped, their traces
    pending for ever. Past 64 a project one more is 429 with Retry-After; every 202 completes."""
    from tests.conftest import OTHER_PROJECT_KEY

    other = Api(api.app, key=OTHER_PROJECT_KEY)
    api.brain("b1")
    other.brain("b2")
    service.derivation.stop()
    watermark = api.post("/brains/b1/records", {"content": "The launch code is zebra."}).header("Brain-Watermark")
    other_watermark = other.post("/brains/b2/records", {"content": "I keep bees."}).header("Brain-Watermark")
    asked = {"query": "launch code", "budget": {"ms": 1}}
    waiting = [api.post("/brains/b1/context", asked, headers={"Brain-Watermark": watermark}) for _ in range(64)]
    assert {r.status for r in waiting} == {202}
    refused = api.post("/brains/b1/context", asked, headers={"Brain-Watermark": watermark})
    err = assert_error(refused, 429, "too_many_requests")
    assert err["retry_after_seconds"] > 0 and refused.header("Retry-After") == "1"
    # another project's are its own
    assert other.post("/brains/b2/context", asked, headers={"Brain-Watermark": other_watermark}).status == 202
    service.start()
    assert service.wait_idle()
    traces = _traces_settled(api, "b1", [r.body["id"] for r in waiting])
    assert {t["context"]["status"] for t in traces} == {"ready"}
    assert api.post("/brains/b1/context", asked, headers={"Brain-Watermark": watermark}).status == 200


def test_a_context_waiting_for_a_watermark_holds_its_request_at_about_its_size(
    api: Api, service: Service
) -> None:
    """A waiting Context held its parsed request: a MiB of filter.subjects (recorded only, but echoed on
    the Context) was 8 MiB of Python objects for up to 120 s. It is held packed, and completed whole."""
    import tracemalloc

    api.brain("b1")
    service.derivation.stop()
    watermark = api.post("/brains/b1/records", {"content": "The launch code is zebra."}).header("Brain-Watermark")
    subjects = [f"{i:x}" for i in range(50_000)]
    asked = {"query": "launch code", "budget": {"ms": 1}, "filter": {"subjects": subjects}}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        waiting = [api.post("/brains/b1/context", asked, headers={"Brain-Watermark": watermark}) for _ in range(4)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert {r.status for r in waiting} == {202}
    size = len(json.dumps(subjects))
    assert held < 4 * 2 * size, (held, size)
    service.start()
    assert service.wait_idle()
    traces = _traces_settled(api, "b1", [r.body["id"] for r in waiting])
    assert [t["context"]["filter"]["recorded"]["subjects"] for t in traces] == [subjects] * 4


def test_a_waiting_context_its_project_s_full_queue_cannot_take_is_traced_as_not_completed(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiting Context whose completion the project's queue (shared with its thorough Contexts) refuses
    was only logged: its trace said it waited for the watermark for ever. It says to send it again."""
    api.brain("b1")
    service.derivation.stop()
    watermark = api.post("/brains/b1/records", {"content": "The launch code is zebra."}).header("Brain-Watermark")
    waiting = api.post("/brains/b1/context", {"query": "launch code", "budget": {"ms": 1}}, headers={"Brain-Watermark": watermark})
    assert waiting.status == 202
    monkeypatch.setattr(service.contexts.completions, "per_namespace", 0)  # full of thorough Contexts
    service.start()
    assert service.wait_idle()
    [trace] = _traces_settled(api, "b1", [waiting.body["id"]])
    assert trace["context"]["status"] == "pending"
    assert trace["context"]["reason"].endswith("send the Context again")
    assert not service.contexts._waiters


def test_an_expired_waiting_context_is_queued_for_completion_once(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep submitted an expired waiting Context again at every pass until a worker ran it: a backlog
    filled its project's queue with copies, and a refused completion is now traced as not completed."""
    import brainstore.service.context as contexts

    monkeypatch.setattr(contexts, "PENDING_WAIT_SECONDS", 0.0)
    monkeypatch.setattr(contexts, "SWEEP_SECONDS", 0.01)
    api.brain("b1")
    service.derivation.stop()
    watermark = api.post("/brains/b1/records", {"content": "The launch code is zebra."}).header("Brain-Watermark")
    submitted: list[Callable[[], Any]] = []
    monkeypatch.setattr(service.contexts.completions, "submit", lambda namespace, work: submitted.append(work))
    sweeps = threading.Semaphore(0)
    pause = service.contexts._stopping.wait
    monkeypatch.setattr(service.contexts._stopping, "wait", lambda seconds: sweeps.release() or pause(seconds))
    waiting = api.post("/brains/b1/context", {"query": "launch code", "budget": {"ms": 1}}, headers={"Brain-Watermark": watermark})
    assert waiting.status == 202
    while sweeps.acquire(blocking=False):  # passes of the sweep before the Context waited
        pass
    for _ in range(5):  # passes after it expired
        assert sweeps.acquire(timeout=10)
    assert len(submitted) == 1
    submitted[0]()
    reason = api.get(f"/brains/b1/traces/{waiting.body['id']}").body["context"]["reason"]
    assert reason.startswith("derivation did not reach the Brain-Watermark") and reason.endswith("send the Context again")


def test_indexed_chunks_are_kept_out_of_full_collections(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    import brainstore.service.evidence as evidence

    monkeypatch.setattr(evidence, "FREEZE_AFTER_CHUNKS", 3)
    gc.unfreeze()
    try:
        api.brain("b1", self_name="Alice")
        for text in ("I live in Lisbon.", "I adopted a dog named Max.", "My sister works at a bakery."):
            api.remember("b1", {"kind": "message", "text": text, "role": "user"})
        assert service.wait_idle()
        assert gc.get_freeze_count() > 0  # the index's chunks went to the permanent generation
        reply = api.post("/brains/b1/context", {"query": "where does Alice live?"})
        assert "Lisbon" in json.dumps(reply.body["evidence"])  # and are served as before
    finally:
        gc.unfreeze()


def test_a_brain_whose_index_is_being_built_holds_up_its_own_changes_and_no_other_tenants(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold Brain's first Context builds its index (seconds from files, minutes from the store at
    100,000 chunks) under that Brain's lock: its own writers wait, another tenant's derivation does not."""
    from tests.conftest import OTHER_PROJECT_KEY

    other = Api(api.app, key=OTHER_PROJECT_KEY)
    api.brain("b1")
    api.remember("b1", "I keep bees on the roof.")
    other.brain("b2")
    assert service.wait_idle()
    uid = service.store.get_brain("test:acme", "b1").uid
    service.evidence.drop(uid)  # cold: the next Context builds it
    building, release = threading.Event(), threading.Event()
    load_or_rebuild = service.evidence._load_or_rebuild

    def slow_build(brain_uid: str) -> Any:
        if brain_uid == uid:
            building.set()
            release.wait(60)
        return load_or_rebuild(brain_uid)

    monkeypatch.setattr(service.evidence, "_load_or_rebuild", slow_build)
    answers: list[Any] = []
    first_context = threading.Thread(target=lambda: answers.append(context(api, query="bees")))
    first_context.start()
    own_change = threading.Event()

    def change_b1() -> None:
        with service.evidence.mutating([uid]):
            own_change.set()

    try:
        assert building.wait(10)
        writer = threading.Thread(target=change_b1)
        writer.start()
        record_id = other.remember("b2", "I had tea with Sam today.").body["id"]
        deadline = time.monotonic() + 10
        while other.get(f"/brains/b2/records/{record_id}").body["status"] != "ready":
            assert time.monotonic() < deadline, "another tenant's Record waited for b1's index build"
            time.sleep(0.02)
        assert not own_change.is_set()  # b1's writer waits for the build it would race
    finally:
        release.set()
        first_context.join(30)
    writer.join(10)
    assert own_change.is_set()
    assert answers and answers[0]["evidence"]


def test_writing_one_brains_index_files_holds_up_no_other_brains_forget(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writing a 100,000-chunk index takes about 2 s; a forget deletes its Brain's files, and waits
    only for a save of that Brain (which it must follow, so the files never keep what it erased)."""
    from brainstore.retrieval.index import BrainIndex
    from tests.conftest import OTHER_PROJECT_KEY, open_engine

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    other = Api(api.app, key=OTHER_PROJECT_KEY)
    api.brain("b1")
    vault = api.remember("b1", "the vault code is 4471-zebra-kappa").body["id"]
    other.brain("b2")
    locker = other.remember("b2", "my locker code is 9921-lima").body["id"]
    assert service.wait_idle()
    service.evidence.save()
    api.remember("b1", "a change since the save, for the next one to write")
    assert service.wait_idle()
    uid = service.store.get_brain("test:acme", "b1").uid
    held = service.evidence.index(uid)
    saving, release = threading.Event(), threading.Event()
    save = BrainIndex.save

    def slow_save(index: BrainIndex, directory: Any) -> None:
        if index is held:
            saving.set()
            release.wait(60)
        save(index, directory)

    monkeypatch.setattr(BrainIndex, "save", slow_save)
    saver = threading.Thread(target=service.evidence._save_one, args=(uid,))
    saver.start()

    def forget(client: Api, path: str, done: list[int]) -> threading.Thread:
        thread = threading.Thread(target=lambda: done.append(client.delete(path).status))
        thread.start()
        return thread

    other_done: list[int] = []
    own_done: list[int] = []
    try:
        assert saving.wait(10)
        forget(other, f"/brains/b2/records/{locker}", other_done).join(20)
        assert other_done == [200]  # while b1's save still runs
        own = forget(api, f"/brains/b1/records/{vault}", own_done)
        own.join(0.5)
        assert own.is_alive() and not own_done  # b1's forget waits for the save it must follow
    finally:
        release.set()
        saver.join(30)
    own.join(20)
    assert own_done == [200]
    files = [p for p in (tmp_path / "index").rglob("*") if p.is_file()]
    assert not any(b"4471-zebra-kappa" in p.read_bytes() or b"9921-lima" in p.read_bytes() for p in files)
    service.stop()
    service.store.close()


def _resident_brains(service: Service) -> set[str]:
    with service.evidence._lock:
        return set(service.evidence._indexes)


def test_beyond_resident_chunks_the_least_recently_searched_index_leaves_memory_and_loads_again(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    facts = {"b1": "the vault code is 4471", "b2": "the locker code is 9921", "b3": "the gate code is 3050"}
    for brain, text in facts.items():
        api.brain(brain)
        api.remember(brain, text)
    assert service.wait_idle()
    uid = {brain: service.store.get_brain("test:acme", brain).uid for brain in facts}
    evidence = service.evidence
    from brainstore.service.evidence import INDEX_OVERHEAD_CHUNKS

    # what each index weighs against the budget: its chunks and what an index holds beside them
    sizes = {brain: len(evidence.index(uid[brain])) + INDEX_OVERHEAD_CHUNKS for brain in facts}
    first = context(api, "b1", query="vault code")["evidence"]
    context(api, "b2", query="locker code")
    context(api, "b3", query="gate code")  # least recently searched first: b1, b2, b3
    evidence.resident_chunks = sizes["b2"] + sizes["b3"]
    evidence._evict()
    assert _resident_brains(service) == {uid["b2"], uid["b3"]}

    # A Brain that is being written (its lock held) is passed over, never waited for.
    held, done = threading.Event(), threading.Event()

    def writing_b2() -> None:
        with evidence.mutating([uid["b2"]]):
            held.set()
            done.wait(30)

    writer = threading.Thread(target=writing_b2)
    writer.start()
    try:
        assert held.wait(10)
        evidence.resident_chunks = sizes["b3"]
        evidence._evict()  # b2 is older but busy: b3 would be the only other, and the newest stays
        assert _resident_brains(service) == {uid["b2"], uid["b3"]}
    finally:
        done.set()
        writer.join(10)
    evidence.resident_chunks = sizes["b2"] + sizes["b3"]

    # Searched again, b1 comes back from the files its eviction wrote (no rebuild from the store), with
    # the same evidence; loading it puts the memory over the limit, and b2, now the least recent, leaves.
    monkeypatch.setattr(evidence, "_rebuild", lambda brain_uid: pytest.fail("rebuilt from the store"))
    assert context(api, "b1", query="vault code")["evidence"] == first
    deadline = time.monotonic() + 10
    while _resident_brains(service) != {uid["b1"], uid["b3"]}:
        assert time.monotonic() < deadline, _resident_brains(service)
        time.sleep(0.02)
    service.stop()
    service.store.close()


def test_forgetting_the_last_record_of_an_index_not_in_memory_deletes_its_files(tmp_path: Any) -> None:
    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    api.brain("b1")
    api.brain("b2")
    secret = api.remember("b1", "the vault code is Quibblewort 4471").body["id"]
    api.remember("b2", "the locker code is 9921")
    assert service.wait_idle()
    uid = service.store.get_brain("test:acme", "b1").uid
    context(api, "b1", query="vault code")
    context(api, "b2", query="locker code")
    service.evidence.resident_chunks = 1
    service.evidence._evict()  # b1's index leaves memory for its files, as another tenant's load makes it
    assert uid not in _resident_brains(service) and (tmp_path / "index" / uid).exists()
    assert api.delete(f"/brains/b1/records/{secret}").status == 200
    # were kept for good: loaded for the forget, the index was rebuilt empty from the store, and an
    # index that removed nothing deleted no file
    assert not (tmp_path / "index" / uid).exists()
    assert context(api, "b1", query="vault code")["evidence"] == []
    service.stop()
    service.store.close()
    assert not any(b"Quibblewort" in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and "index" in p.parts)


def test_beyond_resident_chunks_a_tenant_searching_many_brains_gives_up_its_own_indexes_first(tmp_path: Any) -> None:
    from brainstore.service.evidence import INDEX_OVERHEAD_CHUNKS
    from tests.conftest import OTHER_PROJECT_KEY, open_engine

    service = open_engine("duckdb", tmp_path)
    quiet, busy = Api(create_app(service)), Api(create_app(service), OTHER_PROJECT_KEY)
    quiet.brain("a1")
    quiet.remember("a1", "the vault code is 4471")
    for n in range(1, 5):
        busy.brain(f"b{n}")
        busy.remember(f"b{n}", f"locker {n} has code {n}{n}{n}")
    assert service.wait_idle()
    uid = {"a1": service.store.get_brain("test:acme", "a1").uid}  # type: ignore[union-attr]
    uid |= {f"b{n}": service.store.get_brain("test:globex", f"b{n}").uid for n in range(1, 5)}  # type: ignore[union-attr]
    context(quiet, "a1", query="vault code")  # searched first: the least recently searched
    for n in range(1, 5):
        context(busy, f"b{n}", query="locker code")
    evidence = service.evidence
    size = {brain: len(evidence.index(u)) + INDEX_OVERHEAD_CHUNKS for brain, u in uid.items()}
    evidence.resident_chunks = size["a1"] + size["b3"] + size["b4"]
    evidence._evict()
    # the least recently searched would have been a1; the namespace holding the most gives up instead
    assert _resident_brains(service) == {uid["a1"], uid["b3"], uid["b4"]}
    evidence.resident_chunks = size["b4"]
    evidence._evict()  # over even alone: the busy tenant's newest stays, the quiet one's goes last
    assert _resident_brains(service) == {uid["b4"]}
    service.stop()
    service.store.close()


def test_preloading_stops_at_resident_chunks_with_the_most_recently_saved_indexes(tmp_path: Any) -> None:
    import os

    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    for brain in ("b1", "b2", "b3"):
        api.brain(brain)
        api.remember(brain, f"a note about {brain}")
    assert service.wait_idle()
    uid = {brain: service.store.get_brain("test:acme", brain).uid for brain in ("b1", "b2", "b3")}
    size = len(service.evidence.index(uid["b2"]))
    service.stop()
    service.store.close()
    for age, brain in enumerate(("b2", "b3", "b1")):  # b2 saved last
        os.utime(tmp_path / "index" / uid[brain], (1e9 - age, 1e9 - age))

    service = open_engine("duckdb", tmp_path, resident_chunks=size)
    try:
        preloader = service.contexts._preloader
        assert preloader is not None
        preloader.join(60)
        assert _resident_brains(service) == {uid["b2"]}
        assert context(Api(create_app(service)), "b3", query="note")["evidence"]  # the rest load when searched
        assert uid["b3"] in _resident_brains(service)
    finally:
        service.stop()
        service.store.close()


def test_a_stop_writes_only_the_indexes_changed_since_their_files_were_written(tmp_path: Any) -> None:
    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    for brain in ("b1", "b2"):
        api.brain(brain)
        api.remember(brain, f"a note about {brain}")
    assert service.wait_idle()
    uid = {brain: service.store.get_brain("test:acme", brain).uid for brain in ("b1", "b2")}
    service.stop()
    service.store.close()
    graphs = {brain: tmp_path / "index" / uid[brain] / "vectors.hnsw" for brain in uid}
    written = {brain: graph.stat().st_mtime_ns for brain, graph in graphs.items()}

    service = open_engine("duckdb", tmp_path)
    try:
        api = Api(create_app(service))
        for brain in ("b1", "b2"):  # both loaded from their files
            assert context(api, brain, query="note")["evidence"]
        api.remember("b2", "another note about b2")
        assert service.wait_idle()
    finally:
        service.stop()
        service.store.close()
    assert graphs["b1"].stat().st_mtime_ns == written["b1"]  # unchanged: not written again
    assert graphs["b2"].stat().st_mtime_ns != written["b2"]
    service = open_engine("duckdb", tmp_path)
    try:
        assert len(service.evidence.index(uid["b2"])) == 2
    finally:
        service.stop()
        service.store.close()


def test_resident_chunks_is_never_negative() -> None:
    with pytest.raises(ValueError, match="resident_chunks"):
        Config(engine="memory", resident_chunks=-1)


def test_a_project_with_a_full_queue_of_thorough_contexts_is_told_to_retry(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thorough Context its project can queue no more of is a 429 with Retry-After (it was a 500)."""
    api.brain("b1")
    api.remember("b1", "I keep bees on the roof.")
    assert service.wait_idle()
    monkeypatch.setattr(service.contexts.completions, "per_namespace", 0)
    busy = api.post("/brains/b1/context", {"query": "bees", "mode": "thorough", "budget": {"ms": 60_000}})
    err = assert_error(busy, 429, "too_many_requests")
    assert err["retry_after_seconds"] > 0 and busy.header("Retry-After") == "1"
    assert api.post("/brains/b1/context", {"query": "bees", "mode": "thorough"}).status == 200  # within the sync budget


def test_a_queued_context_of_a_forgotten_brain_leaves_no_trace_in_the_brain_made_again(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thorough Context still queued when its Brain is forgotten never writes its trace: the Brain
    made again under the same id would show the old one's query and evidence."""
    import brainstore.service.context as contexts

    api.brain("b1")
    api.remember("b1", "The launch code is zebra.")
    assert service.wait_idle()
    monkeypatch.setattr(contexts, "THOROUGH_SYNC_MS", 50)
    release, running = threading.Event(), threading.Semaphore(0)

    def hold() -> None:
        running.release()
        release.wait()

    finished = threading.Event()
    assemble = service.contexts._assemble_and_trace

    def assembled(*args: Any) -> Any:
        try:
            return assemble(*args)
        finally:
            finished.set()

    monkeypatch.setattr(service.contexts, "_assemble_and_trace", assembled)
    for _ in range(2):  # both workers of the completions pool held by another project's work
        service.contexts.completions.submit("elsewhere", hold)
    assert running.acquire(timeout=10) and running.acquire(timeout=10)
    queued = api.post("/brains/b1/context", {"query": "launch code", "mode": "thorough", "budget": {"ms": 60_000}})
    assert queued.status == 202 and not finished.is_set()
    assert api.delete("/brains/b1").status == 200
    api.brain("b1")
    release.set()
    assert finished.wait(30)  # the queued Context ran once its Brain was gone
    assert_error(api.get(f"/brains/b1/traces/{queued.body['id']}"), 404, "trace_not_found")
    assert all(t["id"] != queued.body["id"] for t in api.get("/brains/b1/traces").body["data"])


def test_the_chunks_held_are_counted_as_indexes_load_grow_shrink_and_leave(tmp_path: Any) -> None:
    """The budget's count of what the indexes hold is kept as they change, not summed over every index
    (1.7 ms under the lock every Context takes, with 20,000 held): it stays what a recount finds."""
    from brainstore.service.evidence import INDEX_OVERHEAD_CHUNKS
    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    evidence = service.evidence

    def recounted() -> int:
        with evidence._lock:
            held = list(evidence._indexes.values())
        return sum(len(index) for index in held) + INDEX_OVERHEAD_CHUNKS * len(held)

    def counted() -> int:
        with evidence._lock:
            return evidence._held_chunks()

    try:
        api = Api(create_app(service))
        written = {}
        for n in range(4):
            api.brain(f"b{n}")
            written[n] = [api.remember(f"b{n}", f"Note {k} of {n}: the garden needs water.").body["id"] for k in range(3)]
        assert service.wait_idle()
        for n in range(4):
            assert context(api, f"b{n}", query="garden")["evidence"]  # loaded (or built)
        assert counted() == recounted() > 0
        api.remember("b0", "One more: the tomatoes are ripe. The basil is too.")  # grows a held index
        assert api.delete(f"/brains/b1/records/{written[1][0]}").status == 200  # shrinks one
        assert api.delete("/brains/b2").status == 200  # drops one
        assert service.wait_idle()
        assert counted() == recounted()
        evidence.resident_chunks = recounted() - 1
        evidence._evict()  # one leaves
        assert counted() == recounted() and len(_resident_brains(service)) == 2
        assert context(api, "b3", query="garden")["evidence"] and context(api, "b0", query="tomatoes")["evidence"]
        assert counted() == recounted()
    finally:
        service.stop()
        service.store.close()


def test_an_eviction_makes_room_for_the_brains_loaded_after_it(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Choosing what leaves visits every held index: Brains loaded one after another past the bound are
    made room for a 64th of it at a time, not one eviction each."""
    from datetime import UTC, datetime

    from brainstore.domain import Brain
    from brainstore.service.evidence import EVICTION_HEADROOM, INDEX_OVERHEAD_CHUNKS
    from tests.conftest import open_engine

    service = open_engine("duckdb", tmp_path)
    evidence = service.evidence
    uids = [f"brn_many{n:04d}" for n in range(131)]
    try:
        with service.store.atomic():
            for n, uid in enumerate(uids):
                service.store.insert_brain(Brain(uid, f"test:t{n % 3}", f"b{n}", None, None, None, datetime(2024, 1, 1, tzinfo=UTC)))
        for uid in uids[:128]:
            evidence.index(uid)  # empty: each weighs what an index holds beside its chunks
        evidence.resident_chunks = 128 * INDEX_OVERHEAD_CHUNKS
        assert int(evidence.resident_chunks * EVICTION_HEADROOM) == 2 * INDEX_OVERHEAD_CHUNKS
        evictions = []
        evict = evidence._evict
        monkeypatch.setattr(evidence, "_evict", lambda: (evictions.append(1), evict()))
        evidence.index(uids[128])  # one over: it and two more Brains' worth leave
        deadline = time.monotonic() + 10
        while len(_resident_brains(service)) != 126 or evidence._evicting.locked():
            assert time.monotonic() < deadline, len(_resident_brains(service))
            time.sleep(0.02)
        evidence.index(uids[129])
        evidence.index(uids[130])  # at the bound again, not over it
        assert len(_resident_brains(service)) == 128 and evictions == [1]
        assert {uids[128], uids[129], uids[130]} <= _resident_brains(service)
    finally:
        service.stop()
        service.store.close()


def test_brains_of_a_chunk_each_count_what_an_index_holds_against_resident_chunks(tmp_path: Any) -> None:
    """An index costs memory beside its chunks: a budget counted in chunks alone held every one of a
    tenant's many one-Record Brains."""
    from brainstore.service.evidence import INDEX_OVERHEAD_CHUNKS
    from tests.conftest import open_engine

    assert INDEX_OVERHEAD_CHUNKS > 0
    service = open_engine("duckdb", tmp_path, resident_chunks=6)  # six chunks, in six indexes
    try:
        api = Api(create_app(service))
        for n in range(6):
            api.brain(f"b{n}")
            api.remember(f"b{n}", f"note {n} about the garden")
        assert service.wait_idle()
        for n in range(6):
            assert context(api, f"b{n}", query="garden")["evidence"]
        deadline = time.monotonic() + 10
        while len(_resident_brains(service)) > 1:  # the most recently searched always stays
            assert time.monotonic() < deadline, _resident_brains(service)
            time.sleep(0.02)
    finally:
        service.stop()
        service.store.close()


@pytest.mark.parametrize("waits_for", ["the-sync-budget", "a-watermark"])
def test_a_context_completed_as_its_202_is_written_is_read_ready_not_pending(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch, waits_for: str
) -> None:
    """The request gives up waiting (past the synchronous budget of a thorough Context, or for its
    Brain-Watermark) and writes its 202's pending trace; the background completion, done just before
    that, had held the ready trace already. The pending one replaced it: getTrace, which the 202 says
    to poll, answered pending until the trace left the ring."""
    import brainstore.service.context as contexts

    api.brain("b1")
    api.remember("b1", "I keep bees on the roof.")
    assert service.wait_idle()
    completed = threading.Event()
    assemble = service.contexts._assemble_and_trace

    def assembly(*args: Any) -> Any:
        if waits_for == "the-sync-budget":
            time.sleep(0.2)  # past the synchronous budget
        try:
            return assemble(*args)
        finally:
            completed.set()

    pending = service.contexts._pending

    def pending_once_completed(*args: Any) -> Any:
        if waits_for == "a-watermark":
            service.start()  # derivation reaches the watermark once the request gave up on it
        completed.wait(10)  # the 202 is written after the background completion held its trace
        return pending(*args)

    monkeypatch.setattr(service.contexts, "_assemble_and_trace", assembly)
    monkeypatch.setattr(service.contexts, "_pending", pending_once_completed)
    headers = {}
    if waits_for == "the-sync-budget":
        monkeypatch.setattr(contexts, "THOROUGH_SYNC_MS", 50)
        body = {"query": "bees", "mode": "thorough", "budget": {"ms": 60_000}}
    else:
        service.derivation.stop()  # derivation held: the watermark cannot be reached yet
        write = api.post("/brains/b1/records", {"content": "The hives swarmed in May."})
        headers = {"Brain-Watermark": write.header("Brain-Watermark")}
        body = {"query": "bees hives", "budget": {"ms": 300}}  # waits 180 ms inline
    reply = api.post("/brains/b1/context", body, headers=headers)
    assert reply.status == 202 and completed.is_set()
    trace = api.get(f"/brains/b1/traces/{reply.body['id']}")
    assert trace.status == 200 and trace.body["context"]["status"] == "ready", trace.body
    assert trace.body["context"]["evidence"]
