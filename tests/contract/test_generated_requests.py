"""Requests generated from openapi.yaml (schemathesis) against the app on the embedded default store.

Every operation is sent requests that its declared parameters and body schema allow (positive) and
requests that break them (negative), under a valid key and on a Brain that exists. Positive ones must
not be refused: a 400 for a body the contract admits means the contract promises what the server
refuses (openapi.yaml is the authority; fix whichever is wrong). No request, positive or negative, may
fail the server, and every response must be one the operation declares: its status, body and headers
(schemathesis' own checks and :func:`validate_response`).

What no generator can make valid is left out of positive requests: the opaque tokens only the server
issues (cursors, watermarks), a purpose naming a policy not configured here, and a date-time whose UTC
instant falls outside years 1-9999 (the contract says so in words; JSON Schema's format cannot).
Negative requests are not required to be refused: the test puts a real Brain and Record id and a valid
key in place of what was generated, which may be the part the generator broke.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import negative_data_rejection

from brainstore.api.app import create_app
from tests.conftest import KEY, Api, open_engine
from tests.contract.openapi import CONTRACT_PATH, iter_operations, validate_response

BRAIN = "fuzzed"
# Only the server issues these: generated ones are refused, as they should be.
ISSUED_ONLY_QUERY = ("cursor", "since_watermark")
ISSUED_ONLY_HEADERS = ("brain-watermark",)
# Streaming is asked for with Accept and takes `mode: thorough`, which the body decides: the two are
# generated apart, so a positive request does not ask for a stream.
NEGOTIATED_HEADERS = ("accept",)
OPERATIONS = [(method, path, op["operationId"]) for method, path, op in iter_operations()]


class Tenant:
    """The app on a DuckDB store, a Brain and a Record of it, put back when a request forgot them."""

    def __init__(self, tmp_path: Path) -> None:
        self.service = open_engine("duckdb", tmp_path, rate_limit_per_minute=0)
        self.app = create_app(self.service)
        self.api = Api(self.app)
        self.record_id = ""
        self.restore()

    def restore(self) -> None:
        if self.api.get(f"/brains/{BRAIN}").status == 404:
            self.api.brain(BRAIN)
            self.record_id = self.api.remember(BRAIN, "Caroline adopted a puppy named Rex in May 2023.").body["id"]

    def close(self) -> None:
        self.service.stop()
        self.service.store.close()


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenant]:
    held = Tenant(tmp_path_factory.mktemp("generated"))
    yield held
    held.close()


@pytest.fixture(scope="module")
def schema(tenant: Tenant) -> Any:
    """openapi.yaml read once for every operation's requests, sent to the tenant's app."""
    # No NUL in generated text: every text field refuses it with its own 400 (see test_hostile_input),
    # which JSON Schema cannot say.
    config = schemathesis.Config.from_dict({"generation": {"allow-x00": False, "codec": "utf-8"}})
    loaded = schemathesis.openapi.from_path(CONTRACT_PATH, config=config)
    loaded.app = tenant.app
    return loaded


def _beyond_the_calendar_in_utc(value: Any) -> bool:
    """Whether a date-time in ``value`` (a body or a query, walked whole) has no UTC instant in years 1-9999."""
    if isinstance(value, dict):
        return any(_beyond_the_calendar_in_utc(v) for v in value.values())
    if isinstance(value, list):
        return any(_beyond_the_calendar_in_utc(v) for v in value)
    if not isinstance(value, str):
        return False
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return False
    try:
        parsed.astimezone(UTC)
    except OverflowError:
        return True
    return False


def _aim(case: Any, tenant: Tenant, mode: GenerationMode) -> None:
    """Point the case at the tenant's Brain and Record; a positive one drops what only the server issues."""
    tenant.restore()
    parameters = case.path_parameters or {}
    if "brain_id" in parameters:
        parameters["brain_id"] = BRAIN
    if "record_id" in parameters:
        parameters["record_id"] = tenant.record_id
    if mode is GenerationMode.POSITIVE:
        for name in ISSUED_ONLY_QUERY:
            (case.query or {}).pop(name, None)
        if case.headers:
            for name in [h for h in case.headers if h.lower() in ISSUED_ONLY_HEADERS + NEGOTIATED_HEADERS]:
                del case.headers[name]
        if isinstance(case.body, dict) and "purpose" in case.body:
            case.body["purpose"] = "general"
        assume(not _beyond_the_calendar_in_utc([case.body, case.query]))


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize(("method", "path", "operation_id"), OPERATIONS, ids=[op for _, _, op in OPERATIONS])
def test_generated_requests_get_declared_answers(
    tenant: Tenant, schema: Any, method: str, path: str, operation_id: str, mode: GenerationMode
) -> None:
    operation = schema[path][method]
    excluded = [negative_data_rejection] if mode is GenerationMode.NEGATIVE else []

    @settings(
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(case=operation.as_strategy(mode))
    def answered_as_declared(case: Any) -> None:
        _aim(case, tenant, mode)
        response = case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"}, excluded_checks=excluded)
        body = json.loads(response.content) if response.content else None
        headers = {name.lower(): values[-1] for name, values in response.headers.items()}
        # the event stream has its own frames, checked by the streaming tests
        if not headers.get("content-type", "").startswith("text/event-stream"):
            validate_response(operation_id, response.status_code, body, headers)

    answered_as_declared()
