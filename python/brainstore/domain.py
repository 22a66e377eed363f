"""Domain values shared by the store and the service. Plain frozen dataclasses; no I/O, no rules."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

#: What no store can hold as text. A UTF-16 surrogate code point alone: JSON's \uD800 escapes and
#: percent-decoded CESU-8 produce one, and no UTF-8 encoder (the response serializer, DuckDB, the
#: tokenizer) accepts it. A NUL (U+0000): PostgreSQL's text refuses it, so a Record holding one was
#: taken and then never derived there (its chunks could not be written: retried forever), and a
#: lookup by an id or filter holding one failed with a 500.
UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's environment and project select the namespace, nothing else does."""

    env: str
    project: str
    scopes: frozenset[str]
    key_label: str  # the key's id, key_<sha256[:12]> (shown as accepted_by): never any part of the secret
    key_hash: str
    bound_brain: str | None = None

    @property
    def namespace(self) -> str:
        return f"{self.env}:{self.project}"


@dataclass(frozen=True)
class Brain:
    uid: str  # internal: a re-created Brain id is a new uid, so old watermarks never match it
    namespace: str
    id: str
    name: str | None
    self_type: str | None
    self_name: str | None
    created_at: datetime


@dataclass(frozen=True)
class Record:
    id: str
    brain_uid: str
    content: dict[str, Any]
    source: dict[str, Any] | None
    visibility: str
    occurred_at: datetime
    created_at: datetime
    origin: str  # api | import
    seq: int  # the Brain change sequence at which the Record was written
    status: str = "processing"  # processing | ready | failed
    error: dict[str, str] | None = None
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordStatus:
    """One status event of a Record: what ``Record.status`` (and error, memory_ids) become."""

    brain_uid: str
    record_id: str
    status: str  # ready | failed
    seq: int
    error: dict[str, str] | None = None
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordTally:
    """What a census counts of a Brain's Records, read without their content: how many there are, how
    many failed and how many came from a low-trust source (``source.trust == "low"``), and the ids of
    the first few of each of those two, in change-sequence order."""

    records: int
    failed: int
    low_trust: int
    failed_examples: tuple[str, ...] = ()
    low_trust_examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class ObjectVersion:
    id: str
    brain_uid: str
    type: str
    key: str
    version: int
    value: Any
    accepted_by: str
    created_at: datetime
    seq: int


@dataclass(frozen=True)
class IdempotentReply:
    namespace: str
    scope: str  # operation and brain: one key may be reused across operations
    key: str
    fingerprint: str
    status: int
    body: dict[str, Any]
    watermark: str | None
    created_at: datetime
    # What the reply describes, so that erasing it erases the reply (which quotes it): the Brain
    # (None only for replies stored before schema 4) and the resource the write made (a Record id).
    brain_uid: str | None = None
    resource_id: str | None = None


@dataclass(frozen=True)
class Citation:
    record_id: str
    start: int
    end: int
    quote: str


@dataclass(frozen=True)
class MemoryRevision:
    """One row of a Memory's history. The newest revision is the Memory's current state."""

    memory_id: str
    brain_uid: str
    version: int
    statement: str
    subject: str
    owner: str | None
    attribute: str | None
    value: str | None
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    status: str  # active | superseded | pending | deleted
    citations: tuple[Citation, ...]
    supersedes: str | None
    superseded_by: str | None
    seq: int
    single_valued: bool = False
    negated: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""  # the assertion's identity (service.planner): revisions that say the same thing share it


def named_memories(memory: MemoryRevision) -> set[str]:
    """The other Memories a revision names: what superseded it, what it supersedes, what closed it,
    what it conflicts with."""
    named = set(memory.extra.get("conflicts_with", ()))
    if memory.superseded_by is not None:
        named.add(memory.superseded_by)
    if memory.supersedes is not None:
        named.add(memory.supersedes)
    if memory.extra.get("closed_by") is not None:
        named.add(memory.extra["closed_by"])
    return named


def unnamed(memory: MemoryRevision, erased: Collection[str]) -> MemoryRevision | None:
    """``memory`` with what the ``erased`` Memories did to it undone: each leaves its conflicts_with and
    its supersedes (a correction of an erased Memory supersedes nothing), and one that superseded or
    closed it gives it back its status and the valid_to it had (stashed as ``valid_to_before`` in its
    extra). None when it names none of them. Version, seq and time stay."""
    if not named_memories(memory) & set(erased):
        return None
    extra = dict(memory.extra)
    status, superseded_by, valid_to = memory.status, memory.superseded_by, memory.valid_to
    supersedes = None if memory.supersedes in erased else memory.supersedes
    if "conflicts_with" in extra:
        remaining = [m for m in extra["conflicts_with"] if m not in erased]
        if remaining:
            extra["conflicts_with"] = remaining
        else:
            del extra["conflicts_with"]
    reopened = False
    if extra.get("closed_by") in erased:
        del extra["closed_by"]
        reopened = True
    if superseded_by in erased:
        status, superseded_by, reopened = "active", None, True
    if reopened:
        held = extra.pop("valid_to_before", None)
        valid_to = datetime.fromisoformat(held) if held else None
    return replace(
        memory, status=status, supersedes=supersedes, superseded_by=superseded_by, valid_to=valid_to, extra=extra
    )


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A piece of a Record's source text, before an evidence index gave it an id."""

    record_id: str
    start: int  # [start, end) into the Record's source text
    end: int
    text: str  # == source[start:end]
    index_text: str  # text with speaker and day: what the lexical lane indexes and the Context cites
    occurred_at: datetime
    speaker: str | None
    source_name: str | None
    trust: str  # high | normal | low
    visibility: str  # local_only | redacted_summary | shareable


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as persisted, with its embedding: what the evidence index is rebuilt from."""

    brain_uid: str
    draft: ChunkDraft
    model: str
    embedding: bytes  # float32, little-endian, the model's dimension
