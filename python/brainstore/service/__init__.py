"""The spec's rules, written once. ``Service(store)`` is an engine: MemoryStore or DuckDBStore behind it."""

from brainstore.service.service import MISSING, Reply, Service

__all__ = ["MISSING", "Reply", "Service"]
