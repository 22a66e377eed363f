"""Re-derivation when the extractor changes (``brainstore rederive``), on every engine: Records, Objects
and user corrections stay; the Memories are what the new extractor finds; an interrupted run continues
where it stopped; a data directory a server holds is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from brainstore import app as composition
from brainstore.api.app import create_app
from brainstore.app import build_service, rederive_brains
from brainstore.config import Config
from brainstore.derive import Assertion, ExtractorUnavailable, RuleExtractor, SourceText
from brainstore.domain import Brain
from brainstore.service import Service
from brainstore.service.planner import MAX_CITATIONS
from tests.conftest import Api
from tests.reopen import Engine, reopenable_engine  # noqa: F401  (the fixture "engine")

TURNS = ["I live in Lisbon.", "I love green tea.", "My sister Ana works at a bakery.", "I adopted a cat named Miso."]


class Louder:
    """Another extractor: the rules' assertions, said louder (another statement, another fingerprint)."""

    name = "louder-v1"

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls = 0
        self.fail_at = fail_at

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise ExtractorUnavailable("the model went away")
        return [
            replace(a, statement=a.statement.upper(), attribute=None, value=None)
            for a in RuleExtractor().extract(source, self_name=self_name)
        ]


def seed(service: Service) -> tuple[Api, list[str], str, str]:
    """A Brain with four turns, an Object, and a user correction of where Alice lives."""
    api = Api(create_app(service))
    api.brain("b1", self_name="Alice")
    records = [api.remember("b1", {"kind": "message", "text": turn}).body["id"] for turn in TURNS]
    assert service.wait_idle()
    api.post("/brains/b1/objects", {"type": "pref", "key": "theme", "value": "dark"})
    lisbon = api.get(f"/brains/b1/records/{records[0]}").body["memory_ids"][0]
    correction = api.remember("b1", {"kind": "correction", "corrects": lisbon, "text": "I live in Porto."})
    assert service.wait_idle()
    return api, records, lisbon, correction.body["id"]


def brain_of(service: Service) -> Brain:
    """The seeded Brain "b1"."""
    brain = service.store.get_brain("test:acme", "b1")
    assert brain is not None
    return brain


def listed(api: Api) -> list[dict[str, object]]:
    data: list[dict[str, object]] = api.get("/brains/b1/memories", params={"limit": "100"}).body["data"]
    return data


def test_rederive_replaces_derived_memories_and_keeps_records_objects_and_corrections(engine: Engine) -> None:
    first = engine.open()
    api, records, lisbon, correction = seed(first)
    before = {r: api.get(f"/brains/b1/records/{r}").body for r in records}
    porto = api.get(f"/brains/b1/records/{correction}").body["memory_ids"][0]
    engine.close(first)

    louder = Louder()
    service = engine.open(louder)
    api = Api(create_app(service))
    brain = brain_of(service)
    totals = rederive_brains(service, engine.config, [brain.uid])
    assert service.wait_idle()
    assert totals == {"brains": 1, "records": 4, "requeued": 0, "skipped": 1}  # the correction is the user's
    assert louder.calls == 4

    for record in records:
        after = api.get(f"/brains/b1/records/{record}").body
        assert after["status"] == "ready" and after["content"] == before[record]["content"]
    # what the new extractor found replaced what the old one had
    tea = api.get(f"/brains/b1/records/{records[1]}").body["memory_ids"]
    assert tea and set(tea).isdisjoint(before[records[1]]["memory_ids"])
    statements = {m["statement"] for m in listed(api)}
    assert "ALICE LOVES GREEN TEA." in statements
    assert not [s for s in statements if isinstance(s, str) and "tea" in s]
    # the user's correction stands: Porto active, Lisbon superseded by it and not derived back
    assert api.get(f"/brains/b1/memories/{porto}").body["status"] == "active"
    corrected = api.get(f"/brains/b1/memories/{lisbon}").body
    assert corrected["status"] == "superseded" and corrected["superseded_by"] == porto
    assert not [s for s in statements if isinstance(s, str) and "LISBON" in s.upper() and s != corrected["statement"]]
    assert lisbon in api.get(f"/brains/b1/records/{records[0]}").body["memory_ids"]
    assert api.get("/brains/b1/objects/pref/theme").body["value"] == "dark"
    # every Memory still cites real text
    for memory in listed(api):
        for citation in memory["citations"]:  # type: ignore[attr-defined]
            record = api.get(f"/brains/b1/records/{citation['record_id']}").body
            text = record["content"]["text"]
            assert text[citation["span"]["start"] : citation["span"]["end"]] == citation["quote"]


def test_rederive_with_the_same_extractor_changes_nothing_a_reader_sees(engine: Engine) -> None:
    service = engine.open()
    api, _, _, _ = seed(service)
    before = sorted((m["statement"], m["owner"], m["status"]) for m in listed(api))  # type: ignore[type-var]
    brain = brain_of(service)
    rederive_brains(service, engine.config, [brain.uid], restart=True)
    assert service.wait_idle()
    after = sorted((m["statement"], m["owner"], m["status"]) for m in listed(api))  # type: ignore[type-var]
    assert after == before


def test_rederive_leaves_nothing_of_a_memory_with_more_supporters_than_it_cites(engine: Engine) -> None:
    """Its cited Records no longer say it: it waits for its uncited supporters, and is erased when they
    do not say it either. What the new extractor reads is one Memory citing the first Records."""
    service = engine.open()
    api = Api(create_app(service))
    api.brain("b1", self_name="Alice")
    sent = [api.remember("b1", {"kind": "message", "text": "I love cake."}).body["id"] for _ in range(MAX_CITATIONS + 2)]
    assert service.wait_idle()
    old = api.get(f"/brains/b1/records/{sent[0]}").body["memory_ids"]
    engine.close(service)
    service = engine.open(Louder())
    api = Api(create_app(service))
    rederive_brains(service, engine.config, [brain_of(service).uid])
    assert service.wait_idle()
    memories = listed(api)
    assert [m["statement"] for m in memories] == ["ALICE LOVES CAKE."] and memories[0]["id"] not in old
    assert [c["record_id"] for c in memories[0]["citations"]] == sent[:MAX_CITATIONS]  # type: ignore[attr-defined]
    assert api.get(f"/brains/b1/memories/{old[0]}").status == 404


class Picky:
    """Another extractor: reads only texts that say "really"."""

    name = "picky-v1"

    def extract(self, source: SourceText, *, self_name: str | None) -> list[Assertion]:
        return RuleExtractor().extract(source, self_name=self_name) if "really" in source.text else []


def test_rederiving_the_records_a_memory_cites_leaves_it_to_those_it_does_not(engine: Engine) -> None:
    service = engine.open()
    api = Api(create_app(service))
    api.brain("b1", self_name="Alice")
    texts = ["I love cake."] * MAX_CITATIONS + ["I really love cake."] * 2
    sent = [api.remember("b1", {"kind": "message", "text": text}).body["id"] for text in texts]
    assert service.wait_idle()
    memory_id = api.get(f"/brains/b1/records/{sent[0]}").body["memory_ids"][0]
    assert api.get(f"/brains/b1/records/{sent[-1]}").body["memory_ids"] == [memory_id]
    engine.close(service)
    service = engine.open(Picky())
    api = Api(create_app(service))
    service.derivation.rederive_records(brain_of(service).uid, sent[:MAX_CITATIONS])
    assert service.wait_idle()
    memory = api.get(f"/brains/b1/memories/{memory_id}").body
    assert memory["status"] == "active" and [c["record_id"] for c in memory["citations"]] == sent[MAX_CITATIONS:]
    assert [m["id"] for m in listed(api)] == [memory_id]


@pytest.mark.parametrize("engine_kind", ["duckdb", "postgres"])
def test_an_interrupted_rederive_continues_where_it_stopped(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(composition, "REDERIVE_BATCH", 1)
    first = engine.open()
    seed(first)
    brain = brain_of(first)
    engine.close(first)

    failing = Louder(fail_at=3)  # the third Record's extraction fails
    service = engine.open(failing)
    with pytest.raises(ExtractorUnavailable):
        rederive_brains(service, engine.config, [brain.uid])
    progress = json.loads((engine.data_dir / "rederive" / f"{brain.uid}.json").read_text())
    assert progress["extractor"] == "louder-v1" and progress["done"] is False
    engine.close(service)

    resumed = Louder()
    service = engine.open(resumed)
    totals = rederive_brains(service, engine.config, [brain.uid])
    # records 1 and 2 were done; 3 and 4 remain, and the correction is skipped without a call
    assert resumed.calls == 2 and totals["records"] == 2
    assert json.loads((engine.data_dir / "rederive" / f"{brain.uid}.json").read_text())["done"] is True
    api = Api(create_app(service))
    assert service.wait_idle()
    statements = {m["statement"] for m in listed(api)}
    assert {"ALICE LOVES GREEN TEA.", "ALICE ADOPTED A CAT NAMED MISO."} <= statements
    # finished: a third run with the same extractor has nothing to do, another extractor starts over
    again = Louder()
    engine.close(service)
    service = engine.open(again)
    assert rederive_brains(service, engine.config, [brain.uid])["records"] == 0 and again.calls == 0
    engine.close(service)
    rules = engine.open(RuleExtractor())
    assert rederive_brains(rules, engine.config, [brain.uid])["records"] == 4


@pytest.mark.parametrize("engine_kind", ["duckdb", "postgres"])
def test_a_rederive_run_reads_the_brains_record_ids_a_batch_at_a_time_never_every_record_whole(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It had read every Record of the Brain, contents parsed, to learn their ids: twice the Brain's
    text in memory at once (160 Records of 900 KB: 288 MB), for batches of 32."""
    monkeypatch.setattr(composition, "REDERIVE_BATCH", 2)
    service = engine.open()
    seed(service)  # four turns and a correction
    brain = brain_of(service)

    def every_record_whole(brain_uid: str) -> list[object]:
        raise AssertionError("rederive read every Record of the Brain whole")

    monkeypatch.setattr(service.store, "list_records", every_record_whole)
    pages: list[tuple[int, int]] = []
    record_seqs = service.store.record_seqs

    def paged(brain_uid: str, *, after: int, limit: int) -> list[tuple[str, int]]:
        pages.append((after, limit))
        return record_seqs(brain_uid, after=after, limit=limit)

    monkeypatch.setattr(service.store, "record_seqs", paged)
    lines: list[str] = []
    totals = rederive_brains(service, engine.config, [brain.uid], restart=True, report=lines.append)
    assert totals == {"brains": 1, "records": 4, "requeued": 0, "skipped": 1}
    assert lines == [f"test:acme/b1: {n}/5 Records" for n in (2, 4, 5)] + ["test:acme/b1: done"]
    assert len(pages) == 4 and all(limit == 2 for _, limit in pages)  # three pages and the empty one
    assert [after for after, _ in pages] == sorted(after for after, _ in pages)


@pytest.mark.parametrize("engine_kind", ["duckdb", "postgres"])
def test_records_written_while_a_rederive_run_is_under_way_are_left_to_the_server(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run re-derives the Records there were when it began, as when it read them all at once: a
    server writing meanwhile derives its new Records with its own extractor, and a run never chases them."""
    monkeypatch.setattr(composition, "REDERIVE_BATCH", 1)
    service = engine.open()
    api, records, _, correction = seed(service)
    brain = brain_of(service)
    rederive_batch = service.derivation.rederive_records
    sent: list[str] = []

    def with_a_record_written_meanwhile(brain_uid: str, record_ids: list[str]) -> dict[str, int]:
        sent.extend(record_ids)
        if len(sent) == 1:
            api.remember("b1", {"kind": "message", "text": "I moved to Berlin."})
        return rederive_batch(brain_uid, record_ids)

    monkeypatch.setattr(service.derivation, "rederive_records", with_a_record_written_meanwhile)
    lines: list[str] = []
    totals = rederive_brains(service, engine.config, [brain.uid], restart=True, report=lines.append)
    assert sent == [*records, correction]
    assert totals["records"] == 4 and lines[-2:] == ["test:acme/b1: 5/5 Records", "test:acme/b1: done"]
    assert service.wait_idle()


@pytest.mark.parametrize("engine_kind", ["duckdb", "postgres"])
def test_forgetting_a_brain_removes_its_rederive_progress(engine: Engine) -> None:
    service = engine.open()
    api, _, _, _ = seed(service)
    brain = brain_of(service)
    rederive_brains(service, engine.config, [brain.uid], restart=True)
    assert (engine.data_dir / "rederive" / f"{brain.uid}.json").exists()
    assert api.delete("/brains/b1").status == 200
    assert list((engine.data_dir / "rederive").iterdir()) == []  # not even the Brain's id in a name


@pytest.mark.parametrize("engine_kind", ["duckdb", "postgres"])
def test_a_rederive_run_whose_brain_is_erased_midway_stops_and_drops_its_progress(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(composition, "REDERIVE_BATCH", 1)
    service = engine.open()
    api, _, _, _ = seed(service)
    brain = brain_of(service)
    rederive_batch = service.derivation.rederive_records
    calls: list[str] = []

    def then_erased(brain_uid: str, record_ids: list[str]) -> dict[str, int]:
        counts = rederive_batch(brain_uid, record_ids)
        calls.append(brain_uid)
        if len(calls) == 2:  # a server erases the Brain while the run is under way
            assert api.delete("/brains/b1").status == 200
        return counts

    monkeypatch.setattr(service.derivation, "rederive_records", then_erased)
    lines: list[str] = []
    totals = rederive_brains(service, engine.config, [brain.uid], restart=True, report=lines.append)
    assert len(calls) == 2 and lines[-1].endswith("erased meanwhile")
    assert totals["brains"] == 0 and totals["records"] == 1  # the batch before the erasure
    assert list((engine.data_dir / "rederive").iterdir()) == []


@pytest.mark.parametrize("engine_kind", ["duckdb"])
def test_a_progress_file_that_cannot_be_removed_does_not_fail_the_erasure(engine: Engine) -> None:
    service = engine.open()
    api, _, _, _ = seed(service)

    def refuse(brain_uid: str) -> None:
        raise PermissionError("read-only directory")

    service.writes.forget_rederive_progress = refuse
    assert api.delete("/brains/b1").status == 200
    assert api.get("/brains/b1").status == 404


@pytest.mark.parametrize("engine_kind", ["duckdb", "postgres"])
def test_a_rederive_run_drops_the_progress_of_brains_erased_by_another_server(engine: Engine) -> None:
    service = engine.open()
    seed(service)
    brain = brain_of(service)
    rederive_brains(service, engine.config, [brain.uid])
    folder = engine.data_dir / "rederive"
    # a server on another host erased a Brain this directory re-derived earlier, mid-save
    (folder / "brn_erasedelsewhere.json").write_text('{"extractor": "rules", "seq": 9, "done": true}')
    (folder / "brn_erasedelsewhere.tmp").write_text("{")
    rederive_brains(service, engine.config, [])
    assert sorted(p.name for p in folder.iterdir()) == [f"{brain.uid}.json"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``brainstore <args>`` in a child process, without this environment's BRAINSTORE_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINSTORE_")}
    return subprocess.run(
        [sys.executable, "-m", "brainstore.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_the_rederive_command_refuses_a_data_directory_a_server_holds_and_runs_when_free(tmp_path: Path) -> None:
    service = build_service(Config(engine="duckdb", data_dir=tmp_path))
    try:
        seed(service)
        done = _cli("rederive", "--data-dir", str(tmp_path))
        assert done.returncode == 2, done.stderr
        assert "brainstore.duckdb is in use" in done.stderr and "Stop `brainstore serve`" in done.stderr
    finally:
        service.stop()
        service.store.close()
    args = ["rederive", "--data-dir", str(tmp_path), "--brain", "b1", "--project", "acme"]
    done = _cli(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "brains=1 records=4 requeued_failed=0 skipped=1 model_calls=0"
    again = _cli(*args)
    assert again.returncode == 0 and "already re-derived with rules-v2" in again.stderr
    assert again.stdout.strip() == "brains=0 records=0 requeued_failed=0 skipped=0 model_calls=0"


def test_a_forget_between_a_rederive_s_commit_and_its_lane_update_leaves_no_erased_memory_in_the_lane(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lane update ran after re-derivation let go of the Brain: a forget in between erased the new
    Memory before the lane had it, and the update then put the erased statement in the lane."""
    import threading

    service = engine.open()
    api = Api(create_app(service))
    api.brain("b1", self_name="Alice")
    record = api.remember("b1", {"kind": "message", "text": "I live in Lisbon."}).body["id"]
    assert service.wait_idle()
    uid = brain_of(service).uid
    lane = service.evidence.memory_lane(uid)
    apply = service.evidence.apply
    racing: list[threading.Thread] = []

    def apply_with_a_forget_racing(brain_uid: str, *args: object) -> None:
        if not racing:
            racing.append(threading.Thread(target=lambda: api.delete(f"/brains/b1/records/{record}")))
            racing[0].start()
            racing[0].join(0.5)  # the forget runs now, unless the Brain is still held
        apply(brain_uid, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(service.evidence, "apply", apply_with_a_forget_racing)
    monkeypatch.setattr(service.derivation, "extractor", Louder())  # a new Memory, which the forget erases
    service.derivation.rederive_records(uid, [record])
    racing[0].join(30)
    assert api.get(f"/brains/b1/records/{record}").status == 404
    assert listed(api) == []
    assert lane._handles == {}  # no Memory of the forgotten Record, erased, is searched


def test_ctrl_c_inside_a_statement_stops_the_rederive_command_which_goes_on_when_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C inside a DuckDB statement (DuckDB raises RuntimeError('Query interrupted') for it; no
    signal is sent here) ended `brainstore rederive` with that traceback and exit 1: it stops with 130
    and says how to go on, and the next run re-derives only what the interrupted batch had not."""
    from brainstore import cli
    from brainstore.store.duckdb import DuckDBStore
    from tests.store.test_duckdb_interrupt import _Interrupting

    service = build_service(Config(engine="duckdb", data_dir=tmp_path))
    try:
        seed(service)
    finally:
        service.stop()
        service.store.close()
    monkeypatch.setattr(composition, "REDERIVE_BATCH", 1)
    lock_brain = DuckDBStore.lock_brain
    batches: list[str] = []

    def interrupted_in_the_second_batch(store: DuckDBStore, brain_uid: str) -> bool:
        if threading.current_thread() is threading.main_thread():  # the command's, not a worker's
            batches.append(brain_uid)
        if len(batches) == 2 and threading.current_thread() is threading.main_thread():  # the batch's next statement is interrupted
            store._local.cursor = _Interrupting(store._local.cursor, lambda query: True, RuntimeError("Query interrupted"))
        return lock_brain(store, brain_uid)

    monkeypatch.setattr(DuckDBStore, "lock_brain", interrupted_in_the_second_batch)
    args = ["rederive", "--data-dir", str(tmp_path), "--brain", "b1", "--project", "acme", "--restart"]
    try:
        code = cli.main(args)
    except (KeyboardInterrupt, RuntimeError) as exc:
        raise AssertionError(f"Ctrl-C escaped the rederive as {exc!r}") from None
    assert code == 130
    assert "interrupted. Run it again to continue where it stopped" in capsys.readouterr().err
    monkeypatch.setattr(DuckDBStore, "lock_brain", lock_brain)
    assert cli.main(args[:-1]) == 0
    # the first batch's Record was kept; the other three (and the correction, skipped) are done now
    assert capsys.readouterr().out.strip() == "brains=1 records=3 requeued_failed=0 skipped=1 model_calls=0"
