"""The operations of openapi.yaml as the app serves them: path, method, scope, query parameters.

A contract test asserts this table equals openapi.yaml (paths, methods, query parameters), so the
app's routing and the published contract cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Operation:
    id: str
    method: str
    path: str
    scope: str
    query: dict[str, str] = field(default_factory=dict)  # name -> "string" | "integer"
    limit_bounds: tuple[int, int, int] | None = None  # default, min, max of `limit`


OPERATIONS: tuple[Operation, ...] = (
    Operation("createBrain", "POST", "/brains", "records:write"),
    Operation("getBrain", "GET", "/brains/{brain_id}", "records:read"),
    Operation("forgetBrain", "DELETE", "/brains/{brain_id}", "records:write"),
    Operation("getProfile", "GET", "/brains/{brain_id}/profile", "memories:read", {"limit": "integer"}, (20, 1, 100)),
    Operation("createContext", "POST", "/brains/{brain_id}/context", "context:read"),
    Operation(
        "listTraces",
        "GET",
        "/brains/{brain_id}/traces",
        "context:read",
        {"limit": "integer", "cursor": "string"},
        (20, 1, 100),
    ),
    Operation("getTrace", "GET", "/brains/{brain_id}/traces/{trace_id}", "context:read"),
    Operation(
        "listMemories",
        "GET",
        "/brains/{brain_id}/memories",
        "memories:read",
        {
            "subject": "string",
            "owner": "string",
            "as_of": "string",
            "since_watermark": "string",
            "cursor": "string",
            "limit": "integer",
        },
        (50, 1, 500),
    ),
    Operation("getMemory", "GET", "/brains/{brain_id}/memories/{memory_id}", "memories:read"),
    Operation("acceptObject", "POST", "/brains/{brain_id}/objects", "objects:write"),
    Operation("getObject", "GET", "/brains/{brain_id}/objects/{object_type}/{object_key}", "objects:read"),
    Operation("getCensus", "GET", "/brains/{brain_id}/census", "memories:read"),
    Operation("rememberRecord", "POST", "/brains/{brain_id}/records", "records:write"),
    Operation("getRecord", "GET", "/brains/{brain_id}/records/{record_id}", "records:read"),
    Operation("forgetRecord", "DELETE", "/brains/{brain_id}/records/{record_id}", "records:write"),
)

BY_ID = {op.id: op for op in OPERATIONS}
BASE_PATH = "/v1"
