"""The Python client against a mock transport: requests it sends, errors it raises, streams it parses."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from brainstore.client import Client, TransportFailure, UnknownServerError
from brainstore.errors import (
    BrainstoreError,
    Conflict,
    InternalFailure,
    InvalidRequest,
    NotFound,
    RateLimited,
)

Handler = Callable[[httpx.Request], httpx.Response]


def make(handler: Handler) -> Client:
    return Client("http://test/v1/", "sk_test_proj_secret", transport=httpx.MockTransport(handler))


def error_body(code: str, etype: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": etype,
        "code": code,
        "message": f"{code} happened",
        "request_id": "trc_1",
        "docs_url": f"https://docs.example.com/errors/{code}",
        **extra,
    }


def test_requests_carry_auth_paths_bodies_and_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": "b1"}, headers={"Brain-Watermark": "wm_1"})

    with make(handler) as bs:
        bs.create_brain("b1", self={"type": "person", "name": "Al"}, idempotency_key="k1")
        assert bs.last_watermark == "wm_1"
        bs.accept_object("b1", "pref", "theme", "dark")
        bs.accept_object("b1", "pref", "theme", "dark", if_version=None)
        bs.accept_object("b1", "pref", "theme", "dark", if_version=2)
        bs.list_memories("b1", subject="Al", limit=10)
        bs.get_object("b1", "pref", "a.b")
        bs.create_context("b1", "q", mode="fast", budget={"tokens": 100}, watermark="wm_1")

    create, acc_omit, acc_null, acc_v2, lst, get_obj, ctx = seen
    assert create.method == "POST" and create.url.path == "/v1/brains"
    assert create.headers["authorization"] == "Bearer sk_test_proj_secret"
    assert create.headers["idempotency-key"] == "k1"
    assert json.loads(create.content) == {"id": "b1", "self": {"type": "person", "name": "Al"}}
    assert "if_version" not in json.loads(acc_omit.content)
    assert json.loads(acc_null.content)["if_version"] is None
    assert json.loads(acc_v2.content)["if_version"] == 2
    assert "idempotency-key" not in acc_omit.headers
    assert lst.url.path == "/v1/brains/b1/memories" and dict(lst.url.params) == {
        "subject": "Al",
        "limit": "10",
    }
    assert get_obj.url.path == "/v1/brains/b1/objects/pref/a.b"
    assert ctx.headers["brain-watermark"] == "wm_1"
    assert json.loads(ctx.content) == {"query": "q", "mode": "fast", "budget": {"tokens": 100}}


@pytest.mark.parametrize(
    ("status", "body", "cls", "code"),
    [
        (404, error_body("brain_not_found", "not_found"), NotFound, "brain_not_found"),
        (409, error_body("stale_version", "conflict", current_version=4), Conflict, "stale_version"),
        (
            429,
            error_body("too_many_requests", "rate_limit", retry_after_seconds=3),
            RateLimited,
            "too_many_requests",
        ),
        (400, error_body("brand_new_code", "invalid_request"), InternalFailure, "brand_new_code"),
        (502, None, InternalFailure, "http_502"),
        (405, None, InvalidRequest, "http_405"),
    ],
)
def test_errors_raise_the_class_for_their_code(status: int, body: Any, cls: type, code: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if body is None:
            return httpx.Response(status, text="<html>bad gateway</html>")
        return httpx.Response(status, json=body)

    with make(handler) as bs, pytest.raises(cls) as info:
        bs.get_brain("b1")
    assert info.value.code == code
    assert info.value.status == status
    assert info.value.body == body
    if code == "stale_version":
        assert info.value.body["current_version"] == 4
    if code == "brand_new_code":
        assert isinstance(info.value, UnknownServerError) and info.value.type == "invalid_request"


def test_a_key_with_a_newline_is_trimmed_and_a_bad_one_refused_without_repeating_it() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        return httpx.Response(200, json={"id": "b1", "object": "brain", "self": None, "created_at": "2023-05-08T00:00:00Z"})

    # was httpx's LocalProtocolError, its message the whole header: "Illegal header value b'Bearer sk_...\n'"
    Client("http://x/v1", "sk_test_acme_SECRET123\n", transport=httpx.MockTransport(handler)).get_brain("b1")
    assert seen == ["Bearer sk_test_acme_SECRET123"]
    with pytest.raises(BrainstoreError) as refused:
        Client("http://x/v1", "sk_test_acme_SEC\x00RET123")
    assert "SEC" not in str(refused.value)


def test_iter_memories_follows_cursors() -> None:
    pages = {
        None: {
            "object": "list",
            "data": [{"id": "mem_1"}],
            "has_more": True,
            "next_cursor": "c2",
            "watermark": "wm_1",
            "deleted": [],
        },
        "c2": {
            "object": "list",
            "data": [{"id": "mem_2"}],
            "has_more": False,
            "next_cursor": None,
            "watermark": "wm_2",
            "deleted": [],
        },
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=pages[request.url.params.get("cursor")])

    with make(handler) as bs:
        assert [m["id"] for m in bs.iter_memories("b1", limit=1)] == ["mem_1", "mem_2"]


def test_stream_context_parses_sse_frames() -> None:
    frames = [
        ("context.started", {"id": "ctx_1", "watermark": "wm_1"}),
        ("context.answer.delta", {"text": "tea", "citations": ["c1"]}),
        ("context.completed", {"context": {"id": "ctx_1", "status": "ready"}}),
    ]
    stream = ": keep-alive\n\n" + "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in frames)

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept"] == "text/event-stream"
        assert json.loads(request.content)["mode"] == "thorough"
        return httpx.Response(200, text=stream, headers={"Content-Type": "text/event-stream"})

    with make(handler) as bs:
        assert list(bs.stream_context("b1", "what do I drink?")) == frames


def test_stream_context_raises_streaming_not_applicable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(406, json=error_body("streaming_not_applicable", "invalid_request"))

    with make(handler) as bs, pytest.raises(InvalidRequest, match="streaming_not_applicable"):
        list(bs.stream_context("b1", "q", mode="fast"))


STARTED = 'event: context.started\ndata: {"id": "ctx_1", "watermark": "wm_1"}\n\n'


@pytest.mark.parametrize(
    "stream",
    [
        # the terminal frame's data line came whole, the blank line that ends it did not
        STARTED + 'event: context.completed\ndata: {"context": {"id": "ctx_1", "status": "ready"}}\n',
        # cut inside its JSON
        STARTED + 'event: context.completed\ndata: {"context": {"id": "ctx_1", "sta',
        # no terminal frame at all
        STARTED,
    ],
    ids=["before-the-blank-line", "inside-the-data", "no-terminal-frame"],
)
def test_a_stream_cut_before_its_terminal_frame_raises(stream: str) -> None:
    """A cut stream passed for a finished one: the half-received last event was yielded (its cut JSON
    as a string) and a stream without context.completed or context.error simply ended. openapi.yaml's
    text/event-stream has exactly one terminal frame: an incomplete event is discarded (the SSE rule)
    and the end of a stream without a terminal frame raises internal_error."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=stream, headers={"Content-Type": "text/event-stream"})

    frames: list[tuple[str, Any]] = []
    with make(handler) as bs, pytest.raises(InternalFailure) as info:
        frames.extend(bs.stream_context("b1", "q"))
    assert info.value.code == "internal_error" and info.value.status == 500
    assert "without a terminal frame" in info.value.message
    assert frames == [("context.started", {"id": "ctx_1", "watermark": "wm_1"})]


@pytest.mark.parametrize(("data", "said"), [("{not json", "is not JSON"), ("[]", "is not a JSON object")])
def test_a_stream_frame_whose_data_is_not_a_json_object_raises(data: str, said: str) -> None:
    # ("data: []" was returned as the Context and failed later, on .get)
    stream = STARTED + f"event: context.completed\ndata: {data}\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=stream, headers={"Content-Type": "text/event-stream"})

    with make(handler) as bs, pytest.raises(InternalFailure, match=rf"context\.completed {said}"):
        list(bs.stream_context("b1", "q"))


def test_a_multi_line_data_frame_and_a_context_error_end_the_stream() -> None:
    failure = {"error": {"type": "internal", "code": "internal_error", "message": "x", "request_id": "trc_1"}}
    stream = (
        STARTED
        + 'event: context.answer.delta\ndata: {"text": "a",\ndata:  "citations": []}\n\n'
        + f"event: context.error\ndata: {json.dumps(failure)}\n\n"
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=stream, headers={"Content-Type": "text/event-stream"})

    with make(handler) as bs:
        assert list(bs.stream_context("b1", "q")) == [
            ("context.started", {"id": "ctx_1", "watermark": "wm_1"}),
            ("context.answer.delta", {"text": "a", "citations": []}),
            ("context.error", failure),
        ]


@pytest.mark.parametrize(
    ("body", "content_type", "said"),
    [
        ("<html>welcome to the proxy</html>", "text/html", "welcome to the proxy"),
        *((body, "application/json", "not a JSON object") for body in ["[]", '["b1"]', '"ok"', "3", "null", "true"]),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_a_success_that_is_no_json_object_raises_unknown_server_error(
    body: str, content_type: str, said: str, stream: bool
) -> None:
    """A 2xx answer that is not JSON (a proxy's page, a cut body) raised a bare json.JSONDecodeError,
    which no caller catching BrainstoreError expected: it is UnknownServerError http_<status>, as a
    failure without an Error body is. So is JSON that is no object (a proxy answering 200 with ``[]``),
    which was returned as the operation's body and failed later with an AttributeError."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=body, headers={"Content-Type": content_type})

    with make(handler) as bs, pytest.raises(UnknownServerError) as info:
        if stream:
            list(bs.stream_context("b1", "q"))
        else:
            bs.get_brain("b1")
    assert info.value.code == "http_200" and info.value.status == 200
    assert said in info.value.message
    assert isinstance(info.value, BrainstoreError)


def _refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


def _timed_out(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


class _CutStream(httpx.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        yield STARTED.encode()
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


def _cut(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, stream=_CutStream(), headers={"Content-Type": "text/event-stream"})


@pytest.mark.parametrize(
    ("handler", "stream", "cause"),
    [
        (_refused, False, httpx.ConnectError),
        (_timed_out, False, httpx.ReadTimeout),
        (_refused, True, httpx.ConnectError),
        (_cut, True, httpx.RemoteProtocolError),
    ],
)
def test_a_request_without_a_response_raises_the_spec_s_internal_error(
    handler: Handler, stream: bool, cause: type[Exception]
) -> None:
    """A refused connection, a timeout or a stream cut mid-way escaped as httpx's own exception, past a
    caller's ``except BrainstoreError``: it is internal_error (retry once, the spec says), httpx's
    exception kept as __cause__, and still an httpx.TransportError for code that caught those."""
    with make(handler) as bs, pytest.raises(TransportFailure) as info:
        if stream:
            list(bs.stream_context("b1", "q"))
        else:
            bs.get_brain("b1")
    failure = info.value
    assert isinstance(failure, InternalFailure) and isinstance(failure, httpx.TransportError)
    assert failure.code == "internal_error" and failure.type == "internal" and failure.body is None
    assert type(failure.__cause__) is cause
    assert cause.__name__ in failure.message
    assert failure.request.url.path == "/v1/brains/b1" + ("/context" if stream else "")


def test_a_server_that_is_not_there_raises_transport_failure() -> None:
    with Client("http://127.0.0.1:1/v1", "sk_test_proj_secret", timeout=5) as bs, pytest.raises(BrainstoreError) as info:
        bs.get_brain("x")
    assert isinstance(info.value, TransportFailure)
    assert isinstance(info.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize(
    "timeout",
    [0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf, True, "30", httpx.Timeout(5.0, read=0), httpx.Timeout(math.nan)],
)
def test_a_timeout_that_is_no_positive_finite_number_is_refused(timeout: Any) -> None:
    """0, a negative, nan or inf went to httpx unchecked: 0 failed every request with a bare timeout,
    nan and inf never timed out."""
    with pytest.raises(ValueError, match="timeout must be a finite number of seconds above 0"):
        Client("http://test/v1", "sk_test_proj_secret", timeout=timeout)


@pytest.mark.parametrize("timeout", [0.5, 30, None, httpx.Timeout(5.0), httpx.Timeout(5.0, pool=None)])
def test_a_sound_timeout_is_taken(timeout: Any) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": "b1"})

    with Client("http://test/v1", "sk_test_proj_secret", timeout=timeout, transport=httpx.MockTransport(handler)) as bs:
        assert bs.get_brain("b1") == {"id": "b1"}
