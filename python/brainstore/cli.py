"""``brainstore serve | migrate | keys | mcp | import | rederive | bench``: every serve flag also reads a BRAINSTORE_* variable."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from brainstore.auth.keys import ALL_SCOPES, PROJECT_RULE, named_project
from brainstore.auth.registry import KeyRegistry, RegistryError
from brainstore.config import DEPLOYMENTS, Config, memory_settings


def _env(name: str, default: Any) -> Any:
    return os.environ.get(f"BRAINSTORE_{name}", default)


def _worker_exit(server: Any, worker: Any) -> None:
    from brainstore.app import shutdown

    shutdown()


# The flags that stand for a BRAINSTORE_* variable, in each command that has them.
_FLAG_VARIABLES = (
    ("engine", "ENGINE"),
    ("data_dir", "DATA_DIR"),
    ("database_url", "DATABASE_URL"),
    ("deployment", "DEPLOYMENT"),
    ("key_registry", "KEY_REGISTRY"),
    ("host", "HOST"),
    ("port", "PORT"),
    ("threads", "THREADS"),
    ("workers", "WORKERS"),
)
_PATH_FLAGS = ("data_dir", "key_registry")


def _flag_env(args: argparse.Namespace) -> dict[str, str]:
    """The BRAINSTORE_* variables that a command's flags (the extractor's included) stand for."""
    env: dict[str, str] = {}
    for flag, name in _FLAG_VARIABLES:
        value = getattr(args, flag, None)
        if value is None or value == "":
            continue
        env[f"BRAINSTORE_{name}"] = str(Path(value).resolve() if flag in _PATH_FLAGS else value)
    # a command without --workers (import, rederive) is one process, whatever the server runs
    env.setdefault("BRAINSTORE_WORKERS", "1")
    env.update(_extractor_env(args))
    return env


#: The engines whose store outlives the command: those of the commands that write one for later.
STORED_ENGINES = ("duckdb", "postgres")
_NOTHING_STORED = {
    "import": "an import must persist, and the memory engine keeps nothing once the command exits",
    "rederive": "the memory engine keeps nothing from one command to the next: there is nothing to re-derive",
    "migrate": "the memory engine has no schema to migrate",
}


def _stored_engine(command: str) -> Any:
    """The ``type`` of the --engine of import, rederive and migrate: one of STORED_ENGINES.

    A type, not only choices: argparse checks choices on a value typed on the command line, never on a
    default, and the default is BRAINSTORE_ENGINE's; it converts a default through the type. A server's
    BRAINSTORE_ENGINE=memory (or --engine memory, then among import's choices) made an import that
    reported every line imported, exited 0 and kept nothing."""

    def engine(value: str) -> str:
        if value not in STORED_ENGINES:
            why = _NOTHING_STORED[command] if value == "memory" else "not an engine"
            raise argparse.ArgumentTypeError(
                f"{value!r}: {why}; use --engine duckdb or --engine postgres (the default is BRAINSTORE_ENGINE, "
                "else duckdb)"
            )
        return value

    return engine


_BRAIN_ID_RULE = "a Slug, 1-64 letters, digits, '_', '-', '.', starting with a letter or digit"


def _is_brain_id(value: str) -> bool:
    from brainstore.api.validation import SLUG

    return SLUG.fullmatch(value) is not None


def _brain_id(value: str) -> str:
    """The ``type`` of --brain of import and rederive: a Slug, as the API's paths take a Brain id. An
    import made the Brain "My Brain" (--create-brain), which no API call can read or forget."""
    if not _is_brain_id(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a Brain id the API can name: {_BRAIN_ID_RULE}")
    return value


def _key_project(value: str) -> str:
    """The ``type`` of --project of import and rederive: a project an API key can name. An import made
    Brains in the namespace of "ac_me" or "", which no key selects."""
    if not named_project(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a project an API key can name: it {PROJECT_RULE}")
    return value


def _seconds(value: str) -> float:
    """The ``type`` of --derive-timeout: a finite number of seconds, 0 or more. nan waited for ever
    (Condition.wait_for never passes a nan deadline) and inf ended the command with an OverflowError
    after the import."""
    seconds = float(value)
    if not (math.isfinite(seconds) and seconds >= 0):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds (finite, 0 or more)")
    return seconds


def _config(command: str, args: argparse.Namespace) -> Config | None:
    """The Config of every command that opens the store as a server would (serve, import, rederive): its
    flags over the environment, read by Config.from_env as serve's workers read it. None, after saying
    why, when it is not valid.

    Import and rederive had built theirs from a few flags: without the deployment, an import on a hosted
    one stored the local_only Records that rememberRecord refuses there."""
    try:
        config = Config.from_env({**os.environ, **_flag_env(args)})
        config.require_database_url()
    except ValueError as exc:
        print(f"brainstore {command}: {exc}", file=sys.stderr)
        return None
    return config


def _serve(args: argparse.Namespace) -> int:
    os.environ.update(_flag_env(args))  # the gunicorn workers read their Config from the environment
    configured = _config("serve", args)
    if configured is None:
        return 2
    config = configured  # a Config, also for the Server class below (mypy narrows into no class body)
    if args.client_timeout <= 0:
        print("brainstore serve: --client-timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    if config.engine != "memory":
        from brainstore.service.common import load_or_create_secret

        # Before the fork: workers that each made a watermark secret would refuse each other's watermarks.
        load_or_create_secret(config.data_dir)
    from brainstore.retrieval.embedder import EmbedderUnavailable, prepare_embedder

    try:
        prepare_embedder(config.embedder)  # before the workers: a worker making it would hold up its first Records
    except EmbedderUnavailable as exc:
        print(f"brainstore serve: {exc}", file=sys.stderr)
        return 2
    if config.key_registry is None:
        print(
            "WARNING: no key registry configured: any well-formed sk_<env>_<project>_<secret> key is accepted "
            "with all scopes. Use --key-registry for anything but local development.",
            file=sys.stderr,
        )
    from gunicorn.app.base import BaseApplication

    from brainstore.serving import BufferingWorker

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            # One worker unless postgres (Config refuses more): a DuckDB file admits one read-write
            # process. Each worker builds its app after the fork (get_app).
            self.cfg.set("bind", f"{config.host}:{config.port}")
            self.cfg.set("workers", config.workers)
            # gthread behind a front that reads whole requests on the main loop: slow clients hold
            # no thread (brainstore/serving.py).
            self.cfg.set("worker_class", BufferingWorker.configured(args.client_timeout))
            self.cfg.set("threads", config.threads)
            # Idle kept-alive connections wait on the poller, not on a thread: keep them longer than
            # a proxy's upstream keepalive_timeout, so the proxy never reuses one being closed.
            self.cfg.set("keepalive", 20)
            self.cfg.set("timeout", 120)
            self.cfg.set("graceful_timeout", 10)
            self.cfg.set("accesslog", None)
            if "control_socket_disable" in self.cfg.settings:
                self.cfg.set("control_socket_disable", True)
            self.cfg.set("worker_exit", _worker_exit)

        def load(self) -> Any:
            from brainstore.app import get_app

            return get_app()

    print(f"brainstore serving {config.engine} engine on http://{config.host}:{config.port}/v1", flush=True)
    Server().run()
    return 0


def _extractor_env(args: argparse.Namespace) -> dict[str, str]:
    """The extractor flags as BRAINSTORE_* variables (the key is never a flag: it would show in process
    listings; it comes from BRAINSTORE_LLM_API_KEY)."""
    env = {"BRAINSTORE_EXTRACTOR": args.extractor}
    for flag, name in (
        ("llm_base_url", "LLM_BASE_URL"),
        ("llm_model", "LLM_MODEL"),
        ("llm_timeout", "LLM_TIMEOUT"),
        ("llm_max_retries", "LLM_MAX_RETRIES"),
    ):
        value = getattr(args, flag)
        if value is not None:
            env[f"BRAINSTORE_{name}"] = str(value)
    return env


def add_deployment_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--deployment",
        choices=DEPLOYMENTS,
        default=_env("DEPLOYMENT", "local"),
        help="local (default) or hosted; a hosted deployment refuses local_only Records and needs a key registry",
    )
    command.add_argument("--key-registry", default=_env("KEY_REGISTRY", None), help="the API keys file")


def add_extractor_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--extractor",
        choices=("rules", "llm"),
        default=_env("EXTRACTOR", "rules"),
        help="who derives Memories: the offline rules (default) or a model (llm: an OpenAI-compatible "
        "chat-completions endpoint; its API key is read from BRAINSTORE_LLM_API_KEY only)",
    )
    command.add_argument("--llm-base-url", default=_env("LLM_BASE_URL", None), help="e.g. https://api.openai.com/v1")
    command.add_argument("--llm-model", default=_env("LLM_MODEL", None), help="the model name sent to the endpoint")
    command.add_argument(
        "--llm-timeout", type=float, default=_env("LLM_TIMEOUT", None), help="seconds per call (default 30)"
    )
    command.add_argument(
        "--llm-max-retries",
        type=int,
        default=_env("LLM_MAX_RETRIES", None),
        help="retries on 429, 5xx, timeouts and malformed answers (default 3)",
    )


def _migrate(args: argparse.Namespace) -> int:
    try:
        config = Config(
            engine=args.engine,
            data_dir=Path(args.data_dir),
            database_url=args.database_url or None,
            **memory_settings(),
        )
        url = config.require_database_url()
    except ValueError as exc:
        print(f"brainstore migrate: {exc}", file=sys.stderr)
        return 2
    store: Any
    if config.engine == "postgres":
        from brainstore.store.postgres import PostgresStore

        store = PostgresStore(url, pool_size=1)
    else:
        from brainstore.store.duckdb import DuckDBStore

        store = DuckDBStore(config.data_dir / "brainstore.duckdb", memory_limit_mib=config.duckdb_memory_mib or 0)
    try:
        applied = store.migrate()
        print(f"schema at {store.schema_version()}; applied {applied or 'nothing'}")
    finally:
        store.close()
    return 0


def _keys(args: argparse.Namespace) -> int:
    if not args.key_registry:
        print("brainstore keys: --key-registry (or BRAINSTORE_KEY_REGISTRY) is required", file=sys.stderr)
        return 2
    registry = KeyRegistry(Path(args.key_registry))
    try:
        status = _keys_command(args, registry)
    except RegistryError as exc:
        # a corrupt registry, a directory or an unwritable one: one line, not a traceback
        print(f"brainstore keys: {exc}", file=sys.stderr)
        return 2
    for note in registry.notes:
        print(f"brainstore keys: warning: {note}", file=sys.stderr)
    return status


def _keys_command(args: argparse.Namespace, registry: KeyRegistry) -> int:
    if args.keys_command == "create":
        # a key naming "ac me" was issued and no Client could send it; one bound to "My Brain" reaches
        # nothing (the API's Brain ids are Slugs)
        if not named_project(args.project):
            print(
                f"brainstore keys: --project {args.project!r} is not a project an API key can name: it "
                f"{PROJECT_RULE}",
                file=sys.stderr,
            )
            return 2
        if args.brain is not None and not _is_brain_id(args.brain):
            print(f"brainstore keys: --brain {args.brain!r} is not a Brain id: {_BRAIN_ID_RULE}", file=sys.stderr)
            return 2
        scopes = frozenset(args.scope) if args.scope else ALL_SCOPES
        raw, entry = registry.create(args.env, args.project, scopes, args.brain)
        print(raw)
        print(f"id={entry.id} scopes={','.join(sorted(entry.scopes))} brain={entry.brain or '-'}", file=sys.stderr)
        print("The key is shown once; only its sha256 is stored.", file=sys.stderr)
    elif args.keys_command == "list":
        for e in registry.list():
            state = f"revoked {e.revoked_at}" if e.revoked_at else "active"
            print(f"{e.id}  {e.prefix}…{e.last4}  {','.join(sorted(e.scopes))}  brain={e.brain or '-'}  {state}")
    else:
        try:
            entry = registry.revoke(args.key_id)
        except KeyError:
            print(f"brainstore keys revoke: no key {args.key_id}", file=sys.stderr)
            return 1
        print(f"revoked {entry.id} ({entry.prefix}…{entry.last4})")
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from brainstore.app import stdio_engine
    from brainstore.mcp.stdio import StdioSettings, run

    return run(
        StdioSettings(
            project=args.project,
            brain=args.brain,
            url=args.url,
            key=args.key,
            engine=args.engine,
            data_dir=Path(args.data_dir),
            self_name=args.self_name,
            docs_base=_env("DOCS_BASE", "https://docs.brainstore.dev"),
        ),
        embedded=stdio_engine,
    )


def _offline_service(command: str, config: Config) -> Any:
    """The engine on ``config`` for a command that writes the data directory itself (import, rederive);
    None, after saying why, when a server holds it."""
    from brainstore.app import DataDirectoryInUse, build_service

    try:
        return build_service(config)
    except DataDirectoryInUse:
        print(
            f"brainstore {command}: {config.data_dir}/brainstore.duckdb is in use. Stop `brainstore serve` on "
            f"this data directory first: {command} writes to the data directory directly.",
            file=sys.stderr,
        )
        return None


def _count_lines(handle: Any) -> int:
    """The lines of a regular file, as :func:`brainstore.importer.jsonl_lines` yields them (a last line
    without its "\n" counts), read in blocks; the handle is left at its start."""
    lines, last = 0, b"\n"
    while block := handle.read(1 << 20):
        lines += block.count(b"\n")
        last = block[-1:]
    handle.seek(0)
    return lines + (last != b"\n")


def _import(args: argparse.Namespace) -> int:
    import stat

    path = Path(args.file)
    try:
        handle = path.open("rb")
    except OSError as exc:
        print(f"brainstore import: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 2
    with handle:
        # The input is read once: a pipe (`cat notes.jsonl | brainstore import /dev/stdin ...`) cannot
        # be read twice, and counting its lines for the progress bar first left nothing to import
        # ("imported 0", exit status 0). Only a regular file is counted (then read from its start).
        try:
            mode = os.fstat(handle.fileno()).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                # a device never ends: `brainstore import /dev/zero` read for ever
                print(f"brainstore import: {path} is neither a regular file nor a pipe", file=sys.stderr)
                return 2
            total = _count_lines(handle) if stat.S_ISREG(mode) else None
        except OSError as exc:
            print(f"brainstore import: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return 2
        return _import_lines(args, path, handle, total)


def _restore_handlers(handlers: dict[Any, Any]) -> None:
    while handlers:
        sig, handler = handlers.popitem()
        signal.signal(sig, handler)


def _import_lines(args: argparse.Namespace, path: Path, handle: Any, total: int | None) -> int:
    """Import the lines of ``handle`` (opened on ``path``); ``total``: its number of lines, when known."""
    from tqdm import tqdm

    from brainstore.errors import BrainstoreError
    from brainstore.importer import ImportReport, import_principal, import_records, jsonl_lines

    config = _config("import", args)
    if config is None:
        return 2
    service = _offline_service("import", config)
    if service is None:
        return 2
    principal = import_principal(args.env, args.project)
    # a bar for 1,000 lines or more; of a pipe, a count of the lines read (when stderr is a terminal)
    quiet = True if total is not None and total < 1000 else None
    report = ImportReport()
    read = False
    # Ctrl-C (or kill) stops the import between lines: a KeyboardInterrupt inside a DuckDB statement
    # came out as RuntimeError('Query interrupted') and was retried as a failed commit, so the import
    # ran on; where it did surface, it was a traceback that said neither what was done nor what next.
    # A second Ctrl-C stops at once.
    interrupt = threading.Event()

    def stop_between_lines(signum: int, frame: Any) -> None:
        interrupt.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    handlers = (
        {sig: signal.signal(sig, stop_between_lines) for sig in (signal.SIGINT, signal.SIGTERM)}
        if threading.current_thread() is threading.main_thread()
        else {}
    )
    try:
        if args.create_brain and service.store.get_brain(principal.namespace, args.brain) is None:
            service.create_brain(principal, args.brain, name=None, self_entity=None)
            print(f"created Brain {args.brain!r} in {principal.namespace}", file=sys.stderr)
        with tqdm(total=total, unit="line", desc="import", disable=quiet, file=sys.stderr) as bar:

            def invalid_line(number: int, reason: str) -> None:
                # as it is met (above the bar), not kept: a file of a million bad lines held them all
                bar.write(f"{path}:{number}: {reason}", file=sys.stderr)

            import_records(
                service,
                principal,
                args.brain,
                args.source,
                jsonl_lines(handle),
                progress=bar,
                on_invalid=invalid_line,
                report=report,
                stop=interrupt.is_set,
            )
        _restore_handlers(handlers)  # waiting for derivation below: Ctrl-C interrupts it at once
        if report.interrupted:
            raise KeyboardInterrupt
        read = True
        print(report.summary())
        if report.stopped is not None:
            print(f"brainstore import: {path}:{report.stopped[0]}: {report.stopped[1]}", file=sys.stderr)
        if report.imported and not service.wait_idle(timeout=args.derive_timeout):
            print(
                "derivation is still running; the remaining Records stay processing and resume when the "
                "server starts",
                file=sys.stderr,
            )
    except BrainstoreError as exc:
        print(f"brainstore import: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # what was done, and how to go on: a traceback said neither
        if read:
            print(
                "brainstore import: interrupted while waiting for derivation; the Records still processing "
                "resume when the server starts",
                file=sys.stderr,
            )
        else:
            print(report.summary())
            print(
                f"brainstore import: interrupted after {path}:{report.lines}. Run the same command again to "
                "go on: the lines already imported are skipped (unchanged).",
                file=sys.stderr,
            )
        return 130
    finally:
        _restore_handlers(handlers)
        service.stop()
        service.store.close()
    return 1 if report.invalid or report.stopped else 0


def _rederive(args: argparse.Namespace) -> int:
    from brainstore.app import rederive_brains
    from brainstore.derive import ExtractorUnavailable, LLMExtractionError
    from brainstore.importer import import_principal

    if args.brain and not args.project:
        print("brainstore rederive: --brain needs --project (and --env) to name the Brain", file=sys.stderr)
        return 2
    config = _config("rederive", args)
    if config is None:
        return 2
    service = _offline_service("rederive", config)
    if service is None:
        return 2
    try:
        if args.brain:
            brain = service.store.get_brain(import_principal(args.env, args.project).namespace, args.brain)
            if brain is None:
                print(f"brainstore rederive: no Brain {args.brain!r} in {args.env}/{args.project}", file=sys.stderr)
                return 1
            brain_uids = [brain.uid]
        else:
            derived = service.store.records_in_status("ready") + service.store.records_in_status("failed")
            brain_uids = list(dict.fromkeys(brain_uid for brain_uid, _ in derived))
        print(f"re-deriving {len(brain_uids)} Brain(s) with {service.derivation.extractor.name}", file=sys.stderr)
        totals = rederive_brains(
            service,
            config,
            brain_uids,
            restart=args.restart,
            report=lambda line: print(line, file=sys.stderr, flush=True),
        )
        if not service.wait_idle(timeout=args.derive_timeout):
            print(
                "failed Records sent back to derivation are still processing; they resume when the server starts",
                file=sys.stderr,
            )
        cost = getattr(service.derivation.extractor, "cost", None)
        calls = cost()["model_calls"] if callable(cost) else 0
        print(
            f"brains={totals['brains']} records={totals['records']} requeued_failed={totals['requeued']} "
            f"skipped={totals['skipped']} model_calls={calls}"
        )
    except (ExtractorUnavailable, LLMExtractionError) as exc:
        print(
            f"brainstore rederive: stopped: {type(exc).__name__}: {exc}. Run it again to continue where it "
            "stopped.",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        # A batch's transaction rolled back; those before it are saved with their progress. It was a
        # traceback (RuntimeError: Query interrupted, exit 1, for Ctrl-C inside a DuckDB statement)
        # that said neither.
        print(
            "brainstore rederive: interrupted. Run it again to continue where it stopped: the batches of "
            "Records already re-derived are kept.",
            file=sys.stderr,
        )
        return 130
    finally:
        service.stop()
        service.store.close()
    return 0


def _bench(args: argparse.Namespace) -> int:
    from brainstore.bench.command import run

    return run(args)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="brainstore", description=__doc__)
    sub = root.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the /v1 API under gunicorn")
    serve.add_argument("--host", default=_env("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(_env("PORT", 8080)))
    serve.add_argument("--engine", choices=("duckdb", "memory", "postgres"), default=_env("ENGINE", "duckdb"))
    serve.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
    serve.add_argument("--database-url", default=_env("DATABASE_URL", None), help="postgres: the database")
    add_deployment_arguments(serve)
    serve.add_argument("--threads", type=int, default=int(_env("THREADS", 8)))
    serve.add_argument(
        "--client-timeout",
        type=float,
        default=float(_env("CLIENT_TIMEOUT", 10)),
        help="seconds a client has to send a request's head, the base of its body's deadline, and the "
        "bound of one response write (default 10)",
    )
    serve.add_argument(
        "--workers", type=int, default=int(_env("WORKERS", 1)), help="worker processes (more than 1: postgres only)"
    )
    add_extractor_arguments(serve)
    serve.set_defaults(run=_serve)

    migrate = sub.add_parser("migrate", help="apply pending schema updates to the store")
    migrate.add_argument(
        "--engine", type=_stored_engine("migrate"), choices=STORED_ENGINES, default=_env("ENGINE", "duckdb")
    )
    migrate.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
    migrate.add_argument("--database-url", default=_env("DATABASE_URL", None), help="postgres: the database")
    migrate.set_defaults(run=_migrate)

    keys = sub.add_parser("keys", help="issue, list and revoke API keys")
    keys.add_argument("--key-registry", default=_env("KEY_REGISTRY", None))
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="issue a key; prints it once")
    create.add_argument("--env", choices=("test", "live"), default="test")
    create.add_argument("--project", required=True)
    create.add_argument("--scope", action="append", choices=sorted(ALL_SCOPES), help="repeat; default all six")
    create.add_argument("--brain", default=None, help="bind the key to one Brain (needed for hosted MCP)")
    keys_sub.add_parser("list", help="list keys (never secrets)")
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id; effective on its next request")
    revoke.add_argument("key_id")
    keys.set_defaults(run=_keys)

    mcp = sub.add_parser(
        "mcp",
        help="serve one Brain to a local agent over MCP stdio",
        description="Without --url the service runs embedded on --data-dir: only when no server runs on it.",
    )
    mcp.add_argument("--project", default=_env("MCP_PROJECT", None), help="required (BRAINSTORE_MCP_PROJECT)")
    mcp.add_argument("--brain", default=_env("MCP_BRAIN", None), help="required (BRAINSTORE_MCP_BRAIN)")
    mcp.add_argument("--url", default=_env("URL", None), help="a running server's /v1 URL (BRAINSTORE_URL)")
    mcp.add_argument("--key", default=_env("API_KEY", None), help="API key for --url (BRAINSTORE_API_KEY)")
    mcp.add_argument("--engine", choices=("duckdb", "memory"), default=_env("ENGINE", "duckdb"))
    mcp.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
    mcp.add_argument("--self-name", default=None, help="the self of a Brain created on first use (default: its id)")
    mcp.set_defaults(run=_mcp)

    imp = sub.add_parser(
        "import",
        help="reconcile Records from an external source (JSON Lines); stop the server first",
        description="Each line: {external_id, content, occurred_at?, visibility?}. Idempotent per "
        "(source, external_id). Writes to the data directory directly: stop the server first.",
    )
    imp.add_argument("file")
    imp.add_argument("--brain", type=_brain_id, required=True, help="the Brain's id (a Slug)")
    imp.add_argument("--source", required=True, help="the external system's name, e.g. crm")
    imp.add_argument(
        "--project",
        type=_key_project,
        default=_env("PROJECT", None),
        required=_env("PROJECT", None) is None,
        help="the project of the keys that read the Brain (sk_<env>_<project>_...; BRAINSTORE_PROJECT)",
    )
    imp.add_argument("--env", choices=("test", "live"), default="test")
    imp.add_argument(
        "--engine",
        type=_stored_engine("import"),
        choices=STORED_ENGINES,
        default=_env("ENGINE", "duckdb"),
        help="the store the Records go to: duckdb (default, in --data-dir) or postgres (--database-url); "
        "not memory, which keeps nothing once the command exits",
    )
    imp.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
    imp.add_argument("--database-url", default=_env("DATABASE_URL", None), help="postgres: the database")
    imp.add_argument("--create-brain", action="store_true", help="create the Brain if it does not exist")
    imp.add_argument("--derive-timeout", type=_seconds, default=60.0, help="seconds to wait for derivation")
    add_deployment_arguments(imp)
    add_extractor_arguments(imp)
    imp.set_defaults(run=_import)

    rederive = sub.add_parser(
        "rederive",
        help="derive existing Records again with the current extractor (after changing it); stop the server first",
        description="Replaces the Memories derived from each Record with what the configured extractor finds "
        "now; Records, their chunks, Objects and user corrections stay. Resumable: progress is saved per Brain "
        "in <data dir>/rederive/, and a second run continues where an interrupted one stopped. Writes to the "
        "store directly: stop `brainstore serve` first (DuckDB admits one process; a PostgreSQL server keeps "
        "its in-memory Memory lanes until it restarts).",
    )
    rederive.add_argument(
        "--engine", type=_stored_engine("rederive"), choices=STORED_ENGINES, default=_env("ENGINE", "duckdb")
    )
    rederive.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
    rederive.add_argument("--database-url", default=_env("DATABASE_URL", None), help="postgres: the database")
    rederive.add_argument(
        "--brain", type=_brain_id, default=None, help="one Brain (with --project and --env); default every Brain"
    )
    # an empty BRAINSTORE_PROJECT is none: rederive needs a project only with --brain
    rederive.add_argument("--project", type=_key_project, default=_env("PROJECT", None) or None)
    rederive.add_argument("--env", choices=("test", "live"), default="test")
    rederive.add_argument(
        "--restart", action="store_true", help="start over, ignoring the progress a previous run saved"
    )
    rederive.add_argument(
        "--derive-timeout", type=_seconds, default=600.0, help="seconds to wait for failed Records sent back"
    )
    add_deployment_arguments(rederive)
    add_extractor_arguments(rederive)
    rederive.set_defaults(run=_rederive)

    bench = sub.add_parser(
        "bench",
        help="measure evidence recall, tokens and latency per Context budget",
        description="Creates a Brain per LoCoMo conversation (prefix-<id>-<random>), posts its turns, asks "
        "every question at every budget and mode, reports, and forgets the Brains it created.",
    )
    from brainstore.bench.arguments import add_arguments

    add_arguments(bench, _env)
    bench.set_defaults(run=_bench)
    return root


def main(argv: list[str] | None = None) -> int:
    # Every file this process writes may hold tenants' text (index files, a compaction's copy and its
    # WAL, import logs): readable by this user only, whatever the directory's or the shell's mode.
    os.umask(os.umask(0o077) | 0o077)
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
