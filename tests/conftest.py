"""Fixtures shared by every layer: engines (every store), the app through falcon.testing, keys.

Every response an API test receives is validated against openapi.yaml by :class:`Api`, so a test that
forgets to check a shape still cannot pass with a malformed response.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import falcon.testing
import pytest
from hypothesis import settings

from brainstore.api.app import create_app
from brainstore.api.contract import BASE_PATH, OPERATIONS
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.duckdb import DuckDBStore
from brainstore.store.memory import MemoryStore
from brainstore.store.postgres import PostgresStore
from tests.contract.openapi import validate_response, validate_schema
from tests.postgres_server import PostgresServer

settings.register_profile("ci", max_examples=40, deadline=None)
settings.register_profile("dev", max_examples=15, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

KEY = "sk_test_acme_s3cretvalue0001"
LIVE_KEY = "sk_live_acme_s3cretvalue0002"
OTHER_PROJECT_KEY = "sk_test_globex_s3cretvalue0003"

_ROUTES = [
    (op.method, re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", BASE_PATH + op.path) + "$"), op.id)
    for op in OPERATIONS
]


def operation_for(method: str, path: str) -> str | None:
    for op_method, pattern, op_id in _ROUTES:
        if op_method == method and pattern.match(path.rstrip("/") or "/"):
            return op_id
    return None


def open_engine(kind: str, tmp_path: Path, **config: Any) -> Service:
    """A started engine; ``postgres`` takes ``database_url=`` (a migrated database: ``postgres_url``)."""
    if kind == "memory":
        store: Any = MemoryStore()
    elif kind == "duckdb":
        store = DuckDBStore(tmp_path / "brainstore.duckdb")
        store.migrate()
    else:
        store = PostgresStore(config["database_url"])
    cfg = Config(engine=kind, data_dir=tmp_path, **config)
    service = Service(store, config=cfg)
    service.start()
    return service


ENGINES = ["memory", "duckdb", "postgres"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the run (see tests/postgres_server.py); started only if a test asks."""
    server = PostgresServer.start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, migrated database of its own for one test."""
    name = postgres_server.database()
    yield postgres_server.url(name)
    postgres_server.drop(name)


@pytest.fixture(params=ENGINES)
def engine_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def service(engine_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Service]:
    config = {"database_url": request.getfixturevalue("postgres_url")} if engine_kind == "postgres" else {}
    svc = open_engine(engine_kind, tmp_path, **config)
    yield svc
    svc.stop()
    svc.store.close()


@dataclass
class Response:
    status: int
    body: Any
    headers: dict[str, str]

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class Api:
    """falcon.testing with a default key, JSON helpers and contract validation of every response."""

    def __init__(self, app: falcon.App, key: str | None = KEY) -> None:
        self.app = app
        self.client = falcon.testing.TestClient(app)
        self.key = key

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        raw: bytes | str | None = None,
        content_type: str | None = "application/json",
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        key: str | bool | None = True,
    ) -> Response:
        sent = dict(headers or {})
        use_key = self.key if key is True else key
        if use_key:
            sent.setdefault("Authorization", f"Bearer {use_key}")
        body: bytes | str | None = raw
        if json_body is not None:
            body = json.dumps(json_body)
        if body is not None and content_type:
            sent.setdefault("Content-Type", content_type)
        full = path if path.startswith(BASE_PATH) else BASE_PATH + path
        result = self.client.simulate_request(method, full, body=body, headers=sent, params=params or {})
        headers_lower = {k.lower(): v for k, v in result.headers.items()}
        payload = result.json if result.text else None
        op = operation_for(method, full)
        if op is not None:
            validate_response(op, result.status_code, payload, headers_lower)
        else:
            assert result.status_code >= 400, f"unrouted {method} {full} answered {result.status_code}"
            validate_schema("Error", payload)
        return Response(result.status_code, payload, headers_lower)

    def get(self, path: str, **kw: Any) -> Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Response:
        return self.request("POST", path, json_body=body, **kw)

    def delete(self, path: str, **kw: Any) -> Response:
        return self.request("DELETE", path, **kw)

    # conveniences -----------------------------------------------------------------------------------
    def brain(self, brain_id: str = "b1", self_name: str | None = None, **body: Any) -> dict[str, Any]:
        if self_name is not None:
            body["self"] = {"type": "person", "name": self_name}
        r = self.post("/brains", {"id": brain_id, **body})
        assert r.status == 201, r.body
        return r.body

    def remember(self, brain_id: str, content: Any, **body: Any) -> Response:
        r = self.post(f"/brains/{brain_id}/records", {"content": content, **body})
        assert r.status == 202, r.body
        return r


@pytest.fixture
def api(service: Service) -> Api:
    return Api(create_app(service))


def assert_error(response: Response, status: int, code: str) -> dict[str, Any]:
    assert response.status == status, response.body
    assert response.body["code"] == code, response.body
    assert response.body["request_id"].startswith("trc_")
    assert response.body["docs_url"].endswith(f"/errors/{code}")
    return response.body
