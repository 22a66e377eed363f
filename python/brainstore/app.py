"""The composition root: configuration in, a served application out. Only gunicorn (``get_app``), the
CLI and tests import it; api and mcp receive a built service and never build one.

``get_app()`` is gunicorn's entry point: configuration, store and worker threads are built inside the
worker process, after the fork (a DuckDB file admits one process, and threads do not survive a fork).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from brainstore.config import Config, extractor_settings, memory_settings
from brainstore.derive import Extractor, default_extractor
from brainstore.service import Service
from brainstore.service.common import load_or_create_secret, shared_store
from brainstore.store.base import Store, StoreFeature

log = logging.getLogger("brainstore.app")


class DataDirectoryInUse(RuntimeError):
    """Another process (a running `brainstore serve`) holds the DuckDB file of this data directory."""


def open_store(config: Config, *, migrate: bool | None = None) -> Store:
    if config.engine == "memory":
        from brainstore.store.memory import MemoryStore

        return MemoryStore()
    store: Any
    if config.engine == "postgres":
        from brainstore.store.postgres import PostgresStore

        # Every thread of the worker (gunicorn's; derivation's reader, express lane, applier, long-text
        # reader and scan of the shared queue; the two Context completions and their sweep; the VACUUM)
        # holds at most one connection at a time.
        store = PostgresStore(config.require_database_url(), pool_size=config.threads + 9)
    else:
        from brainstore.store.duckdb import DuckDBStore

        config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            store = DuckDBStore(config.data_dir / "brainstore.duckdb", memory_limit_mib=config.duckdb_memory_mib or 0)
        except Exception as exc:  # duckdb.IOException: "Could not set lock on file ..."
            if "lock" in str(exc).lower():
                raise DataDirectoryInUse(f"{config.data_dir}/brainstore.duckdb is in use by another process") from exc
            raise
    fresh = store.schema_version() == 0
    if migrate or (migrate is None and config.migrate_on_start and fresh):
        store.migrate()
    elif store.schema_version() < max(StoreFeature):
        log.warning(
            "schema %s is behind %s: routes that need newer tables answer 501 until `brainstore migrate` runs",
            store.schema_version(),
            int(max(StoreFeature)),
        )
    return store


def build_extractor(config: Config) -> Extractor:
    """The configured extractor: the offline rules unless ``extractor`` is ``llm``."""
    if config.extractor == "llm":
        from brainstore.derive.llm import LLMExtractor

        assert config.llm_base_url and config.llm_model  # Config checks both
        return LLMExtractor(
            config.llm_base_url,
            config.llm_model,
            api_key=config.llm_api_key,
            timeout=config.llm_timeout,
            max_retries=config.llm_max_retries,
        )
    return default_extractor()


def build_service(config: Config) -> Service:
    """A started engine: its store, its components and their worker threads."""
    store = open_store(config)
    # Processes sharing a database share its watermark key (a watermark from one is good at all);
    # a single process keeps its key in its data directory.
    shared = shared_store(store)
    secret = shared.shared_secret() if shared is not None else None
    if secret is None:
        secret = load_or_create_secret(config.data_dir if config.engine != "memory" else None)
    service = Service(store, config=config, watermark_secret=secret, extractor=build_extractor(config))
    service.start()
    return service


#: Records re-derived per transaction, and between two saves of the progress.
REDERIVE_BATCH = 32


def _read_progress(path: Path | None) -> dict[str, Any]:
    if path is None or not path.exists():
        return {}
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.warning("%s is unreadable: the Brain is re-derived from its first Record", path)
        return {}
    return held if isinstance(held, dict) else {}


def _write_progress(path: Path | None, progress: dict[str, Any]) -> None:
    if path is None:
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(progress), encoding="utf-8")
    os.replace(partial, path)  # a crash leaves the old progress or the new, never half of one


def _forget_progress_of_erased_brains(service: Service, config: Config) -> None:
    """A server erases a Brain's progress with the Brain, but only in its own data directory: a run
    on another host's (a shared PostgreSQL) finds the progress of Brains erased since, and drops it."""
    folder = config.rederive_dir
    if folder is None or not folder.is_dir():
        return
    for held in folder.iterdir():
        uid = held.name.split(".", 1)[0]
        if held.suffix in (".json", ".tmp") and service.store.brain_by_uid(uid) is None:
            config.forget_rederive_progress(uid)


def rederive_brains(
    service: Service,
    config: Config,
    brain_uids: Iterable[str],
    *,
    restart: bool = False,
    report: Callable[[str], None] = lambda line: None,
) -> dict[str, int]:
    """Derive every Record of each Brain again with the service's extractor (``brainstore rederive``).

    Resumable: after each batch of Records the Brain's progress (extractor name, the change sequence
    of the last Record done) is saved in ``<data dir>/rederive/<brain uid>.json``; a run with the same
    extractor continues after it, and skips a Brain it finished. Another extractor (or ``restart``)
    starts the Brain over. Records written meanwhile by a server are derived with the extractor the
    server runs, so finishing once is enough."""
    extractor = service.derivation.extractor.name
    totals = {"brains": 0, "records": 0, "requeued": 0, "skipped": 0}
    _forget_progress_of_erased_brains(service, config)
    for brain_uid in brain_uids:
        brain = service.store.brain_by_uid(brain_uid)
        if brain is None:
            continue
        label = f"{brain.namespace}/{brain.id}"
        path = config.rederive_progress(brain_uid)
        held = {} if restart else _read_progress(path)
        if held.get("extractor") != extractor:
            held = {}
        if held.get("done"):
            report(f"{label}: already re-derived with {extractor}")
            continue
        cursor = int(held.get("seq", 0))
        # The Records there are now, read a batch of ids at a time: reading them all, contents parsed,
        # held twice the Brain's text in memory at once (160 Records of 900 KB: 288 MB). Those written
        # meanwhile by a server are derived there, with the extractor the server runs.
        end = service.store.current_seq(brain_uid)
        pending = service.store.count_records(brain_uid, after=cursor, through=end)
        done, erased = 0, False
        while batch := [
            (record_id, seq)
            for record_id, seq in service.store.record_seqs(brain_uid, after=cursor, limit=REDERIVE_BATCH)
            if seq <= end
        ]:
            counts = service.derivation.rederive_records(brain_uid, [record_id for record_id, _ in batch])
            erased = service.store.brain_by_uid(brain_uid) is None  # by a server on the same database
            if erased:
                break
            for key, value in counts.items():
                totals[key] += value
            cursor = batch[-1][1]  # record_seqs is in change-sequence order
            done += len(batch)
            _write_progress(path, {"extractor": extractor, "seq": cursor, "done": False})
            report(f"{label}: {done}/{pending} Records")
        if erased:  # its progress goes with it
            config.forget_rederive_progress(brain_uid)
            report(f"{label}: erased meanwhile")
            continue
        _write_progress(path, {"extractor": extractor, "seq": cursor, "done": True})
        totals["brains"] += 1
        report(f"{label}: done")
    return totals


def build_wsgi(service: Service, config: Config) -> Any:
    """/v1 (the Falcon app) and /mcp (hosted MCP, streamable HTTP) beside it, in one WSGI callable."""
    from brainstore.api.app import create_app
    from brainstore.mcp.hosted import mount_mcp

    return mount_mcp(create_app(service, config), config)


EMBEDDED_BASE_URL = "http://embedded/v1"


#: The longest an embedded engine waits, before it serves, for its saved indexes to be loaded.
WARM_UP_SECONDS = 20.0


def warm_up(service: Service, timeout: float = WARM_UP_SECONDS) -> None:
    """Embed one question and let the saved indexes load (up to ``timeout`` seconds) now, so the first
    Context does not spend its ``budget.ms`` loading the embedder's model and its Brain's index. An
    engine that answers its first request at once needs it: in the embedded MCP and bench the first
    Context of every session came back with no evidence, 1.6-2.1 s used of its 250 ms and every lane
    cut. A failing embedder is only logged: the first Context meets it again."""
    try:
        service.evidence.embed_query("warm up")
    except Exception as exc:
        log.warning("the embedder could not be warmed up: %s", exc)
    if not service.contexts.wait_preloaded(timeout):
        log.warning("the saved indexes are still loading after %.0f s; serving meanwhile", timeout)


@contextmanager
def embedded_client(
    config: Config, key: str, *, base_url: str = EMBEDDED_BASE_URL, timeout: float | None = None
) -> Iterator[Any]:
    """A started engine on ``config`` and a Client that calls its /v1 in-process (the same contract a
    server answers); the engine stops when the block ends. DataDirectoryInUse while a server holds it.

    The embedder is made ready first, as ``brainstore serve`` does before it serves (its model files
    made, then one question embedded): see :func:`warm_up`. EmbedderUnavailable when the files of an
    ``onnx-int8`` embedder cannot be made (serve refuses to start then too)."""
    from brainstore.api.app import create_app
    from brainstore.client import Client, in_process
    from brainstore.retrieval.embedder import prepare_embedder

    prepare_embedder(config.embedder)
    service = build_service(config)
    try:
        warm_up(service)
        transport = in_process(create_app(service, config))
        options = {} if timeout is None else {"timeout": timeout}
        with Client(base_url, key, transport=transport, **options) as client:
            yield client
    finally:
        service.stop()
        service.store.close()


def stdio_engine(settings: Any, base_url: str, key: str) -> tuple[Any, Callable[[], None]]:
    """The stdio MCP server's embedded engine (see :func:`embedded_client`): the client and what
    stops it."""
    from brainstore.mcp.stdio import DataDirectoryBusy

    config = Config(
        engine=settings.engine,
        data_dir=settings.data_dir,
        docs_base=settings.docs_base,
        **extractor_settings(),
        **memory_settings(),
    )
    stack = ExitStack()
    try:
        client = stack.enter_context(embedded_client(config, key, base_url=base_url))
    except DataDirectoryInUse as exc:
        raise DataDirectoryBusy(str(exc)) from exc
    return client, stack.close


_app: Any = None
_service: Service | None = None


def get_app() -> Any:
    """The gunicorn entry point (``brainstore.app:get_app()``)."""
    global _app, _service
    if _app is None:
        config = Config.from_env()
        _service = build_service(config)
        _app = build_wsgi(_service, config)
    return _app


def shutdown() -> None:
    """When the worker exits (gunicorn's worker_exit): stop derivation between batches (what is not
    derived stays processing in the store and resumes on the next start), save the indexes, close the
    store. Without it the process would end with threads inside native code."""
    global _app, _service
    service, _service, _app = _service, None, None
    if service is not None:
        try:
            service.stop()
        finally:
            service.store.close()
