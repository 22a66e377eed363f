"""The LLM extractor against a local server that speaks the chat-completions protocol: what it sends,
what it keeps of the model's answer (verbatim quotes only, owners the attribution gate allows), and how
it retries, times out and counts its calls."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from brainstore import cli
from brainstore.app import build_extractor
from brainstore.config import Config
from brainstore.derive import (
    ExtractorUnavailable,
    LLMExtractionError,
    LLMExtractor,
    RuleExtractor,
    SourceText,
)
from brainstore.derive.llm import load_prompt, locate
from tests.fake_model import FakeModel, fake_model, proposal

AT = datetime(2024, 5, 8, 13, 56, tzinfo=UTC)
MELANIE = "Caroline, you're so brave to speak up. I ran a charity race for mental health last Saturday."


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake_model() as fake:
        yield fake


def extractor(model: FakeModel, **kw: object) -> tuple[LLMExtractor, list[float]]:
    slept: list[float] = []
    options: dict[str, object] = {"max_retries": 2, "backoff": 0.25, "timeout": 5.0, "sleep": slept.append}
    options.update(kw)
    return LLMExtractor(model.url, "fake-model", **options), slept  # type: ignore[arg-type]


def said(text: str, speaker: str | None = "Melanie", role: str | None = "user", kind: str = "message") -> SourceText:
    return SourceText(text, kind, speaker, role, AT)


def test_the_request_is_a_chat_completion_with_the_versioned_prompt_and_json_schema(model: FakeModel) -> None:
    ext, _ = extractor(model, api_key="sk-test-secret")
    ext.extract(said(MELANIE), self_name="Caroline")
    (request,) = model.requests
    prompt, schema = load_prompt()
    assert request["model"] == "fake-model" and request["temperature"] == 0
    assert request["messages"][0] == {"role": "system", "content": prompt}
    sent = json.loads(request["messages"][1]["content"])
    assert sent == {
        "text": MELANIE,
        "kind": "message",
        "speaker": "Melanie",
        "role": "user",
        "self": "Caroline",
        "occurred_at": AT.isoformat(),
    }
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == schema
    assert fmt["json_schema"]["strict"] is True
    assert model.headers[0]["authorization"] == "Bearer sk-test-secret"
    assert ext.name == "llm-extract_v1:fake-model"


def test_the_schema_file_is_a_json_schema_and_the_canned_answers_meet_it() -> None:
    _, schema = load_prompt()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"memories": [proposal("I ran", "Melanie ran.", "Melanie", None)]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"memories": [{"statement": "no quote"}]}, schema)


def test_a_proposal_cites_its_quote_verbatim_and_a_hallucinated_quote_is_dropped(model: FakeModel) -> None:
    quote = "I ran a charity race for mental health last Saturday"
    model.answers[MELANIE] = [
        proposal(quote, "Melanie ran a charity race for mental health on 4 May 2024.", "Melanie", "Melanie",
                 attribute="Did Activity", value="Charity Race", valid_from="2024-05-04"),
        proposal("I ran a marathon in Boston", "Melanie ran a marathon in Boston.", "Melanie", "Melanie"),
        proposal("i ran a charity race", "Case differs: not verbatim.", "Melanie", "Melanie"),
        proposal("  ", "A blank quote cites nothing.", "Melanie", "Melanie"),
    ]
    ext, _ = extractor(model)
    (kept,) = ext.extract(said(MELANIE), self_name="Caroline")
    start, end = kept.span
    assert MELANIE[start:end] == quote
    assert kept.owner == "Melanie" and kept.subject == "Melanie"
    assert kept.attribute == "did_activity" and kept.value == "charity race"
    assert kept.valid_from == datetime(2024, 5, 4, tzinfo=UTC) and kept.time_stated
    assert ext.cost() == {"model_calls": 1, "dropped_unquoted": 3, "gated": 0, "dropped_unstorable": 0}


def test_the_attribution_gate_never_lets_the_model_give_the_self_what_another_speaker_said(
    model: FakeModel,
) -> None:
    model.answers[MELANIE] = [
        # the model's mistake of issue 14: a compliment to Caroline made Caroline's own fact
        proposal("you're so brave to speak up", "Caroline is brave to speak up.", "Caroline", "Caroline"),
        proposal("I ran a charity race", "Melanie ran a charity race.", "Melanie", "melanie"),
    ]
    ext, _ = extractor(model)
    brave, race = ext.extract(said(MELANIE), self_name="Caroline")
    assert brave.subject == "Caroline" and brave.owner is None  # nobody vouches for it as her own
    assert race.owner == "Melanie"  # the speaker's own, spelled as the Record spells her
    assert ext.cost()["gated"] == 1


def test_assistant_turns_say_nothing_about_the_user_and_own_nothing(model: FakeModel) -> None:
    text = "You live in Lisbon. The museum opens at 9."
    model.answers[text] = [
        proposal("You live in Lisbon", "The user lives in Lisbon.", "Caroline", "Caroline"),
        proposal("The museum opens at 9", "The museum opens at 9.", "the museum", "assistant"),
    ]
    ext, _ = extractor(model)
    (museum,) = ext.extract(said(text, speaker="assistant", role="assistant"), self_name="Caroline")
    assert museum.subject == "the museum" and museum.owner is None


def test_text_with_no_speaker_is_owned_by_nobody(model: FakeModel) -> None:
    text = "Quarterly report: Alice moved to the Porto office."
    model.answers[text] = [proposal("Alice moved to the Porto office", "Alice moved.", "Alice", "Alice")]
    ext, _ = extractor(model)
    (moved,) = ext.extract(said(text, speaker=None, role=None, kind="document"), self_name=None)
    assert moved.owner is None


def test_a_structured_fact_needs_no_model_call(model: FakeModel) -> None:
    ext, _ = extractor(model)
    fact = SourceText("Alice lives_in Lisbon", "fact", None, None, AT, triple=("Alice", "lives_in", "Lisbon"))
    assert ext.extract(fact, self_name="Alice") == RuleExtractor().extract(fact, self_name="Alice")
    assert ext.extract(said("   "), self_name=None) == []
    assert model.requests == [] and ext.cost()["model_calls"] == 0


def test_429_then_success_waits_as_told_and_counts_both_calls(model: FakeModel) -> None:
    model.script.append(("status", 429, {"Retry-After": "2"}))
    model.script.append(("status", 503))
    model.answers[MELANIE] = [proposal("I ran", "Melanie ran.", "Melanie", "Melanie")]
    ext, slept = extractor(model)
    assert len(ext.extract(said(MELANIE), self_name="Caroline")) == 1
    assert slept == [2.0, 0.5]  # Retry-After first, then the backoff of the second retry
    assert ext.cost()["model_calls"] == 3


def test_an_endpoint_that_stays_down_is_unavailable_after_the_bounded_retries(model: FakeModel) -> None:
    model.script.extend([("status", 500)] * 3)
    ext, slept = extractor(model)
    with pytest.raises(ExtractorUnavailable, match="HTTP 500 after 3 attempts"):
        ext.extract(said(MELANIE), self_name="Caroline")
    assert slept == [0.25, 0.5] and ext.cost()["model_calls"] == 3


def test_a_call_that_times_out_is_retried(model: FakeModel) -> None:
    model.script.append(("sleep", 1.0))
    model.answers[MELANIE] = [proposal("I ran", "Melanie ran.", "Melanie", "Melanie")]
    ext, _ = extractor(model, timeout=0.2)
    assert len(ext.extract(said(MELANIE), self_name="Caroline")) == 1
    assert ext.cost()["model_calls"] == 2
    model.script.extend([("sleep", 1.0)] * 3)
    with pytest.raises(ExtractorUnavailable, match="timed out after 3 attempts"):
        ext.extract(said(MELANIE), self_name="Caroline")


def test_an_unreachable_endpoint_is_unavailable() -> None:
    with fake_model() as gone:
        url = gone.url
    ext = LLMExtractor(url, "m", max_retries=1, sleep=lambda s: None, timeout=1.0)
    with pytest.raises(ExtractorUnavailable, match="unreachable"):
        ext.extract(said(MELANIE), self_name=None)


def test_malformed_answers_are_retried_then_refused(model: FakeModel) -> None:
    model.script.append(("content", "Sure! Here are the memories: ["))
    model.answers[MELANIE] = [proposal("I ran", "Melanie ran.", "Melanie", "Melanie")]
    ext, _ = extractor(model)
    assert len(ext.extract(said(MELANIE), self_name="Caroline")) == 1
    model.script.extend(
        [
            ("content", "{not json"),
            ("content", json.dumps({"memories": [{"statement": "no quote", "subject": "x"}]})),
            ("content", json.dumps({"facts": []})),
        ]
    )
    with pytest.raises(LLMExtractionError, match="schema's JSON"):
        ext.extract(said(MELANIE), self_name="Caroline")
    assert ext.cost()["model_calls"] == 5


def test_a_refused_request_is_not_retried(model: FakeModel) -> None:
    model.script.append(("status", 401))
    ext, slept = extractor(model)
    with pytest.raises(LLMExtractionError, match="HTTP 401"):
        ext.extract(said(MELANIE), self_name="Caroline")
    assert slept == [] and ext.cost()["model_calls"] == 1


def test_locate_finds_only_verbatim_quotes() -> None:
    assert locate("I love tea.", " love tea ") == (2, 10)
    assert locate("I love tea.", "love  tea") is None
    assert locate("I love tea.", "  ") is None


def test_configuration_picks_the_extractor_and_keeps_the_key_out_of_sight(model: FakeModel) -> None:
    assert isinstance(build_extractor(Config()), RuleExtractor)  # the offline default
    with pytest.raises(ValueError, match="--llm-base-url and --llm-model"):
        Config(extractor="llm", llm_model="m")
    config = Config.from_env(
        {
            "BRAINSTORE_EXTRACTOR": "llm",
            "BRAINSTORE_LLM_BASE_URL": model.url,
            "BRAINSTORE_LLM_MODEL": "fake-model",
            "BRAINSTORE_LLM_API_KEY": "sk-hidden-value",
            "BRAINSTORE_LLM_TIMEOUT": "7.5",
            "BRAINSTORE_LLM_MAX_RETRIES": "1",
        }
    )
    assert "sk-hidden-value" not in repr(config)
    built = build_extractor(config)
    assert isinstance(built, LLMExtractor) and built.max_retries == 1
    built.extract(said(MELANIE), self_name=None)
    assert model.headers[-1]["authorization"] == "Bearer sk-hidden-value"
    # the key is never a flag (it would show in process listings)
    commands = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("serve", "import", "rederive"):
        flags = {flag for action in commands.choices[command]._actions for flag in action.option_strings}
        assert {"--extractor", "--llm-base-url", "--llm-model"} <= flags
        assert not [flag for flag in flags if "api-key" in flag or "llm-key" in flag]


_SPEAKERS = st.sampled_from(["Melanie", "Caroline", None, "assistant"])


@given(
    text=st.text(min_size=1, max_size=80),
    picks=st.lists(
        st.tuples(
            st.one_of(st.tuples(st.integers(0, 80), st.integers(0, 80)), st.text(min_size=1, max_size=12)),
            _SPEAKERS,
        ),
        max_size=6,
    ),
    speaker=_SPEAKERS,
)
def test_whatever_the_model_answers_every_kept_memory_quotes_the_record_and_only_its_speaker_owns_it(
    text: str, picks: list[tuple[tuple[int, int] | str, str | None]], speaker: str | None
) -> None:
    proposals = []
    for quote_pick, owner in picks:
        if isinstance(quote_pick, tuple):  # a real slice of the text (maybe empty or blank)
            a, b = sorted(quote_pick)
            quote = text[a:b] or "x"
        else:  # anything at all: usually not in the text
            quote = quote_pick
        proposals.append(proposal(quote, "Someone did something.", owner or "Someone", owner))

    def answer(request: httpx.Request) -> httpx.Response:
        content = json.dumps({"memories": proposals})
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": content}}]})

    role = "assistant" if speaker == "assistant" else ("user" if speaker else None)
    ext = LLMExtractor("http://model.test/v1", "m", transport=httpx.MockTransport(answer))
    source = SourceText(text, "message" if speaker else "document", speaker, role, AT)
    for kept in ext.extract(source, self_name="Caroline"):
        start, end = kept.span
        assert 0 <= start < end <= len(text)
        assert text[start:end].strip() == text[start:end] and text[start:end]
        assert any(p["quote"].strip() == text[start:end] for p in proposals)
        assert kept.owner is None or (kept.owner == speaker and role == "user")


def test_serve_refuses_an_llm_extractor_without_an_endpoint(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINSTORE_")}
    done = subprocess.run(
        [sys.executable, "-m", "brainstore.cli", "serve", "--extractor", "llm", "--data-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "--llm-base-url and --llm-model" in done.stderr
