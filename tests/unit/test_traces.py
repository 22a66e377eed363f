"""Traces are held per namespace, bounded in count and size, and erased with what they cite."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brainstore.errors import BrainstoreError
from brainstore.service import traces as traces_module
from brainstore.service.traces import NOTHING_NAMED, Traces


def json_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def trace(i: int, text: str = "") -> dict[str, object]:
    return {"id": f"ctx_{i}", "object": "trace", "context": {"evidence": [{"text": text}]}}


def test_one_namespace_never_evicts_another() -> None:
    traces = Traces(3)
    traces.add("ctx_keep", "test:quiet", "b1", trace(0))
    for i in range(1000):
        traces.add(f"ctx_{i}", "test:noisy", "b1", trace(i))
    assert traces.get("ctx_keep", "test:quiet", "b1") is not None
    page, _ = traces.page("test:noisy", "b1", 100)
    assert [t["id"] for t in page] == ["ctx_999", "ctx_998", "ctx_997"]


def test_requests_without_a_namespace_are_not_held() -> None:
    traces = Traces(2)
    traces.add("ctx_keep", "test:acme", "b1", trace(0))
    for i in range(50):
        traces.add(f"trc_{i}", None, None, {"id": f"trc_{i}"})  # a 401 before any key was valid
    assert traces.get("ctx_keep", "test:acme", "b1") is not None


def test_a_request_that_named_no_brain_is_not_held() -> None:
    # It was held and readable through every Brain of its namespace: the Brain it was not of.
    traces = Traces(2)
    traces.add("ctx_keep", "test:acme", "b1", trace(0))
    for i in range(50):
        assert not traces.add(f"trc_{i}", "test:acme", None, {"id": f"trc_{i}"})  # an unknown route's 404
    assert traces.get("trc_0", "test:acme", "b1") is None and traces.get("trc_0", "test:acme", "b2") is None
    assert traces.get("ctx_keep", "test:acme", "b1") is not None


def test_size_bounds_a_trace_and_a_namespace() -> None:
    traces = Traces(1000, trace_bytes=2_000, namespace_bytes=10_000)
    traces.add("ctx_big", "test:acme", "b1", {"id": "ctx_big", "scores": ["x" * 50] * 100, "context": {"t": "y" * 5000}})
    held = traces.get("ctx_big", "test:acme", "b1")
    assert held is not None and held.get("truncated") and json_size(held) <= 2_000
    for i in range(100):
        traces.add(f"ctx_{i}", "test:acme", "b1", trace(i, "z" * 1500))
    page, _ = traces.page("test:acme", "b1", 100)
    assert sum(json_size(t) for t in page) <= 10_000 and page[0]["id"] == "ctx_99"


def test_forgetting_a_record_drops_the_traces_that_cite_it() -> None:
    traces = Traces(10)
    traces.add("ctx_a", "test:acme", "b1", trace(1), frozenset({"rec_1"}))
    traces.add("ctx_b", "test:acme", "b1", trace(2), frozenset({"rec_2"}))
    traces.add("ctx_c", "test:acme", "b2", trace(3), frozenset({"rec_1"}))
    traces.erase_record("test:acme", "b1", "rec_1")
    assert traces.get("ctx_a", "test:acme", "b1") is None
    assert traces.get("ctx_b", "test:acme", "b1") is not None
    assert traces.get("ctx_c", "test:acme", "b2") is not None
    traces.erase_brain("test:acme", "b1")
    assert traces.get("ctx_b", "test:acme", "b1") is None


@given(st.integers(min_value=1, max_value=30), st.integers(min_value=1, max_value=7))
def test_paging_visits_every_trace_once_newest_first(count: int, limit: int) -> None:
    traces = Traces(100)
    for i in range(count):
        traces.add(f"ctx_{i}", "test:acme", "b1", trace(i))
        traces.add(f"ctx_other_{i}", "test:acme", "b2", trace(i))
    seen, cursor = [], None
    while True:
        page, cursor = traces.page("test:acme", "b1", limit, cursor)
        seen += [t["id"] for t in page]
        if cursor is None:
            break
    assert seen == [f"ctx_{i}" for i in reversed(range(count))]


def test_what_a_brain_reads_never_depends_on_another_brains_traffic() -> None:
    # A cursor once counted every namespace's traces, then every trace of its namespace: a tenant, or a
    # key bound to one Brain, decoding two of its own learned how many requests the others made between.
    quiet, busy = Traces(1000), Traces(1000)
    for i in range(6):
        for traces in (quiet, busy):
            traces.add(f"ctx_{i}", "test:acme", "b1", trace(i))
        for j in range(i * 3):
            busy.add(f"trc_{i}_{j}", "test:globex", "b1", {"id": f"trc_{i}_{j}"})
            busy.add(f"trc_b2_{i}_{j}", "test:acme", "b2", {"id": f"trc_b2_{i}_{j}"})
        busy.reserve(f"ctx_other_{i}", "test:globex", "b1", frozenset(), busy.mark())
        busy.write(f"ctx_other_{i}", "test:globex", trace(i))

    def listing(traces: Traces) -> list[tuple[list[object], str | None]]:
        pages, cursor = [], None
        while True:
            page, cursor = traces.page("test:acme", "b1", 2, cursor)
            pages.append(([t["id"] for t in page], cursor))
            if cursor is None:
                return pages

    assert listing(busy) == listing(quiet)


def test_a_forgotten_brain_leaves_no_count_of_its_requests_behind() -> None:
    fresh, reused = Traces(100), Traces(100)
    for i in range(9):
        reused.add(f"old_{i}", "test:acme", "b1", trace(i))
    reused.erase_brain("test:acme", "b1")
    for traces in (fresh, reused):
        for i in range(3):
            traces.add(f"ctx_{i}", "test:acme", "b1", trace(i))
    assert reused.page("test:acme", "b1", 1) == fresh.page("test:acme", "b1", 1)


def test_over_its_bounds_a_namespace_gives_up_the_traces_of_its_busiest_brain_first() -> None:
    def held(traces: Traces, brain_id: str) -> list[object]:
        return [t["id"] for t in traces.page("test:acme", brain_id, 10)[0]]

    traces = Traces(4, trace_bytes=200, namespace_bytes=800)
    for trace_id, brain_id in [("q1", "quiet"), ("q2", "quiet")] + [(f"b{i}", "busy") for i in range(10)]:
        traces.add(trace_id, "test:acme", brain_id, {"id": trace_id})
    assert held(traces, "quiet") == ["q2", "q1"]  # were pushed out by the busy Brain's eighth
    assert held(traces, "busy") == ["b9", "b8"]
    traces.add("q3", "test:acme", "quiet", {"id": "q3"})  # between equals, the newest trace's Brain
    assert (held(traces, "quiet"), held(traces, "busy")) == (["q3", "q2"], ["b9", "b8"])
    traces = Traces(100, trace_bytes=200, namespace_bytes=400)  # and by bytes
    traces.add("q1", "test:acme", "quiet", {"id": "q1"})
    for i in range(5):
        traces.add(f"b{i}", "test:acme", "busy", {"id": f"b{i}", "pad": "x" * 120})
    assert held(traces, "quiet") == ["q1"] and held(traces, "busy") == ["b4", "b3"]


@pytest.mark.parametrize("cursor", ["", "!!", "dDE=x", "eyJhZnRlciI6IDF9", "dA", "t" * 100])
def test_a_cursor_not_issued_here_is_refused(cursor: str) -> None:
    with pytest.raises(BrainstoreError) as raised:
        Traces(5).page("test:acme", "b1", 5, cursor)
    assert raised.value.code == "invalid_request_body"


def test_a_trace_reads_back_as_it_was_given_and_is_not_shared() -> None:
    traces = Traces(5)
    given_trace = {"id": "ctx_1", "scores": [{"final": 0.1 + 0.2, "lanes": {"bm25": 3}}], "nested": {"x": [1, None, True]}}
    traces.add("ctx_1", "test:acme", "b1", given_trace)
    given_trace["nested"]["x"].append("changed after the Context returned")
    held = traces.get("ctx_1", "test:acme", "b1")
    assert held == {"id": "ctx_1", "scores": [{"final": 0.1 + 0.2, "lanes": {"bm25": 3}}], "nested": {"x": [1, None, True]}}
    assert held is not traces.get("ctx_1", "test:acme", "b1")  # a reader cannot change what is held


def test_held_traces_add_nothing_for_the_garbage_collector_to_walk() -> None:
    traces = Traces(1000)
    big = {"id": "ctx", "scores": [{"chunk_id": f"chk_{i}", "lanes": {"dense": i}, "final": 0.5} for i in range(300)]}
    gc.collect()
    before = len(gc.get_objects())
    for i in range(200):
        traces.add(f"ctx_{i}", "test:acme", "b1", {**big, "id": f"ctx_{i}"})
    gc.collect()
    assert len(gc.get_objects()) - before < 200 * 10  # held as dicts: over 200 * 600


def test_a_lone_surrogate_in_a_trace_never_fails_the_request() -> None:
    traces = Traces(5)
    traces.add("trc_1", "test:acme", "b1", {"id": "trc_1", "error": {"message": "bad \ud800 here"}, "at": object()})
    held = traces.get("trc_1", "test:acme", "b1")
    assert held is not None and held["error"]["message"] == "bad ? here" and isinstance(held["at"], str)


def test_a_key_that_is_not_a_string_is_held_as_one() -> None:
    traces = Traces(5)
    traces.add("trc_1", "test:acme", "b1", {"id": "trc_1", "counts": {1: "one", "two": 2}})
    held = traces.get("trc_1", "test:acme", "b1")
    assert held is not None and held["counts"] == {"1": "one", "two": 2}


def test_an_integer_beyond_64_bits_or_a_double_reads_back_exactly() -> None:
    """orjson writes no integer beyond 64 bits: json wrote those traces, and orjson read them back, 2**70
    as a float and 10**400 (an Object's value taken before such bodies were refused, still stored) not at
    all: getTrace and listTraces of the Brain answered 500 while the trace was held."""
    traces = Traces(5)
    numbers = {"n": [2**70, -(2**64), 10**400, -(10**400)]}
    traces.add("ctx_1", "test:acme", "b1", {"id": "ctx_1", "context": {"objects": [{"value": numbers}]}})
    traces.reserve("ctx_2", "test:acme", "b1", frozenset(), traces.mark())
    traces.write("ctx_2", "test:acme", {"id": "ctx_2", "context": {"objects": [{"value": numbers}]}})
    held = traces.get("ctx_1", "test:acme", "b1")
    assert held is not None and held["context"]["objects"][0]["value"] == numbers
    listed, _ = traces.page("test:acme", "b1", 5)
    assert [t["id"] for t in listed] == ["ctx_2", "ctx_1"]
    for read in listed:
        assert read["context"]["objects"][0]["value"] == numbers
        assert all(type(n) is int for n in read["context"]["objects"][0]["value"]["n"])


# ------------------------------------------------------------------- reserved, written after the response


def test_a_reader_of_a_reserved_trace_waits_for_it_to_be_written() -> None:
    traces = Traces(10)
    traces.reserve("ctx_1", "test:acme", "b1", frozenset({"rec_1"}), traces.mark())
    writer = threading.Timer(0.2, lambda: traces.write("ctx_1", "test:acme", trace(1)))
    writer.start()
    started = time.monotonic()
    try:
        assert traces.get("ctx_1", "test:acme", "b1") == trace(1)
        assert time.monotonic() - started >= 0.15  # it waited, and found it
    finally:
        writer.join()
    traces.reserve("ctx_2", "test:acme", "b1", frozenset(), traces.mark())
    threading.Timer(0.2, lambda: traces.write("ctx_2", "test:acme", trace(2))).start()
    page, _ = traces.page("test:acme", "b1", 10)
    assert [t["id"] for t in page] == ["ctx_2", "ctx_1"]


def test_forgetting_what_a_reserved_trace_quotes_drops_it_and_what_is_written_later() -> None:
    traces = Traces(10)
    traces.reserve("ctx_1", "test:acme", "b1", frozenset({"rec_1"}), traces.mark())
    traces.reserve("ctx_2", "test:acme", "b1", frozenset({"rec_2"}), traces.mark())
    traces.erase_record("test:acme", "b1", "rec_1")
    started = time.monotonic()
    assert traces.get("ctx_1", "test:acme", "b1") is None
    assert time.monotonic() - started < 0.5  # nobody waits on a dropped place
    traces.write("ctx_1", "test:acme", trace(1, "a forgotten Record's text"))  # the response went out first
    traces.write("ctx_2", "test:acme", trace(2))
    assert traces.get("ctx_1", "test:acme", "b1") is None
    assert [t["id"] for t in traces.page("test:acme", "b1", 10)[0]] == ["ctx_2"]
    traces.reserve("ctx_3", "test:acme", "b1", frozenset(), traces.mark())
    traces.erase_brain("test:acme", "b1")
    traces.write("ctx_3", "test:acme", trace(3))
    assert traces.page("test:acme", "b1", 10)[0] == []


def test_a_trace_that_cannot_be_written_gives_its_place_up() -> None:
    traces = Traces(10)
    traces.reserve("ctx_1", "test:acme", "b1", frozenset(), traces.mark())
    traces.write("ctx_1", "test:acme", None)  # building it failed
    started = time.monotonic()
    assert traces.get("ctx_1", "test:acme", "b1") is None and traces.page("test:acme", "b1", 10)[0] == []
    assert time.monotonic() - started < 0.5


def test_a_trace_is_not_held_when_what_it_names_was_forgotten_after_its_mark() -> None:
    """A Context takes its mark before it quotes; a delete between the quoting and the holding must
    leave nothing either (it found no trace to drop)."""
    traces = Traces(10)
    mark = traces.mark()
    traces.erase_record("test:acme", "b1", "rec_1")  # after the quoting, before the trace is held
    assert "rec_1" not in str(list(traces._erasures)) and "b1" not in str(list(traces._erasures))
    assert not traces.add("ctx_a", "test:acme", "b1", trace(1, "the forgotten text"), frozenset({"rec_1"}), mark=mark)
    traces.reserve("ctx_b", "test:acme", "b1", frozenset({"rec_1", "rec_2"}), mark)
    traces.write("ctx_b", "test:acme", trace(2, "the forgotten text"))
    # what the delete did not name, and traces of other Brains and namespaces, are held
    assert traces.add("ctx_c", "test:acme", "b1", trace(3), frozenset({"rec_2"}), mark=mark)
    assert traces.add("ctx_d", "test:acme", "b2", trace(4), frozenset({"rec_1"}), mark=mark)
    assert traces.add("ctx_e", "test:other", "b1", trace(5), frozenset({"rec_1"}), mark=mark)
    assert [t["id"] for t in traces.page("test:acme", "b1", 10)[0]] == ["ctx_3"]  # ctx_c
    # a delete before the mark was seen by the quoting: nothing to refuse
    assert traces.add("ctx_f", "test:acme", "b1", trace(6), frozenset({"rec_1"}), mark=traces.mark())
    mark = traces.mark()
    traces.erase_brain("test:acme", "b2")
    assert not traces.add("ctx_g", "test:acme", "b2", trace(7), frozenset(), mark=mark)


def test_a_mark_older_than_every_delete_kept_holds_nothing_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traces_module, "RECENT_ERASURES", 4)
    traces = Traces(10)
    mark = traces.mark()
    for i in range(5):  # the first of them is no longer known
        traces.erase_record("test:acme", "b9", f"rec_{i}")
    assert not traces.add("ctx_a", "test:acme", "b1", trace(1), frozenset({"rec_1"}), mark=mark)
    mark = traces.mark()
    for i in range(4):
        traces.erase_record("test:acme", "b9", f"rec_{i}")
    assert traces.add("ctx_b", "test:acme", "b1", trace(2), frozenset({"rec_1"}), mark=mark)


class ErasedElsewhere:
    """What other processes erased, as SharedStore.erasures_since answers it: each Brain's change
    sequence, the Records erased at which number, and the Brains forgotten."""

    def __init__(self) -> None:
        self.heads: dict[str, int] = {}
        self.erasures: dict[str, list[tuple[int, str]]] = {}
        self.asked: list[dict[str, int]] = []

    def erase(self, brain_uid: str, record_id: str) -> None:
        self.heads[brain_uid] = self.heads.get(brain_uid, 0) + 1
        self.erasures.setdefault(brain_uid, []).append((self.heads[brain_uid], record_id))

    def forget(self, brain_uid: str) -> None:
        self.heads[brain_uid] = -1

    def __call__(self, since: Mapping[str, int]) -> dict[str, tuple[int, set[str]] | None]:
        self.asked.append(dict(since))
        return {
            uid: None
            if self.heads.get(uid, 0) < 0
            else (self.heads.get(uid, 0), {r for seq, r in self.erasures.get(uid, []) if seq > after})
            for uid, after in since.items()
        }


def held(traces: Traces) -> list[str]:
    return [trace_id for ring in traces._rings.values() for trace_id in ring.items]


def context_trace(traces: Traces, i: int, brain_uid: str, head: int, *records: str, brain_id: str = "b1") -> None:
    traces.add(f"ctx_{i}", "test:acme", brain_id, trace(i), frozenset(records), brain_uid=brain_uid, head=head)


def test_a_record_erased_by_another_process_drops_the_traces_that_name_it_at_the_next_catch_up() -> None:
    elsewhere = ErasedElsewhere()
    traces = Traces(10, erasures_since=elsewhere)
    context_trace(traces, 1, "u1", 0, "rec_1", "rec_2")
    context_trace(traces, 2, "u1", 0, "rec_2")
    context_trace(traces, 3, "u2", 0, "rec_1", brain_id="b2")  # the same id in another Brain is not it
    traces.add("trc_9", "test:acme", "b1", {"id": "trc_9"})  # a failed request names no Record
    elsewhere.erase("u1", "rec_1")
    traces.catch_up("u1")
    assert elsewhere.asked == [{"u1": 0}]
    assert held(traces) == ["ctx_2", "ctx_3", "trc_9"]
    traces.catch_up("u1")  # the Brain's erasures up to its head were checked: asked after it only
    assert elsewhere.asked[-1] == {"u1": 1} and held(traces) == ["ctx_2", "ctx_3", "trc_9"]
    elsewhere.erase("u1", "rec_2")
    elsewhere.forget("u2")
    traces.catch_up()  # every Brain a held trace names Records of
    assert elsewhere.asked[-1] == {"u1": 1, "u2": 0}
    assert held(traces) == ["trc_9"] and not traces._followed
    traces.catch_up()
    assert len(elsewhere.asked) == 3  # nothing left to follow: no store read


def test_a_failed_request_that_resolved_a_brain_goes_with_its_forget_elsewhere() -> None:
    elsewhere = ErasedElsewhere()
    traces = Traces(10, erasures_since=elsewhere)
    traces.add("trc_1", "test:acme", "b1", {"id": "trc_1"}, brain_uid="u1")  # failed after resolving b1
    traces.add("trc_2", "test:acme", "b1", {"id": "trc_2"})  # failed before: quotes only the request
    traces.add("ctx_3", "test:acme", "b1", trace(3), brain_uid="u1", head=2)  # a Context that cited nothing
    traces.catch_up("u1")  # before b1's traces are read: none names a Record, nothing to ask
    assert elsewhere.asked == []
    assert traces.get("trc_1", "test:acme", "b1", "u1") is not None
    assert traces.get("trc_1", "test:acme", "b1", "u_new") is None  # b1 made again elsewhere: not its trace
    assert [t["id"] for t in traces.page("test:acme", "b1", 10, brain_uid="u_new")[0]] == ["trc_2"]
    elsewhere.erase("u1", "rec_1")
    traces.catch_up()
    assert elsewhere.asked == [{"u1": NOTHING_NAMED}] and held(traces) == ["trc_1", "trc_2", "ctx_3"]
    elsewhere.forget("u1")
    traces.catch_up()
    assert held(traces) == ["trc_2"] and not traces._followed


def test_a_trace_that_read_before_the_last_catch_up_is_checked_against_the_erasures_after_it() -> None:
    elsewhere = ErasedElsewhere()
    traces = Traces(10, erasures_since=elsewhere)
    context_trace(traces, 1, "u1", 0, "rec_2")
    elsewhere.erase("u1", "rec_1")
    traces.catch_up()
    assert elsewhere.asked == [{"u1": 0}] and held(traces) == ["ctx_1"]
    # A Context that read the Brain at 0, before rec_1's erasure, holds its trace only now.
    context_trace(traces, 2, "u1", 0, "rec_1")
    traces.catch_up()
    assert elsewhere.asked[-1] == {"u1": 0} and held(traces) == ["ctx_1"]


def test_a_context_trace_is_read_only_as_its_own_brain() -> None:
    traces = Traces(10, erasures_since=ErasedElsewhere())
    context_trace(traces, 1, "u_old", 0, "rec_1")
    traces.add("ctx_2", "test:acme", "b1", trace(2), brain_uid="u_old", head=3)
    assert traces.get("ctx_1", "test:acme", "b1", "u_old") is not None
    # b1 forgotten by another process and made again: another Brain under the same id
    assert traces.get("ctx_1", "test:acme", "b1", "u_new") is None
    assert traces.get("ctx_2", "test:acme", "b1", "u_new") is None
    assert traces.page("test:acme", "b1", 10, brain_uid="u_new") == ([], None)
    assert [t["id"] for t in traces.page("test:acme", "b1", 10, brain_uid="u_old")[0]] == ["ctx_2", "ctx_1"]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "reserve", "write", "give_up", "erase_record", "erase_brain", "elsewhere", "catch_up"]),
            st.integers(0, 5),  # which trace id
            st.integers(0, 2),  # which Brain
            st.integers(0, 3),  # which Record
        ),
        max_size=60,
    )
)
def test_the_brains_followed_are_those_the_held_traces_are_of(ops: list[tuple[str, int, int, int]]) -> None:
    elsewhere = ErasedElsewhere()
    traces = Traces(3, namespace_bytes=2_000, trace_bytes=1_000, namespaces=2, erasures_since=elsewhere)
    for op, i, b, r in ops:
        namespace, uid, record = f"test:{b % 2}", f"u{b}", f"rec_{r}"
        records = frozenset({record}) if r else frozenset()
        if op == "add":
            traces.add(f"ctx_{i}", namespace, f"b{b}", trace(i, "x" * 300 * r), records, brain_uid=uid, head=r)
        elif op == "reserve":
            traces.reserve(f"ctx_{i}", namespace, f"b{b}", records, traces.mark(), brain_uid=uid, head=r)
        elif op in ("write", "give_up"):
            traces.write(f"ctx_{i}", namespace, trace(i) if op == "write" else None)
        elif op == "erase_record":
            traces.erase_record(namespace, f"b{b}", record)
        elif op == "erase_brain":
            traces.erase_brain(namespace, f"b{b}")
        elif op == "elsewhere":
            elsewhere.erase(uid, record)
        else:
            traces.catch_up(uid if r else None)
        named: dict[str, int] = {}
        for ring in traces._rings.values():
            for held_trace in ring.items.values():
                if held_trace.brain_uid is not None:
                    named[held_trace.brain_uid] = named.get(held_trace.brain_uid, 0) + 1
        assert {u: f.traces for u, f in traces._followed.items()} == named
        if op == "catch_up" and not r:  # every Brain: nothing held names what was erased after it read
            for ring in traces._rings.values():
                for held_trace in ring.items.values():
                    erased = {e for seq, e in elsewhere.erasures.get(held_trace.brain_uid or "", []) if seq > held_trace.head}
                    assert held_trace.record_ids.isdisjoint(erased)
