"""The Falcon WSGI app: ``create_app(service, config)``. The served application is composed in
:mod:`brainstore.app` (``get_app``), which hands this module a built service."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
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

log = logging.getLogger("brainstore.api")


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


class App(falcon.App):  # type: ignore[misc]
    """Falcon's app, and the work a request leaves for after its response (resources.after_response):
    run once the body is written, so the client never waits for it."""

    def __call__(self, env: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        pending: list[Callable[[], None]] = []
        env[resources.AFTER_RESPONSE] = pending
        try:
            body = super().__call__(env, start_response)
        except BaseException:
            _run(pending)
            raise
        return _ThenRun(body, pending) if pending else body


class _ThenRun:
    """A WSGI body that runs ``work`` once it is written: after its last item is taken (the server has
    sent the ones before), or when it is closed (a client that went away before the end)."""

    def __init__(self, body: Iterable[bytes], work: list[Callable[[], None]]) -> None:
        self._body = body
        self._work = work

    def __iter__(self) -> Iterator[bytes]:
        yield from self._body
        _run(self._work)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            _run(self._work)


def _run(work: list[Callable[[], None]]) -> None:
    """Each piece of ``work`` once, a failing one logged (the response is gone: nobody else can hear it)."""
    while work:
        piece = work.pop(0)
        try:
            piece()
        except Exception:
            log.exception("work left for after a response failed")


def create_app(service: Service, config: Config | None = None) -> falcon.App:
    config = config or service.config
    registry = KeyRegistry(config.key_registry) if config.key_registry is not None else None
    state = AppState(service=service, config=config, registry=registry)
    app = App(middleware=[Pipeline(state)])
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
