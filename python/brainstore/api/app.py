"""The Falcon WSGI app: ``create_app(service, config)``. The served application is composed in
:mod:`brainstore.app` (``get_app``), which hands this module a built service."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import falcon
import falcon.media
import orjson

from brainstore.api import resources
from brainstore.api.contract import BASE_PATH, OPERATIONS
from brainstore.api.errors import ErrorHandlers
from brainstore.api.middleware import Pipeline
from brainstore.auth.ratelimit import FixedWindowLimiter
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.errors import BrainstoreError
from brainstore.service import Service


@dataclass
class AppState:
    service: Service
    config: Config
    registry: KeyRegistry | None
    limiter: FixedWindowLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.limiter = FixedWindowLimiter(self.config.rate_limit_per_minute)


def json_body(value: Any) -> bytes:
    """A response body. orjson writes a Context's 37 KB in a tenth of the time of json; what it
    refuses (an integer beyond 64 bits in an Object's value, say) json writes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, ensure_ascii=False).encode()


def create_app(service: Service, config: Config | None = None) -> falcon.App:
    config = config or service.config
    registry = KeyRegistry(config.key_registry) if config.key_registry is not None else None
    state = AppState(service=service, config=config, registry=registry)
    app = falcon.App(middleware=[Pipeline(state)])
    app.req_options.strip_url_path_trailing_slash = True
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = falcon.media.JSONHandler(dumps=json_body)
    handlers = ErrorHandlers(state)
    # Falcon picks the most specific registered handler for an exception's class.
    app.add_error_handler(Exception, handlers.unhandled)
    app.add_error_handler(falcon.HTTPError, handlers.http)
    app.add_error_handler(BrainstoreError, handlers.brainstore)
    routed: dict[str, type[resources.Resource]] = {}
    for cls in resources.RESOURCES:
        for operation_id in cls.operation_ids:
            path = next(op.path for op in OPERATIONS if op.id == operation_id)
            routed.setdefault(path, cls)
    for path, cls in routed.items():
        app.add_route(BASE_PATH + path, cls(service))
    return app
