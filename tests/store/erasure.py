"""Erasure fixtures every store's purge tests share: many rows in every content table of two Brains, a
secret only in the rows that one erase removes, and the erases themselves."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from brainstore.domain import (
    Brain,
    ChunkDraft,
    Citation,
    IdempotentReply,
    MemoryRevision,
    ObjectVersion,
    Record,
    StoredChunk,
)
from brainstore.store.base import Store

T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
MAIN, OTHER = "brn_main", "brn_secret"
ROWS = 300


def text(rnd: random.Random, n: int = 200) -> str:
    return "".join(rnd.choice(string.ascii_letters + string.digits + " ") for _ in range(n))


def make_secret(rnd: random.Random) -> str:
    return "SECRET-" + "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(48))


def rec(rid: str, uid: str, body: str, seq: int) -> Record:
    return Record(rid, uid, {"kind": "document", "text": body}, None, "shareable", T0, T0, "api", seq)


def mem(mid: str, uid: str, version: int, statement: str, seq: int, cites: str) -> MemoryRevision:
    return MemoryRevision(
        memory_id=mid,
        brain_uid=uid,
        version=version,
        statement=statement,
        subject="Alice",
        owner="Alice",
        attribute="note",
        value=statement[:40],
        valid_from=T0,
        valid_to=None,
        recorded_at=T0,
        status="active",
        citations=(Citation(cites, 0, 4, statement[:4]),),
        supersedes=None,
        superseded_by=None,
        seq=seq,
        extra={"conflicts_with": []},
    )


def chunk(uid: str, rid: str, start: int, body: str) -> StoredChunk:
    draft = ChunkDraft(rid, start, start + len(body), body, f"Alice: {body}", T0, "Alice", None, "normal", "shareable")
    return StoredChunk(uid, draft, "model-a", bytes(random.Random(start).randrange(256) for _ in range(64)))


PLACES = ("erase_record", "erase_memory", "erase_chunks", "erase_brain", "erase_idempotent")


def reply(uid: str, key: str, body: str, resource: str | None) -> IdempotentReply:
    return IdempotentReply("test:acme", f"rememberRecord:{uid}", key, "fp", 202, {"text": body}, None, T0, uid, resource)


def populate(store: Store, secret: str, rnd: random.Random, places: tuple[str, ...] = PLACES) -> None:
    """Many random rows in every content table of two Brains, and the secret only in the rows that the
    erases named in ``places`` remove (the others get random text of the same shape)."""
    for uid in (MAIN, OTHER):
        store.insert_brain(Brain(uid, "test:acme", uid, None, "person", "Alice", T0))
    seq = 0
    for i in range(ROWS):
        seq += 1
        store.insert_record(rec(f"rec_{i:04d}", MAIN, text(rnd), seq))
        if i % 3 == 0:
            store.append_record_status(MAIN, f"rec_{i:04d}", "ready", seq=seq, memory_ids=[f"mem_{i:04d}"])
        store.insert_memory_revision(
            mem(f"mem_{i:04d}", MAIN, 1, text(rnd, 120), seq, f"rec_{i:04d}"), f"fp{i}"
        )
    store.insert_chunks([chunk(MAIN, f"rec_{i:04d}", 0, text(rnd, 150)) for i in range(ROWS)])
    store.insert_object_version(
        ObjectVersion("obj_1", MAIN, "profile", "alice", 1, {"bio": text(rnd)}, "api", T0, 1)
    )

    def padded(place: str) -> str:
        middle = secret if place in places else make_secret(rnd)
        return f"{text(rnd, 80)} {middle} {text(rnd, 80)}"

    # In the main Brain: one record (with an event), one memory (two revisions), the record's chunks.
    store.insert_record(rec("rec_secret", MAIN, padded("erase_record"), seq + 1))
    store.append_record_status(MAIN, "rec_secret", "ready", seq=seq + 1)
    store.insert_memory_revision(
        mem("mem_secret", MAIN, 1, padded("erase_memory"), seq + 2, "rec_0001"), "fps"
    )
    store.insert_memory_revision(
        mem("mem_secret", MAIN, 2, padded("erase_memory"), seq + 3, "rec_0001"), "fps"
    )
    store.insert_chunks(
        [
            chunk(MAIN, "rec_secret", 0, padded("erase_chunks")),
            chunk(MAIN, "rec_secret", 500, padded("erase_chunks")),
        ]
    )
    store.put_idempotent(reply(MAIN, "k-secret", padded("erase_idempotent"), "rec_secret"))
    store.put_idempotent(reply(MAIN, "k-other", text(rnd), "rec_0001"))
    # A whole Brain holding it everywhere.
    store.insert_record(rec("rec_other", OTHER, padded("erase_brain"), 1))
    store.insert_memory_revision(mem("mem_other", OTHER, 1, padded("erase_brain"), 2, "rec_other"), "fpo")
    store.insert_chunks([chunk(OTHER, "rec_other", 0, padded("erase_brain"))])
    bio = {"bio": padded("erase_brain")}
    store.insert_object_version(ObjectVersion("obj_2", OTHER, "profile", "x", 1, bio, "api", T0, 3))
    store.put_idempotent(reply(OTHER, "k-brain", padded("erase_brain"), "rec_other"))
    for _ in range(3):
        store.next_seq(OTHER)


# (erase it, the id whose rows go away, the tables they go from)
ERASES: dict[str, tuple[Callable[[Store], Any], str, set[str]]] = {
    "erase_record": (
        lambda s: s.erase_record(MAIN, "rec_secret"),
        "rec_secret",
        {"records", "record_events"},
    ),
    "erase_brain": (lambda s: s.erase_brain(OTHER), OTHER, set()),  # every table
    "erase_memory": (
        lambda s: s.erase_memories(MAIN, [("mem_secret", s.next_seq(MAIN))], at=T0),
        "mem_secret",
        {"memory_revisions", "memory_links", "memory_heads"},  # memory_heads: PostgreSQL's
    ),
    "erase_chunks": (lambda s: s.erase_chunks(MAIN, "rec_secret"), "rec_secret", {"chunks"}),
    "erase_idempotent": (lambda s: s.erase_idempotent(MAIN, "rec_secret"), "rec_secret", {"idempotency"}),
}
# erase_memories adds a content-free tombstone and takes a seq; PostgreSQL's erase_record logs the erased
# id and seq (record_erasures: other processes drop it from their indexes)
SKIP = {"memory_tombstones", "changes", "record_erasures"}


