"""Derivation with the LLM extractor on every engine, the model a local fake server: what reaches the
Memories (verbatim citations, owners the attribution gate allows), and what happens to a Record when
the model is down (it waits, processing) or answers garbage (failed, kept, derived again by rederive)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from brainstore.api.app import create_app
from brainstore.app import rederive_brains
from brainstore.derive import LLMExtractor
from tests.conftest import Api
from tests.fake_model import FakeModel, fake_model, proposal
from tests.reopen import Engine, reopenable_engine  # noqa: F401  (the fixture "engine")

TEXT = "Caroline, you're so brave to speak up. I ran a charity race for mental health last Saturday."


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake_model() as fake:
        fake.answers[TEXT] = [
            proposal("you're so brave to speak up", "Caroline is brave to speak up.", "Caroline", "Caroline"),
            proposal(
                "I ran a charity race for mental health last Saturday",
                "Melanie ran a charity race for mental health on 4 May 2024.",
                "Melanie",
                "Melanie",
                valid_from="2024-05-04",
            ),
            proposal("I ran the Boston marathon", "Melanie ran the Boston marathon.", "Melanie", "Melanie"),
        ]
        yield fake


def llm(model: FakeModel, **kw: object) -> LLMExtractor:
    options: dict[str, object] = {"max_retries": 1, "backoff": 0.01, "timeout": 5.0}
    options.update(kw)
    return LLMExtractor(model.url, "fake-model", **options)  # type: ignore[arg-type]


def post_turn(api: Api) -> str:
    api.brain("b1", self_name="Caroline")
    content = {"kind": "message", "text": TEXT, "speaker": "Melanie"}
    record: str = api.remember("b1", content, occurred_at="2024-05-08T13:56:00Z").body["id"]
    return record


def memories(api: Api) -> list[dict[str, object]]:
    body = api.get("/brains/b1/memories", params={"limit": "100"}).body
    data: list[dict[str, object]] = body["data"]
    return data


def test_model_memories_cite_verbatim_spans_and_never_give_the_self_another_speakers_words(
    engine: Engine, model: FakeModel
) -> None:
    service = engine.open(llm(model))
    api = Api(create_app(service))
    record = post_turn(api)
    assert service.wait_idle()
    assert api.get(f"/brains/b1/records/{record}").body["status"] == "ready"
    found = memories(api)
    assert sorted(m["statement"] for m in found) == [  # type: ignore[type-var]
        "Caroline is brave to speak up.",
        "Melanie ran a charity race for mental health on 4 May 2024.",
    ]  # the Boston marathon was never said: dropped
    for memory in found:
        (citation,) = memory["citations"]  # type: ignore[misc]
        assert TEXT[citation["span"]["start"] : citation["span"]["end"]] == citation["quote"]
        assert citation["record_id"] == record
    owners = {m["statement"]: m["owner"] for m in found}
    assert owners["Caroline is brave to speak up."] is None  # never Caroline's own
    assert owners["Melanie ran a charity race for mental health on 4 May 2024."] == "Melanie"
    profile = api.get("/brains/b1/profile").body
    assert "brave" not in str(profile)


def test_an_unreachable_model_leaves_the_record_processing_until_it_answers(
    engine: Engine, model: FakeModel
) -> None:
    model.script.extend([("status", 503), ("status", 503)])  # the first attempt and its one retry
    service = engine.open(llm(model))
    api = Api(create_app(service))
    record = post_turn(api)
    deadline = time.monotonic() + 10
    while len(model.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(model.requests) == 2
    # unavailable, not failed: the Record waits in the queue (the worker tries again after 1 s)
    assert api.get(f"/brains/b1/records/{record}").body["status"] == "processing"
    assert service.wait_idle(timeout=30)
    ready = api.get(f"/brains/b1/records/{record}").body
    assert ready["status"] == "ready" and len(ready["memory_ids"]) == 2
    assert len(model.requests) == 3


def test_garbage_from_the_model_fails_the_record_which_keeps_its_text_and_rederive_derives_it(
    engine: Engine, model: FakeModel
) -> None:
    model.script.extend([("content", "not json at all")] * 2)
    service = engine.open(llm(model))
    api = Api(create_app(service))
    record = post_turn(api)
    assert service.wait_idle()
    failed = api.get(f"/brains/b1/records/{record}").body
    assert failed["status"] == "failed" and failed["error"]["code"] == "extraction_failed"
    assert failed["content"]["text"] == TEXT  # nothing is lost
    brain = service.store.get_brain("test:acme", "b1")
    assert brain is not None
    totals = rederive_brains(service, engine.config, [brain.uid])
    assert totals["requeued"] == 1
    assert service.wait_idle()
    again = api.get(f"/brains/b1/records/{record}").body
    assert again["status"] == "ready" and len(again["memory_ids"]) == 2
    assert len(memories(api)) == 2


@pytest.mark.parametrize(
    ("bad", "kept"),
    [
        ({"statement": "Melanie ran \x00 a race."}, False),
        ({"statement": "Melanie ran \ud800 a race."}, False),
        ({"subject": "Mel\x00anie"}, False),
        ({"attribute": "hobby", "value": "running\x00"}, False),
        ({"valid_from": "0001-01-01T00:00:00+05:00"}, True),  # in year 0 in UTC
        ({"valid_to": "9999-12-31T23:00:00-05:00"}, True),  # in year 10000 in UTC
    ],
)
def test_what_no_store_can_hold_from_the_model_leaves_the_rest_of_its_answer_and_the_brain_readable(
    engine: Engine, model: FakeModel, bad: dict[str, str], kept: bool
) -> None:
    """Each was a 500 on every read of the Brain's Memories, or a failed Record, depending on the engine."""
    quote = "I ran a charity race for mental health last Saturday"
    words = {"statement": "Melanie ran a charity race.", "subject": "Melanie"}
    words.update({k: v for k, v in bad.items() if k in words})
    model.answers[TEXT] = [
        proposal("you're so brave to speak up", "Caroline is brave to speak up.", "Caroline", "Caroline"),
        proposal(quote, words["statement"], words["subject"], "Melanie", **{k: v for k, v in bad.items() if k not in words}),
    ]
    service = engine.open(llm(model))
    api = Api(create_app(service))
    record = post_turn(api)
    assert service.wait_idle()
    assert api.get(f"/brains/b1/records/{record}").body["status"] == "ready"
    found = {m["statement"]: m for m in memories(api)}
    expected = {"Caroline is brave to speak up."} | ({"Melanie ran a charity race."} if kept else set())
    assert set(found) == expected
    if kept:  # the date is dropped, as one the model could not give: the Record's time stands
        assert found["Melanie ran a charity race."]["valid_from"] == "2024-05-08T13:56:00Z"
        assert found["Melanie ran a charity race."]["valid_to"] is None
    assert api.post("/brains/b1/context", {"query": "charity race"}).status == 200
