"""Configuration, read once from the environment into a frozen dataclass.

Every CLI flag of ``brainstore serve`` has a ``BRAINSTORE_*`` variable; the CLI sets the variables and the
gunicorn worker reads them with :meth:`Config.from_env`, so flags and environment cannot disagree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENGINES = ("duckdb", "memory", "postgres")
DEPLOYMENTS = ("local", "hosted")
EXTRACTORS = ("rules", "llm")


def _float(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


# What an in-memory index takes a chunk, rounded up from a server holding one 100,000-chunk index in
# 763 MiB; and the share of the machine's memory the indexes of all workers may take by default.
INDEX_BYTES_A_CHUNK = 8 << 10
INDEX_MEMORY_SHARE = 0.5
CGROUP_MEMORY_MAX = Path("/sys/fs/cgroup/memory.max")  # a container's limit (cgroup v2), "max" if none


# The share of the machine's memory DuckDB's buffer pool may take by default. DuckDB's own default is
# 80%, beside the indexes' half: its cache of table pages grows with what the server reads (157 MiB
# held after one 100,000-chunk Brain was rebuilt) and was bounded only by that.
DUCKDB_MEMORY_SHARE = 0.25


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit if lower; None when
    it cannot be read."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None
    try:
        limit = CGROUP_MEMORY_MAX.read_text().strip()
        if limit.isdigit():
            memory = min(memory, int(limit))
    except OSError:
        pass
    return memory


def default_resident_chunks(workers: int) -> int:
    """The chunks each worker's indexes may hold unless told: INDEX_MEMORY_SHARE of the machine's memory
    (or of its cgroup's limit, if lower) shared by the workers. Without a bound, a key making Brains
    (each Brain's index 30-75 KiB with one Record) grew every worker until the kernel killed it, and
    every tenant's requests with it. 0 (no limit) when the memory cannot be read."""
    memory = machine_memory()
    if memory is None:
        return 0
    return max(1, int(memory * INDEX_MEMORY_SHARE) // workers // INDEX_BYTES_A_CHUNK)


def default_duckdb_memory_mib() -> int:
    """DuckDB's memory limit unless told: DUCKDB_MEMORY_SHARE of :func:`machine_memory`, in MiB (at
    least 64); 0 (DuckDB's own default) when the memory cannot be read."""
    memory = machine_memory()
    if memory is None:
        return 0
    return max(64, int(memory * DUCKDB_MEMORY_SHARE) >> 20)


def _int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def _optional_int(env: dict[str, str], name: str) -> int | None:
    """The integer ``name`` holds, None when unset or empty (the setting's default then applies)."""
    return _int(env, name, 0) if env.get(name) else None


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
    # Chunks the in-memory indexes may hold in all (0: no limit; None: default_resident_chunks); see
    # EvidenceIndexes.resident_chunks.
    resident_chunks: int | None = None
    # MiB DuckDB may use for its buffer pool, query results and intermediates (0: DuckDB's default,
    # 80% of the machine; None: default_duckdb_memory_mib). Past it DuckDB evicts cached pages and
    # spills to brainstore.duckdb.tmp/ in the data directory.
    duckdb_memory_mib: int | None = None
    embedder: str | None = None
    migrate_on_start: bool = True
    purposes: tuple[str, ...] = field(default=("general",))
    # postgres: a libpq URL or key=value string (it may hold a password: never logged or echoed)
    database_url: str | None = None
    workers: int = 1  # gunicorn worker processes; more than one needs postgres
    # Who derives Memories: the offline rules (default) or a model behind an OpenAI-compatible
    # chat-completions endpoint (derive/llm.py). The key comes from BRAINSTORE_LLM_API_KEY only.
    extractor: str = "rules"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_timeout: float = 30.0
    llm_max_retries: int = 3

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.deployment not in DEPLOYMENTS:
            raise ValueError(f"deployment must be one of {DEPLOYMENTS}, got {self.deployment!r}")
        if self.deployment == "hosted" and self.key_registry is None:
            raise ValueError("a hosted deployment refuses to start without a key registry (--key-registry)")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.resident_chunks is None:
            object.__setattr__(self, "resident_chunks", default_resident_chunks(self.workers))
        if self.resident_chunks < 0:
            raise ValueError(f"resident_chunks must be 0 (no limit) or more, got {self.resident_chunks}")
        if self.duckdb_memory_mib is None:
            object.__setattr__(self, "duckdb_memory_mib", default_duckdb_memory_mib())
        if self.duckdb_memory_mib < 0:
            raise ValueError(f"duckdb_memory_mib must be 0 (DuckDB's default) or more, got {self.duckdb_memory_mib}")
        if self.workers > 1 and self.engine != "postgres":
            raise ValueError(
                f"workers: {self.workers} worker processes need --engine postgres; the {self.engine} engine "
                "admits one process (a DuckDB file takes one writer; memory is per process). Use --threads "
                "for concurrency on one process"
            )
        if self.extractor not in EXTRACTORS:
            raise ValueError(f"extractor must be one of {EXTRACTORS}, got {self.extractor!r}")
        if self.extractor == "llm" and not (self.llm_base_url and self.llm_model):
            raise ValueError(
                "the llm extractor needs --llm-base-url and --llm-model (or BRAINSTORE_LLM_BASE_URL and "
                "BRAINSTORE_LLM_MODEL), e.g. https://api.openai.com/v1 and gpt-4o-mini"
            )
        if self.llm_timeout <= 0 or self.llm_max_retries < 0:
            raise ValueError("llm_timeout must be positive and llm_max_retries at least 0")
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

    @property
    def rederive_dir(self) -> Path | None:
        """Where ``brainstore rederive`` keeps each Brain's progress; the memory engine lives and dies
        with the process, so it has nothing to resume."""
        return None if self.engine == "memory" else self.data_dir / "rederive"

    def rederive_progress(self, brain_uid: str) -> Path | None:
        folder = self.rederive_dir
        return None if folder is None else folder / f"{brain_uid}.json"

    def forget_rederive_progress(self, brain_uid: str) -> None:
        """Remove a Brain's rederive progress (and a half-written one): called when the Brain is
        erased, which must leave nothing of it behind, its id in a file name included."""
        path = self.rederive_progress(brain_uid)
        if path is not None:
            path.with_suffix(".tmp").unlink(missing_ok=True)
            path.unlink(missing_ok=True)

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
            **memory_settings(env),
            embedder=env.get("BRAINSTORE_EMBEDDER") or None,
            migrate_on_start=env.get("BRAINSTORE_MIGRATE_ON_START", "1") not in ("0", "false", "no"),
            database_url=env.get("BRAINSTORE_DATABASE_URL") or None,
            workers=_int(env, "BRAINSTORE_WORKERS", 1),
            **extractor_settings(env),
        )


def memory_settings(env: dict[str, str] | None = None) -> dict[str, int | None]:
    """The Config fields that bound memory, from BRAINSTORE_RESIDENT_CHUNKS and
    BRAINSTORE_DUCKDB_MEMORY_MIB (None where unset: the default then applies): every command that opens
    the store reads them, not only ``serve``."""
    env = dict(os.environ if env is None else env)
    return {
        "resident_chunks": _optional_int(env, "BRAINSTORE_RESIDENT_CHUNKS"),
        "duckdb_memory_mib": _optional_int(env, "BRAINSTORE_DUCKDB_MEMORY_MIB"),
    }


def extractor_settings(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The Config fields of the extractor, from BRAINSTORE_EXTRACTOR and BRAINSTORE_LLM_*."""
    env = dict(os.environ if env is None else env)
    return {
        "extractor": env.get("BRAINSTORE_EXTRACTOR") or "rules",
        "llm_base_url": env.get("BRAINSTORE_LLM_BASE_URL") or None,
        "llm_model": env.get("BRAINSTORE_LLM_MODEL") or None,
        "llm_api_key": env.get("BRAINSTORE_LLM_API_KEY") or None,
        "llm_timeout": _float(env, "BRAINSTORE_LLM_TIMEOUT", 30.0),
        "llm_max_retries": _int(env, "BRAINSTORE_LLM_MAX_RETRIES", 3),
    }
