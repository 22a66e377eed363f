"""Persistence behind one narrow, append-only Store protocol (see base.py)."""

from brainstore.store.base import SCHEMA_FEATURES, Store, StoreFeature

__all__ = ["SCHEMA_FEATURES", "Store", "StoreFeature"]
