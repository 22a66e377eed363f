"""The one Error body on every failure, framework failures included; traces of failed requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from brainstore.api.app import create_app
from brainstore.auth.registry import KeyRegistry
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore
from tests.conftest import KEY, Api, assert_error


@pytest.mark.parametrize("path", ["/", "/nothing", "/brains/b1/unknown", "/brains/b1/records/r/extra"])
def test_unknown_paths_are_http_404(api: Api, path: str) -> None:
    body = assert_error(api.get(path), 404, "http_404")
    assert body["type"] == "not_found"


def test_wrong_method_is_http_405_with_allow(api: Api) -> None:
    r = api.request("PUT", "/brains/b1")
    assert_error(r, 405, "http_405")
    assert set(r.header("Allow").replace(" ", "").split(",")) >= {"GET", "DELETE"}
    r = api.request("PATCH", "/brains/b1/objects")
    assert_error(r, 405, "http_405")
    assert "POST" in r.header("Allow")


def _declared_methods() -> dict[str, set[str]]:
    from brainstore.api.contract import OPERATIONS

    methods: dict[str, set[str]] = {}
    for op in OPERATIONS:
        path = op.path.replace("{brain_id}", "b1").replace("{object_type}", "note").replace("{object_key}", "k")
        path = path.replace("{trace_id}", "trc_x").replace("{memory_id}", "mem_x").replace("{record_id}", "rec_x")
        methods.setdefault(path, set()).add(op.method)
    return methods


@pytest.mark.parametrize("method", ["OPTIONS", "PUT", "PATCH", "TRACE", "HEAD"])
def test_every_undeclared_method_on_every_path_is_http_405_allowing_only_the_declared_ones(
    api: Api, method: str
) -> None:
    """OPTIONS included: Falcon's default responder answered it 200 with an empty body labelled JSON,
    for any Brain id and without a scope asked, and every other 405 listed OPTIONS in Allow."""
    api.brain("b1")
    for path, declared in _declared_methods().items():
        for brain_path in (path, path.replace("/brains/b1", "/brains/no-such-brain")):
            if method in declared:
                continue
            if method == "HEAD":  # answered without a body
                head = api.client.simulate_request("HEAD", "/v1" + brain_path, headers={"Authorization": f"Bearer {KEY}"})
                assert head.status_code == 405 and head.headers["Allow"] == ", ".join(sorted(declared)), brain_path
                continue
            r = api.request(method, brain_path)
            assert_error(r, 405, "http_405")
            assert r.header("Allow") == ", ".join(sorted(declared)), (method, brain_path)


def test_options_is_http_405_whatever_the_key_may_do(tmp_path: Path) -> None:
    """A key without the path's scope, or bound to another Brain, gets the 405 too, never a 200; a
    request without a key is 401 first."""
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    api = Api(create_app(Service(MemoryStore(), config=Config(engine="memory", key_registry=path))), key=None)
    writer, _ = registry.create("test", "acme")
    reader, _ = registry.create("test", "acme", frozenset({"records:read"}))
    bound, _ = registry.create("test", "acme", brain="elsewhere")
    assert api.post("/brains", {"id": "b1"}, key=writer).status == 201
    for key in (writer, reader, bound):
        for brain in ("b1", "no-such-brain"):
            r = api.request("OPTIONS", f"/brains/{brain}/memories", key=key)
            assert_error(r, 405, "http_405")
            assert r.header("Allow") == "GET"
    assert_error(api.request("OPTIONS", "/brains/b1/memories", key=False), 401, "invalid_api_key")


def test_body_media_type_is_checked_before_validation(api: Api) -> None:
    r = api.request("POST", "/brains", raw="id=b1", content_type="text/plain")
    assert_error(r, 415, "unsupported_media_type")
    r = api.request("POST", "/brains", raw='{"id": "b1"}', content_type="application/vnd.acme+json")
    assert r.status == 201


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("", "body"),
        ("{not json", "body"),
        ("[1, 2]", "body"),
        ('"b1"', "body"),
        ("{}", "id"),
        ('{"id": "bad id!"}', "id"),
        ('{"id": "b1", "colour": "red"}', "colour"),
        ('{"id": "b1", "self": {"type": "person"}}', "self.name"),
    ],
)
def test_invalid_bodies_name_the_field(api: Api, raw: str, field: str) -> None:
    body = assert_error(api.request("POST", "/brains", raw=raw), 400, "invalid_request_body")
    assert body["message"].startswith(f"{field}: ")


def test_oversized_body_is_refused(api: Api) -> None:
    api.brain()
    r = api.post("/brains/b1/records", {"content": "x" * (1024 * 1024 + 10)})
    assert_error(r, 400, "invalid_request_body")


def test_undeclared_query_parameters_are_refused_by_name(api: Api) -> None:
    api.brain()
    body = assert_error(api.get("/brains/b1/memories", params={"purpose": "x"}), 400, "unknown_query_parameter")
    assert body["message"].startswith("purpose: ")
    body = assert_error(api.get("/brains/b1", params={"verbose": "1"}), 400, "unknown_query_parameter")
    assert "verbose" in body["message"]


@pytest.mark.parametrize("query", ["limit=1&limit=500", "limit=5&limit=5", "cursor=a&limit=2&cursor=b"])
def test_a_query_parameter_given_twice_is_refused_by_name(api: Api, query: str) -> None:
    # one value was taken silently (which one is the framework's choice), where a proxy may read another
    api.brain()
    result = api.client.simulate_get(
        "/v1/brains/b1/memories", query_string=query, headers={"Authorization": f"Bearer {api.key}"}
    )
    assert result.status_code == 400 and result.json["code"] == "invalid_request_body"
    assert result.json["message"].split(":")[0] in ("limit", "cursor") and "2 times" in result.json["message"]


@pytest.mark.parametrize("limit", ["0", "501", "ten", "-1", "1.5"])
def test_typed_query_fields_are_validated(api: Api, limit: str) -> None:
    api.brain()
    body = assert_error(api.get("/brains/b1/memories", params={"limit": limit}), 400, "invalid_request_body")
    assert body["message"].startswith("limit: ")


def test_failed_requests_are_readable_as_traces_while_held(api: Api) -> None:
    api.brain()
    failed = assert_error(api.get("/brains/b1/records/rec_missing"), 404, "record_not_found")
    trace = api.get(f"/brains/b1/traces/{failed['request_id']}")
    assert trace.status == 200
    assert trace.body["error"]["code"] == "record_not_found"
    listed = api.get("/brains/b1/traces")
    assert failed["request_id"] in [t["id"] for t in listed.body["data"]]
    assert_error(api.get("/brains/b1/traces/trc_never"), 404, "trace_not_found")


def test_a_refused_create_brain_is_a_trace_of_the_brain_it_names_only(api: Api) -> None:
    # It named no Brain: every Brain of the project read it, and it outlived forgetBrain("A") while
    # its message still named A.
    api.brain("A")
    api.brain("B")
    exists = assert_error(api.post("/brains", {"id": "A"}), 409, "brain_exists")["request_id"]
    assert "'A'" in api.get(f"/brains/A/traces/{exists}").body["error"]["message"]
    assert exists in [t["id"] for t in api.get("/brains/A/traces").body["data"]]
    assert_error(api.get(f"/brains/B/traces/{exists}"), 404, "trace_not_found")
    api.delete("/brains/A")
    api.brain("A")
    for brain in ("A", "B"):
        assert_error(api.get(f"/brains/{brain}/traces/{exists}"), 404, "trace_not_found")


@pytest.mark.parametrize(("method", "path", "raw"), [("GET", "/nothing", None), ("POST", "/brains", "{not json")])
def test_a_failed_request_that_named_no_brain_is_no_brains_trace(api: Api, method: str, path: str, raw: str | None) -> None:
    api.brain("A")
    failed = api.request(method, path, raw=raw).body["request_id"]
    assert failed not in [t["id"] for t in api.get("/brains/A/traces").body["data"]]
    assert_error(api.get(f"/brains/A/traces/{failed}"), 404, "trace_not_found")


def test_trace_buffer_is_bounded() -> None:
    from brainstore.api.app import create_app
    from brainstore.config import Config
    from brainstore.service import Service
    from brainstore.store.memory import MemoryStore

    api = Api(create_app(Service(MemoryStore(), config=Config(engine="memory", trace_buffer=2))))
    api.brain()
    ids = [api.get(f"/brains/b1/records/rec_{i}").body["request_id"] for i in range(3)]
    assert_error(api.get(f"/brains/b1/traces/{ids[0]}"), 404, "trace_not_found")
    assert api.get(f"/brains/b1/traces/{ids[2]}").status == 200
