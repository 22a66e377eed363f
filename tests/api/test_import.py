"""Import from an external source: origin import, idempotent per (source, external_id), bad lines reported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brainstore import cli
from brainstore.api.app import create_app
from brainstore.importer import import_principal, import_records
from brainstore.service import Service
from tests.conftest import Api, assert_error, open_engine

LINES = [
    {"external_id": "n1", "content": "Alice moved to Lisbon in 2021.", "occurred_at": "2021-03-01T09:00:00Z"},
    {"external_id": "n2", "content": {"kind": "message", "text": "I prefer tea.", "role": "user"}},
    {
        "external_id": "n3",
        "content": {"kind": "fact", "text": "Bob is Alice's brother."},
        "visibility": "redacted_summary",
    },
]


def _jsonl(rows: list[object]) -> list[bytes]:
    return [(row if isinstance(row, str) else json.dumps(row)).encode() for row in rows]


def test_imported_records_are_not_erasable_and_reimport_is_a_no_op(service: Service) -> None:
    api = Api(create_app(service))
    api.brain("alice", self_name="Alice")
    principal = import_principal("test", "acme")  # the namespace of tests.conftest.KEY

    imported: list[tuple[int, str]] = []
    first = import_records(
        service, principal, "alice", "notes", _jsonl(LINES), on_imported=lambda n, i: imported.append((n, i))
    )
    assert (first.imported, first.unchanged, first.invalid) == (3, 0, 0)
    assert [number for number, _ in imported] == [1, 2, 3]
    record_ids = [record_id for _, record_id in imported]

    for record_id, line in zip(record_ids, LINES, strict=True):
        record = api.get(f"/brains/alice/records/{record_id}").body
        assert record["origin"] == "import"
        assert record["source"]["name"] == "notes" and record["source"]["external_id"] == line["external_id"]
        assert_error(api.delete(f"/brains/alice/records/{record_id}"), 403, "record_not_erasable")
    assert (
        api.get(f"/brains/alice/records/{record_ids[0]}").body["occurred_at"].startswith("2021-03-01")
    )

    # Re-import reconciles: nothing duplicated, even with changed content and a new line.
    again = import_records(
        service, principal, "alice", "notes", _jsonl([*LINES, {"external_id": "n4", "content": "New."}])
    )
    assert (again.imported, again.unchanged, again.invalid) == (1, 3, 0)
    # The same external_id from another source is another Record.
    other = import_records(service, principal, "alice", "crm", _jsonl(LINES[:1]))
    assert (other.imported, other.unchanged) == (1, 0)

    # An API-origin Record stays erasable.
    record_id = api.remember("alice", "Temporary.").body["id"]
    assert api.delete(f"/brains/alice/records/{record_id}").status == 200


def test_bad_lines_are_reported_with_line_numbers_and_never_stop_the_import(service: Service) -> None:
    api = Api(create_app(service))
    api.brain("alice")
    rows: list[object] = [
        {"external_id": "ok1", "content": "Fine."},
        "{not json",
        {"content": "no id"},
        {"external_id": "bad-kind", "content": {"kind": "poem", "text": "x"}},
        {"external_id": "bad-time", "content": "x", "occurred_at": "yesterday"},
        "",
        {"external_id": "bad-vis", "content": "x", "visibility": "public"},
        {"external_id": "extra", "content": "x", "color": "red"},
        "[1, 2]",
        {"external_id": "ok2", "content": "Also fine."},
        # parsed as strictly as an API body: each of these was taken (the deep one ended the import)
        {"external_id": "nul", "content": "a\x00b"},
        {"external_id": "surrogate", "content": {"kind": "message", "text": "a\ud800b"}},
        '{"external_id": "nan", "content": {"kind": "event", "name": "x", "data": {"n": NaN}}}',
        '{"external_id": "deep", "content": {"kind": "event", "name": "x", "data": ' + "[" * 5000 + "]" * 5000 + "}}",
        '{"external_id": "big", "content": {"kind": "event", "name": "x", "data": {"n": 1' + "0" * 400 + "}}}",
    ]
    invalid: list[tuple[int, str]] = []
    report = import_records(
        service, import_principal("test", "acme"), "alice", "notes", _jsonl(rows), on_invalid=lambda n, r: invalid.append((n, r))
    )
    assert (report.imported, report.unchanged, report.invalid) == (2, 0, len(invalid))
    reasons = dict(invalid)
    assert sorted(reasons) == [2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14, 15]  # line 6 is blank: skipped, not invalid
    assert reasons[2] == "invalid_request_body: line: is not valid JSON (Expecting property name enclosed in double quotes at column 2)"
    assert reasons[3].startswith("invalid_request_body: external_id")
    assert reasons[4].startswith("unknown_kind: content.kind")
    assert reasons[5].startswith("invalid_request_body: occurred_at")
    assert reasons[7].startswith("invalid_request_body: visibility")
    assert reasons[8].startswith("invalid_request_body: color")
    assert reasons[11] == "invalid_request_body: line.content: contains a NUL character (\\u0000)"
    assert reasons[12] == "invalid_request_body: line.content.text: contains a lone UTF-16 surrogate (\\ud800-\\udfff)"
    assert reasons[13] == "invalid_request_body: line: is not valid JSON: NaN is not JSON"
    assert reasons[14].startswith("invalid_request_body: line: nests arrays or objects deeper than")
    assert reasons[15].startswith("invalid_request_body: line.content.data.n: is an integer out of range of a double")
    assert report.summary() == "imported 2, unchanged 0, invalid 12"


def test_import_into_a_missing_brain_or_another_namespace_fails_whole(service: Service) -> None:
    api = Api(create_app(service))
    api.brain("alice")
    try:
        import_records(service, import_principal("live", "acme"), "alice", "notes", _jsonl(LINES))
    except Exception as exc:  # the live namespace has no Brain alice
        assert getattr(exc, "code", None) == "brain_not_found"
    else:
        raise AssertionError("expected brain_not_found")


def test_the_longest_multibyte_source_and_external_id_import_and_reconcile(service: Service) -> None:
    """500 characters each, up to 2,000 bytes each: PostgreSQL's index of the two took at most 2,704 bytes
    in all, and such a line ended the import."""
    api = Api(create_app(service))
    api.brain("alice")
    source = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(500))
    external_id = "".join(chr(0xAC00 + (i * 104729) % 11000) for i in range(500))
    line = _jsonl([{"external_id": external_id, "content": "Alice moved to Lisbon."}])
    first = import_records(service, import_principal("test", "acme"), "alice", source, line)
    assert (first.imported, first.unchanged, first.invalid) == (1, 0, 0)
    again = import_records(service, import_principal("test", "acme"), "alice", source, line)
    assert (again.imported, again.unchanged, again.invalid) == (0, 1, 0)


@pytest.mark.parametrize(
    ("brain_id", "project", "refused"),
    [
        ("My Brain", "acme", "--brain"),
        ("-alice", "acme", "--brain"),
        ("a" * 65, "acme", "--brain"),
        ("alice\n", "acme", "--brain"),
        ("alice", "ac_me", "--project"),
        ("alice", "", "--project"),
        ("a.b_c-1", "acme", None),
        ("alice", "globex", None),
    ],
)
def test_a_brain_an_import_creates_is_one_a_key_of_its_project_reads_and_forgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], brain_id: str, project: str, refused: str | None
) -> None:
    """`import --create-brain` took any --brain and --project: "My Brain", or a Brain of the project
    "ac_me" (no key sk_<env>_<project>_<secret> names it), held its Records where no API call could read
    or forget them. Now the CLI refuses what the API cannot name, and what it takes a key can reach."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon."}\n')
    data = tmp_path / "data"
    argv = ["import", str(notes), f"--brain={brain_id}", "--create-brain", "--source", "notes", f"--project={project}",
            "--data-dir", str(data)]  # fmt: skip
    try:
        code = cli.main(argv)
    except SystemExit as exited:
        code = exited.code
    if refused is not None:
        assert code == 2
        assert f"brainstore import: error: argument {refused}: {(project if refused == '--project' else brain_id)!r}" in (
            capsys.readouterr().err
        )
        assert not data.exists()  # nothing written, not even the data directory
        return
    assert code == 0 and capsys.readouterr().out.strip() == "imported 1, unchanged 0, invalid 0"
    service = open_engine("duckdb", data)
    try:
        brain = service.store.get_brain(f"test:{project}", brain_id)
        assert brain is not None
        record = service.store.find_imported_record(brain.uid, "notes", "n1")
        assert record is not None
        api = Api(create_app(service), key=f"sk_test_{project}_s3cretvalue0009")
        assert api.get(f"/brains/{brain_id}").status == 200
        assert api.get(f"/brains/{brain_id}/records/{record.id}").body["origin"] == "import"
        assert api.delete(f"/brains/{brain_id}").status == 200
        assert api.get(f"/brains/{brain_id}/records/{record.id}").status == 404
    finally:
        service.stop()
        service.store.close()


def test_a_line_that_never_ends_stops_the_import_there(service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rest of a line too long to import was skipped up to its "\n" however far it was: a line that
    never ended (`brainstore import /dev/zero`) kept the import reading for ever. Past MAX_SKIP bytes
    the import stops at that line, the lines before it imported."""
    import io

    from brainstore import importer
    from brainstore.api.resources import MAX_BODY

    monkeypatch.setattr(importer, "MAX_SKIP", 2 * MAX_BODY, raising=False)
    Api(create_app(service)).brain("alice")
    data = (
        b'{"external_id": "e1", "content": "Alice likes tea."}\n'
        + b"x" * (5 * MAX_BODY)  # line 2: past MAX_BODY + MAX_SKIP without an end
        + b'\n{"external_id": "e3", "content": "Never read."}\n'
    )
    lines = importer.jsonl_lines(io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    invalid: list[int] = []
    report = import_records(
        service, import_principal("test", "acme"), "alice", "notes", lines, on_invalid=lambda n, _: invalid.append(n)
    )
    assert (report.imported, report.invalid, invalid) == (1, 1, [2])
    assert report.stopped == (2, "has no end of line (\\n) in its first 3 MiB: the import stopped here")


def test_concurrent_imports_of_one_file_make_each_record_once(service: Service) -> None:
    """Two imports of the same lines at once (overlapping cron runs on PostgreSQL) each looked the
    (source, external_id) up before writing, outside the Brain's write lock: both missed, and each
    wrote the line, twice the Records, which forgetRecord refuses (403 record_not_erasable). The
    look-up is now repeated inside the write, under the lock."""
    import threading

    Api(create_app(service)).brain("alice")
    principal = import_principal("test", "acme")
    rows = [{"external_id": f"n{i}", "content": f"Alice wrote note {i}."} for i in range(40)]
    looked_up = threading.Barrier(2, timeout=10)
    find = service.store.find_imported_record
    seen: set[str] = set()

    def find_once_together(brain_uid: str, source_name: str, external_id: str) -> object:
        # the importers' look-up of n0: both threads make it before either writes
        if external_id == "n0" and threading.current_thread().name.startswith("import-") and external_id not in seen:
            found = find(brain_uid, source_name, external_id)
            looked_up.wait()
            seen.add(external_id)
            return found
        return find(brain_uid, source_name, external_id)

    service.store.find_imported_record = find_once_together  # type: ignore[method-assign]
    reports = []

    def run() -> None:
        reports.append(import_records(service, principal, "alice", "notes", _jsonl(rows)))

    threads = [threading.Thread(target=run, name=f"import-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(reports) == 2 and all(not r.invalid for r in reports)
    assert sum(r.imported for r in reports) == len(rows)
    assert sum(r.unchanged for r in reports) == len(rows)


def test_an_import_keeps_nothing_per_line(service: Service) -> None:
    """The report kept every bad line's reason and every Record id (about 200 bytes a line, 40 MB for
    200,000 bad lines) and the CLI printed the reasons only once the whole file was read. Each line's
    outcome is now handed on as the line is done, and the report holds counts."""
    import tracemalloc

    Api(create_app(service)).brain("alice")
    principal = import_principal("test", "acme")
    events: list[str] = []

    def lines(count: int, log: bool = True) -> Iterator[bytes]:
        for number in range(1, count + 1):
            if log:
                events.append(f"read {number}")
            yield b'{"content": "a line without its external_id"}'

    import_records(service, principal, "alice", "notes", lines(3), on_invalid=lambda n, _: events.append(f"invalid {n}"))
    assert events == ["read 1", "invalid 1", "read 2", "invalid 2", "read 3", "invalid 3"]

    def peak(count: int) -> int:
        tracemalloc.start()
        try:
            report = import_records(service, principal, "alice", "notes", lines(count, log=False))
            assert report.invalid == count
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(1_000), peak(20_000)
    assert large < small + 1_000_000, (small, large)  # 20x the lines: not 19,000 lines' worth more memory


def test_ctrl_c_stops_an_import_between_lines_and_running_it_again_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C inside a DuckDB statement came out as RuntimeError('Query interrupted'), which the group
    commit retried: the import ran on (interrupted at 2.5 s, it reported all 20,000 lines imported).
    Elsewhere it was a traceback. It now ends the import after the line in progress, says where, and
    exits 130; the same command then imports the rest."""
    import os
    import signal

    from brainstore import importer

    notes = tmp_path / "notes.jsonl"
    notes.write_text("".join(json.dumps({"external_id": f"n{i}", "content": f"Note {i}."}) + "\n" for i in range(4)))
    argv = ["import", str(notes), "--brain=alice", "--create-brain", "--source=notes", "--project=acme",
            "--data-dir", str(tmp_path / "data")]  # fmt: skip
    parse = importer.parse_line

    def ctrl_c_at_line_2(line: bytes, source_name: str) -> Any:
        if b'"n1"' in line:
            os.kill(os.getpid(), signal.SIGINT)
        return parse(line, source_name)

    monkeypatch.setattr(importer, "parse_line", ctrl_c_at_line_2)
    try:
        code = cli.main(argv)
    except KeyboardInterrupt:
        raise AssertionError("Ctrl-C escaped the import as a KeyboardInterrupt") from None
    out, err = capsys.readouterr()
    assert code == 130
    assert out.strip() == "imported 2, unchanged 0, invalid 0"
    assert f"interrupted after {notes}:2. Run the same command again" in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back

    monkeypatch.setattr(importer, "parse_line", parse)
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.strip() == "imported 2, unchanged 2, invalid 0"


@pytest.mark.parametrize("seconds", ["nan", "inf", "-1", "soon"])
def test_a_derive_timeout_that_is_no_number_of_seconds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seconds: str
) -> None:
    """--derive-timeout nan waited for derivation for ever; inf ended an import that had written its
    Records with an OverflowError traceback."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon."}\n')
    for command in (["import", str(notes), "--brain=alice", "--source=notes", "--project=acme"], ["rederive"]):
        with pytest.raises(SystemExit) as exited:
            cli.main([*command, "--data-dir", str(tmp_path / "data"), f"--derive-timeout={seconds}"])
        assert exited.value.code == 2
        assert "argument --derive-timeout" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()
