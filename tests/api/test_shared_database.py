"""Two engines (as two `brainstore serve` processes would be) on one PostgreSQL database.

Each Service here is built by the composition root as a process builds it, with its own evidence
indexes, derivation schedule and store pool; they share nothing but the database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from brainstore.api.app import create_app
from brainstore.app import build_service
from brainstore.config import Config
from brainstore.service import Service
from brainstore.service import derivation as derivation_module
from brainstore.store.base import StoreFeature
from brainstore.store.postgres import PostgresStore
from tests.conftest import Api

Pair = tuple[Service, Service]


def engine(url: str, directory: Path) -> Service:
    return build_service(Config(engine="postgres", database_url=url, data_dir=directory, threads=4))


@pytest.fixture
def pair(postgres_url: str, tmp_path: Path) -> Iterator[Pair]:
    a = engine(postgres_url, tmp_path / "a")
    b = engine(postgres_url, tmp_path / "b")
    yield a, b
    for service in (a, b):
        service.stop()
        service.store.close()


def until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def queued(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM derivation_queue").fetchone()
    assert row is not None
    return int(row[0])


def message(text: str, speaker: str = "Ann") -> dict[str, Any]:
    return {"kind": "message", "text": text, "speaker": speaker, "role": "user"}


def context(api: Api, query: str, watermark: str | None = None, brain: str = "b1") -> Any:
    headers = {"Brain-Watermark": watermark} if watermark else None
    return api.post(f"/brains/{brain}/context", {"query": query}, headers=headers)


def cited(body: dict[str, Any]) -> set[str]:
    return {e["record_id"] for e in body["evidence"]}


def test_every_process_signs_watermarks_with_the_key_in_the_database(pair: Pair) -> None:
    a, b = pair
    assert a.watermarks.secret == b.watermarks.secret
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    made = api_a.post("/brains", {"id": "b1"})
    watermark = made.header("Brain-Watermark")
    assert watermark is not None
    assert api_b.get("/brains/b1/memories", params={"since_watermark": watermark}).status == 200


def test_a_context_on_one_process_reads_a_write_made_on_the_other(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1")
    # B's index of the Brain exists before the write: it must catch up, not be built afresh.
    assert context(api_b, "kayak").status == 200
    written = api_a.remember("b1", message("I bought a red kayak for the lake trip in June."))
    watermark = written.header("Brain-Watermark")
    rid = written.body["id"]
    reply = context(api_b, "red kayak lake", watermark)
    # At or after the write, or pending: never a 200 without it.
    assert reply.status in (200, 202), reply.body
    if reply.status == 200:
        assert rid in cited(reply.body)
    until(lambda: api_a.get(f"/brains/b1/records/{rid}").body["status"] == "ready")
    reply = context(api_b, "red kayak lake", watermark)
    assert reply.status == 200 and rid in cited(reply.body)
    # A Record ready on one process is found on the other without a watermark too.
    second = api_a.remember("b1", message("The kayak paddle is made of carbon fibre."))
    until(lambda: api_b.get(f"/brains/b1/records/{second.body['id']}").body["status"] == "ready")
    assert second.body["id"] in cited(context(api_b, "carbon fibre paddle").body)


def test_a_watermark_whose_write_no_process_here_derives_is_pending_not_stale(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1")
    assert context(api_b, "violin").status == 200
    a.derivation.stop()  # A wrote it and will derive it later; B has it in no queue of its own
    written = api_a.remember("b1", message("My sister plays the violin in an orchestra."))
    reply = context(api_b, "sister violin orchestra", written.header("Brain-Watermark"))
    assert reply.status == 202, reply.body
    a.derivation.start()
    until(lambda: not b.derivation.pending_through(b.store.get_brain("test:acme", "b1").uid, 10**9))
    # The pending Context completes in B's background once A's derivation reached it.
    trace_id = reply.body["id"]
    until(lambda: api_b.get(f"/brains/b1/traces/{trace_id}").body.get("http_status") == 200)
    done = api_b.get(f"/brains/b1/traces/{trace_id}").body["context"]
    assert written.body["id"] in cited(done)


def test_a_delta_read_on_one_process_with_the_others_watermark(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1", self_name="Ann")
    first = api_a.remember("b1", message("I live in Lisbon."))
    assert a.wait_idle()
    boundary = api_a.get("/brains/b1/memories").body["watermark"]
    second = api_a.remember("b1", message("I work as a nurse."))
    assert a.wait_idle()
    delta = api_b.get("/brains/b1/memories", params={"since_watermark": boundary})
    assert delta.status == 200, delta.body
    new_ids = set(api_b.get(f"/brains/b1/records/{second.body['id']}").body["memory_ids"])
    old_ids = set(api_b.get(f"/brains/b1/records/{first.body['id']}").body["memory_ids"])
    assert new_ids and {m["id"] for m in delta.body["data"]} >= new_ids
    assert not old_ids & {m["id"] for m in delta.body["data"]}


def test_if_version_holds_across_processes(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1")
    path = "/brains/b1/objects"
    assert api_a.post(path, {"type": "todo", "key": "k", "value": {"n": 1}, "if_version": 0}).status == 201
    stale = api_b.post(path, {"type": "todo", "key": "k", "value": {"n": 2}, "if_version": 0})
    assert stale.status == 409 and stale.body["code"] == "stale_version"
    assert api_b.post(path, {"type": "todo", "key": "k", "value": {"n": 2}, "if_version": 1}).status == 201
    assert api_a.post(path, {"type": "todo", "key": "k", "value": {"n": 3}, "if_version": 1}).status == 409
    assert api_a.get(f"{path}/todo/k").body["version"] == 2


def test_an_erasure_on_one_process_is_never_served_from_the_others_cache(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1", self_name="Ann")
    secret = api_a.remember("b1", message("My locker code is 4711 at the gym."))
    other = api_a.remember("b1", message("The gym opens at six."))
    assert a.wait_idle()
    assert secret.body["id"] in cited(context(api_b, "gym locker code").body)  # B's cache holds it now
    everything = {"query": "gym locker code", "include": ["evidence", "memories", "profile"]}

    def memories_read_by_b() -> str:
        return str([api_b.post("/brains/b1/context", everything).body, api_b.get("/brains/b1/profile").body,
                    api_b.get("/brains/b1/memories").body])  # fmt: skip

    assert "4711" in memories_read_by_b()  # B holds the Brain's current Memories now
    uid = b.store.get_brain("test:acme", "b1").uid
    assert uid in b.store._checked.held_generations()  # type: ignore[attr-defined]
    assert api_a.delete(f"/brains/b1/records/{secret.body['id']}").status == 200
    after = context(api_b, "gym locker code")
    assert after.status == 200
    assert secret.body["id"] not in cited(after.body)
    assert "4711" not in str(after.body)
    assert other.body["id"] in cited(after.body)
    assert "4711" not in memories_read_by_b()
    # B read the Brain again after A's forget: what it holds now was never the erased text
    assert "4711" not in repr(b.store._checked._held)  # type: ignore[attr-defined]
    assert not b.evidence.index(uid).record_chunks(secret.body["id"])
    # A forgotten Brain leaves the other process's memory at its next scan.
    b.derivation._self_name(uid)  # as B's derivation of a Record of the Brain would
    assert "Ann" in repr(b.derivation._self_names)
    assert api_a.delete("/brains/b1").status == 200
    b.evidence.forget_erased_elsewhere()
    b.store.forget_stale_memories()  # type: ignore[attr-defined]
    b.derivation.forget_gone_brains()
    assert uid not in b.evidence._indexes and uid not in b.evidence._lanes
    assert uid not in b.store._checked.held_generations()  # type: ignore[attr-defined]
    assert "Ann" not in repr(b.derivation._self_names)


def test_what_a_process_read_of_a_record_another_forgot_leaves_its_memory_at_its_next_scan(pair: Pair) -> None:
    """Derivation holds what re-derivation sources say (Derivation._said_by); a Record forgotten on
    another process leaves it at the shared scan, the Brain's other Records' readings stay."""
    from brainstore.derive.extract import source_text

    a, b = pair
    api_a = Api(create_app(a))
    api_a.brain("b1")
    ids = [api_a.remember("b1", message(text)).body["id"] for text in ("My locker code is 4711.", "The gym opens at six.")]
    assert a.wait_idle()
    uid = a.store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    for record in a.store.records(uid, ids).values():  # as b's re-derivation of their Memories would
        text = source_text(record.content, self_name=None, occurred_at=record.occurred_at)
        b.derivation._said_by(uid, record.id, record.seq, text, None, b.derivation._forget_mark())
    assert set(b.derivation._said) == {(uid, ids[0]), (uid, ids[1])}
    assert api_a.delete(f"/brains/b1/records/{ids[0]}").status == 200
    b.derivation.forget_gone_brains()
    assert set(b.derivation._said) == {(uid, ids[1])}
    assert api_a.delete("/brains/b1").status == 200
    b.derivation.forget_gone_brains()
    assert not b.derivation._said and not b.derivation._said_checked


def test_a_record_erased_on_one_process_leaves_the_others_memory_at_its_next_scan(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1", self_name="Ann")
    secret = api_a.remember("b1", message("My locker code is 4711 at the gym."))
    api_a.remember("b1", message("The gym opens at six."))
    assert a.wait_idle()
    assert secret.body["id"] in cited(context(api_b, "gym locker code").body)
    uid = b.store.get_brain("test:acme", "b1").uid
    lane = b.evidence.memory_lane(uid)
    assert secret.body["id"] in repr(lane._entries)  # a Memory it holds cites the Record
    assert api_a.delete(f"/brains/b1/records/{secret.body['id']}").status == 200
    assert b.evidence.index(uid).record_chunks(secret.body["id"])  # B has not served the Brain since
    b.evidence.forget_erased_elsewhere()  # what B's scan of the shared queue does every few seconds
    index = b.evidence.index(uid)
    assert not index.record_chunks(secret.body["id"]) and "4711" not in repr([c.text for c in index.chunks()])
    assert secret.body["id"] not in repr(b.evidence.memory_lane(uid)._entries)
    b.traces.catch_up()
    assert "4711" not in repr(b.traces._rings)


def test_a_trace_is_never_served_once_what_it_quotes_is_forgotten_on_another_process(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1")
    api_a.brain("b2")
    kayak = api_a.remember("b1", message("I bought a red kayak for the lake trip.")).body["id"]
    api_a.remember("b1", message("My sister Lena plays the cello."))
    api_a.remember("b2", message("I bought a red kayak too."))
    assert a.wait_idle()
    made = [context(api_b, query).body["id"] for query in ("red kayak lake trip", "Lena cello")]
    elsewhere = context(api_b, "red kayak", brain="b2").body["id"]
    assert "kayak" in str(api_b.get(f"/brains/b1/traces/{made[0]}").body)
    assert api_a.delete(f"/brains/b1/records/{kayak}").status == 200
    for trace_id in made:  # each names both Records of the Brain (its scores name every candidate)
        reply = api_b.get(f"/brains/b1/traces/{trace_id}")
        assert reply.status == 404 and reply.body["code"] == "trace_not_found", reply.body
    listed = api_b.get("/brains/b1/traces")
    assert listed.status == 200 and kayak not in str(listed.body) and "lake" not in str(listed.body)
    assert api_b.get(f"/brains/b2/traces/{elsewhere}").status == 200  # another Brain's kayak stays
    # A Brain forgotten on one process and made again under its id is another Brain: none of the old
    # one's Context traces is read as the new one's, and the scan drops them.
    lena = context(api_b, "Lena cello").body["id"]
    assert api_b.get(f"/brains/b1/traces/{lena}").status == 200
    assert api_a.delete("/brains/b1").status == 200
    api_a.brain("b1")
    assert api_b.get(f"/brains/b1/traces/{lena}").status == 404
    listed = api_b.get("/brains/b1/traces")
    assert "cello" not in str(listed.body) and not [t for t in listed.body["data"] if t["kind"] == "context"]
    b.traces.catch_up()
    assert "cello" not in repr(b.traces._rings)


def test_a_failed_request_on_a_brain_forgotten_on_another_process_leaves_no_trace(pair: Pair) -> None:
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    api_a.brain("b1")
    failed = api_b.get("/brains/b1/memories/mem_lena4711")  # fails after B resolved the Brain
    assert failed.status == 404 and failed.body["code"] == "memory_not_found"
    trace_id = failed.body["request_id"]
    assert "mem_lena4711" in str(api_b.get(f"/brains/b1/traces/{trace_id}").body)
    assert api_a.delete("/brains/b1").status == 200
    api_a.brain("b1")  # another Brain under the same id: not the failure's
    assert api_b.get(f"/brains/b1/traces/{trace_id}").status == 404
    assert "mem_lena4711" not in str(api_b.get("/brains/b1/traces").body)
    b.traces.catch_up()  # what B's scan of the shared queue does every few seconds
    assert "mem_lena4711" not in repr(b.traces._rings)


def test_two_processes_never_derive_the_same_record(
    pair: Pair, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    api_a = Api(create_app(a))
    for brain in ("b1", "b2", "b3"):
        api_a.brain(brain)
    monkeypatch.setattr(derivation_module, "BATCH_RECORDS", 4)  # many small batches: the claims interleave
    a.derivation.stop()
    b.derivation.stop()
    made = [
        api_a.remember(f"b{1 + i % 3}", message(f"Note {i}: the parcel number {i} went to depot {i * 7}.")).body["id"]
        for i in range(45)
    ]
    claims: dict[str, set[str]] = {}
    derived: list[str] = []
    lock = threading.Lock()
    for service in (a, b):
        store = service.store
        claim = store.claim_records  # type: ignore[attr-defined]

        def counting(owner: str, ids: Any, lease: float, claim: Any = claim) -> set[str]:
            got = claim(owner, ids, lease)
            with lock:
                claims.setdefault(owner, set()).update(got)
            return set(got)

        monkeypatch.setattr(store, "claim_records", counting)
        derive = service.derivation._derive

        def counting_derive(state: Any, job: Any, derive: Any = derive) -> Any:
            with lock:
                derived.append(job.item_id)
            return derive(state, job)

        monkeypatch.setattr(service.derivation, "_derive", counting_derive)
    # Both start together, and each queues every Record still processing.
    starters = [threading.Thread(target=s.derivation.start) for s in (a, b)]
    for t in starters:
        t.start()
    for t in starters:
        t.join()
    until(lambda: queued(postgres_url) == 0, timeout=60)
    assert a.wait_idle() and b.wait_idle()
    assert sorted(derived) == sorted(made)  # each exactly once
    owners = list(claims.values())
    assert len(owners) == 2 and not owners[0] & owners[1]
    assert owners[0] | owners[1] == set(made)
    with psycopg.connect(postgres_url) as conn:
        events = conn.execute("SELECT record_id, count(*) FROM record_events GROUP BY record_id").fetchall()
        assert sorted(r for r, _ in events) == sorted(made) and {n for _, n in events} == {1}
        dup_chunks = conn.execute(
            "SELECT count(*) FROM (SELECT record_id, span_start FROM chunks GROUP BY 1, 2 HAVING count(*) > 1) d"
        ).fetchone()
        dup_memories = conn.execute(
            "SELECT count(*) FROM (SELECT brain_uid, fingerprint FROM memory_revisions WHERE version = 1 "
            "GROUP BY 1, 2 HAVING count(*) > 1) d"
        ).fetchone()
    assert dup_chunks == (0,) and dup_memories == (0,)


def test_a_record_claimed_by_a_process_that_died_is_derived_by_another(
    pair: Pair, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    api_a = Api(create_app(a))
    api_a.brain("b1")
    monkeypatch.setattr(derivation_module, "SCAN_SECONDS", 0.2)
    a.derivation.stop()
    b.derivation.stop()
    rid = api_a.remember("b1", message("The boiler was serviced on Tuesday.")).body["id"]
    store: PostgresStore = b.store  # type: ignore[assignment]
    assert store.claim_records("dead-process", [rid], 1.0) == {rid}
    b.derivation.start()  # queues it, finds it claimed, leaves it; the scan adopts it once the lease ends
    until(lambda: api_a.get(f"/brains/b1/records/{rid}").body["status"] == "ready", timeout=15)


def test_a_record_a_live_process_still_derives_is_not_derived_again(
    pair: Pair, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A claim was taken once, when the Record was first read: a document embedded slice by slice, a text
    # waiting for the reader or a retry outlived the lease, and another process derived it again.
    a, b = pair
    api_a = Api(create_app(a))
    api_a.brain("b1")
    monkeypatch.setattr(derivation_module, "SCAN_SECONDS", 0.1)
    monkeypatch.setattr(derivation_module, "LEASE_SECONDS", 0.5)
    for service in (a, b):  # their scans wait the new interval
        service.derivation.stop()
        service.derivation.start()
    claimed_by_b: list[str] = []
    claim = b.store.claim_records  # type: ignore[attr-defined]

    def claiming(owner: str, ids: Any, lease: float) -> set[str]:
        got = set(claim(owner, ids, lease))
        claimed_by_b.extend(got)
        return got

    monkeypatch.setattr(b.store, "claim_records", claiming)
    extract = a.derivation._extract

    def slow_extract(*args: Any) -> Any:
        time.sleep(2.5)  # five leases
        return extract(*args)

    monkeypatch.setattr(a.derivation, "_extract", slow_extract)
    rid = api_a.remember("b1", message("The boiler was serviced on Tuesday.")).body["id"]
    until(lambda: api_a.get(f"/brains/b1/records/{rid}").body["status"] == "ready", timeout=15)
    assert claimed_by_b == []


def test_claims_are_exclusive_until_they_expire(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, pool_size=2)
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("INSERT INTO brains VALUES ('u1', 'ns', 'b1', NULL, NULL, NULL, now())")
            for i in range(6):
                conn.execute(
                    "INSERT INTO derivation_queue (record_id, brain_uid, seq, queued_at) VALUES (%s, 'u1', %s, now())",
                    [f"r{i}", i + 1],
                )
        ids = [f"r{i}" for i in range(6)]
        assert store.claim_records("p1", ids[:4], 30) == set(ids[:4])
        assert store.claim_records("p2", ids, 30) == set(ids[4:])
        assert store.claim_records("p1", ids[:2], 30) == set(ids[:2])  # its own claim renewed
        assert store.unclaimed_records(grace_seconds=3600, limit=10) == []
        assert {r for _, r, _ in store.unclaimed_records(grace_seconds=0, limit=10)} == set()
        assert store.claim_records("p3", ["r0"], 0.01) == set()
        store.release_claims("p2")
        assert {r for _, r, _ in store.unclaimed_records(grace_seconds=0, limit=10)} == {"r4", "r5"}
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE derivation_queue SET claimed_until = now() - interval '1 second' WHERE owner = 'p1'")
        assert {r for _, r, _ in store.unclaimed_records(grace_seconds=3600, limit=10)} == set(ids[:4])
        assert store.claim_records("p3", ids, 30) == set(ids)
        assert store.derivation_pending_through("u1", 1) and not store.derivation_pending_through("u1", 0)
    finally:
        store.close()


def test_a_database_migrated_to_schema_5_queues_the_records_still_processing(postgres_server: Any) -> None:
    name = postgres_server.database(migrated=False)
    url = postgres_server.url(name)
    store = PostgresStore(url, pool_size=2)
    try:
        store.migrate(up_to=4)
        assert not store.shares_processes() and store.shared_secret() is None
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO brains VALUES ('u1', 'ns', 'b1', NULL, NULL, NULL, now())")
            for rid, seq in (("r1", 1), ("r2", 2)):
                conn.execute(
                    "INSERT INTO records VALUES (%s, 'u1', '{}', NULL, NULL, NULL, 'private', now(), now(), 'api', %s)",
                    [rid, seq],
                )
            conn.execute("INSERT INTO record_events VALUES ('r1', 'u1', 3, 'ready', NULL, '[]')")
        assert store.migrate(up_to=5) == [5]
        assert store.shares_processes()
        assert store.derivation_pending_through("u1", 2) and not store.derivation_pending_through("u1", 1)
        secret = store.shared_secret()
        assert secret is not None and len(secret) == 32 and store.shared_secret() == secret
    finally:
        store.close()
        postgres_server.drop(name)


def test_a_memory_left_pending_by_a_process_that_died_is_rederived_by_another(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    api_a = Api(create_app(a))
    api_a.brain("b1", self_name="Ann")
    first = api_a.remember("b1", message("I live in Lisbon."))
    api_a.remember("b1", message("I live in Lisbon, by the river."))
    assert a.wait_idle()
    monkeypatch.setattr(derivation_module, "SCAN_SECONDS", 0.2)
    monkeypatch.setattr(derivation_module, "GRACE_SECONDS", 0.0)
    b.derivation.stop()
    b.derivation.start()  # with the short scan
    a.derivation.stop()  # A makes the Memory pending and dies before re-deriving it
    receipt = api_a.delete(f"/brains/b1/records/{first.body['id']}")
    assert receipt.status == 200 and receipt.body["rederiving"]["memories"] >= 1, receipt.body
    store: PostgresStore = b.store  # type: ignore[assignment]
    uid = store.get_brain("test:acme", "b1").uid  # type: ignore[union-attr]
    until(lambda: store.stale_pending_memories(0, 10) == [], timeout=15)
    assert all(m.status != "pending" for m in store.all_memories(uid))


def test_a_create_brain_sent_to_both_processes_with_one_key_is_a_replay_on_the_slower(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slower process reads no reply (the faster has not committed), then finds the Brain the
    faster committed meanwhile: the answer is the faster's reply, not brain_exists."""
    a, b = pair
    api_a, api_b = Api(create_app(a)), Api(create_app(b))
    headers = {"Idempotency-Key": "retry-1"}
    read = b.store.get_idempotent
    first: list[Any] = []

    def get_idempotent(*args: Any) -> Any:
        held = read(*args)
        if not first:  # the faster process commits right after b read no reply
            first.append(api_a.post("/brains", {"id": "b1", "name": "Ann"}, headers=headers))
        return held

    monkeypatch.setattr(b.store, "get_idempotent", get_idempotent)
    slower = api_b.post("/brains", {"id": "b1", "name": "Ann"}, headers=headers)
    assert first[0].status == 201
    assert (slower.status, slower.body) == (201, first[0].body)
    other = api_b.post("/brains", {"id": "b1", "name": "Bob"}, headers=headers)
    assert other.status == 409 and other.body["code"] == "idempotency_conflict"
    assert api_b.post("/brains", {"id": "b1"}).body["code"] == "brain_exists"


@pytest.fixture
def unmigrated(postgres_server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database nothing has migrated, and quick schema rechecks and scans."""
    from brainstore.store import postgres as postgres_module

    monkeypatch.setattr(postgres_module, "_SCHEMA_RECHECK", 0.1)
    monkeypatch.setattr(derivation_module, "SCAN_SECONDS", 0.2)
    monkeypatch.setattr(derivation_module, "GRACE_SECONDS", 0.5)
    name = postgres_server.database(migrated=False)
    yield postgres_server.url(name)
    postgres_server.drop(name)


def migrated(url: str, up_to: int | None = None) -> None:
    """As `brainstore migrate` does, from a process of its own."""
    operator = PostgresStore(url, pool_size=1)
    try:
        operator.migrate(up_to=up_to)
    finally:
        operator.close()


def started(url: str, directory: Path) -> Service:
    service = Service(PostgresStore(url), config=Config(engine="postgres", database_url=url, data_dir=directory))
    service.start()
    return service


def test_a_record_accepted_before_derivation_had_its_schema_is_derived_once_migrate_runs_beside(
    unmigrated: str, tmp_path: Path
) -> None:
    migrated(unmigrated, up_to=StoreFeature.ERASURE - 1)
    service = started(unmigrated, tmp_path)
    try:
        api = Api(create_app(service))
        api.brain("b1")
        rid = api.remember("b1", message("Alice's favourite drink is jasmine tea.")).body["id"]
        time.sleep(0.5)
        assert api.get(f"/brains/b1/records/{rid}").body["status"] == "processing"  # derivation needs ERASURE
        migrated(unmigrated)
        until(lambda: api.get(f"/brains/b1/records/{rid}").body["status"] == "ready", timeout=15)
    finally:
        service.stop()
        service.store.close()


def test_the_shared_queue_is_scanned_once_schema_5_arrives_beside_live_processes(
    unmigrated: str, tmp_path: Path
) -> None:
    migrated(unmigrated, up_to=StoreFeature.ERASURE)
    a, b = started(unmigrated, tmp_path / "a"), started(unmigrated, tmp_path / "b")
    try:
        migrated(unmigrated)
        api_a, api_b = Api(create_app(a)), Api(create_app(b))
        api_a.brain("b1")
        a.derivation.stop()  # a accepts a Record and dies before deriving it: b adopts it from the queue
        rid = api_a.remember("b1", message("Carol moved to Oslo in 2021.")).body["id"]
        until(lambda: api_b.get(f"/brains/b1/records/{rid}").body["status"] == "ready", timeout=15)
    finally:
        for service in (a, b):
            service.stop()
            service.store.close()
