"""``brainstore serve | migrate | keys``: every serve flag also reads a BRAINSTORE_* variable."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from brainstore.auth.keys import ALL_SCOPES
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config


def _env(name: str, default: Any) -> Any:
    return os.environ.get(f"BRAINSTORE_{name}", default)


def _serve(args: argparse.Namespace) -> int:
    env = {
        "BRAINSTORE_ENGINE": args.engine,
        "BRAINSTORE_DATA_DIR": str(Path(args.data_dir).resolve()),
        "BRAINSTORE_DEPLOYMENT": args.deployment,
        "BRAINSTORE_HOST": args.host,
        "BRAINSTORE_PORT": str(args.port),
        "BRAINSTORE_THREADS": str(args.threads),
    }
    if args.key_registry:
        env["BRAINSTORE_KEY_REGISTRY"] = str(Path(args.key_registry).resolve())
    os.environ.update(env)
    try:
        config = Config.from_env()
    except ValueError as exc:
        print(f"brainstore serve: {exc}", file=sys.stderr)
        return 2
    if config.key_registry is None:
        print(
            "WARNING: no key registry configured: any well-formed sk_<env>_<project>_<secret> key is accepted "
            "with all scopes. Use --key-registry for anything but local development.",
            file=sys.stderr,
        )
    from gunicorn.app.base import BaseApplication

    class Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            # One worker: a DuckDB file admits one read-write process; threads give concurrency.
            self.cfg.set("bind", f"{config.host}:{config.port}")
            self.cfg.set("workers", 1)
            self.cfg.set("worker_class", "gthread")
            self.cfg.set("threads", config.threads)
            self.cfg.set("timeout", 120)
            self.cfg.set("graceful_timeout", 10)
            self.cfg.set("accesslog", None)
            if "control_socket_disable" in self.cfg.settings:
                self.cfg.set("control_socket_disable", True)

        def load(self) -> Any:
            from brainstore.api.app import get_app

            return get_app()

    print(f"brainstore serving {config.engine} engine on http://{config.host}:{config.port}/v1", flush=True)
    Server().run()
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from brainstore.store.duckdb import DuckDBStore

    store = DuckDBStore(Path(args.data_dir) / "brainstore.duckdb")
    applied = store.migrate()
    print(f"schema at {store.schema_version()}; applied {applied or 'nothing'}")
    store.close()
    return 0


def _keys(args: argparse.Namespace) -> int:
    if not args.key_registry:
        print("brainstore keys: --key-registry (or BRAINSTORE_KEY_REGISTRY) is required", file=sys.stderr)
        return 2
    registry = KeyRegistry(Path(args.key_registry))
    if args.keys_command == "create":
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


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="brainstore", description=__doc__)
    sub = root.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the /v1 API under gunicorn")
    serve.add_argument("--host", default=_env("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(_env("PORT", 8080)))
    serve.add_argument("--engine", choices=("duckdb", "memory"), default=_env("ENGINE", "duckdb"))
    serve.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
    serve.add_argument("--deployment", choices=("local", "hosted"), default=_env("DEPLOYMENT", "local"))
    serve.add_argument("--key-registry", default=_env("KEY_REGISTRY", None))
    serve.add_argument("--threads", type=int, default=int(_env("THREADS", 8)))
    serve.set_defaults(run=_serve)

    migrate = sub.add_parser("migrate", help="apply pending schema updates to the DuckDB store")
    migrate.add_argument("--data-dir", default=_env("DATA_DIR", "./brainstore-data"))
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
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
