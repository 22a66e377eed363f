"""The spec's rules, written once. ``Service(store)`` is an engine: MemoryStore or DuckDBStore behind it."""

from brainstore.service.common import MISSING, Reply, fingerprint
from brainstore.service.service import Service

__all__ = ["MISSING", "Reply", "Service", "fingerprint"]
