"""Response conformance against openapi.yaml, the authority over every response shape.

``validate_response(operation_id, status, body, headers=None)`` finds the declared response for the
status (exact code, then ``2XX``-style range, then ``default``), validates the body with the OpenAPI 3.1
dialect (JSON Schema 2020-12 plus ``format`` checking) resolving every ``$ref`` against the whole
document, checks required response headers when ``headers`` is given, and raises ``AssertionError``
with a readable message. ``validate_sse_event(event, data)`` does the same for one createContext SSE
frame. ``contract_routes()`` is the set of ``(METHOD, "/v1" + path)`` the app must serve.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml
from jsonschema.exceptions import best_match
from openapi_schema_validator import OAS31Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

CONTRACT_PATH = Path(__file__).resolve().parents[2] / "openapi.yaml"
_DOC_URI = "urn:brainstore:openapi"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@functools.cache
def load_contract() -> dict[str, Any]:
    """The parsed openapi.yaml (cached; do not mutate)."""
    with CONTRACT_PATH.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


@functools.cache
def _registry() -> Registry:
    resource = Resource(contents=load_contract(), specification=DRAFT202012)
    return Registry().with_resource(_DOC_URI, resource)


def _pointer(*parts: str) -> str:
    """A URI fragment JSON pointer to ``parts`` inside the document."""
    escaped = (quote(p.replace("~", "~0").replace("/", "~1"), safe="") for p in parts)
    return "#/" + "/".join(escaped)


def _validator(*parts: str) -> OAS31Validator:
    schema = {"$ref": _DOC_URI + _pointer(*parts)}
    return OAS31Validator(schema, registry=_registry(), format_checker=OAS31Validator.FORMAT_CHECKER)


def iter_operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path relative to the server url, operation object) for every operation."""
    for path, item in load_contract()["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                yield method.upper(), path, item[method]


@functools.cache
def _operations() -> dict[str, tuple[str, str]]:
    return {op["operationId"]: (method, path) for method, path, op in iter_operations()}


def operation(operation_id: str) -> dict[str, Any]:
    method, path = _find(operation_id)
    return load_contract()["paths"][path][method.lower()]


def _find(operation_id: str) -> tuple[str, str]:
    try:
        return _operations()[operation_id]
    except KeyError:
        raise AssertionError(f"openapi.yaml has no operation {operation_id!r}") from None


def server_prefix() -> str:
    return load_contract()["servers"][0]["url"].rstrip("/")


def contract_routes() -> set[tuple[str, str]]:
    """Every (METHOD, "/v1" + path) declared in openapi.yaml."""
    prefix = server_prefix()
    return {(method, prefix + path) for method, path, _ in iter_operations()}


def _resolve(obj: Any) -> Any:
    """Follow local ``$ref``s of a non-schema object (responses, headers)."""
    seen = 0
    while isinstance(obj, Mapping) and "$ref" in obj:
        ref = obj["$ref"]
        assert ref.startswith("#/"), f"only local $refs are supported, got {ref!r}"
        node: Any = load_contract()
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        obj = node
        seen += 1
        assert seen < 20, f"$ref loop at {ref!r}"
    return obj


def _response_key(op: Mapping[str, Any], status: int) -> str:
    responses = op["responses"]
    for key in (str(status), f"{str(status)[0]}XX"):
        if key in responses:
            return key
    if "default" in responses:
        return "default"
    raise AssertionError(f"{op['operationId']} declares no response for {status} and no default")


def _describe(body: Any, limit: int = 600) -> str:
    text = repr(body)
    return text if len(text) <= limit else text[:limit] + "..."


def _check(validator: OAS31Validator, instance: Any, what: str) -> None:
    errors = list(validator.iter_errors(instance))
    if not errors:
        return
    lines = [f"{what} does not conform to openapi.yaml ({len(errors)} error(s)):"]
    best = best_match(errors)
    ordered = [best] + [e for e in errors if e is not best]
    for err in ordered[:8]:
        where = "$" + "".join(f"[{p!r}]" for p in err.absolute_path)
        lines.append(f"  at {where}: {err.message[:300]}")
        if err.context:
            for sub in sorted(err.context, key=lambda e: -len(e.absolute_path))[:3]:
                sub_where = "$" + "".join(f"[{p!r}]" for p in sub.absolute_path)
                lines.append(f"      - {sub_where}: {sub.message[:200]}")
    lines.append(f"  body: {_describe(instance)}")
    raise AssertionError("\n".join(lines))


def _header_value(headers: Mapping[str, str], name: str) -> str | None:
    lower = name.lower()
    for key, value in headers.items():
        if key.lower() == lower:
            return value
    return None


def _coerce_header(value: str, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        try:
            return int(value)
        except ValueError:
            return value
    if kind == "number":
        try:
            return float(value)
        except ValueError:
            return value
    return value


def validate_response(
    operation_id: str,
    status: int,
    body: Any,
    headers: Mapping[str, str] | None = None,
    *,
    media_type: str = "application/json",
) -> None:
    """Assert that ``body`` (decoded JSON) and ``headers`` match the contract for this response."""
    method, path = _find(operation_id)
    op = load_contract()["paths"][path][method.lower()]
    key = _response_key(op, status)
    response = _resolve(op["responses"][key])
    what = f"{operation_id} {status} (response {key!r})"

    content = response.get("content")
    if content is None:
        assert body in (None, b"", ""), f"{what} declares no body but got {_describe(body)}"
    else:
        assert media_type in content, f"{what} declares no {media_type} body (has {sorted(content)})"
        if media_type == "application/json":
            ptr = _response_schema_pointer(op["responses"][key], method, path, key, media_type)
            _check(_validator(*ptr), body, what)

    if headers is not None:
        for name, header in (response.get("headers") or {}).items():
            header = _resolve(header)
            value = _header_value(headers, name)
            if value is None:
                assert not header.get("required"), f"{what} must carry the {name} header"
                continue
            schema_ptr = _header_schema_pointer(op["responses"][key], method, path, key, name)
            _check(
                _validator(*schema_ptr),
                _coerce_header(value, header.get("schema", {})),
                f"{what} header {name}",
            )


def _response_schema_pointer(
    response: Mapping[str, Any], method: str, path: str, key: str, media_type: str
) -> tuple[str, ...]:
    if "$ref" in response:
        name = response["$ref"].rsplit("/", 1)[1]
        return ("components", "responses", name, "content", media_type, "schema")
    return ("paths", path, method.lower(), "responses", key, "content", media_type, "schema")


def _header_schema_pointer(
    response: Mapping[str, Any], method: str, path: str, key: str, header: str
) -> tuple[str, ...]:
    if "$ref" in response:
        name = response["$ref"].rsplit("/", 1)[1]
        base: tuple[str, ...] = ("components", "responses", name, "headers", header)
        node = load_contract()["components"]["responses"][name]["headers"][header]
    else:
        base = ("paths", path, method.lower(), "responses", key, "headers", header)
        node = load_contract()["paths"][path][method.lower()]["responses"][key]["headers"][header]
    if "$ref" in node:
        return ("components", "headers", node["$ref"].rsplit("/", 1)[1], "schema")
    return (*base, "schema")


def sse_events() -> dict[str, Any]:
    """The createContext SSE frames: event name -> payload schema (with $refs)."""
    op = operation("createContext")
    return op["responses"]["200"]["content"]["text/event-stream"]["x-events"]


def validate_sse_event(event: str, data: Any) -> None:
    """Assert that one createContext SSE frame has a declared name and a conforming payload."""
    events = sse_events()
    assert event in events, f"undeclared SSE event {event!r} (declared: {sorted(events)})"
    name = events[event]["$ref"].rsplit("/", 1)[1]
    _check(_validator("components", "schemas", name), data, f"SSE event {event}")


def validate_schema(schema_name: str, instance: Any) -> None:
    """Assert that ``instance`` conforms to ``components/schemas/<schema_name>``."""
    assert schema_name in load_contract()["components"]["schemas"], f"no schema {schema_name!r}"
    _check(_validator("components", "schemas", schema_name), instance, schema_name)


def error_codes() -> dict[str, tuple[int, str]]:
    """The top-level x-error-codes table as code -> (status, type)."""
    return {code: (row["status"], row["type"]) for code, row in load_contract()["x-error-codes"].items()}
