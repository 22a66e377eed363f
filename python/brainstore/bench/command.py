"""``brainstore bench``: the command behind the CLI's parser (its arguments: :mod:`brainstore.bench.arguments`)."""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

from brainstore.auth.keys import PROJECT_RULE, named_project, parse_key
from brainstore.bench.loader import BenchDataError, is_jsonl, load_conversations, load_queries
from brainstore.bench.report import (
    LOCOMO_CATEGORY_NAMES,
    PlotUnavailable,
    plot,
    require_matplotlib,
    summarize,
    table,
    write_json,
)
from brainstore.bench.runner import BenchAborted, BenchSettings, Runner, Target, embedded_client
from brainstore.client import Client
from brainstore.errors import BrainstoreError

__all__ = ["run"]

MODES = ("fast", "thorough")
#: The embedded engine's project when neither --project nor BRAINSTORE_PROJECT names one: it keeps
#: bench Brains apart from an application's. Any well-formed key serves the embedded engine (it has no
#: key registry): sk_<env>_<project>_embedded reads the project named.
EMBEDDED_PROJECT = "bench"


class UsageError(ValueError):
    pass


def _csv(value: str, what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError(f"--{what}: give at least one value")
    return list(dict.fromkeys(items))


def _budgets(value: str) -> tuple[int, ...]:
    out = []
    for item in _csv(value, "budgets"):
        # ASCII digits: str.isdigit takes "²", which int() refuses (a traceback)
        if not (item.isascii() and item.isdigit()) or not 1 <= int(item) <= 100_000:
            raise UsageError(f"--budgets: {item!r} is not a token budget (an integer 1..100000)")
        out.append(int(item))
    return tuple(out)


def _modes(value: str) -> tuple[str, ...]:
    modes = tuple(_csv(value, "modes"))
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise UsageError(f"--modes: {', '.join(unknown)} is not one of {', '.join(MODES)}")
    return modes


def _check(args: argparse.Namespace) -> None:
    if (args.url is None) == (args.data_dir is None):
        raise UsageError(
            "give either --url (with --key) for a running server or --data-dir for the embedded engine"
        )
    if args.url is not None and not args.key:
        raise UsageError("--url needs --key (or BRAINSTORE_API_KEY)")
    if args.url is not None and (args.project is not None or args.env is not None):
        raise UsageError("--project and --env name the embedded engine's project; with --url the key names it")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,15}", args.brain_prefix):
        raise UsageError("--brain-prefix: 1-16 letters, digits, '_', '-' or '.', starting with a letter or digit")
    jsonl = is_jsonl(args.data)
    if jsonl and not args.brain:
        raise UsageError("JSON Lines data needs --brain: the Brain whose Records carry those external ids")
    if not jsonl and args.brain:
        raise UsageError("--brain is for JSON Lines data; LoCoMo conversations each get a new Brain")
    if jsonl and args.conversations:
        raise UsageError("--conversations selects LoCoMo conversations; JSON Lines data has none")
    if not (math.isfinite(args.ready_timeout) and args.ready_timeout > 0):
        # nan never passed the deadline (a Record stuck processing held the run for ever); <= 0 gave up
        # on the first Record not yet derived
        raise UsageError(f"--ready-timeout: {args.ready_timeout} is not a positive number of seconds")
    for flag, value in (("--json", args.json_path), ("--plot", args.plot)):
        if value is not None:
            _writable(flag, Path(value))


def _writable(flag: str, path: Path) -> None:
    """Refuse, before the run, a report path that cannot be written: it was found out after the run
    (which may take an hour), as a traceback, and the JSON report was lost."""
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{flag}: {str(path)!r} is a directory")
    if not folder.is_dir():
        raise UsageError(f"{flag}: {str(folder)!r} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{flag}: {str(path)!r} cannot be written")


def _embedded_key(args: argparse.Namespace) -> str:
    """The key the embedded engine is called with: the project of --project and --env (as `brainstore
    import` names it; default BRAINSTORE_PROJECT, else bench, in test), or else --key's. It was always
    sk_test_bench_embedded, so the README's import into --project acme then `bench --data-dir ... --brain
    alice` was brain_not_found, and --project unrecognized."""
    if args.key and args.project is None and args.env is None:
        return str(args.key)
    project = args.project if args.project is not None else os.environ.get("BRAINSTORE_PROJECT") or EMBEDDED_PROJECT
    if not named_project(project):
        raise UsageError(f"--project: {project!r} is not a project an API key can name: it {PROJECT_RULE}")
    env = args.env or "test"
    key = f"sk_{env}_{project}_embedded"
    if args.key:
        try:
            given = parse_key(args.key).prefix
        except BrainstoreError as exc:
            raise UsageError(f"--key: {exc.message}") from None
        if given != f"sk_{env}_{project}":
            raise UsageError(f"--key names another project than --project {project!r} and --env {env!r}")
    return key


def _key_project(key: str) -> str:
    """"project P (env)" of ``key``, for a message."""
    try:
        parsed = parse_key(key)
    except BrainstoreError:
        return "the key's project"
    return f"project {parsed.project!r} ({parsed.env})"


def _select(conversations: list[Any], wanted: str | None, data: str) -> list[Any]:
    if not conversations:
        raise BenchDataError(f"{data}: no LoCoMo conversation found")
    if not wanted:
        return conversations
    by_id = {c.sample_id: c for c in conversations}
    ids = [w.removeprefix("conv-") for w in _csv(wanted, "conversations")]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise UsageError(f"--conversations: {', '.join(missing)} not in {data} (it has {', '.join(by_id)})")
    return [by_id[i] for i in ids]


def _metadata(
    args: argparse.Namespace, runner: Runner, targets: list[Target], started: datetime
) -> dict[str, Any]:
    try:
        version = metadata.version("brainstore")
    except metadata.PackageNotFoundError:
        version = None
    target = (
        {"url": args.url}
        if args.url
        else {"embedded": args.engine, "data_dir": str(Path(args.data_dir).resolve())}
    )
    return {
        "started_at": started.isoformat().replace("+00:00", "Z"),
        "finished_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "target": target,
        "data": str(Path(args.data).resolve()),
        "budgets": list(runner.settings.budgets),
        "modes": list(runner.settings.modes),
        "conversations": [
            {
                "conversation": t.label,
                "brain": t.brain,
                "questions": len(t.queries),
                "records": t.records,
                "failed_records": t.failed_records,
                "ingest_seconds": round(t.ingest_seconds, 2),
            }
            for t in targets
        ],
        "brains_kept": runner.settings.keep_brains,
        "rate_limited_retries": runner.call.rate_limited,
        "transient_retries": runner.call.transient,
        "brainstore": version,
        "python": platform.python_version(),
        "machine": {"system": platform.system(), "cpus": os.cpu_count()},
    }


def run(args: argparse.Namespace) -> int:
    started = datetime.now(UTC)
    try:
        _check(args)
        settings = BenchSettings(
            budgets=_budgets(args.budgets),
            modes=_modes(args.modes),
            brain_prefix=args.brain_prefix,
            keep_brains=args.keep_brains,
            ready_timeout=args.ready_timeout,
        )
        key = args.key if args.url else _embedded_key(args)
        if args.plot:
            require_matplotlib()  # before the run, not after it
        if is_jsonl(args.data):
            queries, without_evidence = load_queries(args.data)
            if without_evidence:
                print(
                    f"{args.data}: {without_evidence} lines without evidence are not scored", file=sys.stderr
                )
            if not queries:
                raise BenchDataError(f"{args.data}: no question with evidence")
            conversations, existing = [], (args.brain, queries, args.brain)
        else:
            conversations, existing = (
                _select(load_conversations(args.data), args.conversations, args.data),
                None,
            )
    except (UsageError, PlotUnavailable, BenchDataError) as exc:
        print(f"brainstore bench: {exc}", file=sys.stderr)
        return 2

    runner: Runner | None = None
    try:
        if args.url:
            client_context: Any = Client(args.url, args.key, timeout=120.0)
        else:
            client_context = embedded_client(Path(args.data_dir), key, engine=args.engine)
        with client_context as client:
            runner = Runner(client, settings)
            targets, observations = runner.run(conversations, existing)
    except KeyboardInterrupt:
        print("brainstore bench: interrupted", file=sys.stderr)
        _report_left(runner)
        return 130
    except (BenchAborted, BrainstoreError, httpx.HTTPError) as exc:
        hint = ""
        if isinstance(exc, BrainstoreError) and exc.code == "brain_not_found" and existing is not None:
            hint = (
                f" (read in {_key_project(key)}: name the project the Brain was imported into with --project "
                "and --env)"
                if not args.url
                else f" (read in {_key_project(key)}, the key's)"
            )
        print(f"brainstore bench: {exc}{hint}", file=sys.stderr)
        _report_left(runner)
        return 1
    _report_left(runner)

    summary = summarize(
        observations, settings.budgets, settings.modes, _metadata(args, runner, targets, started)
    )
    names = None if existing else LOCOMO_CATEGORY_NAMES
    print(table(summary, names))
    pending = sum(r["pending"] for r in summary["results"])
    failed = sum(t.failed_records for t in targets)
    print(
        f"\n{len(observations)} Contexts; {pending} pending (counted as misses); {failed} Records failed; "
        f"{runner.call.rate_limited} rate-limited retries",
        file=sys.stderr,
    )
    if args.json_path:
        write_json(Path(args.json_path), summary)
    if args.plot:
        label = ", ".join(t.label for t in targets)
        plot(summary, Path(args.plot), title=f"brainstore bench: {label}")
    return 0


def _report_left(runner: Runner | None) -> None:
    if runner is not None and runner.left_behind:
        print(
            "brainstore bench: could not forget these Brains; forget them with DELETE /v1/brains/{id}: "
            + ", ".join(runner.left_behind),
            file=sys.stderr,
        )
