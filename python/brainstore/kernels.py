"""brainstore's Rust kernels: the only module of brainstore that imports ``brainstore_core``.

``brainstore_core`` (distribution ``brainstore-core``, ``rust/py``) is the kernels as a library of their
own, typed and documented there, invariants included. brainstore reaches it only through this
module, so the layers stay checkable (``kernels`` is the lowest layer of the import contracts, and
tests/unit/test_layers.py checks that no other module imports the library) and one place names what
the service relies on.
"""

from __future__ import annotations

from brainstore_core import (
    MAX_PATTERN_CHARS,
    TOKENIZER_NAME,
    ChunkTable,
    LexicalIndex,
    Pattern,
    count_tokens,
    decode_watermark,
    encode_watermark,
    final_scores,
    near_duplicates,
    pack,
    rrf_fuse,
    token_count,
    truncate_tokens,
)

__all__ = [
    "MAX_PATTERN_CHARS",
    "TOKENIZER_NAME",
    "ChunkTable",
    "LexicalIndex",
    "Pattern",
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
