"""Every failure becomes the spec's one Error body, here and nowhere else, Falcon's own included."""

from __future__ import annotations

import logging
from typing import Any

import falcon

from brainstore.errors import ERROR_CODES, BrainstoreError, error
from brainstore.service.common import resolved_brain_uid
from brainstore.service.views import timestamp

log = logging.getLogger("brainstore.api")

_GENERIC = {
    400: "the request could not be understood",
    401: "authentication failed",
    403: "the request was refused",
    404: "no route matches this path",
    405: "this method is not allowed on this path",
    406: "the response cannot be produced in an acceptable media type",
    409: "the request conflicts with the current state",
    415: "the media type of the body is not supported",
    429: "too many requests",
}


def retry_after(exc: BrainstoreError) -> str | None:
    """The Retry-After header of a refusal that says when to try again: whole seconds, at least 1."""
    seconds = exc.extra.get("retry_after_seconds")
    return None if seconds is None else str(max(1, int(seconds + 0.999)))


def error_body(exc: BrainstoreError, request_id: str, docs_base: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": exc.type,
        "code": exc.code,
        "message": exc.message,
        "request_id": request_id,
        "docs_url": f"{docs_base}/errors/{exc.code}",
    }
    body.update(exc.extra)
    return body


def from_falcon(exc: falcon.HTTPError) -> BrainstoreError:
    status = int(exc.status_code)
    code = f"http_{status}"
    if code not in ERROR_CODES:
        return error("internal_error", "the server failed while handling the request")
    return error(code, _GENERIC[status])


class ErrorHandlers:
    """Registered on the app: maps BrainstoreError, Falcon's HTTPError and any other exception."""

    def __init__(self, app_state: Any) -> None:
        self.state = app_state

    def respond(self, req: falcon.Request, resp: falcon.Response, exc: BrainstoreError) -> None:
        request_id = getattr(req.context, "request_id", None) or "trc_unknown"
        body = error_body(exc, request_id, self.state.config.docs_base)
        resp.status = exc.status
        resp.media = body
        resp.content_type = falcon.MEDIA_JSON
        if (after := retry_after(exc)) is not None:
            resp.set_header("Retry-After", after)
        principal = getattr(req.context, "principal", None)
        brain_id = getattr(req.context, "brain_id", None)
        brain_uid = resolved_brain_uid.get() if brain_id is not None else None
        bound = principal.bound_brain if principal else None
        if bound is not None and brain_id is not None and brain_id != bound:
            # A key bound to one Brain refused on another: the trace is its own Brain's, never planted in
            # the other's listTraces (nor counted against what that Brain may hold)
            brain_id, brain_uid = bound, None
        self.state.service.traces.add(
            request_id,
            principal.namespace if principal else None,
            brain_id,
            {
                "id": request_id,
                "object": "trace",
                "kind": "request",
                "created_at": timestamp(getattr(req.context, "started_at", None)),
                "operation": getattr(req.context, "operation", None),
                "http_status": exc.status,
                "error": body,
            },
            brain_uid=brain_uid,
        )

    def brainstore(self, req: falcon.Request, resp: falcon.Response, exc: BrainstoreError, params: Any) -> None:
        self.respond(req, resp, exc)

    def http(self, req: falcon.Request, resp: falcon.Response, exc: falcon.HTTPError, params: Any) -> None:
        mapped = from_falcon(exc)
        self.respond(req, resp, mapped)
        if exc.headers:
            for name, value in exc.headers.items():
                if name.lower() == "allow":
                    resp.set_header("Allow", value)

    def unhandled(self, req: falcon.Request, resp: falcon.Response, exc: Exception, params: Any) -> None:
        log.exception("unhandled failure on %s %s", req.method, req.path)
        self.respond(req, resp, error("internal_error", "the server failed while handling the request"))
