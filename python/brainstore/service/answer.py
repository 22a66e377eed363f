"""Composing a thorough Context's ``answer`` from its served, cited evidence.

A composer is a provider: :class:`ExtractiveComposer` is the offline default, and a generative one
(a model behind an endpoint) plugs in with the same signature. Whatever composes, the answer only says
what the served evidence says, every part names its citation, and it fits the tokens it is given.

The extractive composer picks the sentences of the served evidence that answer the query (the query's
content words they share, weighed by how rare each word is among the evidence, and how close their
meaning is to the query's when an embedding is given), then lays them out in the order they were said,
one header per speaker and day: "Caroline (8 May 2023): I went to the support group. [c1]".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from brainstore import kernels

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"'\u201d\u2019)\]]*|\n|$)")
_WORD = re.compile(r"[^\W_]+")
MAX_SENTENCES = 6
# Sentences whose meaning is compared with the query's, at most: the best by words and rank. Embedding
# every sentence of the evidence took 0.54 s of CPU a thorough Context at 2,000 tokens (LoCoMo 26 and 30,
# 80 questions) and 7 s at 100,000 on a large Brain; the best 32 gave the same answer to all 80 at 0.17 s.
MAX_EMBEDDED = 32
RELEVANCE_SHARE = 0.6


@dataclass(frozen=True)
class ServedPassage:
    """One served evidence item: its header ("Caroline (8 May 2023)") and body, its citation id, and
    where it falls in the conversation (for reading order)."""

    header: str
    body: str
    citation: str
    order: tuple[float, int]  # (occurred_at as POSIX seconds, chunk id)
    redacted: bool = False


@dataclass(frozen=True)
class Answer:
    text: str
    citations: list[str]
    composer: str


class Composer(Protocol):
    name: str

    def compose(
        self,
        query: str,
        passages: Sequence[ServedPassage],
        *,
        fits: Callable[[str], bool],
        query_vector: np.ndarray | None = None,
        embed: Callable[[list[str]], np.ndarray] | None = None,
    ) -> Answer | None: ...


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class ExtractiveComposer:
    name = "extractive"

    def __init__(self, content_terms: Callable[[str], list[str]]) -> None:
        self.content_terms = content_terms

    def compose(
        self,
        query: str,
        passages: Sequence[ServedPassage],
        *,
        fits: Callable[[str], bool],
        query_vector: np.ndarray | None = None,
        embed: Callable[[list[str]], np.ndarray] | None = None,
    ) -> Answer | None:
        sentences: list[tuple[int, int, str]] = []  # (passage index, position, sentence)
        for p, passage in enumerate(passages):
            if passage.redacted:
                continue  # a redaction says nothing that could answer
            for position, match in enumerate(_SENTENCE.finditer(passage.body)):
                text = match.group(0).strip()
                if len(_WORD.findall(text)) >= 2:
                    sentences.append((p, position, text))
        if not sentences:
            return None
        terms = {_stem(t) for t in self.content_terms(query)}
        words = [{_stem(w) for w in _WORD.findall(s)} for _, _, s in sentences]
        frequency = Counter(w for ws in words for w in ws if w in terms)
        n = len(sentences)
        scores = []
        for (p, position, _), ws in zip(sentences, words, strict=True):
            overlap = sum(math.log(1 + n / frequency[w]) for w in ws & terms)
            prior = 1.0 / (1 + p)  # the retrieval ranked the passages: earlier ones are likelier
            scores.append(overlap + 0.5 * prior - 0.01 * position)
        if query_vector is not None and embed is not None:
            shortlist = sorted(range(n), key=lambda i: -scores[i])[:MAX_EMBEDDED]
            vectors = embed([sentences[i][2] for i in shortlist])
            similarity = vectors @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
            for i, sim in zip(shortlist, similarity, strict=True):
                scores[i] += 2.0 * float(sim)
        ranked = sorted(range(n), key=lambda i: -scores[i])
        # Only the sentences that answer: those scoring close to the best one (a sentence that merely
        # sits in a retrieved passage is evidence, not an answer).
        floor = scores[ranked[0]] * RELEVANCE_SHARE if scores[ranked[0]] > 0 else float("inf")
        chosen: list[int] = []
        for i in [r for r in ranked[:MAX_SENTENCES] if r == ranked[0] or scores[r] >= floor]:
            trial = self._render(passages, sentences, [*chosen, i])
            if fits(trial[0]):
                chosen.append(i)
        if not chosen:
            return None
        text, cited = self._render(passages, sentences, chosen)
        return Answer(text, cited, self.name)

    @staticmethod
    def _render(
        passages: Sequence[ServedPassage], sentences: list[tuple[int, int, str]], chosen: list[int]
    ) -> tuple[str, list[str]]:
        """The chosen sentences in the order they were said, under one header per passage run."""
        ordered = sorted(chosen, key=lambda i: (passages[sentences[i][0]].order, sentences[i][1]))
        parts: list[str] = []
        cited: list[str] = []
        current: int | None = None
        run: list[str] = []
        for i in [*ordered, None]:
            p = None if i is None else sentences[i][0]
            if p != current and current is not None:
                passage = passages[current]
                parts.append(f"{passage.header}: {' '.join(run)} [{passage.citation}]")
                if passage.citation not in cited:
                    cited.append(passage.citation)
                run = []
            if i is None:
                break
            current = p
            run.append(sentences[i][2])
        return " ".join(parts), cited


def token_fits(remaining: Callable[[], int]) -> Callable[[str], bool]:
    return lambda text: kernels.token_count(text) <= remaining()
