"""The composition root: configuration in, a served application out. Only gunicorn (``get_app``), the
CLI and tests import it; api and mcp receive a built service and never build one.

``get_app()`` is gunicorn's entry point: configuration, store and worker threads are built inside the
worker process, after the fork (a DuckDB file admits one process, and threads do not survive a fork).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from brainstore.config import Config
from brainstore.service import Service
from brainstore.service.common import load_or_create_secret
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

        # Every thread of the worker (gunicorn's, derivation, Context waits, the VACUUM) holds at most
        # one connection at a time.
        store = PostgresStore(config.require_database_url(), pool_size=config.threads + 4)
    else:
        from brainstore.store.duckdb import DuckDBStore

        config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            store = DuckDBStore(config.data_dir / "brainstore.duckdb")
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


def build_service(config: Config) -> Service:
    """A started engine: its store, its components and their worker threads."""
    store = open_store(config)
    secret = load_or_create_secret(config.data_dir if config.engine != "memory" else None)
    service = Service(store, config=config, watermark_secret=secret)
    service.start()
    return service


def build_wsgi(service: Service, config: Config) -> Any:
    """/v1 (the Falcon app) and /mcp (hosted MCP, streamable HTTP) beside it, in one WSGI callable."""
    from brainstore.api.app import create_app
    from brainstore.mcp.hosted import mount_mcp

    return mount_mcp(create_app(service, config), config)


EMBEDDED_BASE_URL = "http://embedded/v1"


@contextmanager
def embedded_client(
    config: Config, key: str, *, base_url: str = EMBEDDED_BASE_URL, timeout: float | None = None
) -> Iterator[Any]:
    """A started engine on ``config`` and a Client that calls its /v1 in-process (the same contract a
    server answers); the engine stops when the block ends. DataDirectoryInUse while a server holds it."""
    import httpx

    from brainstore.api.app import create_app
    from brainstore.client import Client

    service = build_service(config)
    try:
        transport = httpx.WSGITransport(app=create_app(service, config))
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

    config = Config(engine=settings.engine, data_dir=settings.data_dir, docs_base=settings.docs_base)
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
