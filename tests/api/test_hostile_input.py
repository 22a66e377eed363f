"""Input an attacker with a valid key can send: every one is a 400 Error body, nothing stored or broken.

Each case was a 500 once (RecursionError, UnicodeEncodeError, OverflowError) or was stored and then
broke the reads that serialize it. After every refusal the Brain must still answer listTraces and
listMemories: a refused request must not poison what is kept about it.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from brainstore.api.app import create_app
from brainstore.api.resources import MAX_BODY
from brainstore.api.validation import MAX_DEPTH, MAX_DOUBLE_INT, timestamp
from brainstore.auth.keys import parse_key
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import KEY, Api, assert_error
from tests.contract.openapi import validate_schema

# Hypothesis examples share one app per test: state accumulates, and the assertions hold regardless.
SHARED_APP = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

POST_ROUTES = {
    "/brains": {"id": "b2"},
    "/brains/b1/records": {"content": "hello"},
    "/brains/b1/objects": {"type": "t", "key": "k", "value": 1},
    "/brains/b1/context": {"query": "hello"},
}


def memory_api() -> Api:
    service = Service(MemoryStore(), config=Config(engine="memory"))
    service.start()
    api = Api(create_app(service))
    api.brain()
    return api


def assert_brain_still_serves(api: Api, brain: str = "b1") -> None:
    assert api.get(f"/brains/{brain}/traces").status == 200
    assert api.get(f"/brains/{brain}/memories").status == 200


def assert_nothing_stored(api: Api) -> None:
    assert_error(api.get("/brains/b2"), 404, "brain_not_found")
    assert_error(api.get("/brains/b1/objects/t/k"), 404, "object_not_found")
    listed = api.get("/brains/b1/memories")
    assert listed.body["data"] == []


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# --- nesting ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(POST_ROUTES))
def test_a_body_of_100000_open_brackets_is_a_400(api: Api, path: str) -> None:
    api.brain()
    body = assert_error(api.request("POST", path, raw="[" * 100_000), 400, "invalid_request_body")
    assert body["message"].startswith("body: ")
    assert_nothing_stored(api)
    assert_brain_still_serves(api)


def test_an_object_value_nested_1000_deep_is_a_400(api: Api) -> None:
    api.brain()
    raw = '{"type": "t", "key": "k", "value": ' + "[" * 1000 + "]" * 1000 + "}"
    body = assert_error(api.request("POST", "/brains/b1/objects", raw=raw), 400, "invalid_request_body")
    assert "deeper than 64" in body["message"]
    assert_nothing_stored(api)


def test_nesting_is_bounded_at_max_depth_exactly(api: Api) -> None:
    api.brain()
    # The body object is level 1, so the value may nest MAX_DEPTH - 1 levels.
    ok = api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": nested(MAX_DEPTH - 1)})
    assert ok.status == 201
    assert api.get("/brains/b1/objects/t/k").body["value"] == nested(MAX_DEPTH - 1)
    body = assert_error(
        api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": nested(MAX_DEPTH)}),
        400,
        "invalid_request_body",
    )
    assert body["message"].startswith("value" + "[0]" * (MAX_DEPTH - 1) + ": nests")


# --- numbers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_nan_infinity_and_overflowing_numbers_are_refused(api: Api, number: str) -> None:
    api.brain()
    raw = '{"type": "t", "key": "k", "value": {"n": ' + number + "}}"
    body = assert_error(api.request("POST", "/brains/b1/objects", raw=raw), 400, "invalid_request_body")
    assert body["message"].startswith("body: is not valid JSON")
    raw = '{"query": "x", "budget": {"tokens": ' + number + "}}"
    assert_error(api.request("POST", "/brains/b1/context", raw=raw), 400, "invalid_request_body")
    assert_nothing_stored(api)


BEYOND_A_DOUBLE = "is an integer out of range of a double (at most 1.7976931348623157e+308 in magnitude)"


@pytest.mark.parametrize(
    "number",
    [
        "1" + "0" * 400,  # 10**400, as 1e400 is refused
        "-1" + "0" * 400,
        str(MAX_DOUBLE_INT + 1),  # 309 digits, as many as the largest a double reaches
        "9" * 5000,  # more digits than int() converts
    ],
)
def test_an_integer_beyond_a_double_is_refused_naming_its_member(api: Api, number: str) -> None:
    """Taken once (201), and from the first Context that quoted the Object on, every read of its Brain's
    traces answered 500 internal_error."""
    api.brain()
    raw = '{"type": "t", "key": "k", "value": {"n": [1, ' + number + "]}}"
    body = assert_error(api.request("POST", "/brains/b1/objects", raw=raw), 400, "invalid_request_body")
    assert body["message"] == f"value.n[1]: {BEYOND_A_DOUBLE}"
    raw = '{"query": "x", "budget": {"tokens": ' + number + "}}"
    body = assert_error(api.request("POST", "/brains/b1/context", raw=raw), 400, "invalid_request_body")
    assert body["message"] == f"budget.tokens: {BEYOND_A_DOUBLE}"
    assert_nothing_stored(api)
    assert_brain_still_serves(api)


def test_an_integer_within_a_double_is_kept_exactly_by_an_object_its_context_and_their_trace(api: Api) -> None:
    """An integer beyond 64 bits came back from the Context's trace as a float (2**70 as
    1.1805916207174113e+21), though the Context itself served it exactly."""
    api.brain()
    value = {"n": 2**70, "largest": MAX_DOUBLE_INT, "smallest": -MAX_DOUBLE_INT}
    assert api.request("POST", "/brains/b1/objects", raw=json.dumps({"type": "t", "key": "k", "value": value})).status == 201
    assert api.get("/brains/b1/objects/t/k").body["value"] == value
    context = api.post("/brains/b1/context", {"query": "x", "include": ["objects"]}).body
    assert context["objects"][0]["value"] == value
    read = api.get(f"/brains/b1/traces/{context['id']}")
    assert read.status == 200, read.body
    listed = api.get("/brains/b1/traces")
    assert listed.status == 200, listed.body
    for trace in (read.body, next(t for t in listed.body["data"] if t["id"] == context["id"])):
        held = trace["context"]["objects"][0]["value"]
        assert held == value and all(type(n) is int for n in held.values()), held


# --- lone surrogates and NUL characters ------------------------------------------------------------
json_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
# what no store can hold as text: a lone surrogate, or a NUL (PostgreSQL's text refuses it)
surrogates = st.integers(0xD800, 0xDFFF).map(chr) | st.just("\x00")


def _insert_surrogate(value: Any, surrogate: str, choice: int) -> tuple[Any, bool]:
    """Put ``surrogate`` into the string (or member name) picked by ``choice``; False when none."""
    strings: list[tuple[Any, Any, bool]] = []  # (container, key or index, is_member_name)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in list(node):
                strings.append((node, key, True))
                if isinstance(node[key], str):
                    strings.append((node, key, False))
                walk(node[key])
        elif isinstance(node, list):
            for index, child in enumerate(node):
                if isinstance(child, str):
                    strings.append((node, index, False))
                walk(child)

    walk(value)
    if not strings:
        return value, False
    container, key, is_name = strings[choice % len(strings)]
    if is_name:
        container[key + surrogate] = container.pop(key)
    else:
        container[key] = container[key] + surrogate
    return value, True


@SHARED_APP
@given(
    path=st.sampled_from(sorted(POST_ROUTES)),
    extra=st.dictionaries(st.text(min_size=1, max_size=5), json_values, max_size=2),
    surrogate=surrogates,
    choice=st.integers(0, 1000),
)
def test_a_lone_surrogate_or_a_nul_in_any_string_of_any_body_is_a_400(
    path: str, extra: dict[str, Any], surrogate: str, choice: int
) -> None:
    api = memory_api()
    body, placed = _insert_surrogate({**POST_ROUTES[path], "x": extra}, surrogate, choice)
    assert placed  # "x" itself is a member name
    raw = json.dumps(body)  # ensure_ascii: the surrogate travels as a \\uXXXX escape, as an attacker sends it
    response = api.request("POST", path, raw=raw)
    assert_error(response, 400, "invalid_request_body")
    assert surrogate not in json.dumps(response.body, ensure_ascii=False)
    assert_nothing_stored(api)
    assert_brain_still_serves(api)


@pytest.mark.parametrize(
    ("path", "raw", "field"),
    [
        ("/brains", '{"id": "b2", "name": "x\\ud800"}', "name"),
        ("/brains", '{"id": "b2", "self": {"type": "person", "name": "\\udfff"}}', "self.name"),
        ("/brains/b1/records", '{"content": {"kind": "message", "text": "hi \\ud83d"}}', "content.text"),
        ("/brains/b1/records", '{"content": "x", "source": {"name": "\\ud800"}}', "source.name"),
        ("/brains/b1/objects", '{"type": "t", "key": "k", "value": {"a": ["ok", "\\udc00"]}}', "value.a[1]"),
        ("/brains/b1/context", '{"query": "\\ud800"}', "query"),
        ("/brains/b1/context", '{"query": "x", "filter": {"subjects": ["\\ud800"]}}', "filter.subjects[0]"),
        ("/brains/b1/records", '{"content": {"kind": "message", "text": "a\\u0000b"}}', "content.text"),
        ("/brains/b1/records", '{"content": "x", "metadata": {"k": "\\u0000"}}', "metadata.k"),
        ("/brains/b1/context", '{"query": "x\\u0000"}', "query"),
    ],
)
def test_the_refusal_names_the_member(api: Api, path: str, raw: str, field: str) -> None:
    """On every engine: a Record with a NUL was taken, and on PostgreSQL then never derived (its chunks
    could not be written, retried every minute)."""
    api.brain()
    body = assert_error(api.request("POST", path, raw=raw), 400, "invalid_request_body")
    what = "a NUL character (\\u0000)" if "u0000" in raw else "a lone UTF-16 surrogate (\\ud800-\\udfff)"
    assert body["message"] == f"{field}: contains {what}"
    assert_brain_still_serves(api)


def test_a_valid_surrogate_pair_is_an_ordinary_character(api: Api) -> None:
    api.brain()
    raw = '{"type": "t", "key": "k", "value": "smile \\ud83d\\ude00"}'
    assert api.request("POST", "/brains/b1/objects", raw=raw).status == 201
    assert api.get("/brains/b1/objects/t/k").body["value"] == "smile \U0001f600"


def test_a_lone_surrogate_in_the_context_query_of_an_empty_brain_leaves_traces_readable(api: Api) -> None:
    # Once a 500 with an empty body, and the stored trace then failed every listTraces of the Brain.
    api.brain()
    err = assert_error(api.request("POST", "/brains/b1/context", raw='{"query": "\\ud800"}'), 400, "invalid_request_body")
    assert err["message"].startswith("query: ")
    assert_brain_still_serves(api)


def _raw_get(api: Api, path: str, query_string: str) -> Any:
    return api.client.simulate_request(
        "GET", "/v1" + path, query_string=query_string, headers={"Authorization": f"Bearer {KEY}"}
    )


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("subject=%ED%A0%80", 200),
        ("owner=a%ED%BF%BFb", 200),
        ("as_of=%ED%A0%80", 400),
        ("cursor=%ED%A0%80", 400),
        ("x%ED%A0%80=1", 400),
        ("limit=%ED%A0%80", 400),
    ],
)
def test_an_encoded_surrogate_in_a_query_parameter_is_never_a_server_failure(
    api: Api, query: str, status: int
) -> None:
    # Percent-decoding turns the CESU-8 bytes of a surrogate into U+FFFD, so no surrogate reaches
    # the app from a query string (a raw one fails in Falcon before any middleware runs).
    api.brain()
    result = _raw_get(api, "/brains/b1/memories", query)
    assert result.status_code == status, result.text
    if status == 400:
        validate_schema("Error", result.json)
    assert_brain_still_serves(api)


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/brains/b1/memories", "subject=%00"),
        ("/brains/b1/memories", "owner=a%00b"),
        ("/brains/b1/memories", "as_of=2024-01-01T00:00:00Z%00"),
        ("/brains/b1/traces", "cursor=%00"),
    ],
)
def test_a_nul_in_a_query_parameter_is_a_400_naming_it(api: Api, path: str, query: str) -> None:
    # PostgreSQL could not take it as a statement's parameter: a 500
    api.brain()
    result = _raw_get(api, path, query)
    assert result.status_code == 400, result.text
    assert result.json["message"] == f"{query.split('=')[0]}: contains a NUL character (\\u0000)"
    assert_brain_still_serves(api)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/brains/b1/records/rec_%00"),
        ("DELETE", "/brains/b1/records/rec_%00"),
        ("GET", "/brains/b1/memories/mem_x%00"),
        ("GET", "/brains/b1/objects/t%00/k"),
        ("GET", "/brains/b1/objects/t/k%00"),
        ("GET", "/brains/b1/traces/trc_%00"),
    ],
)
def test_a_path_with_a_nul_matches_no_route(api: Api, method: str, path: str) -> None:
    api.brain()
    result = api.client.simulate_request(method, "/v1" + path, headers={"Authorization": f"Bearer {KEY}"})
    assert result.status_code == 404, result.text
    assert result.json["code"] == "http_404"
    validate_schema("Error", result.json)
    assert_brain_still_serves(api)


def test_a_nul_in_the_idempotency_key_is_a_400(api: Api) -> None:
    api.brain()
    result = api.post("/brains/b1/records", {"content": "x"}, headers={"Idempotency-Key": "a\x00b"})
    assert_error(result, 400, "invalid_request_body")
    assert result.body["message"] == "Idempotency-Key: contains a NUL character (\\u0000)"


# --- long keys -------------------------------------------------------------------------------------
def test_a_fact_of_the_longest_multibyte_subject_and_predicate_becomes_memories_that_meet(
    api: Api, service: Service
) -> None:
    """Up to 4,000 bytes each: PostgreSQL's index of a Memory's (subject, attribute) took at most 2,704,
    so such a fact's derivation failed for ever. The second value must find the first by that key."""
    api.brain()
    subject = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(1000))
    predicate = "".join(chr(0xAC00 + (i * 104729) % 11000) for i in range(1000))  # Hangul: word characters
    made = [api.remember("b1", {"kind": "fact", "subject": subject, "predicate": predicate, "value": "tea"}).body["id"]]
    for value in ("Lisbon", "Porto"):  # a single-valued attribute: the second conflicts with the first
        made.append(api.remember("b1", {"kind": "fact", "subject": subject, "predicate": "lives in", "value": value}).body["id"])
    assert service.wait_idle()
    assert all(api.get(f"/brains/b1/records/{record}").body["status"] == "ready" for record in made)
    memories = api.get("/brains/b1/memories").body["data"]
    assert len(memories) == 3 and all(m["subject"] == subject for m in memories)
    lisbon, porto = [m for m in memories if m["attribute"] == "lives_in"]  # ids made in one millisecond: any order
    assert lisbon["id"] in porto["conflicts_with"] and porto["id"] in lisbon["conflicts_with"]


# --- timestamps ------------------------------------------------------------------------------------
OVERFLOWING = ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "9999-12-31T23:00:00-01:00"]


def _timestamp_requests(value: str) -> list[tuple[str, str, dict[str, Any], str]]:
    return [
        ("POST", "/brains/b1/records", {"content": "x", "occurred_at": value}, "occurred_at"),
        ("POST", "/brains/b1/context", {"query": "x", "as_of": value}, "as_of"),
        ("POST", "/brains/b1/context", {"query": "x", "filter": {"since": value}}, "filter.since"),
        ("POST", "/brains/b1/context", {"query": "x", "filter": {"until": value}}, "filter.until"),
    ]


@pytest.mark.parametrize("value", OVERFLOWING)
def test_timestamps_that_overflow_in_utc_are_a_400(api: Api, value: str) -> None:
    api.brain()
    api.remember("b1", "a note so that as_of has something to compare")
    for method, path, body, field in _timestamp_requests(value):
        err = assert_error(api.request(method, path, json_body=body), 400, "invalid_request_body")
        assert err["message"].startswith(f"{field}: is out of range")
    err = assert_error(api.get("/brains/b1/memories", params={"as_of": value}), 400, "invalid_request_body")
    assert err["message"].startswith("as_of: is out of range")
    assert len(api.get("/brains/b1/memories").body["data"]) <= 1
    assert_brain_still_serves(api)


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999Z"),  # a real leap second
        ("2016-12-31T15:59:60-08:00", "2016-12-31T23:59:59.999999Z"),  # the same one west of UTC
        ("2016-12-31T23:59:60.5Z", "2016-12-31T23:59:59.999999Z"),
        ("2016-12-31t23:59:60.123456789z", "2016-12-31T23:59:59.999999Z"),
    ],
)
def test_a_leap_second_is_the_last_instant_of_its_minute(api: Api, service: Service, value: str, instant: str) -> None:
    """RFC 3339 (section 5.6) allows second 60; it was refused as "not a valid calendar date-time"
    on every timestamp: occurred_at, as_of (body and query), filter.since and filter.until."""
    api.brain()
    record_id = None
    for method, path, body, _ in _timestamp_requests(value):
        response = api.request(method, path, json_body=body)
        assert response.status in (200, 202), response.body
        record_id = record_id or response.body["id"]
    assert api.get("/brains/b1/memories", params={"as_of": value}).status == 200
    assert service.wait_idle()
    assert api.get(f"/brains/b1/records/{record_id}").body["occurred_at"] == instant
    # after every instant of the second before it, before the next minute
    leap = timestamp(value, "occurred_at")
    assert timestamp("2016-12-31T23:59:59.999998Z", "x") < leap < timestamp("2017-01-01T00:00:00Z", "x")
    for bad in ("2016-12-31T23:59:61Z", "2016-12-31T23:60:00Z", "2016-12-31T24:00:00Z", "2016-02-30T23:59:60Z"):
        err = assert_error(
            api.post("/brains/b1/records", {"content": "x", "occurred_at": bad}), 400, "invalid_request_body"
        )
        assert err["message"].startswith("occurred_at: ")


edge_timestamps = st.builds(
    lambda year, month, day, hour, minute, sign, off_h, off_m: (
        f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:00{sign}{off_h:02d}:{off_m:02d}"
    ),
    year=st.sampled_from([1, 2, 1970, 9998, 9999]),
    month=st.sampled_from([1, 12]),
    day=st.sampled_from([1, 31]),
    hour=st.sampled_from([0, 23]),
    minute=st.sampled_from([0, 59]),
    sign=st.sampled_from(["+", "-"]),
    off_h=st.sampled_from([0, 1, 23]),
    off_m=st.sampled_from([0, 59]),
)


@SHARED_APP
@given(value=edge_timestamps, which=st.integers(0, 3))
def test_timestamps_at_the_edges_of_the_calendar_never_fail_the_server(value: str, which: int) -> None:
    api = memory_api()
    method, path, body, _ = _timestamp_requests(value)[which]
    response = api.request(method, path, json_body=body)  # validated against the contract
    assert response.status in (200, 202, 400), response.body
    assert api.get("/brains/b1/memories", params={"as_of": value}).status in (200, 400)
    assert_brain_still_serves(api)



@pytest.mark.parametrize(
    "query",
    ["on 12/31/9999", "12/31/9999 and later", "what happened in December 9999?", "the week of 12/31/9999", "on 1/1/0001"],
)
@pytest.mark.parametrize("as_of", [None, "9999-12-31T12:00:00Z"])
def test_dates_at_the_end_of_the_calendar_in_a_question_are_answered(
    api: Api, service: Service, query: str, as_of: str | None
) -> None:
    """A period the question names that would end past 9999-12-31 ends with the calendar (it raised
    OverflowError: a 500)."""
    api.brain(self_name="Ann")
    api.remember("b1", f"We met {query.removeprefix('what happened ').rstrip('?')}.")
    # said west of UTC: a period ending with the calendar must still be stored and served in UTC
    message = {"kind": "message", "role": "user", "text": f"I will live in Paris until {query.split()[-1].rstrip('?')}."}
    api.remember("b1", message, occurred_at="2024-01-01T00:00:00-05:00")
    body = {"query": query, **({"as_of": as_of} if as_of else {})}
    assert api.post("/brains/b1/context", body).status in (200, 202)
    assert service.wait_idle()
    assert_brain_still_serves(api)  # the Memories listed, their times in UTC

# --- cursors ---------------------------------------------------------------------------------------
def _cursor(document: bytes) -> str:
    return base64.urlsafe_b64encode(document).decode().rstrip("=")


@pytest.mark.parametrize(
    "document",
    [
        b"[" * 100_000,
        b'{"after": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"after": {"after": "mem_x"}}',
        b'{"after": "mem_x", "more": 1}',
        b'{"after": "mem_\\ud800"}',
        b'"mem_x"',
        b"\xff\xfe",
    ],
)
def test_a_cursor_that_is_not_the_exact_shape_issued_is_a_400(api: Api, document: bytes) -> None:
    api.brain()
    err = assert_error(
        api.get("/brains/b1/memories", params={"cursor": _cursor(document)}), 400, "invalid_request_body"
    )
    assert err["message"].startswith("cursor: ")


@SHARED_APP
@given(document=json_values)
def test_arbitrary_json_in_a_cursor_never_fails_the_server(document: Any) -> None:
    assume(not (isinstance(document, dict) and set(document) == {"after"}))
    api = memory_api()
    response = api.get("/brains/b1/memories", params={"cursor": _cursor(json.dumps(document).encode())})
    assert_error(response, 400, "invalid_request_body")


# --- fuzz: any JSON at all to any body -------------------------------------------------------------
@SHARED_APP
@given(path=st.sampled_from(sorted(POST_ROUTES)), body=json_values | st.dictionaries(st.text(max_size=8), json_values))
def test_any_json_body_is_answered_without_a_server_failure(path: str, body: Any) -> None:
    api = memory_api()
    response = api.request("POST", path, raw=json.dumps(body))  # every response is checked against the contract
    assert response.status < 500, response.body
    assert_brain_still_serves(api)


# --- slugs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("brain_id", ["alice\n", "alice\r\n", "\nalice", "ali\nce"])
def test_a_slug_with_a_newline_is_refused(api: Api, brain_id: str) -> None:
    err = assert_error(api.post("/brains", {"id": brain_id}), 400, "invalid_request_body")
    assert err["message"].startswith("id: must be a Slug")
    err = assert_error(api.post("/brains/b1/objects", {"type": "t\n", "key": "k", "value": 1}), 400, "invalid_request_body")
    assert err["message"].startswith("type: ")


def test_a_brain_path_with_a_trailing_newline_is_not_the_brain(api: Api) -> None:
    api.brain("alice")
    assert api.get("/brains/alice").status == 200
    assert_error(api.get("/brains/alice%0A"), 404, "brain_not_found")


# --- chunked bodies --------------------------------------------------------------------------------
def _chunked_post(api: Api, path: str, payload: bytes) -> Any:
    # The server decodes the chunks; the app sees Transfer-Encoding and no Content-Length.
    result = api.client.simulate_request(
        "POST",
        "/v1" + path,
        headers={
            "Authorization": f"Bearer {KEY}",
            "Content-Type": "application/json",
            "Transfer-Encoding": "chunked",
        },
        extras={"wsgi.input": io.BytesIO(payload)},
    )
    assert "CONTENT_LENGTH" not in result.headers
    return result


def test_a_chunked_body_is_read(api: Api) -> None:
    api.brain()
    result = _chunked_post(api, "/brains/b1/objects", b'{"type": "t", "key": "k", "value": "chunked"}')
    assert result.status_code == 201, result.text
    assert api.get("/brains/b1/objects/t/k").body["value"] == "chunked"


def test_a_chunked_body_over_the_limit_is_refused(api: Api) -> None:
    api.brain()
    payload = b'{"type": "t", "key": "k", "value": "' + b"x" * MAX_BODY + b'"}'
    result = _chunked_post(api, "/brains/b1/objects", payload)
    validate_schema("Error", result.json)
    assert (result.status_code, result.json["code"]) == (400, "invalid_request_body")
    assert result.json["message"].startswith("body: must be at most")


def test_an_empty_chunked_body_is_missing(api: Api) -> None:
    api.brain()
    result = _chunked_post(api, "/brains/b1/objects", b"")
    assert (result.status_code, result.json["code"]) == (400, "invalid_request_body")


# --- keys ------------------------------------------------------------------------------------------
def test_a_bound_key_creating_another_brain_is_told_which_scope_and_why(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    bound, _ = registry.create("test", "acme", brain="mine")
    api = Api(create_app(Service(MemoryStore(), config=Config(engine="memory", key_registry=path))), key=bound)
    assert api.post("/brains", {"id": "mine"}).status == 201
    err = assert_error(api.post("/brains", {"id": "theirs"}), 403, "missing_scope")
    assert "records:write" in err["message"] and "'mine'" in err["message"] and "'theirs'" in err["message"]


def test_accepted_by_is_the_key_id_never_part_of_the_secret(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    raw, entry = registry.create("test", "acme")
    api = Api(create_app(Service(MemoryStore(), config=Config(engine="memory", key_registry=path))), key=raw)
    api.brain()
    accepted = api.post("/brains/b1/objects", {"type": "t", "key": "k", "value": 1}).body
    assert accepted["accepted_by"] == entry.id == parse_key(raw).id
    assert raw[-4:] not in accepted["accepted_by"]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"kind": "message", "text": None}, "content.text"),
        ({"kind": "document", "text": None}, "content.text"),
        ({"kind": "fact", "text": None}, "content.text"),
        ({"kind": "event", "name": None}, "content.name"),
        ({"kind": "correction", "corrects": "mem_x", "text": None}, "content.text"),
    ],
)
def test_a_required_member_of_content_sent_as_null_is_missing(api: Api, content: dict[str, Any], field: str) -> None:
    """Accepted, it was stored without the member, and every read of the Record broke the contract."""
    api.brain()
    body = assert_error(api.post("/brains/b1/records", {"content": content}), 400, "invalid_request_body")
    assert body["message"] == f"{field}: is required"
    assert_brain_still_serves(api)


def test_a_correction_with_a_null_text_leaves_the_memory_it_names_as_it_was(api: Api, service: Service) -> None:
    api.brain()
    api.remember("b1", {"kind": "message", "role": "user", "text": "I live in Paris."})
    assert service.wait_idle()
    [memory] = api.get("/brains/b1/memories").body["data"]
    correction = {"kind": "correction", "corrects": memory["id"], "text": None}
    assert_error(api.post("/brains/b1/records", {"content": correction}), 400, "invalid_request_body")
    assert service.wait_idle()
    after = api.get("/brains/b1/memories").body["data"]
    assert [(m["id"], m["status"], m["version"]) for m in after] == [(memory["id"], "active", memory["version"])]


@pytest.mark.parametrize("path", ["/brains/b1/memories", "/brains/b1/traces", "/brains/b1/profile"])
def test_a_limit_of_thousands_of_digits_is_a_400(api: Api, path: str) -> None:
    """int() refuses more than 4,300 digits: that was a 500. Leading zeros are the same integer."""
    api.brain()
    for limit in ("9" * 5000, "1" + "0" * 9):
        body = assert_error(api.get(path, params={"limit": limit}), 400, "invalid_request_body")
        assert body["message"].startswith("limit: ")
    assert api.get(path, params={"limit": "0" * 5000 + "5"}).status == 200
