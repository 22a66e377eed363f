"""An engine of each kind that can be stopped and opened again on the same data with another
extractor: what an operator does when they change the extractor and run ``brainstore rederive``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brainstore.config import Config
from brainstore.derive import Extractor
from brainstore.service import Service
from brainstore.store.duckdb import DuckDBStore
from brainstore.store.memory import MemoryStore
from brainstore.store.postgres import PostgresStore


class Engine:
    def __init__(self, kind: str, data_dir: Path, database_url: str | None) -> None:
        self.kind = kind
        self.data_dir = data_dir
        self.database_url = database_url
        self.config = Config(engine=kind, data_dir=data_dir, database_url=database_url)
        self._memory: MemoryStore | None = None
        self._open: list[Service] = []

    def open(self, extractor: Extractor | None = None) -> Service:
        store: Any
        if self.kind == "memory":
            store = self._memory = self._memory or MemoryStore()
        elif self.kind == "duckdb":
            store = DuckDBStore(self.data_dir / "brainstore.duckdb")
            store.migrate()
        else:
            assert self.database_url is not None
            store = PostgresStore(self.database_url)
        service = Service(store, config=self.config, extractor=extractor)
        service.start()
        self._open.append(service)
        return service

    def close(self, service: Service) -> None:
        self._open.remove(service)
        service.stop()
        if self.kind != "memory":
            service.store.close()

    def close_all(self) -> None:
        for service in list(self._open):
            self.close(service)


@pytest.fixture(name="engine")
def reopenable_engine(engine_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Engine]:
    url = request.getfixturevalue("postgres_url") if engine_kind == "postgres" else None
    held = Engine(engine_kind, tmp_path, url)
    yield held
    held.close_all()
