"""``brainstore bench``: loaders, the recall it reports, its JSON, retries, cleanup, and a whole run.

The LoCoMo-shaped data here is synthetic and written by the tests: LoCoMo itself is never committed.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brainstore import cli
from brainstore.bench.loader import (
    BenchDataError,
    Query,
    Question,
    evidence_turns,
    load_conversations,
    load_queries,
)
from brainstore.bench.report import PlotUnavailable, percentile, plot, summarize, table
from brainstore.bench.runner import (
    BenchAborted,
    BenchSettings,
    Observation,
    RetryingCaller,
    Runner,
    embedded_client,
    evidence_recall,
)
from brainstore.errors import NotFound, error

KEY = "sk_test_benchtool_s3cret0001"

# A tiny conversation in LoCoMo's v2 layout: two sessions, an image turn, a turn that carries only
# clean_text, and questions of a scored category, a glitchy evidence string and category 5.
CONVERSATION: dict[str, Any] = {
    "speaker_a": "Ana",
    "speaker_b": "Ben",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel last week."},
        {
            "speaker": "Ben",
            "dia_id": "D1:2",
            "text": "Lovely!",
            "blip_caption": "a photo of a dog on a beach",
        },
        {"speaker": "Ana", "dia_id": "D1:3", "text": "Pixel sleeps on my keyboard all day."},
    ],
    "session_2_date_time": "10:04 am on 2 June, 2023",
    "session_2": [
        {"speaker": "Ben", "dia_id": "D2:1", "clean_text": "I started rowing on the river every Sunday."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "Rowing sounds hard; I prefer climbing at the gym."},
    ],
    "session_3_date_time": "9:00 am on 1 July, 2023",  # a date without turns, as in 26.json
    "qa": [
        {
            "question": "What is the name of Ana's cat?",
            "answer": "Pixel",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {
            "question": "What sports do Ben and Ana do?",
            "answer": "rowing, climbing",
            "evidence": ["D2:01; D2:2", "D9:9"],
            "category": 1,
        },
        {
            "question": "What is Ben's cat called?",
            "adversarial_answer": "Pixel",
            "evidence": ["D1:1"],
            "category": 5,
        },
    ],
}


def _signature(conversations: list[Any]) -> list[Any]:
    return [
        (c.sample_id, c.speakers, [(t.dia_id, t.session, t.speaker, t.text, t.occurred_at) for t in c.turns],
         [(q.question, q.category, q.evidence) for q in c.qa])
        for c in conversations
    ]  # fmt: skip


def test_loader_reads_one_conversation_file(tmp_path: Path) -> None:
    path = tmp_path / "7.json"
    path.write_text(json.dumps(CONVERSATION))
    (conv,) = load_conversations(path)
    assert conv.sample_id == "7" and conv.speakers == ("Ana", "Ben")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conv.turns[1].text == "Lovely! [shares a photo of a photo of a dog on a beach]"
    assert conv.turns[3].text == "I started rowing on the river every Sunday."  # clean_text
    assert conv.turns[0].occurred_at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert conv.turns[4].occurred_at.isoformat() == "2023-06-02T10:04:00+00:00"


def test_loader_reads_folder_zip_and_list_layouts_alike(tmp_path: Path) -> None:
    other = {**CONVERSATION, "speaker_a": "Cleo"}
    folder = tmp_path / "locomo10_v2"
    folder.mkdir()
    (folder / "7.json").write_text(json.dumps(CONVERSATION))
    (folder / "12.json").write_text(json.dumps(other))
    archive = tmp_path / "release.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data/multimodal_dialog/locomo10_v2/", "")
        zf.writestr("data/multimodal_dialog/locomo10_v2/12.json", json.dumps(other))
        zf.writestr("data/multimodal_dialog/locomo10_v2/7.json", json.dumps(CONVERSATION))
        zf.writestr("__MACOSX/data/multimodal_dialog/locomo10_v2/._7.json", b"\x00\x05\x16\x07")
    listed = tmp_path / "locomo10.json"
    listed.write_text(
        json.dumps(
            [
                {"sample_id": "conv-12", "conversation": {k: v for k, v in other.items() if k != "qa"}, "qa": other["qa"]},
                {"sample_id": "conv-7", "conversation": {k: v for k, v in CONVERSATION.items() if k != "qa"}, "qa": CONVERSATION["qa"]},
            ]
        )
    )  # fmt: skip
    by_folder = load_conversations(folder)
    assert [c.sample_id for c in by_folder] == ["7", "12"]  # numeric order
    assert _signature(load_conversations(archive)) == _signature(by_folder)
    assert _signature(load_conversations(listed)) == _signature(by_folder)
    assert _signature(load_conversations(tmp_path)) == _signature(by_folder)  # a folder holding a layout
    assert load_conversations(tmp_path / "absent") == []


def test_loader_names_the_file_that_is_not_locomo(tmp_path: Path) -> None:
    bad = tmp_path / "9.json"
    bad.write_text(json.dumps({"speaker_a": "Ana", "session_1": [{"speaker": "Ana", "text": "hi"}]}))
    with pytest.raises(BenchDataError, match="9"):
        load_conversations(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(BenchDataError, match=r"broken\.json: not JSON"):
        load_conversations(broken)


def test_locomo_questions_are_scored_like_the_baselines(tmp_path: Path) -> None:
    from brainstore.bench.loader import conversation_queries

    path = tmp_path / "7.json"
    path.write_text(json.dumps(CONVERSATION))
    (conv,) = load_conversations(path)
    queries = conversation_queries(conv)
    # category 5 skipped; "D2:01; D2:2" is two ids with the zero dropped; D9:9 matches no turn.
    assert queries == [
        Query("What is the name of Ana's cat?", frozenset({"D1:1"}), "4"),
        Query("What sports do Ben and Ana do?", frozenset({"D2:1", "D2:2"}), "1"),
    ]


def test_benches_reuse_the_product_loader() -> None:
    import benches.locomo

    from brainstore.bench import loader

    assert benches.locomo.scored_questions is loader.scored_questions
    assert benches.locomo.Conversation is loader.Conversation
    assert benches.locomo.load_conversations(Path("/nonexistent")) == []


def test_jsonl_queries(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"query": "Where does Alice live?", "evidence": ["note-1"]}\n'
        "\n"
        '{"query": "What does Alice drink?", "evidence": ["note-2", "note-3"], "category": "prefs"}\n'
        '{"query": "Unanswerable?", "evidence": []}\n'
        '{"query": "Numbered", "evidence": ["note-4"], "category": 2}\n'
    )
    queries, without_evidence = load_queries(path)
    assert without_evidence == 1
    assert queries == [
        Query("Where does Alice live?", frozenset({"note-1"}), None),
        Query("What does Alice drink?", frozenset({"note-2", "note-3"}), "prefs"),
        Query("Numbered", frozenset({"note-4"}), "2"),
    ]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[1, 2]", "expected a JSON object"),
        ('{"evidence": ["a"]}', "query: must be a non-empty string"),
        ('{"query": "q", "evidence": "a"}', "evidence: must be a list"),
        ('{"query": "q", "evidence": [""]}', "evidence: must be a list"),
        ('{"query": "q", "evidence": ["a"], "category": true}', "category: must be"),
        ("{oops", "not JSON"),
    ],
)
def test_jsonl_names_the_bad_line(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "fine", "evidence": ["a"]}\n' + line + "\n")
    with pytest.raises(BenchDataError, match=rf"q\.jsonl:2: .*{reason}"):
        load_queries(path)


def test_jsonl_lines_end_at_newlines_only(tmp_path: Path) -> None:
    """A U+2028 in a query is JSON; str.splitlines() broke the line there and the file was refused."""
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "a\u2028b", "evidence": ["x1"]}\r\n{"query": "c", "evidence": ["x2"]}\n', encoding="utf-8")
    assert load_queries(path) == ([Query("a\u2028b", frozenset({"x1"})), Query("c", frozenset({"x2"}))], 0)


def _damaged_zip() -> bytes:
    held = io.BytesIO()
    with zipfile.ZipFile(held, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("7.json", json.dumps(CONVERSATION))
    data = bytearray(held.getvalue())
    data[30 + len("7.json") + 8] ^= 0xFF  # inside the deflate stream
    return bytes(data)


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("q.jsonl", b'{"query": "caf\xe9?", "evidence": ["x1"]}\n', r"q\.jsonl:1: not UTF-8 \(byte 15 is 0xe9\)"),
        ("q.jsonl", b'{"query": "q", "evidence": ["x1"], "category": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
         r"q\.jsonl:1: arrays or objects nested too deeply"),
        ("q.jsonl", b'{"query": "q", "evidence": ["x1"], "category": ' + b"1" * 5000 + b"}",
         r"q\.jsonl:1: a number of more than \d+ digits"),
        ("7.json", b'{"speaker_a": "Ana \xe9"}', r"7\.json: not UTF-8 \(byte 20 is 0xe9\)"),
        ("7.json", b"[" * 100_000 + b"]" * 100_000, r"7\.json: arrays or objects nested too deeply"),
        ("7.json", b'["abc"]', r"0: not a LoCoMo conversation \(a str, not a JSON object\)"),
        ("7.json", b'{"conversation": [1]}', r"7: not a LoCoMo conversation \(AttributeError"),
        ("7.zip", _damaged_zip(), r"7\.zip:7\.json: not readable from the archive"),
    ],
)  # fmt: skip
def test_hostile_data_is_refused_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes, reason: str
) -> None:
    """Each of these ended `brainstore bench --data` in a traceback (UnicodeDecodeError, RecursionError,
    ValueError, AttributeError, zlib.error) instead of `brainstore bench: <reason>`, exit status 2."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(BenchDataError, match=reason):
        load_conversations(path) if name.endswith((".json", ".zip")) else load_queries(path)
    argv = ["bench", "--data", str(path), "--data-dir", str(tmp_path / "d")]
    assert cli.main([*argv, "--brain", "alice"] if name.endswith(".jsonl") else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("brainstore bench: ") and re.search(reason, err), err
    assert not (tmp_path / "d").exists()


def test_numeric_sample_ids_are_ordered_as_numbers_of_any_length(tmp_path: Path) -> None:
    """The order took int() of every all-digit id: a ValueError past 4,300 digits, and on "²"."""
    listed = tmp_path / "locomo10.json"
    ids = ["1" * 5000, "²", "10", "9"]
    listed.write_text(json.dumps([{**CONVERSATION, "sample_id": i} for i in ids]))
    assert [c.sample_id for c in load_conversations(listed)] == ["9", "10", "1" * 5000, "²"]
    # and so did an evidence id's numbers, when the questions were asked (after the turns were posted)
    assert evidence_turns(Question("q", 1, ("D" + "0" * 5000 + "1:01",)), {"D1:1"}) == {"D1:1"}


# ---------------------------------------------------------------------- recall and report


def _context(cited: list[str], served: list[tuple[str, bool]]) -> dict[str, Any]:
    return {
        "citations": [{"id": f"c{i}", "record_id": r} for i, r in enumerate(cited)],
        "evidence": [{"record_id": r, "redacted": redacted} for r, redacted in served],
    }


def test_recall_counts_records_cited_and_served() -> None:
    keys = {"rec_a": "D1:1", "rec_b": "D1:2", "rec_c": "D1:3", "rec_d": "D1:4"}
    context = _context(
        cited=["rec_a", "rec_b", "rec_c"],
        served=[("rec_a", False), ("rec_b", True), ("rec_d", False)],
    )
    # a: cited and served; b: only a redacted summary; c: cited, no evidence item; d: served, not cited.
    evidence = frozenset({"D1:1", "D1:2", "D1:3", "D1:4"})
    assert evidence_recall(context, evidence, keys.get) == 0.25
    assert evidence_recall(context, frozenset({"D1:1"}), keys.get) == 1.0
    assert evidence_recall(_context([], []), frozenset({"D1:1"}), keys.get) == 0.0
    assert evidence_recall(context, frozenset({"D1:1"}), lambda r: None) == 0.0  # unknown records
    with pytest.raises(ValueError):
        evidence_recall(context, frozenset(), keys.get)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([3.0, 1.0, 2.0], 99) == 3.0
    assert percentile([], 50) is None


def _obs(recall: float, budget: int, *, mode: str = "fast", category: str | None = "1", pending: bool = False,
         latency: float = 10.0, tokens: int | None = 100, target: str = "7") -> Observation:  # fmt: skip
    return Observation(target, category, budget, mode, recall, None if pending else tokens, latency, pending)


def test_summary_shape_and_numbers() -> None:
    observations = [
        _obs(1.0, 500, latency=10, tokens=300),
        _obs(0.5, 500, latency=30, tokens=500, category="2"),
        _obs(0.0, 500, latency=20, pending=True, category="2"),
        _obs(1.0, 1000, latency=12, tokens=900),
        _obs(1.0, 1000, latency=14, tokens=700, category="2", target="8"),
        _obs(1.0, 1000, latency=90, tokens=800, category="2", target="8"),
    ]
    summary = summarize(observations, (500, 1000), ("fast",), {"note": "meta"})
    assert summary["run"] == {"note": "meta"}
    assert summary["results"] == [
        {"budget": 500, "mode": "fast", "recall": 0.5, "tokens_used_p50": 300, "latency_ms_p50": 20.0,
         "latency_ms_p99": 30.0, "questions": 3, "pending": 1},
        {"budget": 1000, "mode": "fast", "recall": 1.0, "tokens_used_p50": 800, "latency_ms_p50": 14.0,
         "latency_ms_p99": 90.0, "questions": 3, "pending": 0},
    ]  # fmt: skip
    assert {"budget": 500, "mode": "fast", "category": "2", "recall": 0.25, "questions": 2} in summary[
        "by_category"
    ]
    assert {"budget": 1000, "mode": "fast", "conversation": "8", "recall": 1.0, "questions": 2} in summary[
        "by_conversation"
    ]
    json.dumps(summary)  # serialisable as is
    text = table(summary, {"1": "multi-hop", "2": "temporal"})
    assert "| fast | 500 | 0.500 | 300 | 20.0 | 30.0 | 3 | 1 |" in text
    assert "1 multi-hop" in text and "0.250 (2)" in text


def test_summary_without_categories_has_no_category_table() -> None:
    summary = summarize([_obs(1.0, 500, category=None)], (500,), ("fast",))
    assert summary["by_category"] == []
    assert "multi-hop" not in table(summary) and table(summary).count("\n") == 2


def test_plot_writes_a_png(tmp_path: Path) -> None:
    summary = summarize(
        [_obs(0.5, 500), _obs(0.8, 1000, latency=12), _obs(0.6, 500, mode="thorough", latency=40)],
        (500, 1000),
        ("fast", "thorough"),
    )
    out = tmp_path / "plot.png"
    plot(summary, out, title="synthetic")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if absent
    with pytest.raises(PlotUnavailable, match=r"brainstore\[bench\]"):
        plot(summarize([_obs(1.0, 500)], (500,), ("fast",)), tmp_path / "x.png")
    data = tmp_path / "7.json"
    data.write_text(json.dumps(CONVERSATION))
    argv = [
        "bench",
        "--data-dir",
        str(tmp_path / "d"),
        "--data",
        str(data),
        "--plot",
        str(tmp_path / "x.png"),
    ]
    assert cli.main(argv) == 2  # refused before anything runs
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------------- retries


def _rate_limited(retry_after: float) -> Exception:
    return error("too_many_requests", "slow down", retry_after_seconds=retry_after)


def test_429_waits_at_least_what_the_server_says_then_backs_off() -> None:
    slept: list[float] = []
    failures = [_rate_limited(2.0), _rate_limited(0.001), _rate_limited(0.001), _rate_limited(0.001)]

    def operation() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    caller = RetryingCaller(sleep=slept.append)
    assert caller(operation) == "ok"
    assert caller.rate_limited == 4
    assert slept[0] >= 2.0 and slept[1:] == [0.5, 1.0, 2.0]  # exponential once the server's wait is short


def test_429_gives_up_after_the_wait_budget() -> None:
    def operation() -> str:
        raise _rate_limited(40.0)

    caller = RetryingCaller(max_wait=100.0, sleep=lambda s: None)
    with pytest.raises(BenchAborted, match="BRAINSTORE_RATE_LIMIT"):
        caller(operation)
    assert caller.rate_limited == 3


def test_internal_failures_are_retried_a_bounded_number_of_times() -> None:
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise error("internal_error", "boom")
        return "ok"

    assert RetryingCaller(sleep=lambda s: None)(flaky) == "ok"

    def broken() -> str:
        raise error("not_implemented", "migrate first")

    calls.clear()
    with pytest.raises(Exception, match="not_implemented"):
        RetryingCaller(sleep=lambda s: None)(lambda: calls.append(1) or broken())
    assert len(calls) == 1  # deterministic: never retried


class _PendingClient:
    """A client whose every Context is pending (202), as a thorough one past its synchronous budget."""

    def create_context(self, brain: str, query: str, **knobs: Any) -> dict[str, Any]:
        return {"status": "pending", "citations": [], "evidence": [], "budget": {"tokens": {"used": 0}}}


def test_a_pending_context_is_a_counted_miss() -> None:
    from brainstore.bench.runner import Target

    runner = Runner(_PendingClient(), BenchSettings(budgets=(500,), modes=("thorough",), progress=False))  # type: ignore[arg-type]
    target = Target("t", "b", [Query("q", frozenset({"x"}), None)], key_of=lambda r: "x")
    (observation,) = runner.ask([target])
    assert observation.pending and observation.recall == 0.0 and observation.tokens_used is None
    assert summarize([observation], (500,), ("thorough",))["results"][0]["pending"] == 1


# ---------------------------------------------------------------------- Brains and cleanup


@pytest.fixture
def memory_client(tmp_path: Path) -> Iterator[Any]:
    with embedded_client(tmp_path, KEY, engine="memory") as client:
        yield client


def _conversation(tmp_path: Path) -> Any:
    path = tmp_path / "7.json"
    path.write_text(json.dumps(CONVERSATION))
    (conv,) = load_conversations(path)
    return conv


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_run_leaves_no_brain(memory_client: Any, tmp_path: Path, how: str) -> None:
    runner = Runner(memory_client, BenchSettings(budgets=(500,), progress=False))

    def interrupted(targets: Any) -> Any:
        assert memory_client.get_brain(runner.created[0])["id"] == runner.created[0]  # it was made
        if how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt

    runner.ask = interrupted  # type: ignore[method-assign]
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        runner.run([_conversation(tmp_path)])
    brain = runner.brain_id("7")
    with pytest.raises(NotFound):
        memory_client.get_brain(brain)
    assert runner.created == [] and runner.left_behind == []
    assert signal.getsignal(signal.SIGTERM) == before


def test_brain_ids_are_recognisable_and_never_collide(memory_client: Any) -> None:
    a = Runner(memory_client, BenchSettings(budgets=(500,), brain_prefix="mybench"))
    b = Runner(memory_client, BenchSettings(budgets=(500,), brain_prefix="mybench"))
    assert a.brain_id("conv/44").startswith("mybench-conv-44-")
    assert a.brain_id("44") != b.brain_id("44")


def test_a_brain_of_the_same_id_that_is_not_the_runs_is_never_forgotten(memory_client: Any, tmp_path: Path) -> None:
    """createBrain answering brain_exists left the id registered for cleanup: the run then forgot a
    Brain it had not made (another run's, or the application's), with every Record in it."""
    runner = Runner(memory_client, BenchSettings(budgets=(500,), progress=False))
    theirs = runner.brain_id("7")
    memory_client.create_brain(theirs)
    memory_client.remember_record(theirs, "Not the bench's.")
    with pytest.raises(BenchAborted, match="exists already"):
        runner.run([_conversation(tmp_path)])
    assert memory_client.get_brain(theirs)["id"] == theirs
    assert runner.left_behind == []


def test_reposted_turns_never_duplicate(memory_client: Any, tmp_path: Path) -> None:
    runner = Runner(memory_client, BenchSettings(budgets=(500,), progress=False))
    conv = _conversation(tmp_path)
    first = runner.ingest(conv)
    again = runner.ingest(conv)  # same run, same Brain id and Idempotency-Keys: a retry of every post
    assert first.brain == again.brain
    assert first.record_ids == again.record_ids
    assert first.records == again.records == 5 and first.failed_records == 0
    runner.forget_created()


# ---------------------------------------------------------------------- the command, end to end


def test_bench_command_on_the_embedded_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "7.json"
    data.write_text(json.dumps(CONVERSATION))
    out = tmp_path / "report.json"
    argv = ["bench", "--data-dir", str(tmp_path / "data"), "--data", str(data),
            "--budgets", "40,1000", "--json", str(out), "--key", KEY]  # fmt: skip
    assert cli.main(argv) == 0
    report = json.loads(out.read_text())
    assert [(r["budget"], r["mode"]) for r in report["results"]] == [(40, "fast"), (1000, "fast")]
    for row in report["results"]:
        assert set(row) >= {
            "budget",
            "mode",
            "recall",
            "tokens_used_p50",
            "latency_ms_p50",
            "latency_ms_p99",
            "questions",
        }
        assert row["questions"] == 2 and row["pending"] == 0
        assert 0 < row["latency_ms_p50"] <= row["latency_ms_p99"]
        assert row["tokens_used_p50"] <= row["budget"]
    small, large = report["results"]
    assert large["recall"] == 1.0  # 1,000 tokens hold all five turns
    assert small["tokens_used_p50"] < large["tokens_used_p50"]
    assert {c["category"] for c in report["by_category"]} == {"1", "4"}
    (conv,) = report["run"]["conversations"]
    assert conv["conversation"] == "7" and conv["records"] == 5 and conv["failed_records"] == 0
    assert report["run"]["target"] == {"embedded": "duckdb", "data_dir": str((tmp_path / "data").resolve())}
    printed = capsys.readouterr().out
    assert "| fast | 1000 | 1.000 |" in printed and "4 single-hop" in printed
    with embedded_client(tmp_path / "data", KEY) as client, pytest.raises(NotFound):
        client.get_brain(conv["brain"])  # forgotten after the run


def test_bench_command_with_jsonl_against_imported_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        '{"external_id": "n1", "content": "Alice moved to Lisbon in 2021.", "occurred_at": "2021-03-01T09:00:00Z"}\n'
        '{"external_id": "n2", "content": "Alice prefers green tea to coffee.", "occurred_at": "2021-04-01T09:00:00Z"}\n'
        '{"external_id": "n3", "content": "The quarterly report is due on Friday.", "occurred_at": "2021-05-01T09:00:00Z"}\n'
    )
    data_dir = tmp_path / "data"
    assert cli.main(["import", str(notes), "--brain", "alice", "--source", "notes", "--project", "benchtool",
                     "--data-dir", str(data_dir), "--create-brain"]) == 0  # fmt: skip
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"query": "Which city did Alice move to?", "evidence": ["n1"]}\n'
        '{"query": "What does Alice like to drink?", "evidence": ["n2"], "category": "prefs"}\n'
    )
    out = tmp_path / "report.json"
    argv = ["bench", "--data-dir", str(data_dir), "--data", str(questions), "--brain", "alice",
            "--budgets", "1000", "--json", str(out), "--key", KEY]  # fmt: skip
    assert cli.main(argv) == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["results"][0]["recall"] == 1.0 and report["results"][0]["questions"] == 2
    assert [c["category"] for c in report["by_category"]] == ["prefs"]
    with embedded_client(data_dir, KEY) as client:
        assert client.get_brain("alice")["id"] == "alice"  # an existing Brain is never forgotten


def test_bench_reads_the_project_an_import_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's workflow: `brainstore import ... --project acme`, then `bench --data-dir ... --brain
    alice`. The embedded bench always read project bench (sk_test_bench_embedded): brain_not_found, and
    --project was unrecognized. It takes --project and --env (default BRAINSTORE_PROJECT, else bench),
    and brain_not_found names the project read."""
    monkeypatch.delenv("BRAINSTORE_PROJECT", raising=False)
    monkeypatch.delenv("BRAINSTORE_API_KEY", raising=False)
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "note-1", "content": "Alice prefers window seats.", "occurred_at": "2021-03-01T09:00:00Z"}\n')
    data_dir = tmp_path / "data"
    for env in ("test", "live"):
        assert cli.main(["import", str(notes), "--brain", "alice", "--source", "notes", "--project", "acme",
                         "--env", env, "--data-dir", str(data_dir), "--create-brain"]) == 0  # fmt: skip
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"query": "Which seat does Alice prefer?", "evidence": ["note-1"]}\n')
    argv = ["bench", "--data-dir", str(data_dir), "--data", str(questions), "--brain", "alice", "--budgets", "1000"]
    capsys.readouterr()

    assert cli.main(argv) == 1
    assert "brain_not_found" in (err := capsys.readouterr().err) and "project 'bench' (test)" in err and "--project" in err
    for extra in (["--project", "acme"], ["--project", "acme", "--env", "live"]):
        assert cli.main([*argv, *extra, "--json", str(tmp_path / "r.json")]) == 0, capsys.readouterr().err
        assert json.loads((tmp_path / "r.json").read_text())["results"][0]["recall"] == 1.0
    monkeypatch.setenv("BRAINSTORE_PROJECT", "acme")
    assert cli.main(argv) == 0, capsys.readouterr().err
    monkeypatch.setenv("BRAINSTORE_PROJECT", "ac_me")
    assert cli.main(argv) == 2
    assert "--project: 'ac_me' is not a project an API key can name" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--url", "http://127.0.0.1:1/v1"], "--url needs --key"),
        (["--url", "http://127.0.0.1:1/v1", "--key", KEY, "--data-dir", "d"], "either --url"),
        (["--data-dir", "d", "--budgets", "500,lots"], "--budgets: 'lots'"),
        (["--data-dir", "d", "--budgets", "500,\u00b2"], "--budgets: '\u00b2'"),  # a digit int() refuses
        (["--data-dir", "d", "--ready-timeout", "nan"], "--ready-timeout: nan is not a positive"),
        (["--data-dir", "d", "--ready-timeout", "0"], "--ready-timeout: 0.0 is not a positive"),
        # found after the run, the report lost
        (["--data-dir", "d", "--json", "missing/r.json"], "--json: 'missing' is not a directory"),
        (["--data-dir", "d", "--json", "."], "--json: '.' is a directory"),
        (["--data-dir", "d", "--plot", "missing/r.png"], "--plot: 'missing' is not a directory"),
        (["--data-dir", "d", "--modes", "fast,slow"], "--modes: slow"),
        (["--data-dir", "d", "--conversations", "99"], "--conversations: 99 not in"),
        (["--data-dir", "d", "--brain", "alice"], "--brain is for JSON Lines"),
        (["--data-dir", "d", "--brain-prefix", "my bench"], "--brain-prefix: 1-16"),
        (["--data-dir", "d", "--project", "ac_me"], "--project: 'ac_me' is not a project an API key can name"),
        (["--data-dir", "d", "--project", ""], "--project: '' is not a project an API key can name"),
        (["--data-dir", "d", "--key", KEY, "--project", "acme"], "--key names another project than --project 'acme'"),
        (["--url", "http://127.0.0.1:1/v1", "--key", KEY, "--project", "acme"], "--project and --env name the embedded"),
        (["--url", "http://127.0.0.1:1/v1", "--key", KEY, "--env", "live"], "--project and --env name the embedded"),
    ],
)
def test_bench_command_refuses_bad_arguments(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    data = tmp_path / "7.json"
    data.write_text(json.dumps(CONVERSATION))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["bench", "--data", str(data), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
