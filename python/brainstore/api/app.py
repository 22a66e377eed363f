"""The Falcon WSGI app. ``create_app`` for tests, ``get_app`` for gunicorn (built inside the worker)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import falcon

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


def create_app(service: Service, config: Config | None = None) -> falcon.App:
    config = config or service.config
    registry = KeyRegistry(config.key_registry) if config.key_registry is not None else None
    state = AppState(service=service, config=config, registry=registry)
    app = falcon.App(middleware=[Pipeline(state)])
    app.req_options.strip_url_path_trailing_slash = True
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


_app: Any = None


def get_app() -> Any:
    """The gunicorn entry point: configuration, store and worker are built here, after the fork.

    /v1 is the Falcon app; /mcp (hosted MCP, streamable HTTP) is mounted beside it in this process.
    """
    global _app
    if _app is None:
        from brainstore.mcp.hosted import mount_mcp
        from brainstore.service.engine import build_service

        config = Config.from_env()
        _app = mount_mcp(create_app(build_service(config), config), config)
    return _app
