"""One ledger for every served component, the evidence window behind memories, filters on the Profile,
true unknowns, and the thorough answer."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brainstore import kernels
from brainstore.service import Service
from brainstore.service.context import Ledger
from brainstore.service.visibility import Visibility
from tests.conftest import Api

TURNS = [
    ("2024-03-01T09:00:00Z", "chat", "I started learning the cello last week."),
    ("2024-03-02T09:00:00Z", "chat", "I moved to Lisbon in February."),
    ("2024-03-03T09:00:00Z", "email", "I work at Acme as an engineer."),
    ("2024-03-04T09:00:00Z", "email", "My sister Maria lives in Porto and loves sushi."),
]


@pytest.fixture
def alice(api: Api, service: Service) -> Api:
    api.brain("alice", self_name="Alice")
    for at, source, text in TURNS:
        api.remember("alice", {"kind": "message", "role": "user", "text": text}, occurred_at=at, source={"name": source})
    api.post("/brains/alice/objects", {"type": "pref", "key": "theme", "value": {"mode": "dark", "font": "serif"}})
    assert service.wait_idle()
    return api


def ctx(api: Api, **body: Any) -> dict[str, Any]:
    r = api.post("/brains/alice/context", body)
    assert r.status == 200, r.body
    return r.body


def served_tokens(context: dict[str, Any]) -> int:
    """What the ledger must have charged: the tokens of everything served (at most; statements and
    quotes are charged, and a quote already served as evidence only once)."""
    texts = [e["text"] for e in context["evidence"]]
    texts += [m["statement"] for m in context["memories"]]
    texts += [line["statement"] for line in (context["profile"] or {}).get("lines", [])]
    if context["answer"]:
        texts.append(context["answer"]["text"])
    if context["structured"] and context["structured"]["status"] == "ready":
        texts.append(json.dumps(context["structured"]["value"], ensure_ascii=False))
    return sum(kernels.count_tokens(texts)) if texts else 0


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    tokens=st.integers(min_value=1, max_value=400),
    include=st.lists(st.sampled_from(["evidence", "memories", "objects", "profile"]), max_size=4, unique=True),
    mode=st.sampled_from(["fast", "thorough"]),
    schema=st.booleans(),
)
def test_every_served_component_is_in_the_one_ledger(
    alice: Api, tokens: int, include: list[str], mode: str, schema: bool
) -> None:
    body: dict[str, Any] = {"query": "Where does Alice live and what does she play?", "mode": mode, "budget": {"tokens": tokens}}
    if include:
        body["include"] = include
    if schema:
        body["schema"] = {"type": "object", "properties": {"lives_in": {"type": "string"}}}
    context = ctx(alice, **body)
    used = context["budget"]["tokens"]["used"]
    assert used <= tokens
    assert served_tokens(context) <= used or not context["evidence"]


@pytest.fixture
def friends(api: Api, service: Service) -> Api:
    """A Brain of 45 short Memories, more than a small budget takes."""
    api.brain("friends", self_name="Ann")
    towns = ["Porto", "Faro", "Braga", "Evora", "Lagos", "Sintra", "Tavira", "Viseu", "Leiria"]
    for part in range(3):
        text = " ".join(f"My friend Zed{part}{i} lives in {towns[(part + i) % len(towns)]}." for i in range(15))
        api.remember("friends", {"kind": "message", "role": "user", "text": text}, occurred_at=f"2024-03-0{part + 1}T09:00:00Z")
    # served as redactions, whose quotes are far shorter than the words they withhold
    far = "in the old house by the river that her grandmother built before the war and painted blue every spring"
    text = " ".join(f"My friend Zed9{i} lives in {town}, {far}." for i, town in enumerate(["Coimbra", "Aveiro", "Guarda"]))
    api.remember("friends", {"kind": "message", "role": "user", "text": text}, occurred_at="2024-03-04T09:00:00Z", visibility="redacted_summary")
    assert service.wait_idle()
    return api


@pytest.mark.parametrize("include", [["memories"], ["evidence", "memories"]])
def test_the_memories_a_budget_takes_are_those_charging_every_one_would_take(friends: Api, include: list[str]) -> None:
    """A Memory whose statement has more runs of non-space characters than the budget has tokens left is
    passed over without its view or its count: the Context is the one charging each of them gives, at
    every budget up to all of them."""
    taken = set()
    for tokens in range(1, 600, 3):  # two Contexts a budget: within the key's 600 requests a minute
        # (ms at its most: a loaded machine ran out of the default before the lanes, and the Context
        # that views every Memory served none at 391 tokens in CI)
        body = {"query": "Where do my friends live?", "budget": {"tokens": tokens, "ms": 60_000}, "include": include}
        fast = friends.post("/brains/friends/context", body).body
        with patch.object(Ledger, "may_fit", lambda self, *texts: True):
            charged = friends.post("/brains/friends/context", body).body
        assert [m["id"] for m in fast["memories"]] == [m["id"] for m in charged["memories"]], tokens
        assert fast["budget"]["tokens"]["used"] == charged["budget"]["tokens"]["used"], tokens
        taken.update((m["id"], m.get("redacted", False)) for m in fast["memories"])
    assert len(taken) >= 5
    assert any(redacted for _, redacted in taken)


@settings(max_examples=500, deadline=None)
@given(texts=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40), max_size=3), remaining=st.integers(0, 40))
def test_texts_that_fit_are_never_passed_over(texts: list[str], remaining: int) -> None:
    ledger = Ledger(remaining)
    assert ledger.may_fit(*texts) or not ledger.charge(*texts)


def test_a_context_serves_objects_from_the_brains_first_by_type_and_key(alice: Api) -> None:
    """At most CONTEXT_OBJECTS objects are read (a tenant may write any number), and the bound that
    passes an object over untokenized takes the same objects as charging each would."""
    for key in ("b", "a", "d", "c"):
        assert alice.post("/brains/alice/objects", {"type": "note", "key": key, "value": {"text": f"{key} " * 20}}).status == 201
    with patch("brainstore.service.context.CONTEXT_OBJECTS", 3):
        served = ctx(alice, query="Alice", include=["objects"])["objects"]
    assert [(o["type"], o["key"]) for o in served] == [("note", "a"), ("note", "b"), ("note", "c")]
    taken = set()
    for tokens in range(1, 200, 6):
        body = {"query": "Alice", "include": ["objects"], "budget": {"tokens": tokens}}
        fast = ctx(alice, **body)
        with patch.object(Ledger, "may_fit", lambda self, *texts: True):
            charged = ctx(alice, **body)
        assert [o["id"] for o in fast["objects"]] == [o["id"] for o in charged["objects"]], tokens
        assert fast["budget"]["tokens"]["used"] == charged["budget"]["tokens"]["used"], tokens
        taken.update(o["key"] for o in fast["objects"])
    assert len(taken) >= 3


def test_a_context_reads_no_object_value_its_budget_could_not_hold(alice: Api, service: Service) -> None:
    """A tenant's Objects of a megabyte each were read, parsed and serialized whole by every Context
    that included objects, whatever its budget: seconds and hundreds of MiB of the worker each."""
    for key in ("b", "d"):
        big = {"type": "blob", "key": key, "value": {"rows": [[i, i, i] for i in range(30_000)]}}
        assert alice.post("/brains/alice/objects", big).status == 201
    small = {"type": "blob", "key": "c", "value": {"note": "a short value"}}
    assert alice.post("/brains/alice/objects", small).status == 201
    read: list[int] = []
    list_objects = service.store.list_objects

    def reading(*args: Any, **kwargs: Any) -> Any:
        found = list_objects(*args, **kwargs)
        read.extend(len(json.dumps(o.value, separators=(",", ":"), ensure_ascii=False).encode()) for o in found)
        return found

    with patch.object(service.store, "list_objects", reading):
        served = ctx(alice, query="Alice", include=["objects"], budget={"tokens": 2000})["objects"]
    assert [(o["type"], o["key"]) for o in served] == [("blob", "c"), ("pref", "theme")]
    assert read and sum(read) <= 16 * 2000


def test_a_thorough_answer_fits_the_budget_and_is_counted(alice: Api) -> None:
    context = ctx(alice, query="What instrument is Alice learning?", mode="thorough", budget={"tokens": 50})
    used = context["budget"]["tokens"]["used"]
    assert used <= 50
    if context["answer"]:
        assert kernels.token_count(context["answer"]["text"]) + sum(
            kernels.count_tokens([e["text"] for e in context["evidence"]])
        ) <= used


def test_a_structured_value_is_served_only_within_the_budget(alice: Api) -> None:
    schema = {"type": "object", "properties": {"lives_in": {"type": "string"}}}
    tiny = ctx(alice, query="Where does Alice live?", schema=schema, budget={"tokens": 1})
    assert tiny["budget"]["tokens"]["used"] <= 1
    assert tiny["structured"]["status"] == "unavailable" or tiny["structured"]["value"] in ({}, None)


def test_memories_without_evidence_come_from_the_evidence_window(alice: Api) -> None:
    with_evidence = ctx(alice, query="Where did Alice move?", include=["evidence", "memories"])
    only_memories = ctx(alice, query="Where did Alice move?", include=["memories"])
    assert only_memories["evidence"] == [] and only_memories["citations"] == []
    assert only_memories["memories"], only_memories
    assert {m["id"] for m in only_memories["memories"]} >= {m["id"] for m in with_evidence["memories"]}
    assert not any("no eligible evidence" in u.get("reason", "") for u in only_memories["unknowns"])


def test_a_memory_said_twice_word_for_word_is_in_the_window_with_one_of_the_two(alice: Api, service: Service) -> None:
    alice.remember("alice", {"kind": "message", "role": "user", "text": "I moved to Lisbon in February."},
                   occurred_at="2024-03-05T09:00:00Z")  # fmt: skip
    assert service.wait_idle()
    context = ctx(alice, query="Where did Alice move?", include=["evidence", "memories"])
    served = {e["record_id"] for e in context["evidence"] if "Lisbon" in e["text"]}
    assert len(served) == 1  # the duplicate is not packed twice
    lisbon = [m for m in context["memories"] if "Lisbon" in m["statement"]]
    assert len(lisbon) == 1 and len(lisbon[0]["citations"]) == 2


def test_filters_apply_to_the_profile(alice: Api) -> None:
    everything = ctx(alice, query="Alice", include=["profile"])
    assert everything["profile"]["lines"]
    emails = ctx(alice, query="Alice", include=["profile"], filter={"sources": ["email"]})
    assert emails["profile"]["lines"]
    assert len(emails["profile"]["lines"]) < len(everything["profile"]["lines"])
    nothing = ctx(alice, query="Alice", include=["evidence", "profile"], filter={"sources": ["nope"]})
    assert nothing["evidence"] == [] and nothing["profile"]["lines"] == []
    early = ctx(alice, query="Alice", include=["profile"], filter={"until": "2024-03-01T23:59:59Z"})
    assert all("cello" in line["statement"] for line in early["profile"]["lines"]) and early["profile"]["lines"]


@pytest.mark.parametrize("tokens", [60, 200, 400])
def test_a_profile_in_a_context_builds_the_views_of_the_lines_its_budget_holds_only(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch, tokens: int
) -> None:
    """A Context with the profile built the view of every line of the self, then charged each: 12,000
    lines took 1.6-2.4 s (the GIL held) to serve the 43 its budget held. A line charging surely refuses
    is passed over unviewed, judged on the quotes of the citations it keeps (filter.sources here)."""
    api.brain("carol", self_name="Carol")
    text = " ".join(f"I like the color number {n} very much." for n in range(60))
    api.remember("carol", {"kind": "message", "role": "user", "text": text}, source={"name": "chat"})
    assert service.wait_idle()
    viewed: list[str] = []
    real = Visibility.view
    monkeypatch.setattr(Visibility, "view", lambda self, memory, *a: viewed.append(memory.memory_id) or real(self, memory, *a))
    body = {"query": "colors", "include": ["profile"], "budget": {"tokens": tokens}, "filter": {"sources": ["chat"]}}
    lines = api.post("/brains/carol/context", body).body["profile"]["lines"]
    assert 0 < len(lines) < 60
    assert len(viewed) == len(lines)


def test_a_budget_that_runs_out_says_so(alice: Api) -> None:
    context = ctx(alice, query="Where does Alice live?", budget={"ms": 1})
    if context["budget"]["ms"]["cut_lanes"]:
        reasons = " ".join(u.get("reason", "") for u in context["unknowns"])
        assert "ran out" in reasons and "no eligible evidence was found" not in reasons


def test_the_thorough_answer_is_composed_sentences_each_cited(alice: Api) -> None:
    context = ctx(alice, query="Which instrument did Alice start learning?", mode="thorough")
    answer = context["answer"]
    assert answer is not None and answer["composer"] == "extractive"
    assert "cello" in answer["text"]
    assert "Porto" not in answer["text"] and "Acme" not in answer["text"]  # evidence, not the answer
    cited = {c["id"] for c in context["citations"]}
    assert answer["citations"] and set(answer["citations"]) <= cited
    for citation_id in answer["citations"]:
        assert f"[{citation_id}]" in answer["text"]
    # one header per passage, never the same header twice in a row
    assert answer["text"].count("Alice (") == len(answer["citations"])


def test_trace_pages_carry_the_cursor_they_announce(alice: Api) -> None:
    ids = [ctx(alice, query=f"question {i}")["id"] for i in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = alice.get("/brains/alice/traces", params=params).body
        assert page["has_more"] == (page["next_cursor"] is not None)
        seen += [t["id"] for t in page["data"]]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert [i for i in seen if i.startswith("ctx_")] == list(reversed(ids))


def test_a_schema_is_filled_from_cited_material_each_value_with_its_source(alice: Api) -> None:
    schema = {"type": "object", "properties": {"instrument": {"type": "string"}, "city": {"type": "string"}}}
    context = ctx(alice, query="What does Alice play and where does she live?", schema=schema)
    structured = context["structured"]
    assert structured["status"] == "ready", structured
    assert structured["value"] == {"instrument": "cello", "city": "Lisbon"}
    citation_ids = {c["id"] for c in context["citations"]}
    for name in ("instrument", "city"):
        sources = structured.get("citations", {}).get(name, []) + structured.get("memory_ids", {}).get(name, [])
        assert sources, name
        assert all(s in citation_ids or s.startswith("mem_") for s in sources)
    unfilled = ctx(alice, query="Alice", schema={"type": "object", "properties": {"blood_type": {"type": "string"}}})
    assert "blood_type" in {u.get("term") for u in unfilled["unknowns"]}


def test_a_schema_the_selfs_facts_decide_views_no_one_elses_memory(alice: Api, service: Service) -> None:
    """The self's facts are the only ones filled from when there are any: the other people's Memories
    are not viewed or read for it (on a Brain of 20,000 of them that was 60 ms a Context)."""
    viewed: list[str | None] = []
    servable = service.memories.servable

    def spy(brain: Any, memories: list[Any], **kw: Any) -> Any:
        viewed.extend(m.owner for m in memories)
        return servable(brain, memories, **kw)

    owners = {m["owner"] for m in alice.get("/brains/alice/memories").body["data"]}
    assert {"Alice", "Maria"} <= owners, owners
    with patch.object(service.memories, "servable", spy):
        context = ctx(alice, query="Where do I live?", schema={"type": "object", "properties": {"city": {"type": "string"}}})
    assert context["structured"]["value"] == {"city": "Lisbon"}, context["structured"]
    assert viewed and set(viewed) == {"Alice"}, viewed


def test_a_hostile_pattern_runs_in_linear_time_and_nothing_is_fetched(alice: Api, tmp_path: Any) -> None:
    import time

    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "object", "properties": {"leak": {"const": "the registry"}}}')
    evil = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}
    started = time.monotonic()
    context = ctx(alice, query="a" * 40 + "b", schema=evil)
    assert time.monotonic() - started < 5  # a backtracking engine takes ages here; this one, ms
    assert context["structured"]["status"] in ("ready", "unavailable")
    for ref in ("http://127.0.0.1:9/x", f"file://{secret}", "other.json#/x"):
        refused = ctx(alice, query="Alice", schema={"type": "object", "properties": {"x": {"$ref": ref}}})
        assert refused["structured"]["status"] == "unavailable" and "$ref" in refused["structured"]["reason"]
        assert "registry" not in json.dumps(refused)


def test_filters_apply_to_the_structured_value(alice: Api) -> None:
    """A value comes only from Memories citing a Record the filter admits, as a profile line does:
    Lisbon is said in chat on 2 March, Acme in an email on 3 March."""
    properties = {"city": {"type": "string"}, "instrument": {"type": "string"}, "employer": {"type": "string"}}
    query = "What does Alice play, where does she live and work?"

    def value(**flt: Any) -> dict[str, Any]:
        return ctx(alice, query=query, schema={"type": "object", "properties": properties}, filter=flt)["structured"]["value"]

    assert value() == {"city": "Lisbon", "instrument": "cello", "employer": "Acme"}
    assert value(sources=["chat"]) == {"city": "Lisbon", "instrument": "cello"}
    for emails in (value(sources=["email"]), value(since="2024-03-03T00:00:00Z")):
        assert emails["employer"] == "Acme" and emails.get("city") != "Lisbon" and "instrument" not in emails
    assert value(until="2024-03-02T00:00:00Z") == {"instrument": "cello"}


def test_a_sentence_of_two_facts_is_served_once_and_fills_both(api: Api, service: Service) -> None:
    # "I'm a nurse at Mercy Hospital" is her job and her employer, two Memories of one statement: the
    # employer was not derived, and its words must not cost the budget twice
    api.brain("nina", self_name="Nina")
    text = "I'm a nurse at Mercy Hospital."
    api.remember("nina", {"kind": "message", "role": "user", "text": text}, occurred_at="2024-03-01T09:00:00Z")
    assert service.wait_idle()
    listed = api.get("/brains/nina/memories").body["data"]
    assert sorted(m["attribute"] for m in listed) == ["job", "works_at"], listed
    schema = {"type": "object", "properties": {"employer": {"type": "string"}, "job": {"type": "string"}}}
    r = api.post("/brains/nina/context", {"query": "Where does Nina work?", "include": ["memories", "profile"], "schema": schema})
    assert r.status == 200, r.body
    context = r.body
    assert [m["statement"] for m in context["memories"]] == ["Nina is a nurse at Mercy Hospital."]
    assert [line["statement"] for line in context["profile"]["lines"]] == ["Nina is a nurse at Mercy Hospital."]
    assert context["structured"]["status"] == "ready"
    assert context["structured"]["value"]["employer"].casefold() == "mercy hospital"
