"""Python client for the brainstore HTTP API, derived from openapi.yaml (the authority).

One method per operation, named after the snake_case operationId. Methods return the decoded JSON body
(a dict). Every non-2xx response raises the :mod:`brainstore.errors` exception for its code, with the
server's full Error body on ``.body``; a 2xx body that is no JSON object raises
:class:`UnknownServerError` ``http_<status>``. A request that got no response (connection refused or
cut, a timeout, a protocol error) raises :class:`TransportFailure`: code ``internal_error``, type
``internal`` (retry once; rememberRecord only with the same Idempotency-Key, as the request may have
landed), ``.body`` None, httpx's exception as ``__cause__``; it is also an ``httpx.TransportError``, so
code that caught httpx's errors still does. So one ``except BrainstoreError`` covers every failure of a
call. The last ``Brain-Watermark`` response header seen is kept on ``client.last_watermark``.

    with Client("http://localhost:8080/v1", "sk_test_myproj_secret") as bs:
        bs.create_brain("alice", self={"type": "person", "name": "Alice"})
        bs.remember_record("alice", "I moved to Lisbon in 2021.")
        ctx = bs.create_context("alice", "Where does Alice live?", watermark=bs.last_watermark)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import quote

import httpx

from brainstore.errors import ERROR_CODES, BrainstoreError, InternalFailure, error, invalid

__all__ = ["OPERATIONS", "BrainstoreError", "Client", "TransportFailure", "UnknownServerError", "in_process"]

# operationId -> (method, path relative to the /v1 server url). Mirrors openapi.yaml; a contract test
# asserts the two are equal and that every operationId has a method on Client.
OPERATIONS: Final[dict[str, tuple[str, str]]] = {
    "createBrain": ("POST", "/brains"),
    "getBrain": ("GET", "/brains/{brain_id}"),
    "forgetBrain": ("DELETE", "/brains/{brain_id}"),
    "getProfile": ("GET", "/brains/{brain_id}/profile"),
    "createContext": ("POST", "/brains/{brain_id}/context"),
    "listTraces": ("GET", "/brains/{brain_id}/traces"),
    "getTrace": ("GET", "/brains/{brain_id}/traces/{trace_id}"),
    "listMemories": ("GET", "/brains/{brain_id}/memories"),
    "getMemory": ("GET", "/brains/{brain_id}/memories/{memory_id}"),
    "acceptObject": ("POST", "/brains/{brain_id}/objects"),
    "getObject": ("GET", "/brains/{brain_id}/objects/{object_type}/{object_key}"),
    "getCensus": ("GET", "/brains/{brain_id}/census"),
    "rememberRecord": ("POST", "/brains/{brain_id}/records"),
    "getRecord": ("GET", "/brains/{brain_id}/records/{record_id}"),
    "forgetRecord": ("DELETE", "/brains/{brain_id}/records/{record_id}"),
}

WATERMARK_HEADER: Final = "Brain-Watermark"


class _Omitted:
    """Sentinel type: the argument was not given (distinct from an explicit None, sent as JSON null)."""

    def __repr__(self) -> str:
        return "OMITTED"

    def __bool__(self) -> bool:
        return False


OMITTED: Final = _Omitted()


class UnknownServerError(InternalFailure):
    """A failure whose code this client does not know (a newer server, or a non-Error body).

    Codes are additive, so an unknown code is surfaced as an :class:`InternalFailure` that keeps the
    server's code, HTTP status and type as sent.
    """

    def __init__(self, code: str, message: str, *, status: int, type: str = "internal", **extra: Any):
        Exception.__init__(self, f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra = extra
        self.body: dict[str, Any] | None = None
        self._status = status
        self._type = type

    @property
    def status(self) -> int:
        return self._status

    @property
    def type(self) -> str:
        return self._type


class TransportFailure(InternalFailure, httpx.TransportError):
    """A request that got no HTTP response: the server could not be reached, the connection broke, a
    timeout ran out, or what came back was no HTTP (httpx's exception is ``__cause__``).

    The spec's shape for a failure with no Error body: code ``internal_error``, type ``internal``
    (retry once; rememberRecord only with the same Idempotency-Key, since the request may have been
    served), ``.body`` None. It is also an ``httpx.TransportError`` (``.request`` set), so callers that
    caught httpx's errors before this class existed still do.
    """

    def __init__(self, cause: httpx.RequestError):
        detail = str(cause).strip()[:200]
        summary = type(cause).__name__ + (f": {detail}" if detail else "")
        super().__init__("internal_error", f"the brainstore API could not be reached: {summary}")
        self._request = cause._request


@contextmanager
def _transport_failures() -> Iterator[None]:
    """httpx's request failures raised as :class:`TransportFailure`: they escaped as bare httpx
    exceptions (``Client("http://127.0.0.1:1/v1", key).get_brain("x")`` raised httpx.ConnectError)
    past every caller that handles the client's failures with ``except BrainstoreError``."""
    try:
        yield
    except httpx.RequestError as exc:
        raise TransportFailure(exc) from exc


def _checked_timeout(timeout: Any) -> Any:
    """A timeout httpx gets as given, once every limit in it is a finite number of seconds above 0.

    httpx took 0, a negative, nan or inf without a word: 0 or a negative failed every request with a
    timeout that named no cause, nan or inf waited for ever. None (or a None field of an
    ``httpx.Timeout``) still means no limit.
    """
    limits = (
        [timeout.connect, timeout.read, timeout.write, timeout.pool] if isinstance(timeout, httpx.Timeout) else [timeout]
    )
    for limit in limits:
        if limit is None:
            continue
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not math.isfinite(limit) or limit <= 0:
            raise ValueError(f"timeout must be a finite number of seconds above 0 (or None for no limit), not {limit!r}")
    return timeout


def _seg(value: str, name: str) -> str:
    """One percent-encoded path segment. Not empty, "." or "..": quote leaves those as they are, and a
    URL's path resolves them, so forgetRecord of Record ".." was a DELETE of the Brain itself."""
    text = str(value)
    if text in ("", ".", ".."):
        raise invalid(name, f"must not be {text!r}")
    return quote(text, safe="")


def in_process(app: Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]) -> httpx.WSGITransport:
    """A transport that calls the WSGI ``app`` in this process, as a WSGI server would: httpx hands
    the app the path as text, where PEP 3333 (and gunicorn) give its UTF-8 bytes read as Latin-1, and
    Falcon failed outside its error handlers on an id beyond Latin-1 (a Memory id "mem_日本")."""

    def as_served(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        environ["PATH_INFO"] = environ["PATH_INFO"].encode("utf-8", "surrogatepass").decode("latin-1")
        return app(environ, start_response)

    return httpx.WSGITransport(app=as_served)


def _drop_none(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def raise_for_error(response: httpx.Response) -> None:
    """Raise the brainstore exception for a non-2xx response; return for a 2xx one."""
    if response.is_success:
        return
    body: Any = None
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    raise _to_exception(response.status_code, body, response.text if body is None else None)


def _json_body(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 2xx response (every operation's success body in openapi.yaml is one).

    One that is not JSON (a proxy's page, a cut body) raises :class:`UnknownServerError`
    ``http_<status>``, as a non-Error failure does: it raised a bare json.JSONDecodeError, which no
    caller catching BrainstoreError expected. So does JSON that is no object (a proxy answering 200
    with ``[]``): it was returned, and failed later in the caller with an AttributeError.
    """
    status = response.status_code
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        message = response.text.strip()[:500] or f"HTTP {status} without a JSON body"
        raise UnknownServerError(f"http_{status}", f"not JSON: {message}", status=status) from None
    if not isinstance(body, dict):
        shown = response.text.strip()[:200]
        raise UnknownServerError(f"http_{status}", f"not a JSON object: {shown}", status=status)
    return body


def _to_exception(status: int, body: Any, text: str | None) -> BrainstoreError:
    if isinstance(body, Mapping) and isinstance(body.get("code"), str):
        code = body["code"]
        message = str(body.get("message", ""))
        extra = {k: v for k, v in body.items() if k not in ("code", "message", "type")}
        if code in ERROR_CODES:
            exc = error(code, message, **extra)
        else:
            exc = UnknownServerError(
                code, message, status=status, type=str(body.get("type", "internal")), **extra
            )
        exc.body = dict(body)
        return exc
    # Not an Error body (a proxy page, an empty reply): keep the status, say what came back.
    code = f"http_{status}"
    message = (text or "").strip()[:500] or f"HTTP {status} without an Error body"
    if code in ERROR_CODES:
        return error(code, message)
    return UnknownServerError(code, message, status=status)


#: The events that end a createContext stream; openapi.yaml's text/event-stream has exactly one.
TERMINAL_EVENTS: Final = ("context.completed", "context.error")


def _iter_sse(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """Parse a text/event-stream into (event, data) pairs, data JSON-decoded (the contract's frames are
    JSON objects: one that is not raises internal_error).

    An event is dispatched at the blank line that ends it; one the stream ends before (a connection cut
    mid-frame) is discarded, as the SSE rules say: yielding it passed a half-received terminal frame off
    as the end of the stream, its cut JSON as a string."""
    event = "message"
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r")
        if line == "":
            if data:
                payload = "\n".join(data)
                try:
                    decoded = json.loads(payload)
                except json.JSONDecodeError:
                    raise error(
                        "internal_error", f"event stream: the data of {event} is not JSON: {payload[:200]!r}"
                    ) from None
                if not isinstance(decoded, dict):
                    # every frame of openapi.yaml's stream is an object; a list passed on failed in the caller
                    raise error(
                        "internal_error", f"event stream: the data of {event} is not a JSON object: {payload[:200]!r}"
                    )
                yield event, decoded
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        # id and retry fields are not used by this contract


class Client:
    """A synchronous client for one brainstore deployment (``base_url`` ends in ``/v1``).

    ``timeout`` is in seconds (a number above 0 and finite, an ``httpx.Timeout``, or None for no limit);
    any other value raises ValueError.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        _checked_timeout(timeout)
        self.base_url = base_url.rstrip("/")
        self.last_watermark: str | None = None
        # A key read from a file or the environment often ends in a newline; httpx then refuses the
        # header and prints it whole in its error, the secret in every traceback and log
        api_key = api_key.strip()
        if not api_key.isascii() or not api_key.isprintable() or " " in api_key:
            raise invalid("api_key", "is not a brainstore key (sk_<environment>_<project>_<secret>)")
        self._http = httpx.Client(
            base_url=self.base_url + "/",
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def _url(self, operation_id: str, **path_params: str) -> str:
        path = OPERATIONS[operation_id][1].format(**{k: _seg(v, k) for k, v in path_params.items()})
        return path.lstrip("/")

    def _remember_watermark(self, response: httpx.Response) -> None:
        watermark = response.headers.get(WATERMARK_HEADER)
        if watermark:
            self.last_watermark = watermark

    def _call(
        self,
        operation_id: str,
        path_params: Mapping[str, str],
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = OMITTED,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        method = OPERATIONS[operation_id][0]
        kwargs: dict[str, Any] = {}
        if params:
            kwargs["params"] = _drop_none(params)
        if json_body is not OMITTED:
            kwargs["json"] = json_body
        if headers:
            kwargs["headers"] = _drop_none(headers)
        url = self._url(operation_id, **path_params)
        with _transport_failures():
            response = self._http.request(method, url, **kwargs)
        self._remember_watermark(response)
        raise_for_error(response)
        return _json_body(response)

    # ------------------------------------------------------------------ brains

    def create_brain(
        this,  # not "self": the API's BrainCreate field is literally named "self"
        id: str,
        *,
        name: str | None = None,
        self: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """createBrain: POST /brains -> 201 BrainCreated. An existing id raises brain_exists (Conflict)."""
        body: dict[str, Any] = {"id": id}
        if name is not None:
            body["name"] = name
        if self is not None:
            body["self"] = dict(self)
        return this._call("createBrain", {}, json_body=body, headers={"Idempotency-Key": idempotency_key})

    def get_brain(self, brain_id: str) -> dict[str, Any]:
        """getBrain: GET /brains/{brain_id} -> 200 Brain."""
        return self._call("getBrain", {"brain_id": brain_id})

    def forget_brain(self, brain_id: str) -> dict[str, Any]:
        """forgetBrain: DELETE /brains/{brain_id} -> 200 DeletionReceipt (permanent)."""
        return self._call("forgetBrain", {"brain_id": brain_id})

    def get_profile(self, brain_id: str, *, limit: int | None = None) -> dict[str, Any]:
        """getProfile: GET /brains/{brain_id}/profile -> 200 Profile (every line cited)."""
        return self._call("getProfile", {"brain_id": brain_id}, params={"limit": limit})

    def get_census(self, brain_id: str) -> dict[str, Any]:
        """getCensus: GET /brains/{brain_id}/census -> 200 Census."""
        return self._call("getCensus", {"brain_id": brain_id})

    # ------------------------------------------------------------------ context

    @staticmethod
    def _context_body(
        query: str,
        purpose: str | None,
        as_of: str | None,
        budget: Mapping[str, int] | None,
        include: list[str] | None,
        schema: Mapping[str, Any] | None,
        filter: Mapping[str, Any] | None,
        mode: str | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query}
        knobs = {
            "purpose": purpose,
            "as_of": as_of,
            "budget": dict(budget) if budget is not None else None,
            "include": list(include) if include is not None else None,
            "schema": dict(schema) if schema is not None else None,
            "filter": dict(filter) if filter is not None else None,
            "mode": mode,
        }
        body.update(_drop_none(knobs))
        return body

    def create_context(
        self,
        brain_id: str,
        query: str,
        *,
        purpose: str | None = None,
        as_of: str | None = None,
        budget: Mapping[str, int] | None = None,
        include: list[str] | None = None,
        schema: Mapping[str, Any] | None = None,
        filter: Mapping[str, Any] | None = None,
        mode: str | None = None,
        watermark: str | None = None,
    ) -> dict[str, Any]:
        """createContext: POST /brains/{brain_id}/context -> 200 Context, or 202 Context (status pending).

        ``watermark`` is sent as the Brain-Watermark header: the Context is assembled at or after it.
        Check ``result["status"]``: ``pending`` means read it later with :meth:`get_trace` (on a server
        of several processes, where getTrace reaches any of them: call this again with the same
        watermark).
        """
        body = self._context_body(query, purpose, as_of, budget, include, schema, filter, mode)
        return self._call(
            "createContext", {"brain_id": brain_id}, json_body=body, headers={WATERMARK_HEADER: watermark}
        )

    def stream_context(
        self,
        brain_id: str,
        query: str,
        *,
        purpose: str | None = None,
        as_of: str | None = None,
        budget: Mapping[str, int] | None = None,
        include: list[str] | None = None,
        schema: Mapping[str, Any] | None = None,
        filter: Mapping[str, Any] | None = None,
        mode: str | None = "thorough",
        watermark: str | None = None,
    ) -> Iterator[tuple[str, Any]]:
        """createContext with Accept text/event-stream: yields (event, data) per SSE frame.

        Events: ``context.started`` {id, watermark}, ``context.evidence`` {item}, ``context.answer.delta``
        {text, citations}, then ``context.completed`` {context} or ``context.error`` {error}, the last
        frame yielded. A stream that ends before either (a cut connection; a frame cut short is not
        yielded) raises internal_error (:class:`~brainstore.errors.InternalFailure`). Only mode
        thorough streams (any other mode raises streaming_not_applicable). If the server answers with a
        JSON Context instead of a stream, one synthesized frame is yielded: ``context.completed``
        {context} for a ready Context, ``context.pending`` {context} for a 202.
        """
        body = self._context_body(query, purpose, as_of, budget, include, schema, filter, mode)
        headers = _drop_none({"Accept": "text/event-stream", WATERMARK_HEADER: watermark})
        url = self._url("createContext", brain_id=brain_id)
        with _transport_failures(), self._http.stream("POST", url, json=body, headers=headers) as response:
            self._remember_watermark(response)
            if not response.is_success:
                response.read()
                raise_for_error(response)
            content_type = response.headers.get("content-type", "")
            if content_type.startswith("text/event-stream"):
                for event, data in _iter_sse(response.iter_lines()):
                    yield event, data
                    if event in TERMINAL_EVENTS:
                        return
                # a stream cut before its terminal frame is no Context (an incomplete frame is dropped)
                raise error(
                    "internal_error",
                    "event stream: ended without a terminal frame (context.completed or context.error)",
                )
            response.read()
            context = _json_body(response)
            pending = response.status_code == 202 or context.get("status") == "pending"
            yield ("context.pending" if pending else "context.completed"), {"context": context}

    # ------------------------------------------------------------------ traces

    def list_traces(self, brain_id: str, *, limit: int | None = None, cursor: str | None = None) -> dict[str, Any]:
        """listTraces: GET /brains/{brain_id}/traces -> 200 TracePage, newest first (send a page's
        next_cursor back as cursor for the next, older page)."""
        return self._call("listTraces", {"brain_id": brain_id}, params={"limit": limit, "cursor": cursor})

    def get_trace(self, brain_id: str, trace_id: str) -> dict[str, Any]:
        """getTrace: GET /brains/{brain_id}/traces/{trace_id} (a ctx_ id or a failed request's trc_ id)."""
        return self._call("getTrace", {"brain_id": brain_id, "trace_id": trace_id})

    # ------------------------------------------------------------------ memories

    def list_memories(
        self,
        brain_id: str,
        *,
        subject: str | None = None,
        owner: str | None = None,
        as_of: str | None = None,
        since_watermark: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """listMemories: GET /brains/{brain_id}/memories -> 200 MemoryPage (full read or delta read)."""
        params = {
            "subject": subject,
            "owner": owner,
            "as_of": as_of,
            "since_watermark": since_watermark,
            "cursor": cursor,
            "limit": limit,
        }
        return self._call("listMemories", {"brain_id": brain_id}, params=params)

    def iter_memory_pages(
        self,
        brain_id: str,
        *,
        subject: str | None = None,
        owner: str | None = None,
        as_of: str | None = None,
        since_watermark: str | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every MemoryPage of a read, following the contract's loop.

        Full read: follows ``next_cursor`` while ``has_more``. Delta read (``since_watermark``): sends
        each page's ``watermark`` back as since_watermark while ``has_more``; apply each page's ``data``
        and ``deleted`` in order, and keep the last page's ``watermark`` for the next delta read.
        """
        cursor: str | None = None
        while True:
            page = self.list_memories(
                brain_id,
                subject=subject,
                owner=owner,
                as_of=as_of,
                since_watermark=since_watermark,
                cursor=cursor,
                limit=limit,
            )
            yield page
            if not page.get("has_more"):
                return
            if since_watermark is not None:
                since_watermark = page["watermark"]
            else:
                cursor = page.get("next_cursor")
                if not cursor:
                    return

    def iter_memories(
        self,
        brain_id: str,
        *,
        subject: str | None = None,
        owner: str | None = None,
        as_of: str | None = None,
        since_watermark: str | None = None,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every Memory of a full (or delta) read, following cursors (or watermarks) across pages."""
        for page in self.iter_memory_pages(
            brain_id, subject=subject, owner=owner, as_of=as_of, since_watermark=since_watermark, limit=limit
        ):
            yield from page.get("data", [])

    def get_memory(self, brain_id: str, memory_id: str) -> dict[str, Any]:
        """getMemory: GET /brains/{brain_id}/memories/{memory_id} -> 200 Memory with revisions, evidence.

        memory_not_found while the Record is still processing is the one 404 worth waiting on.
        """
        return self._call("getMemory", {"brain_id": brain_id, "memory_id": memory_id})

    # ------------------------------------------------------------------ objects

    def accept_object(
        self,
        brain_id: str,
        type: str,
        key: str,
        value: Any,
        *,
        if_version: int | _Omitted | None = OMITTED,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """acceptObject: POST /brains/{brain_id}/objects -> 201 ObjectAccepted (version N+1).

        ``if_version`` omitted sends no condition; ``None`` sends JSON null. A mismatch raises
        stale_version (Conflict) with ``exc.body["current_version"]``.
        """
        body: dict[str, Any] = {"type": type, "key": key, "value": value}
        if if_version is not OMITTED:
            body["if_version"] = if_version
        return self._call(
            "acceptObject",
            {"brain_id": brain_id},
            json_body=body,
            headers={"Idempotency-Key": idempotency_key},
        )

    def get_object(self, brain_id: str, object_type: str, object_key: str) -> dict[str, Any]:
        """getObject: GET /brains/{brain_id}/objects/{object_type}/{object_key} -> 200 Object."""
        return self._call(
            "getObject", {"brain_id": brain_id, "object_type": object_type, "object_key": object_key}
        )

    # ------------------------------------------------------------------ records

    def remember_record(
        self,
        brain_id: str,
        content: str | Mapping[str, Any],
        *,
        source: Mapping[str, Any] | None = None,
        visibility: str | None = None,
        occurred_at: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """rememberRecord: POST /brains/{brain_id}/records -> 202 Record (status processing).

        Retrying after an internal failure is safe only with the same ``idempotency_key``.
        """
        body: dict[str, Any] = {"content": content if isinstance(content, str) else dict(content)}
        if source is not None:
            body["source"] = dict(source)
        if visibility is not None:
            body["visibility"] = visibility
        if occurred_at is not None:
            body["occurred_at"] = occurred_at
        return self._call(
            "rememberRecord",
            {"brain_id": brain_id},
            json_body=body,
            headers={"Idempotency-Key": idempotency_key},
        )

    def get_record(self, brain_id: str, record_id: str) -> dict[str, Any]:
        """getRecord: GET /brains/{brain_id}/records/{record_id} -> 200 Record with processing state."""
        return self._call("getRecord", {"brain_id": brain_id, "record_id": record_id})

    def forget_record(self, brain_id: str, record_id: str) -> dict[str, Any]:
        """forgetRecord: DELETE /brains/{brain_id}/records/{record_id} -> 200 DeletionReceipt."""
        return self._call("forgetRecord", {"brain_id": brain_id, "record_id": record_id})
