"""Values and small rules every service component shares: replies, brain lookup, watermarks, schema gates."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from brainstore import kernels
from brainstore.domain import Brain, Principal, StoredChunk
from brainstore.errors import error
from brainstore.store.base import Store, StoreFeature


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # if_version absent, as opposed to if_version: null


@dataclass(frozen=True)
class Reply:
    """A write's answer: HTTP status, body and the Brain-Watermark header (None when there is none).

    ``then`` is work that belongs to the request but not to its answer (writing a Context's trace):
    whoever sends the answer runs it once the answer is written, so the client does not wait for it.
    """

    status: int
    body: dict[str, Any]
    watermark: str | None
    then: Callable[[], None] | None = None


Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def fingerprint(payload: Any) -> str:
    """The identity of a request body for Idempotency-Key comparison: canonical JSON, hashed."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable by this user only (0600 from the start)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "wb") as handle:
        handle.write(data)
    tmp.replace(path)


def load_or_create_secret(data_dir: Path | None) -> bytes:
    """The watermark HMAC key. Kept in the data directory so watermarks survive a restart."""
    if data_dir is None:
        return secrets.token_bytes(32)
    path = data_dir / "watermark.secret"
    if path.exists():
        return bytes.fromhex(path.read_text().strip())
    data_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_bytes(32)
    write_private(path, value.hex().encode())
    return value


@runtime_checkable
class SharedStore(Protocol):
    """A store several processes serve at once (PostgresStore): what each process needs to see the
    others' work. Every process keeps its own evidence indexes and derivation schedule; this is how they
    agree (docs/operations.md, "Several processes")."""

    def shares_processes(self) -> bool:
        """Whether the schema has the tables below (a store not yet migrated serves as one process)."""
        ...

    def shared_secret(self) -> bytes | None: ...
    def erased_records(self, brain_uid: str, after_seq: int) -> list[str]: ...
    def chunks_ready_after(self, brain_uid: str, after_seq: int) -> list[StoredChunk]: ...
    def derivation_pending_through(self, brain_uid: str, seq: int) -> bool: ...
    def claim_records(self, owner: str, record_ids: Sequence[str], lease_seconds: float) -> set[str]: ...
    def renew_claims(self, owner: str, record_ids: Sequence[str], lease_seconds: float) -> None: ...
    def release_claims(self, owner: str) -> None: ...
    def unclaimed_records(self, grace_seconds: float, limit: int) -> list[tuple[str, str, int]]: ...
    def stale_pending_memories(self, grace_seconds: float, limit: int) -> list[tuple[str, str]]: ...
    def erasures_since(self, since: Mapping[str, int]) -> dict[str, tuple[int, set[str]] | None]: ...
    def forget_stale_memories(self) -> None: ...


def shared_store(store: Store) -> SharedStore | None:
    """The store as one that other processes serve too, or None (DuckDB, memory, a schema behind)."""
    if isinstance(store, SharedStore) and store.shares_processes():
        return store
    return None


def require(store: Store, feature: StoreFeature) -> None:
    """not_implemented until the operator has migrated the store to ``feature``'s schema."""
    if store.schema_version() < feature:
        raise error(
            "not_implemented",
            f"this engine's schema lacks {feature.name.lower()} (schema {store.schema_version()}, "
            f"needs {int(feature)}); the operator must run `brainstore migrate`",
        )


def brain_not_found(brain_id: str) -> Exception:
    return error("brain_not_found", f"brain_id: no Brain {brain_id!r} in this project")


# The uid of the Brain the request on this thread resolved (the API sets None as a request starts): the
# trace of a request that fails after it holds it, so that it goes with that very Brain's forget, on this
# process or another, and never shows under a Brain made again under the same id.
resolved_brain_uid: ContextVar[str | None] = ContextVar("resolved_brain_uid", default=None)


def resolve_brain(store: Store, principal: Principal, brain_id: str) -> Brain:
    require(store, StoreFeature.CORE)
    brain = store.get_brain(principal.namespace, brain_id)
    if brain is None:
        raise brain_not_found(brain_id)
    resolved_brain_uid.set(brain.uid)
    return brain


class Watermarks:
    """Encodes and reads the Brain-Watermark: a signed position in a Brain's change sequence."""

    def __init__(self, store: Store, secret: bytes) -> None:
        self.store = store
        self.secret = secret

    def issue(self, brain: Brain, seq: int | None = None) -> str:
        return kernels.encode_watermark(
            self.secret, brain.uid, self.store.current_seq(brain.uid) if seq is None else seq
        )

    def read(self, brain: Brain, token: str, field: str = "since_watermark") -> int:
        seq = kernels.decode_watermark(self.secret, brain.uid, token)
        if seq is None or seq > self.store.current_seq(brain.uid):
            raise error(
                "invalid_watermark",
                f"{field}: not a watermark this engine issued for Brain {brain.id!r}",
            )
        return seq
