"""Request pipeline: request id, authentication (before routing), rate limit, scope, query parameters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import falcon

from brainstore.api.contract import Operation
from brainstore.api.validation import SLUG, refuse_unstorable
from brainstore.auth.keys import ALL_SCOPES, parse_authorization
from brainstore.domain import Principal
from brainstore.errors import error, invalid
from brainstore.ids import new_id
from brainstore.service.common import resolved_brain_uid


class Pipeline:
    def __init__(self, state: Any) -> None:
        self.state = state

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = new_id("trc")
        resolved_brain_uid.set(None)  # a thread serves request after request
        req.context.started_at = datetime.now(UTC)
        resp.set_header("X-Request-Id", req.context.request_id)
        req.context.principal = self.authenticate(req.get_header("Authorization"))
        self.state.limiter.hit(req.context.principal.key_hash)

    def authenticate(self, header: str | None) -> Principal:
        key = parse_authorization(header)
        scopes, bound = ALL_SCOPES, None
        if self.state.registry is not None:
            entry = self.state.registry.lookup(key)
            scopes, bound = entry.scopes, entry.brain
        return Principal(
            env=key.env,
            project=key.project,
            scopes=frozenset(scopes),
            key_label=key.id,
            key_hash=key.sha256,
            bound_brain=bound,
        )

    def process_resource(self, req: falcon.Request, resp: falcon.Response, resource: Any, params: dict) -> None:
        if resource is None:
            return
        if "\x00" in req.path:
            # No route names a NUL (%00): no id, type or key holds one, and PostgreSQL could not even
            # look one up (a 500)
            raise falcon.HTTPNotFound()
        operation: Operation | None = resource.operations.get(req.method)
        if operation is None:
            # A method no operation of this path declares, OPTIONS included: 405 http_405, with Allow
            # naming the declared methods only. (Left to Falcon, OPTIONS ran its default responder: 200,
            # an empty body labelled JSON, for any Brain id and with no scope asked; and every other
            # 405 named OPTIONS in Allow.)
            raise falcon.HTTPMethodNotAllowed(sorted(resource.operations))
        req.context.operation = operation.id
        brain_id = params.get("brain_id")
        if brain_id is not None:
            req.context.brain_id = brain_id
        principal: Principal = req.context.principal
        if operation.scope not in principal.scopes:
            raise error("missing_scope", f"Authorization: this key lacks the scope {operation.scope}")
        for name, value in req.params.items():
            if name not in operation.query:
                raise error(
                    "unknown_query_parameter",
                    f"{name}: is not a query parameter of {operation.id}"
                    + (f"; accepted: {', '.join(operation.query)}" if operation.query else "; it takes none"),
                )
            if isinstance(value, list):
                # one value each (openapi.yaml), and which of several the framework hands on is its choice:
                # a cache or proxy in front may read another than the one answered
                raise invalid(name, f"is given {len(value)} times; it takes one value")
            refuse_unstorable(value, name)  # percent-decoding makes a surrogate's bytes U+FFFD, but %00 a NUL
        if brain_id is not None and (
            not SLUG.fullmatch(brain_id) or (principal.bound_brain is not None and principal.bound_brain != brain_id)
        ):
            raise error("brain_not_found", f"brain_id: no Brain {brain_id!r} in this project")

