"""openapi.yaml is valid, complete, and in step with the error table, the docs and the client."""

from __future__ import annotations

import copy
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate as validate_openapi_document

from brainstore import client as client_module
from brainstore.client import OPERATIONS, Client
from brainstore.errors import ERROR_CODES, ERROR_TYPES

from .openapi import (
    CONTRACT_PATH,
    contract_routes,
    error_codes,
    iter_operations,
    load_contract,
    operation,
    sse_events,
    validate_response,
    validate_schema,
    validate_sse_event,
)

REPO = CONTRACT_PATH.parent
DOCS_ERRORS = REPO / "docs" / "errors"

OPERATION_IDS = {
    "createBrain",
    "getBrain",
    "forgetBrain",
    "getProfile",
    "createContext",
    "listTraces",
    "getTrace",
    "listMemories",
    "getMemory",
    "acceptObject",
    "getObject",
    "getCensus",
    "rememberRecord",
    "getRecord",
    "forgetRecord",
}
READ_KNOBS = {"as_of", "budget", "filter", "include", "mode", "purpose", "schema"}
VIEW_PARAMS = {"as_of", "cursor", "limit", "owner", "since_watermark", "subject"}
# forgetBrain sends none: the Brain and its change sequence are gone.
WRITE_OPERATIONS = {"createBrain", "rememberRecord", "acceptObject", "forgetRecord"}
IDEMPOTENT_OPERATIONS = {"createBrain", "rememberRecord", "acceptObject"}
TS = "2024-05-01T12:00:00Z"


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def resolve(obj: Any) -> Any:
    while isinstance(obj, dict) and "$ref" in obj:
        node: Any = load_contract()
        for part in obj["$ref"][2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        obj = node
    return obj


def all_parameters(method: str, path: str, op: dict[str, Any]) -> list[dict[str, Any]]:
    item = load_contract()["paths"][path]
    return [resolve(p) for p in item.get("parameters", []) + op.get("parameters", [])]


# ---------------------------------------------------------------------------------------------- document


def test_document_is_valid_openapi_3_1() -> None:
    doc = load_contract()
    assert doc["openapi"] == "3.1.0"
    validate_openapi_document(copy.deepcopy(doc))


def test_server_is_the_version_prefix_and_bearer_is_global() -> None:
    doc = load_contract()
    assert doc["servers"][0]["url"] == "/v1"
    assert doc["security"] == [{"bearerAuth": []}]
    scheme = doc["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")


def test_the_fifteen_operations_exist() -> None:
    ids = [op["operationId"] for _, _, op in iter_operations()]
    assert len(ids) == len(set(ids)) == 15
    assert set(ids) == OPERATION_IDS


def test_routes_and_no_put_or_patch() -> None:
    routes = contract_routes()
    assert len(routes) == 15
    assert all(path.startswith("/v1/brains") for _, path in routes)
    assert not {m for m, _ in routes} & {"PUT", "PATCH"}
    assert {(OPERATIONS[o][0], "/v1" + OPERATIONS[o][1]) for o in OPERATIONS} == routes


def test_every_operation_declares_a_default_error_response() -> None:
    for _, _, op in iter_operations():
        default = resolve(op["responses"].get("default"))
        assert default, f"{op['operationId']} has no default response"
        assert default["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_every_declared_error_response_uses_the_error_schema() -> None:
    for _, _, op in iter_operations():
        for status, response in op["responses"].items():
            if status == "default" or status.startswith("2"):
                continue
            schema = resolve(response)["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Error"}, (op["operationId"], status)


def test_operation_error_codes_have_matching_responses() -> None:
    for _, _, op in iter_operations():
        codes = op["x-error-codes"]
        assert codes, op["operationId"]
        for code in codes:
            status = ERROR_CODES[code][0]
            assert str(status) in op["responses"], f"{op['operationId']}: {code} needs a {status} response"
        for status in op["responses"]:
            if status[0] in "45":
                assert any(str(ERROR_CODES[c][0]) == status for c in codes), (op["operationId"], status)


def test_every_brain_scoped_operation_can_raise_brain_not_found() -> None:
    for _, path, op in iter_operations():
        if "{brain_id}" in path:
            assert "brain_not_found" in op["x-error-codes"], op["operationId"]


def test_x_error_codes_equals_the_error_table() -> None:
    assert error_codes() == ERROR_CODES
    assert len(ERROR_CODES) == 39
    assert error_codes()["not_implemented"] == (501, "internal")
    enum = load_contract()["components"]["schemas"]["Error"]["properties"]["type"]["enum"]
    assert tuple(enum) == ERROR_TYPES


def test_parameters_are_declared() -> None:
    for method, path, op in iter_operations():
        params = all_parameters(method, path, op)
        names = {(p["in"], p["name"]) for p in params}
        for placeholder in re.findall(r"{(\w+)}", path):
            assert ("path", placeholder) in names, (op["operationId"], placeholder)
        for p in params:
            if p["in"] == "path" and p["name"] in ("brain_id", "object_type", "object_key"):
                assert p["schema"] == {"$ref": "#/components/schemas/Slug"}
        has_idem = ("header", "Idempotency-Key") in names
        assert has_idem == (op["operationId"] in IDEMPOTENT_OPERATIONS), op["operationId"]
    ctx_names = {
        (p["in"], p["name"])
        for p in all_parameters("POST", "/brains/{brain_id}/context", operation("createContext"))
    }
    assert {("header", "Brain-Watermark"), ("header", "Accept")} <= ctx_names


def test_query_parameters_are_read_knobs_or_view_params() -> None:
    for method, path, op in iter_operations():
        for p in all_parameters(method, path, op):
            if p["in"] == "query":
                assert p["name"] in READ_KNOBS | VIEW_PARAMS, (op["operationId"], p["name"])
    lm = operation("listMemories")
    query = {
        p["name"]: p["schema"]
        for p in all_parameters("GET", "/brains/{brain_id}/memories", lm)
        if p["in"] == "query"
    }
    assert set(query) == VIEW_PARAMS
    assert (query["limit"]["minimum"], query["limit"]["maximum"], query["limit"]["default"]) == (1, 500, 50)
    for op_id, path in (
        ("getProfile", "/brains/{brain_id}/profile"),
        ("listTraces", "/brains/{brain_id}/traces"),
    ):
        (limit,) = [
            p["schema"] for p in all_parameters("GET", path, operation(op_id)) if p["in"] == "query" and p["name"] == "limit"
        ]
        assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 100, 20)
    traces = {p["name"] for p in all_parameters("GET", "/brains/{brain_id}/traces", operation("listTraces")) if p["in"] == "query"}
    assert traces == {"limit", "cursor"}  # a page that says has_more gives the cursor to read it


def test_context_request_fields_are_the_query_and_the_seven_read_knobs() -> None:
    schema = load_contract()["components"]["schemas"]["ContextRequest"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["query"]
    knobs = set(schema["properties"]) - {"query"}
    assert knobs <= READ_KNOBS
    assert knobs == READ_KNOBS


def test_request_bodies_refuse_unknown_fields() -> None:
    schemas = load_contract()["components"]["schemas"]
    for name in ("ContextRequest", "BrainCreate", "ObjectAccept", "RecordCreate"):
        assert schemas[name]["additionalProperties"] is False, name
    assert set(schemas["RecordCreate"]["properties"]) - {"content"} == {"occurred_at", "source", "visibility"}


def test_write_responses_carry_brain_watermark_and_429_carries_retry_after() -> None:
    for _, _, op in iter_operations():
        for status, response in op["responses"].items():
            if status.startswith("2") and op["operationId"] in WRITE_OPERATIONS:
                headers = resolve(response).get("headers", {})
                assert resolve(headers["Brain-Watermark"])["required"] is True, op["operationId"]
        assert "Retry-After" in resolve(op["responses"]["429"])["headers"], op["operationId"]
    allow = load_contract()["components"]["responses"]["MethodNotAllowed"]["headers"]
    assert "Allow" in allow


def test_success_statuses() -> None:
    expected = {"createBrain": "201", "acceptObject": "201", "rememberRecord": "202"}
    for _, _, op in iter_operations():
        success = sorted(s for s in op["responses"] if s.startswith("2"))
        op_id = op["operationId"]
        if op_id == "createContext":
            assert success == ["200", "202"]
            assert set(op["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
        else:
            assert success == [expected.get(op_id, "200")], op_id


# ---------------------------------------------------------------------------------------------- docs


def test_every_error_code_has_a_doc_page_with_a_valid_example() -> None:
    index = (DOCS_ERRORS / "README.md").read_text(encoding="utf-8")
    for code, (status, etype) in ERROR_CODES.items():
        page = DOCS_ERRORS / f"{code}.md"
        assert page.is_file(), f"docs/errors/{code}.md is missing"
        text = page.read_text(encoding="utf-8")
        assert f"| {status} | `{etype}` |" in text, code
        assert f"({code}.md)" in index, code
        example = json.loads(re.search(r"\n(\{\n.*?\n\})\n```", text, re.S).group(1))
        assert (example["code"], example["type"]) == (code, etype)
        validate_response("getBrain", status, example)
    assert {p.stem for p in DOCS_ERRORS.glob("*.md")} - {"README"} == set(ERROR_CODES)


# ---------------------------------------------------------------------------------------------- client


def test_every_operation_has_a_client_method() -> None:
    assert set(OPERATIONS) == OPERATION_IDS
    for method, path, op in iter_operations():
        op_id = op["operationId"]
        assert OPERATIONS[op_id] == (method, path), op_id
        assert callable(getattr(Client, snake(op_id), None)), f"Client.{snake(op_id)} is missing"
    for extra in ("stream_context", "iter_memories"):
        assert callable(getattr(Client, extra))


def test_client_method_query_arguments_match_the_contract() -> None:
    for method, path, op in iter_operations():
        query = {p["name"] for p in all_parameters(method, path, op) if p["in"] == "query"}
        sig = inspect.signature(getattr(Client, snake(op["operationId"])))
        assert query <= set(sig.parameters), op["operationId"]
    sig = inspect.signature(Client.create_context)
    assert set(sig.parameters) >= READ_KNOBS


def test_client_imports_only_brainstore_errors() -> None:
    for file in Path(client_module.__file__).parent.glob("*.py"):
        text = file.read_text(encoding="utf-8")
        imported = set(re.findall(r"^\s*(?:from|import)\s+(brainstore[\w.]*)", text, re.M))
        assert imported <= {"brainstore.errors"}, (file.name, imported)


# ---------------------------------------------------------------------------------------------- validator

CITATION = {"record_id": "rec_01", "span": {"start": 0, "end": 12}, "quote": "I love tea."}
ERROR = {
    "type": "not_found",
    "code": "brain_not_found",
    "message": "brain 'x' not found",
    "request_id": "trc_01",
    "docs_url": "https://docs.example.com/errors/brain_not_found",
}
RECORD = {
    "id": "rec_01",
    "object": "record",
    "status": "ready",
    "created_at": TS,
    "occurred_at": TS,
    "content": {"kind": "message", "text": "I love tea.", "role": "user"},
    "source": {"name": "chat", "trust": "normal"},
    "visibility": "shareable",
    "origin": "api",
    "memory_ids": ["mem_01"],
    "error": None,
}
MEMORY = {
    "id": "mem_01",
    "object": "memory",
    "statement": "Alice loves tea.",
    "subject": "Alice",
    "owner": "Alice",
    "valid_from": TS,
    "valid_to": None,
    "recorded_at": TS,
    "citations": [CITATION],
    "version": 1,
    "status": "active",
    "supersedes": None,
    "superseded_by": None,
    "conflicts_with": [],
    "attribute": "preference",
}
CONTEXT = {
    "id": "ctx_01",
    "object": "context",
    "query": "what does alice drink?",
    "watermark": "wm_abc",
    "status": "ready",
    "mode": "fast",
    "purpose": "general",
    "evidence": [
        {
            "id": "chk_1",
            "record_id": "rec_01",
            "text": "I love tea.",
            "span": {"start": 0, "end": 11},
            "score": 0.8,
            "occurred_at": TS,
            "citation": 0,
            "redacted": False,
        },
    ],
    "citations": [{"id": "c1", **CITATION}],
    "unknowns": [{"term": "coffee", "reason": "no eligible evidence"}],
    "budget": {
        "tokens": {"limit": 2000, "used": 14, "tokenizer": "cl100k_base"},
        "ms": {"limit": 250, "used": 3.2, "cut_lanes": []},
    },
    "cost": {"model_calls": 1, "embedding_calls": 1, "generative_calls": 0},
    "filter": {"enforced": {}, "recorded": {}},
    "memories": [{**MEMORY, "in_conflict": False}],
    "structured": None,
    "answer": None,
}


def _without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


@pytest.mark.parametrize(
    ("operation_id", "status", "valid", "invalid"),
    [
        ("getRecord", 200, RECORD, _without(RECORD, "status")),
        ("getRecord", 200, RECORD, {**RECORD, "id": "mem_01"}),
        (
            "rememberRecord",
            202,
            {**RECORD, "status": "processing", "memory_ids": []},
            {**RECORD, "content": {"kind": "email", "text": "x"}},
        ),
        ("getMemory", 200, {**MEMORY, "revisions": [], "evidence": []}, MEMORY),
        (
            "listMemories",
            200,
            {
                "object": "list",
                "data": [MEMORY],
                "has_more": False,
                "next_cursor": None,
                "watermark": "wm_1",
                "deleted": [],
            },
            {
                "object": "list",
                "data": [{**MEMORY, "citations": []}],
                "has_more": False,
                "next_cursor": None,
                "watermark": "wm_1",
                "deleted": [],
            },
        ),
        ("createContext", 200, CONTEXT, _without(CONTEXT, "unknowns")),
        ("createContext", 200, CONTEXT, {**CONTEXT, "status": "done"}),
        ("createContext", 202, {**CONTEXT, "status": "pending"}, CONTEXT),
        ("getBrain", 404, ERROR, _without(ERROR, "request_id")),
        ("getBrain", 404, ERROR, {**ERROR, "type": "missing"}),
        (
            "acceptObject",
            409,
            {**ERROR, "type": "conflict", "code": "stale_version", "current_version": 4},
            {**ERROR, "current_version": "4"},
        ),
    ],
)
def test_validator_accepts_valid_and_rejects_invalid(
    operation_id: str, status: int, valid: Any, invalid: Any
) -> None:
    validate_response(operation_id, status, valid)
    with pytest.raises(AssertionError, match="does not conform"):
        validate_response(operation_id, status, invalid)


def test_validator_checks_required_headers() -> None:
    record = {**RECORD, "status": "processing"}
    validate_response("rememberRecord", 202, record, {"brain-watermark": "wm_1"})
    with pytest.raises(AssertionError, match="Brain-Watermark"):
        validate_response("rememberRecord", 202, record, {})
    with pytest.raises(AssertionError, match="does not conform"):
        validate_response("rememberRecord", 202, record, {"Brain-Watermark": "1"})
    limited = {**ERROR, "type": "rate_limit", "code": "too_many_requests", "retry_after_seconds": 2.5}
    validate_response("getBrain", 429, limited, {"Retry-After": "3"})
    with pytest.raises(AssertionError, match="Retry-After"):
        validate_response("getBrain", 429, limited, {})


def test_validator_falls_back_to_default_and_names_unknown_operations() -> None:
    validate_response("getBrain", 405, {**ERROR, "type": "invalid_request", "code": "http_405"})
    with pytest.raises(AssertionError, match="does not conform"):
        validate_response("getBrain", 418, {"error": "teapot"})
    with pytest.raises(AssertionError, match="no operation"):
        validate_response("updateBrain", 200, {})


def test_sse_frames() -> None:
    assert set(sse_events()) == {
        "context.started",
        "context.evidence",
        "context.answer.delta",
        "context.completed",
        "context.error",
    }
    validate_sse_event("context.started", {"id": "ctx_01", "watermark": "wm_1"})
    validate_sse_event("context.evidence", {"item": CONTEXT["evidence"][0]})
    validate_sse_event("context.answer.delta", {"text": "Alice", "citations": ["c1"]})
    validate_sse_event("context.completed", {"context": CONTEXT})
    validate_sse_event("context.error", {"error": {**ERROR, "type": "internal", "code": "internal_error"}})
    with pytest.raises(AssertionError):
        validate_sse_event("context.completed", {"context": _without(CONTEXT, "budget")})
    with pytest.raises(AssertionError, match="undeclared"):
        validate_sse_event("context.done", {})


def test_request_schemas() -> None:
    validate_schema("RecordCreate", {"content": "plain text"})
    validate_schema(
        "RecordCreate", {"content": {"kind": "fact", "subject": "a", "predicate": "b", "value": "1"}}
    )
    # a triple's value is text, as the server reads it (a number is 400 invalid_request_body)
    with pytest.raises(AssertionError):
        validate_schema(
            "RecordCreate", {"content": {"kind": "fact", "subject": "a", "predicate": "b", "value": 1}}
        )
    validate_schema(
        "RecordCreate",
        {
            "content": {"kind": "correction", "corrects": "mem_1", "text": "no"},
            "visibility": "local_only",
            "occurred_at": TS,
        },
    )
    for bad in (
        {"content": {"kind": "email", "text": "x"}},
        {"content": {"kind": "fact"}},
        {"content": "x", "project": "p"},
        {"content": "x", "occurred_at": "yesterday"},
    ):
        with pytest.raises(AssertionError):
            validate_schema("RecordCreate", bad)
    validate_schema("ObjectAccept", {"type": "pref", "key": "theme", "value": None, "if_version": None})
    with pytest.raises(AssertionError):
        validate_schema("ObjectAccept", {"type": "pref", "key": "theme", "value": 1, "if_version": True})
    validate_schema(
        "ContextRequest",
        {
            "query": "q",
            "mode": "thorough",
            "budget": {"tokens": 100, "ms": 50},
            "include": ["evidence", "memories"],
        },
    )
    with pytest.raises(AssertionError):
        validate_schema("ContextRequest", {"query": "q", "budget": {"tokens": 0}})
    validate_schema("Slug", "a" * 64)
    for bad_slug in ("", "a" * 65, "-a", "a b", "a/b"):
        with pytest.raises(AssertionError):
            validate_schema("Slug", bad_slug)
