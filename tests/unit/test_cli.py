"""The CLI entry points whose behaviour docs/operations.md promises."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brainstore import cli
from brainstore.app import build_service
from brainstore.config import Config
from brainstore.store.duckdb import DuckDBStore

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("BRAINSTORE_")}


def test_hosted_serve_refuses_to_start_without_a_key_registry(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "brainstore.cli",
            "serve",
            "--deployment",
            "hosted",
            "--data-dir",
            str(tmp_path),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "key registry" in done.stderr and "--key-registry" in done.stderr
    assert "serving" not in done.stdout
    assert not (tmp_path / "brainstore.duckdb").exists()  # refused before opening anything


def test_documented_import_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        '{"external_id": "note-1", "content": "Alice moved to Lisbon in 2021.", "occurred_at": "2021-03-01T09:00:00Z"}\n'
        '{"external_id": "note-2", "content": {"kind": "message", "text": "I prefer tea.", "role": "user"}, "visibility": "shareable"}\n'
    )
    data = tmp_path / "data"
    argv = [
        "import",
        str(notes),
        "--brain",
        "alice",
        "--source",
        "notes",
        "--project",
        "acme",
        "--data-dir",
        str(data),
    ]

    assert cli.main(argv) == 1  # the Brain does not exist yet: nothing imported
    assert "brain_not_found" in capsys.readouterr().err

    assert cli.main([*argv, "--create-brain"]) == 0
    assert capsys.readouterr().out.strip() == "imported 2, unchanged 0, invalid 0"
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.strip() == "imported 0, unchanged 2, invalid 0"

    with notes.open("a") as handle:
        handle.write('{"external_id": "note-3", "content": {"kind": "poem"}}\n')
    assert cli.main(argv) == 1
    out = capsys.readouterr()
    assert out.out.strip() == "imported 0, unchanged 2, invalid 1"
    assert f"{notes}:3: unknown_kind: content.kind" in out.err

    store = DuckDBStore(data / "brainstore.duckdb")
    try:
        brain = store.get_brain("test:acme", "alice")
        assert brain is not None
        record = store.find_imported_record(brain.uid, "notes", "note-1")
        assert record is not None and record.origin == "import"
    finally:
        store.close()


def test_import_reads_utf8_lines_split_at_newlines_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A byte that is not UTF-8 ended the whole import with a traceback, and a CR (JSON white space inside a
    line) split a valid line in two, every later line number off by one: lines end at "\n" only, each
    decoded strictly, a bad one counted with its number and reason."""
    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(
        b'\xef\xbb\xbf{"external_id": "a1", "content": "Alice likes tea."}\n'  # a byte order mark, as a body may
        b'{"external_id": "a2", "content": "Ren\xe9e (Latin-1)"}\n'
        b'{"external_id": "a3",\r"content": "Bob likes coffee."}\r\n'
        + '{"external_id": "a4", "content": "Ren\u00e9e \u2028 (UTF-8)"}\n'.encode()
        # valid UTF-8 (ASCII and NULs) that json.detect_encoding takes for UTF-16: read as UTF-8, no JSON
        + '{"external_id": "a5", "content": "x"}'.encode("utf-16-le") + b"\n"
        + b'{"external_id": "a6", "content": {"kind": "poem"}}\n'
    )  # fmt: skip
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--data-dir", str(tmp_path / "data")]  # fmt: skip
    assert cli.main(argv) == 1
    out = capsys.readouterr()
    assert out.out.strip() == "imported 3, unchanged 0, invalid 3"
    reported = [line for line in out.err.splitlines() if line.startswith(f"{notes}:")]
    assert reported == [
        f"{notes}:2: invalid_request_body: line: is not UTF-8 (byte 38 is 0xe9)",
        f"{notes}:5: invalid_request_body: line: is not valid JSON (Expecting property name enclosed in double "
        "quotes at column 2)",
        f"{notes}:6: unknown_kind: content.kind: 'poem' is not one of message, document, event, fact, correction",
    ]

    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes('{"external_id": "b1", "content": "x"}\n'.encode("utf-16"))
    assert cli.main([*argv[:1], str(utf16), *argv[2:]]) == 1
    assert f"{utf16}:1: invalid_request_body: line: is not UTF-8 (byte 1 is 0xff)" in capsys.readouterr().err


def test_import_reads_a_pipe(tmp_path: Path) -> None:
    """`cat notes.jsonl | brainstore import /dev/stdin ...` said "imported 0" and exited 0: the lines of
    the pipe were counted for the progress bar, and the import then read the pipe again, used up."""
    notes = b'{"external_id": "p1", "content": "Bob likes tea."}\n{"external_id": "p2", "content": "Bob lives in Oslo."}\n'
    done = subprocess.run(
        [sys.executable, "-m", "brainstore.cli", "import", "/dev/stdin", "--brain", "alice", "--create-brain",
         "--source", "pipe", "--project", "acme", "--data-dir", str(tmp_path / "data"), "--derive-timeout", "5"],
        env=_env(), input=notes, capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.decode().strip() == "imported 2, unchanged 0, invalid 0"


def test_import_refuses_a_device_and_stops_at_a_line_that_never_ends(tmp_path: Path) -> None:
    """`brainstore import /dev/zero` never returned: its one line never ends, and the rest of a line too
    long to import was skipped up to a "\n" that never came. A device is refused (exit status 2, one
    line); a pipe whose line never ends stops the import at that line (exit status 1)."""
    import threading

    argv = [sys.executable, "-m", "brainstore.cli", "import", "--brain", "alice", "--create-brain", "--source", "z",
            "--project", "acme", "--data-dir", str(tmp_path / "data"), "--derive-timeout", "5"]  # fmt: skip
    done = subprocess.run([*argv[:4], "/dev/zero", *argv[4:]], env=_env(), capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr == "brainstore import: /dev/zero is neither a regular file nor a pipe\n"
    assert not (tmp_path / "data").exists()  # refused before opening anything

    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout, err.open("wb") as stderr_file:
        endless = subprocess.Popen(
            [*argv[:4], "/dev/stdin", *argv[4:]], env=_env(), stdin=subprocess.PIPE, stdout=stdout, stderr=stderr_file
        )  # fmt: skip
    assert endless.stdin is not None

    def write() -> None:
        try:
            endless.stdin.write(b'{"external_id": "z1", "content": "Zed likes tea."}\n')
            while True:
                endless.stdin.write(bytes(1 << 20))  # zeros, no end of line
        except (BrokenPipeError, ValueError, OSError):
            pass

    threading.Thread(target=write, daemon=True).start()
    try:
        endless.wait(timeout=120)  # not communicate(): it would close the pipe, an end of the line
    finally:
        endless.kill()
        endless.stdin.close()
    stderr = err.read_text()
    assert endless.returncode == 1, stderr[-2000:]
    assert out.read_text().strip() == "imported 1, unchanged 0, invalid 1"
    assert "/dev/stdin:2: invalid_request_body: line: must be at most" in stderr
    assert "brainstore import: /dev/stdin:2: has no end of line (\\n) in its first 257 MiB: the import stopped here" in stderr


def test_import_refuses_a_line_the_api_would_refuse_as_too_large(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An event of 8 MiB, which rememberRecord refuses (body over MAX_BODY), got in through import."""
    from brainstore.api.resources import MAX_BODY

    small = '{"external_id": "a3", "content": "Bob likes coffee."}'
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        '{"external_id": "a1", "content": "Alice likes tea."}\n'
        + json.dumps({"external_id": "a2", "content": {"kind": "event", "name": "blob", "data": {"x": "y" * 3 * MAX_BODY}}})
        + "\n" + small + " " * (MAX_BODY - len(small)) + "\n"  # as long as a body may be
        + '{"external_id": "a4", "content": "Carol likes juice."}\n'
    )  # fmt: skip
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--data-dir", str(tmp_path / "data"), "--derive-timeout", "5"]  # fmt: skip
    assert cli.main(argv) == 1
    out = capsys.readouterr()
    assert out.out.strip() == "imported 3, unchanged 0, invalid 1"
    assert f"{notes}:2: invalid_request_body: line: must be at most {MAX_BODY} bytes" in out.err


def test_import_refuses_the_memory_engine_from_the_flag_or_brainstore_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`import --engine memory` (or a server's BRAINSTORE_ENGINE=memory, a default argparse never checks
    against the choices) reported every line imported and exited 0, into a store gone at exit."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon."}\n')
    data = tmp_path / "data"
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--data-dir", str(data)]  # fmt: skip
    for engine in ("flag", "variable"):
        if engine == "variable":
            monkeypatch.setenv("BRAINSTORE_ENGINE", "memory")
        with pytest.raises(SystemExit) as exited:
            cli.main([*argv, "--engine", "memory"] if engine == "flag" else argv)
        assert exited.value.code == 2
        out = capsys.readouterr()
        assert out.out == "" and "imported" not in out.err
        assert "argument --engine: 'memory': an import must persist" in out.err
        assert "use --engine duckdb or --engine postgres" in out.err
    # nor do rederive and migrate work on a store that was never kept; an unknown engine is refused
    for command, why in (("rederive", "nothing to re-derive"), ("migrate", "no schema to migrate")):
        with pytest.raises(SystemExit) as exited:
            cli.main([command, "--data-dir", str(data)])
        assert exited.value.code == 2 and why in capsys.readouterr().err
    monkeypatch.setenv("BRAINSTORE_ENGINE", "duckbd")
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2 and "argument --engine: 'duckbd': not an engine" in capsys.readouterr().err
    assert not data.exists()  # refused before anything was opened

    monkeypatch.setenv("BRAINSTORE_ENGINE", "duckdb")
    assert cli.main(argv) == 0 and capsys.readouterr().out.strip() == "imported 1, unchanged 0, invalid 0"
    store = DuckDBStore(data / "brainstore.duckdb")
    try:
        brain = store.get_brain("test:acme", "alice")
        assert brain is not None and store.find_imported_record(brain.uid, "notes", "n1") is not None
    finally:
        store.close()


def test_import_writes_to_postgres_with_its_database_url(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The engines an import may write are those that persist: postgres as well as duckdb (it was
    reachable only through BRAINSTORE_ENGINE, unchecked, and BRAINSTORE_DATABASE_URL)."""
    from brainstore.store.postgres import PostgresStore

    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon."}\n')
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--engine", "postgres", "--database-url", postgres_url, "--data-dir", str(tmp_path / "data")]  # fmt: skip
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == "imported 1, unchanged 0, invalid 0"
    store = PostgresStore(postgres_url)
    try:
        brain = store.get_brain("test:acme", "alice")
        assert brain is not None and store.find_imported_record(brain.uid, "notes", "n1") is not None
    finally:
        store.close()


def test_import_and_rederive_refuse_a_brain_or_project_no_api_key_can_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--brain must be a Slug (the API's Brain ids) and --project a key's project segment, checked as
    auth.keys parses a key; before anything is read or written (tests/api/test_import.py has the API's
    side of it)."""
    from brainstore.auth.keys import generate_key, named_project, parse_key
    from brainstore.client import Client

    for project in ("acme", "a-b.c", "A~1/+="):
        assert named_project(project) and parse_key(generate_key("live", project)).project == project
        Client("http://127.0.0.1:9/v1", generate_key("live", project)).close()  # a key the Client can send
    # a space, a control character or a letter beyond ASCII: a key the Client refuses (or, in a Latin-1
    # header, another key): "sk_test_ac me_…" was issued, and import made Brains in that namespace
    for project in ("", "ac_me", "_acme", "acme_", "ac me", " acme", "ac\tme", "acme\n", "ac\x7fme", "émile"):
        assert not named_project(project)
        with pytest.raises(ValueError, match="no underscore and no space"):
            generate_key("test", project)

    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon."}\n')
    data = tmp_path / "data"
    imported = ["import", str(notes), "--create-brain", "--source", "notes", "--data-dir", str(data)]
    for argv, named in (
        ([*imported, "--brain", "My Brain", "--project", "acme"], "--brain: 'My Brain' is not a Brain id"),
        ([*imported, "--brain", "alice", "--project", "ac_me"], "--project: 'ac_me' is not a project"),
        (["rederive", "--data-dir", str(data), "--brain", "b 1", "--project", "acme"], "--brain: 'b 1' is not"),
        (["rederive", "--data-dir", str(data), "--brain", "b1", "--project", ""], "--project: '' is not"),
        ([*imported, "--brain", "alice", "--project", "ac me"], "--project: 'ac me' is not a project"),
    ):
        with pytest.raises(SystemExit) as exited:
            cli.main(argv)
        assert exited.value.code == 2
        assert f"error: argument {named}" in capsys.readouterr().err
    # from BRAINSTORE_PROJECT too, which import takes for --project
    monkeypatch.setenv("BRAINSTORE_PROJECT", "ac_me")
    with pytest.raises(SystemExit) as exited:
        cli.main([*imported, "--brain", "alice"])
    assert exited.value.code == 2 and "argument --project: 'ac_me' is not a project" in capsys.readouterr().err
    assert not data.exists()
    # an empty BRAINSTORE_PROJECT is no project: a rederive of every Brain needs none
    monkeypatch.setenv("BRAINSTORE_PROJECT", "")
    assert cli.main(["rederive", "--data-dir", str(data)]) == 0
    assert capsys.readouterr().out.strip() == "brains=0 records=0 requeued_failed=0 skipped=0 model_calls=0"


def test_import_and_rederive_take_the_deployment_as_serve_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Import built its Config without the deployment (BRAINSTORE_DEPLOYMENT was read by serve only), so
    on a hosted deployment it stored the local_only Records that rememberRecord refuses there."""
    registry = tmp_path / "keys.json"
    registry.write_text('{"keys": []}')
    monkeypatch.setenv("BRAINSTORE_DEPLOYMENT", "hosted")
    monkeypatch.setenv("BRAINSTORE_KEY_REGISTRY", str(registry))
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        '{"external_id": "l1", "content": "My local-only secret.", "visibility": "local_only"}\n'
        '{"external_id": "s1", "content": "Alice likes tea."}\n'
    )
    data = tmp_path / "data"
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--data-dir", str(data)]  # fmt: skip
    assert cli.main(argv) == 1
    out = capsys.readouterr()
    assert out.out.strip() == "imported 1, unchanged 0, invalid 1"
    assert f"{notes}:1: local_only_record: " in out.err
    store = DuckDBStore(data / "brainstore.duckdb")
    try:
        brain = store.get_brain("test:acme", "alice")
        assert brain is not None
        assert store.find_imported_record(brain.uid, "notes", "l1") is None
        assert store.find_imported_record(brain.uid, "notes", "s1") is not None
    finally:
        store.close()

    built: list[Config] = []
    monkeypatch.setattr(cli, "_offline_service", lambda command, config: built.append(config))
    assert cli.main(["rederive", "--data-dir", str(data)]) == 2  # no service: the test stops there
    monkeypatch.delenv("BRAINSTORE_DEPLOYMENT")
    monkeypatch.delenv("BRAINSTORE_KEY_REGISTRY")
    assert cli.main(["rederive", "--data-dir", str(data), "--deployment", "hosted", "--key-registry", str(registry)]) == 2
    assert [config.deployment for config in built] == ["hosted", "hosted"]
    # as serve, neither starts hosted without a key registry
    assert cli.main(["import", *argv[1:], "--deployment", "hosted"]) == 2
    assert "brainstore import: a hosted deployment refuses to start without a key registry" in capsys.readouterr().err


def test_import_and_embedded_mcp_refuse_while_the_data_directory_is_held(tmp_path: Path) -> None:
    # A running server holds the DuckDB file; another process must refuse, not wait or corrupt.
    service = build_service(Config(engine="duckdb", data_dir=tmp_path))
    try:
        notes = tmp_path / "notes.jsonl"
        notes.write_text(json.dumps({"external_id": "x", "content": "x"}) + "\n")
        for args in (
            ["import", str(notes), "--brain", "alice", "--source", "notes", "--project", "acme"],
            ["mcp", "--project", "acme", "--brain", "alice"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "brainstore.cli", *args, "--data-dir", str(tmp_path)],
                env=_env(),
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
            assert done.returncode == 2, done.stderr
            assert "brainstore.duckdb is in use" in done.stderr
            assert done.stdout == ""
    finally:
        service.stop()
        service.store.close()


def test_the_files_a_command_writes_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    """Index files and a compaction's copy hold tenants' text; a data directory made by the operator
    with the usual 0755 would otherwise show them to every local user."""
    import stat
    import subprocess
    import sys

    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon in 2021."}\n')
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--data-dir", str(data)]  # fmt: skip
    done = subprocess.run(
        ["sh", "-c", 'umask 022 && exec "$0" -m brainstore.cli "$@"', sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    written = [p for p in data.rglob("*") if p.is_file()]
    assert any(p.suffix == ".duckdb" for p in written) and any(p.parent.parent.name == "index" for p in written)
    assert [p for p in written if stat.S_IMODE(p.stat().st_mode) & 0o077] == []


def test_migrate_opens_duckdb_within_the_memory_limit_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[int] = []

    class Recording(DuckDBStore):
        def __init__(self, path: Path, **kw: int) -> None:
            super().__init__(path, **kw)
            opened.append(self.memory_limit_mib)

    monkeypatch.setattr("brainstore.store.duckdb.DuckDBStore", Recording)
    monkeypatch.setenv("BRAINSTORE_DUCKDB_MEMORY_MIB", "96")
    assert cli.main(["migrate", "--data-dir", str(tmp_path)]) == 0
    assert opened == [96]
    # import writes the data directory itself, and reads the setting as serve does
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"external_id": "n1", "content": "Alice moved to Lisbon in 2021."}\n')
    argv = ["import", str(notes), "--brain", "alice", "--create-brain", "--source", "notes", "--project", "acme",
            "--data-dir", str(tmp_path)]  # fmt: skip
    assert cli.main(argv) == 0
    assert opened == [96, 96]
    monkeypatch.setenv("BRAINSTORE_DUCKDB_MEMORY_MIB", "lots")
    assert cli.main(["migrate", "--data-dir", str(tmp_path)]) == 2
    assert "BRAINSTORE_DUCKDB_MEMORY_MIB must be an integer" in capsys.readouterr().err


def test_keys_says_when_it_could_not_keep_the_registry_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`keys create` replaces the registry; a user who may not give the new file the old one's owner keeps
    its mode and says, on stderr, what it could not keep (tests/unit/test_key_registry.py has the rest)."""
    if os.geteuid() != 0:
        pytest.skip("giving a file another owner needs root")
    registry = tmp_path / "keys.json"
    assert cli.main(["keys", "--key-registry", str(registry), "create", "--project", "acme"]) == 0
    os.chown(registry, 65534, 65534)
    registry.chmod(0o640)

    def refuse(fd: int, uid: int, gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fchown", refuse)
    capsys.readouterr()
    assert cli.main(["keys", "--key-registry", str(registry), "create", "--project", "acme"]) == 0
    err = capsys.readouterr().err
    assert f"brainstore keys: warning: {registry}: could not keep its owner" in err
    assert (registry.stat().st_mode & 0o777) == 0o640


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--project", "ac me"], "--project 'ac me' is not a project an API key can name"),
        (["--project", "a_b"], "--project 'a_b' is not a project an API key can name"),
        (["--project", ""], "--project '' is not a project"),
        (["--project", "acme", "--brain", "My Brain!"], "--brain 'My Brain!' is not a Brain id"),
    ],
)
def test_keys_create_refuses_a_project_or_brain_no_key_can_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """`--project "ac me"` issued sk_test_ac me_… (the Client refuses it), `--brain "My Brain!"` a key bound
    to a Brain no path names, and `--project a_b` ended in a ValueError traceback: now one line, exit 2,
    and nothing written."""
    registry = tmp_path / "keys.json"
    assert cli.main(["keys", "--key-registry", str(registry), "create", *argv]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and out.err.startswith(f"brainstore keys: {said}")
    assert not registry.exists()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "cannot parse the key registry {path}: Expecting property name"),
        (b"\xff{}", "cannot read the key registry {path}: 'utf-8' codec can't decode"),
        ('{"keys": 5}', 'cannot parse the key registry {path}: it is not {{"keys": [...]}}'),
        ('{"keys": [{"id": "key_1"}]}', "cannot parse the key registry {path}: an entry has no 'scopes'"),
        (None, "the key registry {path} is a directory, not a file"),
    ],
)
def test_keys_says_in_one_line_that_a_registry_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None, said: str
) -> None:
    """A corrupt registry (JSONDecodeError) or one that is a directory ended every `keys` command in a
    traceback, exit 1: now "brainstore keys: ...", exit 2, and the file is left as it was."""
    registry = tmp_path / "keys.json"
    if content is None:
        registry.mkdir()
    elif isinstance(content, bytes):
        registry.write_bytes(content)
    else:
        registry.write_text(content)
    for command in (["list"], ["create", "--project", "acme"], ["revoke", "key_0123456789ab"]):
        assert cli.main(["keys", "--key-registry", str(registry), *command]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1, out.err
        assert out.err.startswith("brainstore keys: " + said.format(path=registry)), out.err
    if content is None:
        assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.json"]  # no lock file beside a directory
    else:
        assert registry.read_bytes() == (content if isinstance(content, bytes) else content.encode())
