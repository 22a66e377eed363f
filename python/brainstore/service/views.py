"""Contract-shaped dicts of domain values: the one place a resource's JSON form is decided."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from brainstore.domain import Brain, Citation, MemoryRevision, ObjectVersion, Record
from brainstore.service.planner import MAX_CONFLICTS


def timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def brain_view(brain: Brain) -> dict[str, Any]:
    return {
        "id": brain.id,
        "object": "brain",
        "name": brain.name,
        "self": {"type": brain.self_type, "name": brain.self_name} if brain.self_name else None,
        "created_at": timestamp(brain.created_at),
    }


def record_view(record: Record) -> dict[str, Any]:
    return {
        "id": record.id,
        "object": "record",
        "status": record.status,
        "created_at": timestamp(record.created_at),
        "occurred_at": timestamp(record.occurred_at),
        "content": record.content,
        "source": record.source,
        "visibility": record.visibility,
        "origin": record.origin,
        "memory_ids": list(record.memory_ids),
        "error": record.error,
    }


def object_view(version: ObjectVersion) -> dict[str, Any]:
    return {
        "id": version.id,
        "object": "object",
        "type": version.type,
        "key": version.key,
        "value": version.value,
        "version": version.version,
        "accepted_by": version.accepted_by,
        "created_at": timestamp(version.created_at),
    }


def citation_view(citation: Citation) -> dict[str, Any]:
    return {
        "record_id": citation.record_id,
        "span": {"start": citation.start, "end": citation.end},
        "quote": citation.quote,
    }


def memory_view(memory: MemoryRevision) -> dict[str, Any]:
    return {
        "id": memory.memory_id,
        "object": "memory",
        "statement": memory.statement,
        "subject": memory.subject,
        "owner": memory.owner,
        "attribute": memory.attribute,
        "valid_from": timestamp(memory.valid_from),
        "valid_to": timestamp(memory.valid_to),
        "recorded_at": timestamp(memory.recorded_at),
        "citations": [citation_view(c) for c in memory.citations],
        "version": memory.version,
        "status": memory.status,
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        # the newest (ids grow with time): a Memory derived before MAX_CONFLICTS bounded the list may name more
        "conflicts_with": sorted(memory.extra.get("conflicts_with", []))[-MAX_CONFLICTS:],
    }
