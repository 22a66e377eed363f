"""Query -> ranked, packed evidence: the retrieval pipeline over a :class:`BrainIndex`.

Steps of :func:`retrieve`:

1. ``eligible`` (since/until/sources/visibility, decided by the caller) is applied first: the allowed
   chunk ids go to both lanes, so filtered-out chunks never take a rank.
2. Lexical lane: BM25 (Rust) over ``index_text`` with the question words stripped from the query
   (names and content words kept).
3. Vector lane: cosine over hnswlib with the query embedding (skipped when ``query_vec`` is None).
4. Fusion: weighted reciprocal-rank fusion (:func:`kernels.rrf_fuse`).
5. Context spreading: a chunk also earns a share of the fused score of the chunks said right before
   and after it in the same conversation (a question is often answered by the turn that replies to
   the one that names the topic).
6. Final score: :func:`kernels.final_scores` with the trust multiplier (high 1.1, normal 1.0,
   low 0.8) and a small recency weight.
7. Near-duplicates of better-ranked chunks are dropped (:func:`kernels.near_duplicates`).
8. Packing: :func:`kernels.pack` over the token counts of each chunk's cited form (speaker, day and
   text: exactly what the Context returns), greedy by score, so the budget is never exceeded.

Deadline: each lane checks ``time.monotonic()`` before it starts; a lane that would start after the
deadline is skipped and reported with ``cut: True``. Fusion, scoring and packing always run (they
take well under a millisecond) so a cut request still returns what the finished lanes found.

``unknowns`` lists the query's content terms (names and other non-question words) that appear in no
selected chunk: what the Context cannot speak to.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from brainstore import kernels

from .chunking import Chunk, cited_form
from .index import BrainIndex

__all__ = ["Candidate", "Retrieval", "RetrievalConfig", "content_terms", "lexical_query", "retrieve"]

TRUST_MULTIPLIER = {"high": 1.1, "normal": 1.0, "low": 0.8}


@dataclass(frozen=True)
class RetrievalConfig:
    """Tuning knobs of :func:`retrieve` (defaults tuned on LoCoMo conversations 26, 30, 41, 42, 43)."""

    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: float = 60.0
    neighbor_weight: float = 0.0  # share of a neighbour's fused score a chunk earns
    neighbor_gap_seconds: float = 3600.0  # chunks further apart in time are not neighbours
    recency_weight: float = 0.05
    recency_half_life_days: float = 180.0
    duplicate_threshold: float = 0.9
    length_penalty: float = 0.0  # pack priority = score / tokens**length_penalty
    speaker_boost: float = 0.0  # fused score * (1 + boost) when the query names the chunk's speaker
    feedback_weight: float = 0.0  # vector pseudo-relevance feedback: q + w * mean(top feedback_docs)
    feedback_docs: int = 3
    vector_score_weight: float = 0.0  # fused score + w * cosine similarity (score-aware fusion)
    lexical_score_weight: float = 0.0  # fused score + w * bm25 / best bm25
    max_candidates: int = 400  # fused candidates scored and traced


DEFAULT_CONFIG = RetrievalConfig()


@dataclass(frozen=True)
class Candidate:
    chunk: Chunk
    score: float
    lanes: dict[str, dict] = field(default_factory=dict)  # lane name -> {"rank", "score"}
    tokens: int = 0  # tokens of the chunk's cited form


@dataclass(frozen=True)
class Retrieval:
    selected: list[Candidate]  # packed, in score order
    candidates: list[Candidate]  # every scored candidate, best first (for the trace)
    lanes: list[dict]  # {"name", "candidates", "ms", "cut"}
    tokens_used: int
    unknowns: list[str]


# ------------------------------------------------------------------------------------- query words

# Words that shape a question but say nothing about its topic. BM25 drops a short stopword list of
# its own; these go on top of it.
_QUESTION_WORDS = frozenset(
    ["what", "whats", "what's", "when", "where", "which", "who", "whom", "whose", "why", "how", "do", "does", "did", "done", "doing", "is", "are", "was", "were", "be", "been", "being", "am", "have", "has", "had", "having", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "about", "as", "into", "onto", "over", "after", "before", "since", "until", "during", "and", "or", "but", "not", "no", "nor", "so", "than", "then", "that", "this", "these", "those", "there", "here", "it", "its", "it's", "i", "me", "my", "mine", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "they", "them", "their", "theirs", "we", "us", "our", "ours", "some", "any", "many", "much", "more", "most", "other", "another", "such", "own", "same", "each", "every", "all", "both", "either", "neither", "kind", "kinds", "type", "types", "sort", "sorts", "way", "ways", "thing", "things", "something", "anything", "likely", "probably", "possibly", "potentially", "tell", "say", "said", "mention", "mentioned", "talk", "talked", "discuss", "discussed", "share", "shared", "time", "times", "ever", "also", "just", "still", "yet", "only", "even", "really", "very", "get", "got", "gets", "getting", "go", "goes", "going", "went"]
)
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def _query_words(query: str) -> list[str]:
    return _WORD.findall(query)


def lexical_query(query: str) -> str:
    """The query with question words and pronouns removed (names and content words kept); the whole
    query when nothing would remain."""
    kept = [w for w in _query_words(query) if w.lower().replace("\u2019", "'") not in _QUESTION_WORDS]
    return " ".join(kept) if kept else query


def content_terms(query: str) -> list[str]:
    """Distinct content words of ``query`` in order (for ``unknowns``)."""
    seen: set[str] = set()
    out: list[str] = []
    for word in _query_words(query):
        low = word.lower().replace("\u2019", "'")
        if low.endswith("'s"):
            low, word = low[:-2], word[:-2]
        if len(low) < 3 or low in _QUESTION_WORDS or low.isdigit() or low in seen:
            continue
        seen.add(low)
        out.append(word)
    return out


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _unknowns(terms: list[str], selected: list[Candidate]) -> list[str]:
    if not terms:
        return []
    present = {_stem(w) for c in selected for w in _WORD.findall(cited_form(c.chunk))}
    return [t for t in terms if _stem(t) not in present]


# ------------------------------------------------------------------------------------------ retrieve


def _neighbors(index: BrainIndex, chunk: Chunk, gap: float) -> list[int]:
    """Ids of the chunks right before and after ``chunk`` (ids are assigned in insertion order)."""
    out = []
    for other_id in (chunk.id - 1, chunk.id + 1):
        other = index.get(other_id)
        if other is not None and abs((other.occurred_at - chunk.occurred_at).total_seconds()) <= gap:
            out.append(other_id)
    return out


def retrieve(
    index: BrainIndex,
    query: str,
    query_vec: np.ndarray | None,
    *,
    budget_tokens: int,
    deadline: float,
    eligible: Callable[[Chunk], bool] | None = None,
    now: datetime | None = None,
    k_lexical: int = 200,
    k_vector: int = 200,
    config: RetrievalConfig = DEFAULT_CONFIG,
) -> Retrieval:
    """The evidence for ``query`` that fits ``budget_tokens`` (see the module docstring)."""
    lanes: list[dict] = []
    allowed_list: list[int] | None = None
    allowed_set: set[int] | None = None
    if eligible is not None:
        allowed_list = [c.id for c in index.chunks() if eligible(c)]
        allowed_set = set(allowed_list)

    # --- lanes
    ranked: list[list[int]] = []
    weights: list[float] = []
    lane_hits: dict[str, list[tuple[int, float]]] = {}

    def run_lane(name: str, fn: Callable[[], list[tuple[int, float]]], weight: float) -> None:
        start = time.monotonic()
        if start >= deadline:
            lanes.append({"name": name, "candidates": 0, "ms": 0.0, "cut": True})
            return
        hits = fn()
        lane_hits[name] = hits
        ranked.append([i for i, _ in hits])
        weights.append(weight)
        lanes.append({"name": name, "candidates": len(hits), "ms": (time.monotonic() - start) * 1e3, "cut": False})

    lex_query = lexical_query(query)
    run_lane("lexical", lambda: index.lexical(lex_query, k_lexical, allowed_list), config.lexical_weight)
    if query_vec is not None:
        run_lane("vector", lambda: index.vector(query_vec, k_vector, allowed_set), config.vector_weight)

    # --- fusion
    fused = kernels.rrf_fuse(ranked, weights, config.rrf_k) if ranked else []
    if config.feedback_weight and query_vec is not None and fused and "vector" in lane_hits:
        top = index.vectors([i for i, _ in fused[: config.feedback_docs]])
        if len(top):
            q2 = np.asarray(query_vec, dtype=np.float32) + config.feedback_weight * top.mean(axis=0)
            q2 /= max(float(np.linalg.norm(q2)), 1e-9)
            run_lane("feedback", lambda: index.vector(q2, k_vector, allowed_set), config.vector_weight)
            fused = kernels.rrf_fuse(ranked, weights, config.rrf_k)
    fused = fused[: config.max_candidates]
    chunks: list[Chunk] = []
    base: list[float] = []
    for chunk_id, s in fused:
        chunk = index.get(chunk_id)
        if chunk is not None:  # removed since the lane ran
            chunks.append(chunk)
            base.append(s)

    if (config.vector_score_weight or config.lexical_score_weight) and chunks:
        vec = dict(lane_hits.get("vector", ()))
        lex = dict(lane_hits.get("lexical", ()))
        top_lex = max(lex.values(), default=0.0) or 1.0
        for i, c in enumerate(chunks):
            base[i] += config.vector_score_weight * max(vec.get(c.id, 0.0), 0.0)
            base[i] += config.lexical_score_weight * lex.get(c.id, 0.0) / top_lex

    if config.speaker_boost and chunks:
        named = {w.lower() for w in _query_words(query)}
        for i, c in enumerate(chunks):
            if c.speaker and c.speaker.lower() in named:
                base[i] *= 1.0 + config.speaker_boost

    if config.neighbor_weight > 0 and chunks:
        fused_score = {c.id: s for c, s in zip(chunks, base, strict=True)}
        position = {c.id: i for i, c in enumerate(chunks)}
        extra: dict[int, float] = {}
        for chunk, s in zip(chunks, base, strict=True):
            for other in _neighbors(index, chunk, config.neighbor_gap_seconds):
                if allowed_set is not None and other not in allowed_set:
                    continue
                extra[other] = extra.get(other, 0.0) + config.neighbor_weight * s
        for other, bonus in extra.items():
            if other in position:
                base[position[other]] += bonus
            elif (c := index.get(other)) is not None:
                position[other] = len(chunks)
                chunks.append(c)
                base.append(bonus)
        del fused_score

    # --- final scores
    if now is None:
        now = datetime.now(UTC)
    half_life = config.recency_half_life_days * 86400.0
    recency = []
    for c in chunks:
        age = (now - c.occurred_at).total_seconds()
        recency.append(1.0 if age <= 0 else math.exp(-math.log(2) * age / half_life))
    trust = [TRUST_MULTIPLIER.get(c.trust, 1.0) for c in chunks]
    scores = kernels.final_scores(base, recency, trust, config.recency_weight)
    order = sorted(range(len(chunks)), key=lambda i: (-scores[i], chunks[i].id))
    chunks = [chunks[i] for i in order]
    scores = [scores[i] for i in order]
    tokens = [index.tokens(c.id) for c in chunks]

    ranks: dict[str, dict[int, tuple[int, float]]] = {
        name: {cid: (r, s) for r, (cid, s) in enumerate(hits)} for name, hits in lane_hits.items()
    }
    candidates = []
    for c, s, n in zip(chunks, scores, tokens, strict=True):
        per_lane = {}
        for name, table in ranks.items():
            hit = table.get(c.id)
            if hit is not None:
                per_lane[name] = {"rank": hit[0], "score": hit[1]}
        candidates.append(Candidate(c, s, per_lane, n))

    # --- near-duplicates, packing
    if candidates:
        dupes = set(kernels.near_duplicates([c.chunk.text for c in candidates], config.duplicate_threshold))
        pool = [c for i, c in enumerate(candidates) if i not in dupes]
    else:
        pool = []
    if config.length_penalty:
        priority = [c.score / max(c.tokens, 1) ** config.length_penalty for c in pool]
    else:
        priority = [c.score for c in pool]
    chosen = kernels.pack([c.tokens for c in pool], priority, budget_tokens)
    chosen.sort(key=lambda i: (-pool[i].score, pool[i].chunk.id))
    selected = [pool[i] for i in chosen]
    used = sum(c.tokens for c in selected)
    return Retrieval(selected, candidates, lanes, used, _unknowns(content_terms(query), selected))
