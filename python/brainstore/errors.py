"""The one exception tree of brainstore.

Every failure the service can report is a :class:`BrainstoreError` carrying a stable ``code`` from the
spec's table. The HTTP status and the error ``type`` are looked up here, once, so no other module
decides them. The client raises the same classes with the server's body attached.
"""

from __future__ import annotations

from typing import Any, ClassVar

# code -> (HTTP status, type). The spec's table of codes, word for word.
ERROR_CODES: dict[str, tuple[int, str]] = {
    "invalid_api_key": (401, "authentication"),
    "key_revoked": (401, "authentication"),
    "key_registry_unreadable": (500, "internal"),
    "missing_scope": (403, "permission"),
    "mcp_brain_unbound": (403, "permission"),
    "mcp_identity_unconfigured": (401, "authentication"),
    "invalid_request_body": (400, "invalid_request"),
    "unknown_query_parameter": (400, "invalid_request"),
    "unknown_kind": (400, "invalid_request"),
    "invalid_watermark": (400, "invalid_request"),
    "conflicting_parameters": (400, "invalid_request"),
    "streaming_not_applicable": (406, "invalid_request"),
    "brain_not_found": (404, "not_found"),
    "record_not_found": (404, "not_found"),
    "record_not_erasable": (403, "policy"),
    "memory_not_found": (404, "not_found"),
    "memory_pending_rederivation": (404, "not_found"),
    "object_not_found": (404, "not_found"),
    "trace_not_found": (404, "not_found"),
    "corrected_memory_not_found": (404, "not_found"),
    "brain_exists": (409, "conflict"),
    "idempotency_conflict": (409, "conflict"),
    "stale_version": (409, "conflict"),
    "correction_conflict": (409, "conflict"),
    "not_implemented": (501, "internal"),
    "local_only_record": (403, "policy"),
    "too_many_requests": (429, "rate_limit"),
    "unsupported_media_type": (415, "invalid_request"),
    "memory_without_lineage": (500, "internal"),
    "internal_error": (500, "internal"),
    "http_400": (400, "invalid_request"),
    "http_401": (401, "authentication"),
    "http_403": (403, "permission"),
    "http_404": (404, "not_found"),
    "http_405": (405, "invalid_request"),
    "http_406": (406, "invalid_request"),
    "http_409": (409, "conflict"),
    "http_415": (415, "invalid_request"),
    "http_429": (429, "rate_limit"),
}

ERROR_TYPES = (
    "invalid_request",
    "authentication",
    "permission",
    "not_found",
    "conflict",
    "rate_limit",
    "policy",
    "internal",
)


class BrainstoreError(Exception):
    """A failure with a stable code. ``extra`` holds additive body fields (current_version, ...)."""

    error_type: ClassVar[str] = "internal"

    def __init__(self, code: str, message: str, *, body: dict[str, Any] | None = None, **extra: Any):
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra = extra
        # The whole Error body when this error came back from a server (client side).
        self.body = body

    @property
    def status(self) -> int:
        return ERROR_CODES[self.code][0]

    @property
    def type(self) -> str:
        return ERROR_CODES[self.code][1]


class InvalidRequest(BrainstoreError):
    error_type = "invalid_request"


class AuthenticationFailed(BrainstoreError):
    error_type = "authentication"


class PermissionDenied(BrainstoreError):
    error_type = "permission"


class NotFound(BrainstoreError):
    error_type = "not_found"


class Conflict(BrainstoreError):
    error_type = "conflict"


class RateLimited(BrainstoreError):
    error_type = "rate_limit"


class PolicyRefused(BrainstoreError):
    error_type = "policy"


class InternalFailure(BrainstoreError):
    error_type = "internal"


_CLASS_BY_TYPE: dict[str, type[BrainstoreError]] = {
    cls.error_type: cls
    for cls in (
        InvalidRequest,
        AuthenticationFailed,
        PermissionDenied,
        NotFound,
        Conflict,
        RateLimited,
        PolicyRefused,
        InternalFailure,
    )
}


def error(code: str, message: str, **extra: Any) -> BrainstoreError:
    """Build the exception of the right class for ``code``: ``raise error("brain_not_found", ...)``."""
    return _CLASS_BY_TYPE[ERROR_CODES[code][1]](code, message, **extra)


def invalid(field: str, reason: str) -> BrainstoreError:
    """A validation failure; the message has the spec's ``<field>: <reason>`` form."""
    return error("invalid_request_body", f"{field}: {reason}")
