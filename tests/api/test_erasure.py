"""Deletes that really delete, on every engine: nothing a forgotten Record or Brain said survives in a
reply, a trace, an index, a Memory's history or the data directory, and no write outlives a forgetBrain."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from brainstore.api.app import create_app
from brainstore.service import Service
from brainstore.service import context as context_module
from brainstore.service.planner import MAX_CITATIONS
from tests.conftest import Api, assert_error, open_engine

SECRET = "the vault code is 4471-zebra-kappa"


def files_holding(root: Path, needle: str) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_replay_after_forget_record_never_returns_the_forgotten_text(api: Api, service: Service) -> None:
    api.brain()
    headers = {"Idempotency-Key": "once"}
    first = api.post("/brains/b1/records", {"content": SECRET}, headers=headers)
    assert first.status == 202
    assert service.wait_idle()
    assert api.delete(f"/brains/b1/records/{first.body['id']}").status == 200
    replay = api.post("/brains/b1/records", {"content": SECRET}, headers=headers)
    # The stored reply went with the Record: the replay is a new write, never the old body.
    assert replay.status == 202 and replay.body["id"] != first.body["id"]
    assert_error(api.get(f"/brains/b1/records/{first.body['id']}"), 404, "record_not_found")


def test_a_replay_after_forget_brain_never_answers_for_the_erased_brain(api: Api) -> None:
    headers = {"Idempotency-Key": "make-b1"}
    assert api.post("/brains", {"id": "b1", "name": SECRET}, headers=headers).status == 201
    api.delete("/brains/b1")
    assert_error(api.get("/brains/b1"), 404, "brain_not_found")
    replay = api.post("/brains", {"id": "b1", "name": SECRET}, headers=headers)
    assert replay.status == 201  # made again, not a reply for a Brain that no longer exists
    assert api.get("/brains/b1").status == 200


def test_traces_do_not_outlive_the_records_they_quote(api: Api, service: Service) -> None:
    api.brain()
    rec = api.remember("b1", SECRET).body["id"]
    api.remember("b1", "an unrelated note about lunch")
    assert service.wait_idle()
    ctx = api.post("/brains/b1/context", {"query": "vault code"}).body
    assert SECRET in str(api.get(f"/brains/b1/traces/{ctx['id']}").body)
    lunch = api.post("/brains/b1/context", {"query": "lunch note", "budget": {"tokens": 12}}).body
    lunch_trace = api.get(f"/brains/b1/traces/{lunch['id']}").body
    api.delete(f"/brains/b1/records/{rec}")
    assert_error(api.get(f"/brains/b1/traces/{ctx['id']}"), 404, "trace_not_found")
    listed = api.get("/brains/b1/traces", params={"limit": "100"}).body
    assert SECRET not in str(listed)
    kept = {t["id"] for t in listed["data"]}
    assert ctx["id"] not in kept
    if rec not in str(lunch_trace):  # a trace that never named the forgotten Record stays
        assert lunch["id"] in kept
    # Another Brain's traces are untouched by it.
    api.brain("b2")
    api.remember("b2", SECRET)
    assert service.wait_idle()
    elsewhere = api.post("/brains/b2/context", {"query": "vault code"}).body
    rec1 = api.remember("b1", "one more note").body["id"]
    assert service.wait_idle()
    api.delete(f"/brains/b1/records/{rec1}")
    assert api.get(f"/brains/b2/traces/{elsewhere['id']}").status == 200


def test_a_trace_whose_structured_value_came_from_a_record_outside_the_evidence_goes_with_that_record(
    api: Api, service: Service
) -> None:
    api.brain("alice", self_name="Alice")
    moved = api.remember(
        "alice", {"kind": "message", "role": "user", "text": "I moved to Zanzibarquux in February."},
        occurred_at="2024-03-02T09:00:00Z", source={"name": "chat"},
    ).body["id"]  # fmt: skip
    api.remember(
        "alice", {"kind": "message", "role": "user", "text": "I had soup for lunch."},
        occurred_at="2024-03-03T09:00:00Z", source={"name": "email"},
    )  # fmt: skip
    assert service.wait_idle()
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    ctx = api.post(
        "/brains/alice/context", {"query": "what did I have for lunch", "budget": {"tokens": 30}, "schema": schema}
    ).body
    # the value comes from the Memory of a Record the budget kept out of the evidence (a filter now keeps
    # what it leaves out from the value too)
    assert ctx["structured"]["value"] == {"city": "Zanzibarquux"}
    assert moved not in {e["record_id"] for e in ctx["evidence"]}
    assert "Zanzibarquux" in str(api.get(f"/brains/alice/traces/{ctx['id']}").body)
    api.delete(f"/brains/alice/records/{moved}")
    assert_error(api.get(f"/brains/alice/traces/{ctx['id']}"), 404, "trace_not_found")
    assert "Zanzibarquux" not in str(api.get("/brains/alice/traces", params={"limit": "100"}).body)


def after_each_assembly(service: Service, monkeypatch: pytest.MonkeyPatch, then: Callable[[Any], None]) -> None:
    """``then`` runs with each Context's assembly right after it, before its trace is held."""
    assemble = service.contexts._assemble

    def assemble_then(*args: Any, **kwargs: Any) -> Any:
        assembled = assemble(*args, **kwargs)
        then(assembled)
        return assembled

    monkeypatch.setattr(service.contexts, "_assemble", assemble_then)


@pytest.mark.parametrize("ms", [None, 6000], ids=["answered-at-once", "completed-off-the-request"])
def test_a_record_forgotten_while_a_context_quotes_it_leaves_no_trace(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch, ms: int | None
) -> None:
    """The delete lands after the Context read the Record's text and before its trace is held: the
    delete finds no trace to drop, so the trace must not be held after it either. A Context answered
    at once has no trace then; one completed off the request thread (a thorough budget over the
    synchronous one) is assembled again without the Record."""
    api.brain()
    rec = api.remember("b1", SECRET).body["id"]
    assert service.wait_idle()
    raced: list[str] = []

    def forget_once(assembled: Any) -> None:
        if not raced:
            raced.append(rec)
            assert SECRET in str(assembled[0])  # quoted
            assert api.delete(f"/brains/b1/records/{rec}").status == 200

    after_each_assembly(service, monkeypatch, forget_once)
    request: dict[str, Any] = {"query": "vault code", "mode": "thorough"}
    if ms is not None:
        request["budget"] = {"ms": ms}
    reply = api.post("/brains/b1/context", request)
    assert reply.status == 200 and raced
    found = api.get(f"/brains/b1/traces/{reply.body['id']}")
    assert SECRET not in str(found.body) and SECRET not in str(api.get("/brains/b1/traces").body)
    if ms is None:
        assert_error(found, 404, "trace_not_found")
    else:
        assert found.status == 200 and found.body["context"]["status"] == "ready"
        assert found.body["context"]["evidence"] == []


@pytest.mark.parametrize("forget", ["record", "brain"])
def test_a_forget_that_lands_between_a_batch_s_commit_and_its_index_update_leaves_nothing_in_the_index(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch, forget: str
) -> None:
    """Derivation updated the live index after it let go of the Brain: a forget in between found no
    chunk there to remove, and the update then added the forgotten Record's chunks for every later
    Context to serve."""
    api.brain()
    api.remember("b1", "an unrelated note about lunch")
    assert service.wait_idle()
    apply = service.evidence.apply
    racing: list[threading.Thread] = []
    target: list[str] = []

    def apply_with_a_forget_racing(brain_uid: str, evidence: Any, *args: Any) -> None:
        if target and not racing and any(e.record_id == target[0] for e in evidence):
            path = f"/brains/b1/records/{target[0]}" if forget == "record" else "/brains/b1"
            racing.append(threading.Thread(target=lambda: api.delete(path)))
            racing[0].start()
            racing[0].join(0.5)  # the forget runs now, unless the Brain is still held
        apply(brain_uid, evidence, *args)

    monkeypatch.setattr(service.evidence, "apply", apply_with_a_forget_racing)
    target.append(api.remember("b1", SECRET).body["id"])
    assert service.wait_idle()
    racing[0].join(30)
    assert not racing[0].is_alive()
    if forget == "brain":
        api.brain()
    context = api.post("/brains/b1/context", {"query": "vault code zebra kappa"}).body
    assert SECRET not in str(context)
    uid = service.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    assert not service.evidence.index(uid).record_chunks(target[0])


def test_a_context_raced_by_deletes_on_every_assembly_says_to_send_it_again(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.brain()
    rec = api.remember("b1", SECRET).body["id"]
    assert service.wait_idle()
    attempts: list[int] = []

    def erase_traces(_: Any) -> None:
        attempts.append(1)
        service.traces.erase_record("test:acme", "b1", rec)  # a delete's last step, each time

    after_each_assembly(service, monkeypatch, erase_traces)
    reply = api.post("/brains/b1/context", {"query": "vault code", "mode": "thorough", "budget": {"ms": 6000}})
    assert len(attempts) == context_module.ASSEMBLY_ATTEMPTS
    trace = api.get(f"/brains/b1/traces/{reply.body['id']}").body
    assert trace["context"]["status"] == "pending" and "send the Context again" in trace["context"]["reason"]
    assert SECRET not in str(trace)


def test_a_thorough_context_whose_every_assembly_quoted_a_record_forgotten_meanwhile_serves_none_of_them(
    api: Api, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each assembly of a thorough Context completed off the request quotes a Record that is forgotten
    before its trace is held. Its trace says to send it again; the reply said 200 ready, with the
    last assembly's quote of a Record whose forget had returned."""
    api.brain()
    records = {api.remember("b1", f"{SECRET} number {n}").body["id"]: f"{SECRET} number {n}" for n in range(4)}
    assert service.wait_idle()

    def forget_what_it_quoted(assembled: Any) -> None:
        for rec in assembled[2] & records.keys():
            if api.get(f"/brains/b1/records/{rec}").status == 200:
                assert api.delete(f"/brains/b1/records/{rec}").status == 200
                return

    after_each_assembly(service, monkeypatch, forget_what_it_quoted)
    body = {"query": "vault code", "mode": "thorough", "budget": {"ms": 6000, "tokens": 40}}
    reply = api.post("/brains/b1/context", body)
    forgotten = [text for rec, text in records.items() if api.get(f"/brains/b1/records/{rec}").status == 404]
    assert len(forgotten) == context_module.ASSEMBLY_ATTEMPTS
    assert not any(text in str(reply.body) for text in forgotten)
    assert reply.status == 202 and "send the Context again" in reply.body["reason"]
    trace = api.get(f"/brains/b1/traces/{reply.body['id']}").body
    assert trace["context"]["status"] == "pending"


def race_writes_with_forget_brain(service: Service) -> None:
    api = Api(create_app(service))
    api.brain("b1", self_name="Alice")
    uid = service.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    answers: list[int] = []
    start = threading.Barrier(3)

    def write(kind: str) -> None:
        start.wait()
        for i in range(15):
            if kind == "record":
                r = api.post("/brains/b1/records", {"content": f"I moved to Oslo in {2000 + i}."})
            else:
                r = api.post("/brains/b1/objects", {"type": "pref", "key": "k", "value": i})
            answers.append(r.status)

    threads = [threading.Thread(target=write, args=(kind,)) for kind in ("record", "object")]
    for thread in threads:
        thread.start()
    start.wait()
    assert api.delete("/brains/b1").status == 200
    for thread in threads:
        thread.join()
    assert service.wait_idle()
    assert set(answers) <= {201, 202, 404}
    assert api.get("/brains/b1").status == 404
    # Whatever landed before the delete went with it; nothing landed after it.
    assert service.store.list_records(uid) == []
    assert service.store.list_objects(uid) == []
    assert service.store.all_memories(uid) == []
    assert service.store.count_chunks(uid) == 0
    assert service.store.current_seq(uid) == 0


def test_a_write_racing_forget_brain_lands_before_it_or_finds_the_brain_gone(
    engine_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    for attempt in range(5):
        config, database = {}, None
        if engine_kind == "postgres":  # a fresh database each time, like the service fixture's
            server = request.getfixturevalue("postgres_server")
            database = server.database()
            config = {"database_url": server.url(database)}
        service = open_engine(engine_kind, tmp_path / f"run{attempt}", **config)
        try:
            race_writes_with_forget_brain(service)
        finally:
            service.stop()
            service.store.close()
            if database is not None:
                server.drop(database)


def test_forgetting_leaves_no_byte_of_the_text_in_the_data_directory(tmp_path: Path) -> None:
    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    try:
        api.brain("b1", self_name="Alice")
        headers = {"Idempotency-Key": "secret-write"}
        content = {"kind": "message", "role": "user", "text": f"I told Sam that {SECRET}."}
        rec = api.post("/brains/b1/records", {"content": content}, headers=headers).body["id"]
        other = api.remember("b1", "I had soup for lunch.").body["id"]
        assert service.wait_idle()
        api.post("/brains/b1/context", {"query": "vault code", "include": ["evidence", "memories", "profile"]})
        service.evidence.save()
        assert files_holding(tmp_path, SECRET)  # it was there: the search below means something
        assert api.delete(f"/brains/b1/records/{rec}").status == 200
        service.store.compact()  # the store's own purge, run now instead of after its delay
        assert files_holding(tmp_path, SECRET) == []
        assert SECRET not in str(api.get("/brains/b1/traces", params={"limit": "100"}).body)
        assert api.get(f"/brains/b1/records/{other}").status == 200
    finally:
        service.stop()  # saves the indexes again: still without the forgotten text
        service.store.close()
    assert files_holding(tmp_path, SECRET) == []


def test_forgetting_one_of_two_supporting_records_leaves_no_trace_of_it_in_the_memory(api: Api, service: Service) -> None:
    api.brain("alice", self_name="Alice")

    def say(text: str, at: str) -> dict[str, Any]:
        rec = api.remember("alice", {"kind": "message", "role": "user", "text": text}, occurred_at=at).body
        assert service.wait_idle()
        return api.get(f"/brains/alice/records/{rec['id']}").body

    first = say("I work at Acme.", "2023-01-01T10:00:00Z")
    second = say("I work at Acme.", "2024-02-01T10:00:00Z")
    memory_id = first["memory_ids"][0]
    assert second["memory_ids"] == [memory_id]
    api.delete(f"/brains/alice/records/{first['id']}")
    assert service.wait_idle()
    memory = api.get(f"/brains/alice/memories/{memory_id}").body
    assert first["id"] not in str(memory)  # not in citations, evidence, nor any revision
    assert memory["valid_from"].startswith("2024-02-01")  # from the surviving Record, not the erased one
    assert all(c["record_id"] == second["id"] for r in memory["revisions"] for c in r["citations"])


def one_memory_of_two_records(api: Api, service: Service) -> tuple[str, str]:
    """The first of two Records supporting one Memory (which took its statement and valid_from, "in March
    2018", from it), and the Memory."""
    api.brain("alice", self_name="Alice")
    first, second = (
        api.remember("alice", {"kind": "message", "role": "user", "text": text}, occurred_at=at).body["id"]
        for text, at in (
            ("I adopted a ferret named Xylofrond last spring.", "2019-05-04T10:00:00Z"),
            ("I adopted a ferret named Xylofrond.", "2024-02-01T10:00:00Z"),
        )
    )
    assert service.wait_idle()
    [memory_id] = api.get(f"/brains/alice/records/{first}").body["memory_ids"]
    assert api.get(f"/brains/alice/records/{second}").body["memory_ids"] == [memory_id]
    return first, memory_id


def test_no_earlier_revision_keeps_the_words_or_the_time_of_the_record_forgotten(api: Api, service: Service) -> None:
    """The Memory took its statement and valid_from from the first Record: its revisions from while that
    Record was cited, and the one pending re-derivation, go; the one re-derived says the survivor's."""
    first, memory_id = one_memory_of_two_records(api, service)
    before = api.get(f"/brains/alice/memories/{memory_id}").body
    assert "spring of 2018" in before["statement"] and before["valid_from"].startswith("2018-03-01")
    api.delete(f"/brains/alice/records/{first}")
    assert service.wait_idle()
    after = api.get(f"/brains/alice/memories/{memory_id}").body
    assert after["statement"] == "Alice adopted a ferret named Xylofrond." and after["valid_from"].startswith("2024-02-01")
    told = str(after)
    assert "spring of 2018" not in told and "2018-03-01" not in told and "2019-05-04" not in told
    assert [r["version"] for r in after["revisions"]] == [after["version"]]
    uid = service.store.get_brain("test:acme", "alice").uid  # type: ignore[union-attr]
    stored = service.store.memory_revisions(uid, memory_id)
    assert [r.status for r in stored] == ["active"]  # the pending revision went too
    assert "spring of 2018" not in repr(stored) and "2018, 3, 1" not in repr(stored)


@pytest.mark.parametrize("kind", ["change", "correction", "conflict"])
def test_what_a_forgotten_record_did_to_another_memory_leaves_that_memory_s_history(
    api: Api, service: Service, kind: str
) -> None:
    """Undone, not only from the Memory's state: no revision keeps the time, status or Memory id the
    forgotten Record gave it, nor a revision it alone made."""
    api.brain("alice", self_name="Alice")

    def say(content: dict[str, Any], at: str) -> dict[str, Any]:
        rec = api.remember("alice", content, occurred_at=at).body
        assert service.wait_idle()
        return api.get(f"/brains/alice/records/{rec['id']}").body

    first = say({"kind": "message", "role": "user", "text": "I live in Oslo."}, "2023-01-01T10:00:00Z")
    memory_id = first["memory_ids"][0]
    before = api.get(f"/brains/alice/memories/{memory_id}").body
    content = {
        "change": {"kind": "message", "role": "user", "text": "I moved to Bergen."},
        "correction": {"kind": "correction", "corrects": memory_id, "text": "I live in Bergen."},
        "conflict": {"kind": "message", "role": "user", "text": "I live in Bergen."},
    }[kind]
    later = say(content, "2024-07-19T13:37:00Z")
    touched = api.get(f"/brains/alice/memories/{memory_id}").body
    assert touched["version"] > before["version"]  # the later Record did something to it
    api.delete(f"/brains/alice/records/{later['id']}")
    assert service.wait_idle()
    after = api.get(f"/brains/alice/memories/{memory_id}").body
    told = str(after)
    assert "2024-07-19" not in told and "Bergen" not in told and later["id"] not in told
    assert not any(m in told for m in later["memory_ids"])
    assert after["status"] == "active" and after["valid_to"] is None and after["conflicts_with"] == []
    assert [r for r in after["revisions"] if r["version"] != after["version"]] == before["revisions"]
    uid = service.store.get_brain("test:acme", "alice").uid
    stored = repr(service.store.memory_revisions(uid, memory_id))
    assert not any(m in stored for m in later["memory_ids"]) and "2024, 7, 19" not in stored


def test_forgetting_what_a_correction_corrected_leaves_the_correction_superseding_nothing(
    api: Api, service: Service
) -> None:
    api.brain("alice", self_name="Alice")
    fact = {"kind": "fact", "subject": "Alice", "predicate": "favourite colour", "value": "blue"}
    corrected = api.remember("alice", fact).body["id"]
    assert service.wait_idle()
    memory_id = api.get(f"/brains/alice/records/{corrected}").body["memory_ids"][0]
    correction = {"kind": "correction", "corrects": memory_id, "text": "No, Alice's favourite colour is green."}
    fixed = api.remember("alice", correction).body["id"]
    assert service.wait_idle()
    [correcting] = api.get(f"/brains/alice/records/{fixed}").body["memory_ids"]
    assert api.get(f"/brains/alice/memories/{correcting}").body["supersedes"] == memory_id
    api.delete(f"/brains/alice/records/{corrected}")
    assert service.wait_idle()
    after = api.get(f"/brains/alice/memories/{correcting}").body
    assert after["supersedes"] is None and after["status"] == "active"
    assert memory_id not in str(after)  # nor in any revision
    uid = service.store.get_brain("test:acme", "alice").uid  # type: ignore[union-attr]
    assert memory_id not in repr(service.store.memory_revisions(uid, correcting))


def test_forgetting_what_a_bare_denial_denied_erases_the_retraction_that_says_its_words(
    api: Api, service: Service
) -> None:
    """A retraction ("No, that's wrong." made "Not so: <the Memory's statement>") cites only its
    correction, but its words are the forgotten Record's: it goes with the Memory it retracts."""
    api.brain("alice", self_name="Alice")
    said = api.remember("alice", {"kind": "message", "role": "user", "text": "My therapist is Dr Quibblewort."})
    assert service.wait_idle()
    [memory_id] = api.get(f"/brains/alice/records/{said.body['id']}").body["memory_ids"]
    denial = {"kind": "correction", "corrects": memory_id, "text": "No, that's wrong."}
    denied = api.remember("alice", denial).body["id"]
    assert service.wait_idle()
    [retraction] = api.get(f"/brains/alice/records/{denied}").body["memory_ids"]
    assert "Quibblewort" in api.get(f"/brains/alice/memories/{retraction}").body["statement"]
    receipt = api.delete(f"/brains/alice/records/{said.body['id']}").body
    assert service.wait_idle()
    assert receipt["deleted"]["memories"] == 2 and receipt["rederiving"]["memories"] == 0
    assert_error(api.get(f"/brains/alice/memories/{retraction}"), 404, "memory_not_found")
    assert "Quibblewort" not in str(api.get("/brains/alice/memories").body)
    context = api.post("/brains/alice/context", {"query": "who is my therapist", "include": ["memories"]}).body
    assert "Quibblewort" not in str({k: v for k, v in context.items() if k != "query"})
    assert api.get(f"/brains/alice/records/{denied}").status == 200  # the correction itself stays
    uid = service.store.get_brain("test:acme", "alice").uid  # type: ignore[union-attr]
    assert "Quibblewort" not in repr(service.store.all_memories(uid))


def test_a_retraction_takes_the_words_its_memory_is_re_derived_with(api: Api, service: Service) -> None:
    """Forgetting the Record whose words a retracted Memory had re-words the retraction, every
    revision of it."""
    first, memory_id = one_memory_of_two_records(api, service)
    denied = api.remember("alice", {"kind": "correction", "corrects": memory_id, "text": "No, that's wrong."}).body
    assert service.wait_idle()
    [retraction] = api.get(f"/brains/alice/records/{denied['id']}").body["memory_ids"]
    assert "spring of 2018" in api.get(f"/brains/alice/memories/{retraction}").body["statement"]
    api.delete(f"/brains/alice/records/{first}")
    assert service.wait_idle()
    memory = api.get(f"/brains/alice/memories/{memory_id}").body
    after = api.get(f"/brains/alice/memories/{retraction}").body
    assert after["statement"] == f"Not so: {memory['statement'].rstrip('.')}." and "2018" not in memory["statement"]
    assert after["supersedes"] == memory_id and memory["superseded_by"] == retraction
    assert "spring of 2018" not in str(after)  # nor in any revision
    uid = service.store.get_brain("test:acme", "alice").uid  # type: ignore[union-attr]
    assert "spring of 2018" not in repr(service.store.memory_revisions(uid, retraction))


def test_a_sentence_said_again_and_again_is_cited_by_its_first_records_and_outlives_them(
    api: Api, service: Service
) -> None:
    """A Memory cites its first MAX_CITATIONS supporting Records; the later ones name it in their own
    memory_ids. Forgetting the cited ones cites the next instead, and leaves no trace of them; it is
    erased with the last Record that says it."""
    api.brain("alice", self_name="Alice")
    sent = [api.remember("alice", {"kind": "message", "role": "user", "text": "I love cake."}).body["id"] for _ in range(MAX_CITATIONS + 2)]
    assert service.wait_idle()
    memory_id = api.get(f"/brains/alice/records/{sent[0]}").body["memory_ids"][0]
    assert all(api.get(f"/brains/alice/records/{r}").body["memory_ids"] == [memory_id] for r in sent)
    memory = api.get(f"/brains/alice/memories/{memory_id}").body
    assert [c["record_id"] for c in memory["citations"]] == sent[:MAX_CITATIONS]
    assert memory["version"] == MAX_CITATIONS  # not revised for the Records past the bound
    for record_id in sent[:MAX_CITATIONS]:
        receipt = api.delete(f"/brains/alice/records/{record_id}").body
        assert receipt["deleted"]["memories"] == 0 and receipt["rederiving"]["memories"] == 1
        assert service.wait_idle()
    memory = api.get(f"/brains/alice/memories/{memory_id}").body
    assert [c["record_id"] for c in memory["citations"]] == sent[MAX_CITATIONS:]
    assert not any(r in str(memory) for r in sent[:MAX_CITATIONS])  # nor in any revision or evidence
    assert api.delete(f"/brains/alice/records/{sent[-2]}").body["rederiving"]["memories"] == 1
    assert service.wait_idle()
    assert api.delete(f"/brains/alice/records/{sent[-1]}").body["deleted"]["memories"] == 1
    assert_error(api.get(f"/brains/alice/memories/{memory_id}"), 404, "memory_not_found")


def test_a_forget_rewrites_the_saved_index_without_the_record_and_no_context_rebuilds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index files a forget deletes are written again from the live index, holding neither the
    Record's text nor its vectors; neither the next Context nor the next process rebuilds the index
    from the store (counted: rebuilds and reads of every stored chunk)."""
    from brainstore.service import evidence
    from brainstore.service.evidence import EvidenceIndexes
    from brainstore.store.duckdb import DuckDBStore

    monkeypatch.setattr(evidence, "SAVE_DELAY", 0.2)  # when saves come: tests/unit/test_index_saves.py
    calls: list[str] = []
    rebuild, read_chunks = EvidenceIndexes._rebuild, DuckDBStore.chunks
    monkeypatch.setattr(EvidenceIndexes, "_rebuild", lambda self, uid: calls.append("rebuild") or rebuild(self, uid))
    monkeypatch.setattr(DuckDBStore, "chunks", lambda self, uid: calls.append("chunks") or read_chunks(self, uid))
    index_root = tmp_path / "index"
    lunch_query = {"query": "what did I have for lunch", "budget": {"ms": 10_000}}  # a loaded machine is slow

    def saved_index() -> bytes:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # written in the background after the forget
            files = sorted(index_root.rglob("*"))
            if {p.name for p in files} >= {"chunks.json", "vectors.hnsw"}:
                return b"".join(p.read_bytes() for p in files if p.is_file())
            time.sleep(0.05)
        raise AssertionError("the index was not saved again")

    service = open_engine("duckdb", tmp_path)
    api = Api(create_app(service))
    try:
        api.brain("b1")
        rec = api.remember("b1", f"I told Sam that {SECRET}.").body["id"]
        api.remember("b1", "I had soup for lunch.")
        assert service.wait_idle()
        uid = service.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
        vectors = [c.embedding for c in service.store.chunks(uid) if c.draft.record_id == rec]
        assert vectors
        service.evidence.save()
        assert SECRET.encode() in saved_index() and all(v in saved_index() for v in vectors)
        calls.clear()
        assert api.delete(f"/brains/b1/records/{rec}").status == 200
        saved = saved_index()
        assert b"soup for lunch" in saved  # written again from the live index ...
        assert SECRET.encode() not in saved and not any(v in saved for v in vectors)  # ... without the Record
        found = api.post("/brains/b1/context", {"query": "vault code zebra kappa", "budget": {"ms": 10_000}}).body
        assert rec not in str(found) and SECRET not in str(found)
        assert "soup" in str(api.post("/brains/b1/context", lunch_query).body)
        assert calls == []
    finally:
        service.stop()
        service.store.close()
    restarted = open_engine("duckdb", tmp_path)
    try:
        lunch = Api(create_app(restarted)).post("/brains/b1/context", lunch_query).body
        assert "soup" in str(lunch) and SECRET not in str(lunch)
        assert calls == []  # loaded from the files the forget had written again
    finally:
        restarted.stop()
        restarted.store.close()
    saved = saved_index()
    assert SECRET.encode() not in saved and not any(v in saved for v in vectors)
