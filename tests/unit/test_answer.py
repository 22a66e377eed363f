"""The extractive composer's cost is bounded whatever the evidence it is given."""

from __future__ import annotations

import numpy as np

from brainstore.retrieval.pipeline import content_terms
from brainstore.service.answer import MAX_EMBEDDED, ExtractiveComposer, ServedPassage


def test_the_composer_embeds_a_bounded_shortlist_of_the_evidence() -> None:
    """Only the MAX_EMBEDDED sentences best by words and rank are compared by meaning: a thorough
    Context with a budget of 100,000 tokens embedded every sentence of its evidence (seconds of CPU)."""
    passages = [
        ServedPassage("Ann (8 May 2023)", f"I planted tulips in row {i}. The weather was mild that day.", f"c{i}", (float(i), i))
        for i in range(500)
    ]
    embedded: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        embedded.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    answer = ExtractiveComposer(content_terms).compose(
        "Where did Ann plant tulips?", passages, fits=lambda text: len(text) < 2_000, query_vector=np.ones(4) / 2, embed=embed
    )
    assert answer is not None and "tulips" in answer.text
    assert embedded == [MAX_EMBEDDED]
