"""Building an engine from configuration: a store, the Service over it, and its background worker."""

from __future__ import annotations

import logging

from brainstore.config import Config
from brainstore.service.service import Service, load_or_create_secret
from brainstore.store.base import Store, StoreFeature

log = logging.getLogger("brainstore.engine")


def open_store(config: Config, *, migrate: bool | None = None) -> Store:
    if config.engine == "memory":
        from brainstore.store.memory import MemoryStore

        return MemoryStore()
    from brainstore.store.duckdb import DuckDBStore

    config.data_dir.mkdir(parents=True, exist_ok=True)
    store = DuckDBStore(config.data_dir / "brainstore.duckdb")
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


class DataDirectoryInUse(RuntimeError):
    """Another process (a running `brainstore serve`) holds the DuckDB file of this data directory."""


def build_service(config: Config) -> Service:
    try:
        store = open_store(config)
    except Exception as exc:  # duckdb.IOException: "Could not set lock on file ..."
        if "lock" in str(exc).lower():
            raise DataDirectoryInUse(f"{config.data_dir}/brainstore.duckdb is in use by another process") from exc
        raise
    secret = load_or_create_secret(config.data_dir if config.engine == "duckdb" else None)
    service = Service(store, config=config, watermark_secret=secret)
    service.start()
    return service
