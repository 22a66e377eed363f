"""Every text a request carries is bounded as openapi.yaml says, and the server refuses what it refuses.

The limits are read from the contract, not repeated here: one character over a field's maxLength is
400 invalid_request_body naming the field, a blank text is too, and a text of exactly maxLength
characters is accepted (for fields short enough to post in a test; the 200,000-character texts are
checked at the limit only, since an accepted one is then read and embedded).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema_rs
import pytest

from brainstore.api.app import create_app
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import Api, assert_error
from tests.contract.openapi import load_contract

Body = Callable[[str], dict[str, Any]]
# Not blank: a character neither ECMA-262's nor Python's (nor Rust's) '\s' holds, named alike in each dialect
NOT_BLANK_PATTERN = r"[^\s\x1c-\x1f\x85\ufeff]"


def _content(kind: str, field: str, **others: str) -> Body:
    """A Record whose content of ``kind`` carries the text as ``field`` (beside ``others``)."""
    return lambda text: {"content": {"kind": kind, **others, field: text}}


TRIPLE = {"subject": "Alice", "predicate": "lives in", "value": "Porto"}
RECORDS = "/brains/b1/records"
# (operation path, field as errors name it, (schema, property) in openapi.yaml, body around the text)
FIELDS: list[tuple[str, str, tuple[str, ...], Body]] = [
    ("/brains", "name", ("BrainCreate", "name"), lambda t: {"id": "b2", "name": t}),
    ("/brains", "self.type", ("SelfEntity", "type"), lambda t: {"id": "b2", "self": {"type": t, "name": "Al"}}),
    ("/brains", "self.name", ("SelfEntity", "name"), lambda t: {"id": "b2", "self": {"type": "person", "name": t}}),
    (RECORDS, "source.name", ("Source", "name"), lambda t: {"content": "hi", "source": {"name": t}}),
    (RECORDS, "source.external_id", ("Source", "external_id"), lambda t: {"content": "hi", "source": {"external_id": t}}),
    (RECORDS, "content.subject", ("FactContent", "subject"), _content("fact", "subject", **TRIPLE)),
    (RECORDS, "content.predicate", ("FactContent", "predicate"), _content("fact", "predicate", **TRIPLE)),
    (RECORDS, "content.value", ("FactContent", "value"), _content("fact", "value", **TRIPLE)),
    ("/brains/b1/context", "query", ("ContextRequest", "query"), lambda t: {"query": t}),
    ("/brains/b1/context", "filter.owner", ("ContextFilter", "owner"), lambda t: {"query": "hi", "filter": {"owner": t}}),
    (RECORDS, "content", ("RecordCreate", "content"), lambda t: {"content": t}),
    (RECORDS, "content.text", ("MessageContent", "text"), _content("message", "text")),
    (RECORDS, "content.speaker", ("MessageContent", "speaker"), _content("message", "speaker", text="hi")),
    (RECORDS, "content.title", ("DocumentContent", "title"), _content("document", "title", text="hi")),
    (RECORDS, "content.name", ("EventContent", "name"), _content("event", "name")),
    (RECORDS, "content.text", ("CorrectionContent", "text"), _content("correction", "text", corrects="mem_0")),
]
ACCEPTED_UP_TO = 10_000  # longer texts are only refused one over the limit (see the module docstring)


def _text_schema(schema: str, prop: str) -> dict[str, Any]:
    """The string schema of ``schema.prop``: through its $ref, the string branch of a oneOf, an allOf."""
    schemas = load_contract()["components"]["schemas"]
    node: dict[str, Any] = schemas[schema]["properties"][prop]
    while True:
        if "$ref" in node:
            node = schemas[node["$ref"].rsplit("/", 1)[1]]
        elif "allOf" in node:
            node = node["allOf"][0]
        elif "oneOf" in node:  # a plain string or a typed shape: the string
            node = next(branch for branch in node["oneOf"] if "TypedContent" not in branch.get("$ref", ""))
        else:
            return node


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    service = Service(MemoryStore(), config=Config(engine="memory"))
    service.start()
    yield service
    service.stop()


@pytest.fixture(scope="module")
def api(service: Service) -> Api:
    api = Api(create_app(service))
    api.brain()
    return api


@pytest.mark.parametrize(("path", "field", "where", "body"), FIELDS, ids=[f"{w[0]}.{w[1]}" for _, _, w, _ in FIELDS])
def test_a_text_one_over_its_limit_or_blank_is_refused(api: Api, path: str, field: str, where: Any, body: Body) -> None:
    schema = _text_schema(*where)
    assert schema["type"] == "string" and schema["minLength"] == 1 and schema["pattern"] == NOT_BLANK_PATTERN
    over = assert_error(api.post(path, body("x" * (schema["maxLength"] + 1))), 400, "invalid_request_body")
    assert field in over["message"]
    blank = assert_error(api.post(path, body(" \t")), 400, "invalid_request_body")
    assert field in blank["message"]


@pytest.mark.parametrize(("path", "field", "where", "body"), FIELDS, ids=[f"{w[0]}.{w[1]}" for _, _, w, _ in FIELDS])
def test_blank_is_what_the_contracts_pattern_calls_blank(
    api: Api, service: Service, path: str, field: str, where: Any, body: Body
) -> None:
    """The contract's pattern names what ECMA-262 (U+FEFF) and Python (U+001C-U+001F, U+0085) count as white
    space besides the '\\s' they share: a text blank by either is refused, and a text with one character
    that is not white space in both is accepted; the pattern reads alike in both dialects."""
    pattern = _text_schema(*where)["pattern"]
    as_ecma = jsonschema_rs.validator_for({"type": "string", "pattern": pattern})  # JSON Schema's own dialect, ECMA-262
    for blank in ("\ufeff\u3000\u2028 ", "\x1c\x85\t", "\x1d\x1e\x1f"):
        assert re.search(pattern, blank) is None and not as_ecma.is_valid(blank), repr(blank)
    assert re.search(pattern, "\ufeff\x1c.\x85") is not None and as_ecma.is_valid("\ufeff\x1c.\x85")
    for blank in ("\ufeff\u3000\u2028 ", "\x1c\x85\t"):
        refused = assert_error(api.post(path, body(blank)), 400, "invalid_request_body")
        assert field in refused["message"]
    answered = api.post(path, body("\ufeff\x1c.\x85"))
    if field == "content.text" and "corrects" in body("x")["content"]:
        assert answered.body["code"] == "corrected_memory_not_found"  # past the text's check: no mem_0 here
        return
    assert answered.status in (200, 201, 202), answered.body
    if path == "/brains":
        assert api.delete("/brains/b2").status in (200, 202)
    elif path == RECORDS:
        assert service.wait_idle()
        assert api.get(f"{RECORDS}/{answered.body['id']}").body["status"] == "ready"


SHORT = [field for field in FIELDS if _text_schema(*field[2])["maxLength"] <= ACCEPTED_UP_TO]


@pytest.mark.parametrize(("path", "field", "where", "body"), SHORT, ids=[f"{w[0]}.{w[1]}" for _, _, w, _ in SHORT])
def test_a_text_of_exactly_its_limit_is_accepted(api: Api, path: str, field: str, where: Any, body: Body) -> None:
    limit = _text_schema(*where)["maxLength"]
    answered = api.post(path, body("é" * limit))  # characters, not bytes: "é" is two in UTF-8
    assert answered.status in (200, 201, 202), answered.body
    if path == "/brains":
        assert api.delete("/brains/b2").status in (200, 202)


@pytest.mark.parametrize(
    ("path", "body"),
    [("/brains", {"id": "b3"}), (RECORDS, {"content": "hi"}), ("/brains/b1/objects", {"type": "t", "key": "k", "value": 1})],
)
def test_an_idempotency_key_is_bounded_as_the_contract_says(api: Api, path: str, body: dict[str, Any]) -> None:
    """An empty key (which every blank-keyed write of a project would share) or one over maxLength is
    refused before anything is written; a key of exactly maxLength is a key like any other."""
    schema = load_contract()["components"]["parameters"]["IdempotencyKey"]["schema"]
    assert schema["minLength"] == 1
    for key in ("", "k" * (schema["maxLength"] + 1)):
        err = assert_error(api.post(path, body, headers={"Idempotency-Key": key}), 400, "invalid_request_body")
        assert err["message"].startswith("Idempotency-Key:")
    key = "k" * schema["maxLength"]
    first = api.post(path, body, headers={"Idempotency-Key": key})
    assert first.status in (201, 202), first.body
    assert api.post(path, body, headers={"Idempotency-Key": key}).body == first.body
    if path == "/brains":
        assert api.delete("/brains/b3").status == 200
