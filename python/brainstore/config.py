"""Configuration, read once from the environment into a frozen dataclass.

Every CLI flag of ``brainstore serve`` has a ``BRAINSTORE_*`` variable; the CLI sets the variables and the
gunicorn worker reads them with :meth:`Config.from_env`, so flags and environment cannot disagree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

ENGINES = ("duckdb", "memory", "postgres")
DEPLOYMENTS = ("local", "hosted")


def _int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


@dataclass(frozen=True)
class Config:
    engine: str = "duckdb"
    data_dir: Path = Path("brainstore-data")
    deployment: str = "local"
    key_registry: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    threads: int = 8
    docs_base: str = "https://docs.brainstore.dev"
    rate_limit_per_minute: int = 600
    trace_buffer: int = 1000
    embedder: str | None = None
    migrate_on_start: bool = True
    purposes: tuple[str, ...] = field(default=("general",))
    # postgres: a libpq URL or key=value string (it may hold a password: never logged or echoed)
    database_url: str | None = None
    workers: int = 1  # gunicorn worker processes; more than one needs postgres

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.deployment not in DEPLOYMENTS:
            raise ValueError(f"deployment must be one of {DEPLOYMENTS}, got {self.deployment!r}")
        if self.deployment == "hosted" and self.key_registry is None:
            raise ValueError("a hosted deployment refuses to start without a key registry (--key-registry)")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.workers > 1 and self.engine != "postgres":
            raise ValueError(
                f"workers: {self.workers} worker processes need --engine postgres; the {self.engine} engine "
                "admits one process (a DuckDB file takes one writer; memory is per process). Use --threads "
                "for concurrency on one process"
            )
        if self.database_url is not None and self.engine != "postgres":
            raise ValueError(f"database_url is for --engine postgres, not {self.engine}")

    def require_database_url(self) -> str:
        if self.engine == "postgres" and not self.database_url:
            raise ValueError(
                "the postgres engine needs a database: --database-url (or BRAINSTORE_DATABASE_URL), "
                "e.g. postgresql://brainstore@db.internal/brainstore"
            )
        return self.database_url or ""

    @property
    def hosted(self) -> bool:
        return self.deployment == "hosted"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ if env is None else env)
        registry = env.get("BRAINSTORE_KEY_REGISTRY") or None
        return cls(
            engine=env.get("BRAINSTORE_ENGINE", "duckdb"),
            data_dir=Path(env.get("BRAINSTORE_DATA_DIR", "brainstore-data")),
            deployment=env.get("BRAINSTORE_DEPLOYMENT", "local"),
            key_registry=Path(registry) if registry else None,
            host=env.get("BRAINSTORE_HOST", "127.0.0.1"),
            port=_int(env, "BRAINSTORE_PORT", 8080),
            threads=_int(env, "BRAINSTORE_THREADS", 8),
            docs_base=env.get("BRAINSTORE_DOCS_BASE", "https://docs.brainstore.dev").rstrip("/"),
            rate_limit_per_minute=_int(env, "BRAINSTORE_RATE_LIMIT", 600),
            trace_buffer=_int(env, "BRAINSTORE_TRACE_BUFFER", 1000),
            embedder=env.get("BRAINSTORE_EMBEDDER") or None,
            migrate_on_start=env.get("BRAINSTORE_MIGRATE_ON_START", "1") not in ("0", "false", "no"),
            database_url=env.get("BRAINSTORE_DATABASE_URL") or None,
            workers=_int(env, "BRAINSTORE_WORKERS", 1),
        )
