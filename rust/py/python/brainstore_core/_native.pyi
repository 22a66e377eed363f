"""Stubs for the Rust extension ``brainstore_core._native`` (``rust/py/src/lib.rs``), kept honest by
``mypy.stubtest`` (tests/unit/test_core_library.py). Private: import it only from the facade
``brainstore_core/__init__.py``, which documents the semantics."""

from collections.abc import Sequence
from typing import final

__all__ = [
    "MAX_PATTERN_CHARS",
    "TOKENIZER_NAME",
    "ChunkTable",
    "LexicalIndex",
    "Pattern",
    "__version__",
    "count_tokens",
    "decode_watermark",
    "encode_watermark",
    "final_scores",
    "near_duplicates",
    "pack",
    "rrf_fuse",
    "token_count",
    "truncate_tokens",
]

__version__: str
TOKENIZER_NAME: str
MAX_PATTERN_CHARS: int

def token_count(text: str) -> int: ...
def count_tokens(texts: Sequence[str]) -> list[int]: ...
def truncate_tokens(text: str, max_tokens: int) -> str: ...
def pack(
    token_counts: Sequence[int],
    scores: Sequence[float],
    budget: int,
    prev: Sequence[int] | None = None,
    joined: Sequence[int] | None = None,
    groups: Sequence[tuple[Sequence[int], Sequence[int]]] = ...,
) -> list[int]: ...
def encode_watermark(secret: bytes, brain_key: str, seq: int) -> str: ...
def decode_watermark(secret: bytes, brain_key: str, token: str) -> int | None: ...
def rrf_fuse(
    lanes: Sequence[Sequence[int]], weights: Sequence[float], k: float = 60.0
) -> list[tuple[int, float]]: ...
def final_scores(
    base: Sequence[float], recency: Sequence[float], trust: Sequence[float], recency_weight: float
) -> list[float]: ...
def near_duplicates(texts: Sequence[str], threshold: float = 0.9) -> list[int]: ...

@final
class ChunkTable:
    def __new__(cls) -> ChunkTable: ...
    def add(
        self,
        ids: Sequence[int],
        ts: Sequence[float],
        sources: Sequence[str | None],
        speakers: Sequence[str | None],
        trusts: Sequence[float],
        tokens: Sequence[int],
        joined: Sequence[int],
        lines: Sequence[int] | None = None,
    ) -> None: ...
    def link(self, ordered: Sequence[int]) -> None: ...
    def remove(self, ids: Sequence[int]) -> None: ...
    def previous(self, id: int) -> int | None: ...
    def turns(self, ids: Sequence[int], gap: float) -> list[int]: ...
    def token_counts(self, id: int) -> tuple[int, int] | None: ...
    def line_tokens(self, ids: Sequence[int]) -> list[int | None]: ...
    def names(self) -> int: ...
    def __len__(self) -> int: ...
    def rank(
        self,
        fused: Sequence[tuple[int, float]],
        vector: Sequence[tuple[int, float]],
        lexical: Sequence[tuple[int, float]],
        *,
        vector_weight: float,
        lexical_weight: float,
        named: Sequence[str],
        speaker_boost: float,
        focus: Sequence[tuple[float, float]],
        time_boost: float,
        neighbor_weights: Sequence[float],
        neighbor_gap: float,
        next_factor: float,
        neighbor_sources: int,
        since: float | None,
        until: float | None,
        sources: Sequence[str] | None,
        excluded: Sequence[int],
        now: float,
        decay: float,
        recency_weight: float,
        max_candidates: int,
        kin: Sequence[str] = ...,
        stranger_factor: float = ...,
    ) -> list[tuple[int, float, int, int, int | None]]: ...

@final
class LexicalIndex:
    def __new__(cls) -> LexicalIndex: ...
    def add(self, doc_ids: Sequence[int], texts: Sequence[str]) -> None: ...
    def remove(self, doc_ids: Sequence[int]) -> None: ...
    def search(
        self, query: str, k: int, allowed: Sequence[int] | bytes | None = None, excluded: Sequence[int] = ...
    ) -> list[tuple[int, float]]: ...
    def __len__(self) -> int: ...
    def term_count(self) -> int: ...

@final
class Pattern:
    def __new__(cls, source: str) -> Pattern: ...
    @property
    def source(self) -> str: ...
    def is_match(self, text: str) -> bool: ...
    def matches(self, texts: Sequence[str]) -> list[bool]: ...
