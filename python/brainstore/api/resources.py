"""Thin resources: validate, call one service method, serialize. Responder names follow operations."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import falcon

from brainstore.api import validation
from brainstore.api.contract import BY_ID, Operation
from brainstore.errors import error, invalid
from brainstore.service import MISSING, Reply, Service, fingerprint
from brainstore.service.context import context_frames

MAX_BODY = 1024 * 1024


def read_json(req: falcon.Request) -> Any:
    """The JSON body: media type first (unsupported_media_type), then size and syntax.

    A chunked body (Transfer-Encoding, no Content-Length) is read to its end, still bounded. The
    parse is strict (:func:`validation.parse_json`): depth, NaN, lone surrogates.
    """
    media = (req.content_type or "").split(";")[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise error("unsupported_media_type", f"Content-Type: {media!r} is not JSON; send application/json")
    length = req.content_length
    if length is not None and length > MAX_BODY:
        raise invalid("body", f"must be at most {MAX_BODY} bytes")
    if length is None and "chunked" in (req.get_header("Transfer-Encoding") or "").lower():
        raw = _read_bounded(req.stream)
    else:
        raw = req.bounded_stream.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise invalid("body", f"must be at most {MAX_BODY} bytes")
    if not raw.strip():
        raise invalid("body", "is required: send a JSON object")
    if not media:
        raise error("unsupported_media_type", "Content-Type: missing; send application/json")
    return validation.parse_json(raw)


def _read_bounded(stream: Any) -> bytes:
    """Read to the end, or one byte past MAX_BODY: the server's input decodes the chunks."""
    parts: list[bytes] = []
    size = 0
    while size <= MAX_BODY:
        part = stream.read(MAX_BODY + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def send(resp: falcon.Response, body: Any, status: int = 200) -> None:
    resp.status = status
    resp.media = body


#: The WSGI environ key of the work a request leaves for after its response (see App.__call__).
AFTER_RESPONSE = "brainstore.after_response"


def after_response(req: falcon.Request, work: Callable[[], None]) -> None:
    """Run ``work`` once the response is written; at once when the app was called without the list
    (a WSGI host that would never run it)."""
    pending = req.env.get(AFTER_RESPONSE)
    if pending is None:
        work()
    else:
        pending.append(work)


def idempotency(req: falcon.Request, raw: Any) -> dict[str, Any]:
    """A write's Idempotency-Key and the fingerprint of its body, which is read only with a key: it
    canonicalizes and hashes the whole body, 5.5 us of a LoCoMo turn's POST, and most writes send none."""
    key = validation.idempotency_key(req.get_header("Idempotency-Key"))
    return {"idempotency_key": key, "request_fingerprint": fingerprint(raw) if key is not None else ""}


def send_reply(resp: falcon.Response, reply: Reply) -> None:
    send(resp, reply.body, reply.status)
    if reply.watermark is not None:
        resp.set_header("Brain-Watermark", reply.watermark)


class Resource:
    operation_ids: tuple[str, ...] = ()

    def __init__(self, service: Service) -> None:
        self.service = service
        self.operations: dict[str, Operation] = {BY_ID[o].method: BY_ID[o] for o in self.operation_ids}

    def limit(self, req: falcon.Request) -> int:
        operation = self.operations[req.method]
        assert operation.limit_bounds is not None
        return validation.query_limit(req.get_param("limit"), operation.limit_bounds)


class Brains(Resource):
    operation_ids = ("createBrain",)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        raw = read_json(req)
        body = validation.brain_create(raw)
        # A refusal from here on names this Brain ("a Brain 'A' already exists"): its trace is the
        # Brain's, read through it and erased by its forget, never another Brain's to read.
        req.context.brain_id = body["id"]
        principal = req.context.principal
        if principal.bound_brain is not None and principal.bound_brain != body["id"]:
            raise error(
                "missing_scope",
                f"Authorization: this key's scope records:write covers only Brain {principal.bound_brain!r}, "
                f"the Brain it is bound to; creating Brain {body['id']!r} needs an unbound key with records:write",
            )
        send_reply(
            resp,
            self.service.create_brain(
                principal,
                body["id"],
                name=body["name"],
                self_entity=body["self"],
                **idempotency(req, raw),
            ),
        )


class Brain(Resource):
    operation_ids = ("getBrain", "forgetBrain")

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        send(resp, self.service.get_brain(req.context.principal, brain_id))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        send_reply(resp, self.service.forget_brain(req.context.principal, brain_id))


class Records(Resource):
    operation_ids = ("rememberRecord",)

    def on_post(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        raw = read_json(req)
        body = validation.record_create(raw)
        send_reply(
            resp,
            self.service.remember_record(
                req.context.principal,
                brain_id,
                content=body["content"],
                source=body["source"],
                visibility=body["visibility"],
                occurred_at=body["occurred_at"],
                **idempotency(req, raw),
            ),
        )


class Record(Resource):
    operation_ids = ("getRecord", "forgetRecord")

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str, record_id: str) -> None:
        send(resp, self.service.get_record(req.context.principal, brain_id, record_id))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, brain_id: str, record_id: str) -> None:
        send_reply(resp, self.service.forget_record(req.context.principal, brain_id, record_id))


class Objects(Resource):
    operation_ids = ("acceptObject",)

    def on_post(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        raw = read_json(req)
        body = validation.object_accept(raw)
        send_reply(
            resp,
            self.service.accept_object(
                req.context.principal,
                brain_id,
                type_=body["type"],
                key=body["key"],
                value=body["value"],
                if_version=body.get("if_version", MISSING),
                **idempotency(req, raw),
            ),
        )


class Object(Resource):
    operation_ids = ("getObject",)

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, brain_id: str, object_type: str, object_key: str
    ) -> None:
        send(resp, self.service.get_object(req.context.principal, brain_id, object_type, object_key))


class Memories(Resource):
    operation_ids = ("listMemories",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        as_of = req.get_param("as_of")
        send(
            resp,
            self.service.list_memories(
                req.context.principal,
                brain_id,
                subject=req.get_param("subject"),
                owner=req.get_param("owner"),
                as_of=validation.timestamp(as_of, "as_of") if as_of is not None else None,
                since_watermark=req.get_param("since_watermark"),
                cursor=req.get_param("cursor"),
                limit=self.limit(req),
            ),
        )


class Memory(Resource):
    operation_ids = ("getMemory",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str, memory_id: str) -> None:
        send(resp, self.service.get_memory(req.context.principal, brain_id, memory_id))


class Profile(Resource):
    operation_ids = ("getProfile",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        send(resp, self.service.get_profile(req.context.principal, brain_id, limit=self.limit(req)))


class Census(Resource):
    operation_ids = ("getCensus",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        send(resp, self.service.get_census(req.context.principal, brain_id))


class Context(Resource):
    operation_ids = ("createContext",)

    def on_post(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        request = validation.context_request(read_json(req))
        streaming = accepts_event_stream(req.get_header("Accept"))
        if streaming and request["mode"] != "thorough":
            raise error("streaming_not_applicable", "Accept: text/event-stream needs mode thorough; fast never streams")
        reply = self.service.create_context(
            req.context.principal, brain_id, request, watermark=req.get_header("Brain-Watermark")
        )
        if reply.then is not None:
            after_response(req, reply.then)
        if streaming and reply.status == 200:
            resp.status = 200
            resp.content_type = "text/event-stream"
            resp.set_header("Cache-Control", "no-store")
            resp.stream = sse(context_frames(reply.body))
            return
        send_reply(resp, reply)


def accepts_event_stream(accept: str | None) -> bool:
    """Whether ``accept`` names text/event-stream as acceptable: in any case (media types are
    case-insensitive) and without q=0, which says it is not. Only a client that names it streams: a
    wildcard does not. A substring test streamed for "text/event-stream;q=0" (or refused a fast
    Context with 406) and not for "Text/Event-Stream"."""
    for media_range in (accept or "").split(","):
        media_type, *params = media_range.split(";")
        if media_type.strip().lower() != "text/event-stream":
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 1.0  # a malformed weight is no refusal
        if quality > 0:
            return True
    return False


def sse(frames: Iterator[tuple[str, Any]]) -> Iterator[bytes]:
    for event, data in frames:
        yield f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class Traces(Resource):
    operation_ids = ("listTraces",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str) -> None:
        send(
            resp,
            self.service.list_traces(
                req.context.principal, brain_id, limit=self.limit(req), cursor=req.get_param("cursor")
            ),
        )


class Trace(Resource):
    operation_ids = ("getTrace",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, brain_id: str, trace_id: str) -> None:
        send(resp, self.service.get_trace(req.context.principal, brain_id, trace_id))


RESOURCES: tuple[type[Resource], ...] = (
    Brains,
    Brain,
    Records,
    Record,
    Objects,
    Object,
    Memories,
    Memory,
    Profile,
    Census,
    Context,
    Traces,
    Trace,
)
