"""Embedder latency and throughput (group "embedder").

Run with ``pytest benches/test_embedder_bench.py --benchmark-enable``. The batch is 64 real
conversation turns from LoCoMo when ``../shared/data/locomo`` is present, else synthetic turns of
similar length.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from brainstore.retrieval.embedder import OnnxEmbedder, load_embedder

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10_v2" / "26.json"


def sixty_four_turns() -> list[str]:
    if LOCOMO.is_file():
        conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))
        sessions = sorted(
            (int(m.group(1)), key) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))
        )
        turns = [f"{turn['speaker']}: {turn['text']}" for _, key in sessions for turn in conversation[key]]
        if len(turns) >= 64:
            return turns[:64]
    return [
        f"Speaker {i % 2}: on day {i} I told you about my {'sister' if i % 3 else 'dog'} and the trip to "
        f"{'the lake' if i % 2 else 'Paris'}, which {'went well' if i % 5 else 'was a disaster, honestly'}."
        for i in range(64)
    ]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    emb = load_embedder("onnx")
    assert isinstance(emb, OnnxEmbedder)
    emb.embed_query("warm up")
    return emb


@pytest.mark.benchmark(group="embedder")
def test_embed_one_query(benchmark, embedder: OnnxEmbedder) -> None:
    vector = benchmark(embedder.embed_query, "What did Caroline research for her new career?")
    assert vector.shape == (embedder.dimension,)


@pytest.mark.benchmark(group="embedder")
def test_embed_64_turns(benchmark, embedder: OnnxEmbedder) -> None:
    turns = sixty_four_turns()
    vectors = benchmark(embedder.embed, turns)
    assert vectors.shape == (64, embedder.dimension)
