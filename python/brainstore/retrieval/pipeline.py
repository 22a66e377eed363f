"""Query -> ranked, packed evidence: the retrieval pipeline over a :class:`BrainIndex`.

Steps of :func:`retrieve`:

1. ``eligible`` (the request's since/until/sources, a :class:`ChunkFilter`) is applied first, over the
   index's id, time and source arrays: the allowed chunk ids go to both lanes, so filtered-out chunks
   never take a rank.
2. Lexical lane: BM25 (Rust) over ``index_text`` with the question words stripped from the query
   (names and content words kept).
3. Vector lane: cosine over hnswlib with the query embedding (skipped when ``query_vec`` is None),
   the query embedded as :func:`embedded_query` writes it.
4. Fusion: weighted reciprocal-rank fusion (:func:`kernels.rrf_fuse`).
5. Ranking, in one native call (:meth:`kernels.ChunkTable.rank`, over the per-chunk facts the index
   keeps in Rust): the fused score plus score-aware terms (cosine and normalised BM25); chunks by a
   speaker the query names (by the speaker's label, or by a name others address them with:
   :meth:`BrainIndex.speaker_named`; "I", "me" or "my" name the ``asker``, the Brain's self), and
   chunks said within a period the query names (``focus``), are boosted; with speakers named, the
   chunks of a speaker who neither is one nor talks with one (:meth:`BrainIndex.kin`) are lowered by
   ``stranger_factor``. Context spreading: a turn
   (one speaker's run of Records, see ``rank.rs``) also earns a share of the fused score
   of the turns up to two before and after it in the same conversation and session, the following
   turns more (a question is often answered by the reply to the turn that names the topic, or by the
   reply to that reply). The share goes to the turn's chunk nearest the scoring one.
6. Final score: the trust multiplier (high 1.1, normal 1.0, low 0.8) and a small recency weight
   (the formula of :func:`kernels.final_scores`), best first.
7. Near-duplicates of better-ranked chunks are dropped (:func:`kernels.near_duplicates`).
8. Packing: :func:`kernels.pack` over the token counts of each chunk's cited line, greedy by score, a
   turn's chunks after its best one lowered (:func:`_later_in_turn`) so the budget reaches more
   turns. Consecutive chunks of one turn that are both packed become one :class:`Passage` under one
   header, so the second is charged only its text. The passages come back as a transcript
   (:func:`transcript`): in the order they were said, each ``Speaker: text``, the first of each day
   ``Speaker (8 May 2023): text``, so a day is charged once however many of its lines are packed (a
   day took 6-7 of the 10 tokens of a line's header, and about 40% of a LoCoMo Context's budget went
   to headers). A speaker labelled by a full name is named so on their first line, then by first
   name where that names no one else in the Brain (:meth:`BrainIndex.short_names`): the rest of the
   name is charged once too. The passages' exact counts are checked, so the budget is never exceeded.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import NamedTuple

import numpy as np

from brainstore import kernels

from .chunking import Chunk, cited_form, first_name, line, line_header
from .index import BrainIndex, ChunkFilter, Selection

__all__ = [
    "LANE_DEPTH",
    "Candidate",
    "Passage",
    "Retrieval",
    "RetrievalConfig",
    "content_terms",
    "lexical_query",
    "retrieve",
    "transcript",
]

# Candidates each lane returns. 150 found as much held-out LoCoMo evidence as 200 (0.890 / 0.935 of it
# at 1,000 / 2,000 tokens against 0.894 / 0.935) for 0.6 ms less per Context on 100,000 chunks.
LANE_DEPTH = 150


@dataclass(frozen=True)
class RetrievalConfig:
    """Tuning knobs of :func:`retrieve` (defaults tuned on LoCoMo conversations 26, 30, 41, 42, 43)."""

    lexical_weight: float = 1.0
    vector_weight: float = 1.0
    rrf_k: float = 10.0
    # share of a turn's fused score that the turns one, two, ... turns before and after it earn
    neighbor_weights: tuple[float, ...] = (0.3, 0.3)
    # Turns further apart in time are not neighbours. What parts two conversations in one source is a
    # night, not an hour: in a messaging app a reply often comes hours after the message it answers.
    neighbor_gap_seconds: float = 12 * 3600.0
    recency_weight: float = 0.05
    recency_half_life_days: float = 180.0
    duplicate_threshold: float = 0.9
    length_penalty: float = 0.0  # pack priority = score / tokens**length_penalty
    speaker_boost: float = 0.5  # fused score * (1 + boost) when the query names the chunk's speaker
    # With speakers named, fused score * stranger_factor for a chunk of a speaker who neither is one
    # nor talks with one (BrainIndex.kin): a Brain of many conversations answers a question about
    # Caroline from hers first. Its value is untuned (1.0, 0.7 and 0.4 tried once on the tuning split
    # with every LoCoMo conversation in one Brain); a Brain of one conversation has no strangers.
    stranger_factor: float = 0.4
    feedback_weight: float = 0.0  # vector pseudo-relevance feedback: q + w * mean(top feedback_docs)
    feedback_docs: int = 3
    vector_score_weight: float = 0.1  # fused score + w * cosine similarity (score-aware fusion)
    lexical_score_weight: float = 0.15  # fused score + w * bm25 / best bm25
    max_fused: int = 150  # fused candidates scored
    max_candidates: int = 150  # candidates kept after final scoring (and traced)
    next_factor: float = 1.3  # the following turns earn next_factor times what the preceding ones do
    neighbor_sources: int = 30  # only the best fused chunks spread score to neighbouring turns
    time_boost: float = 1.0  # fused score * (1 + boost) for a chunk said within a period the query names
    # An event is often told in the days after it ("last weekend we ..."), so a named period reaches
    # this far past its end.
    time_slack_days: float = 7.0
    # Packing spends the budget on more turns: a turn's chunk after its best one is packed as if its
    # score were lower by this share of the best candidate's (see _later_in_turn).
    turn_penalty: float = 0.3


DEFAULT_CONFIG = RetrievalConfig()


# Not frozen: a Context makes about 150 of these and 90 Passages, and a frozen dataclass's __init__
# (object.__setattr__ per field) took 1.2 us a Candidate against 0.3.
@dataclass(slots=True)
class Candidate:
    chunk: Chunk
    score: float
    tokens: int = 0  # tokens of the chunk's cited form (its line naming its day)
    joined: int = 0  # tokens of its text after a joining space, in a passage with its neighbour
    before: int | None = None  # the chunk right before it in its Record's text
    line: int | None = None  # tokens of its line where an earlier line names its day (None: not counted)


@dataclass(slots=True)
class Passage:
    """Packed evidence as the Context returns it: one chunk, or consecutive chunks of one Record
    packed together and rendered under one header (``"Caroline (8 May 2023): First. Second."``, or
    ``"Caroline: First. Second."`` after a line of the same day in a :func:`transcript`)."""

    chunks: tuple[Chunk, ...]  # in text order
    score: float  # the best member's
    text: str  # the cited line, whose tokens count against the budget
    tokens: int
    body: str  # the text under the header: the chunks' texts (a redaction for a redacted chunk)

    @property
    def chunk(self) -> Chunk:
        """The first chunk: its Record, speaker and day are the whole passage's."""
        return self.chunks[0]


class ShortName(NamedTuple):
    """How a transcript names a speaker after their first line: by ``name``, ``saved`` tokens a line
    fewer than the full label (:meth:`BrainIndex.short_names`)."""

    name: str
    saved: int


@dataclass(frozen=True)
class Retrieval:
    selected: list[Passage]  # packed, in the order they were said
    candidates: list[Candidate]  # every scored candidate, best first (for the trace)
    lanes: list[dict]  # {"name", "candidates", "ms", "cut"}
    tokens_used: int
    unknowns: list[str]
    lane_hits: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # each lane's ranked hits
    short_names: dict[str, ShortName] = field(default_factory=dict)  # by label, for a transcript told again

    def lane_ranks(self, chunk_ids: Sequence[int]) -> list[dict[str, dict]]:
        """Per chunk, lane name -> {"rank", "score"} of each lane that found it. Only a trace reads this,
        after the response: the Context does not wait for it."""
        found: dict[int, dict[str, dict]] = {chunk_id: {} for chunk_id in chunk_ids}
        for name, hits in self.lane_hits.items():
            for rank, (chunk_id, score) in enumerate(hits):
                lanes = found.get(chunk_id)
                if lanes is not None:
                    lanes[name] = {"rank": rank, "score": score}
        return [found[chunk_id] for chunk_id in chunk_ids]


# ------------------------------------------------------------------------------------- query words

# Words that shape a question but say nothing about its topic. BM25 drops a short stopword list of
# its own; these go on top of it.
_QUESTION_WORDS = frozenset(
    [
        "what",
        "whats",
        "what's",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "do",
        "does",
        "did",
        "done",
        "doing",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "have",
        "has",
        "had",
        "having",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "about",
        "as",
        "into",
        "onto",
        "over",
        "after",
        "before",
        "since",
        "until",
        "during",
        "and",
        "or",
        "but",
        "not",
        "no",
        "nor",
        "so",
        "than",
        "then",
        "that",
        "this",
        "these",
        "those",
        "there",
        "here",
        "it",
        "its",
        "it's",
        "i",
        "me",
        "my",
        "mine",
        "you",
        "your",
        "yours",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "they",
        "them",
        "their",
        "theirs",
        "we",
        "us",
        "our",
        "ours",
        "some",
        "any",
        "many",
        "much",
        "more",
        "most",
        "other",
        "another",
        "such",
        "own",
        "same",
        "each",
        "every",
        "all",
        "both",
        "either",
        "neither",
        "kind",
        "kinds",
        "type",
        "types",
        "sort",
        "sorts",
        "way",
        "ways",
        "thing",
        "things",
        "something",
        "anything",
        "likely",
        "probably",
        "possibly",
        "potentially",
        "tell",
        "say",
        "said",
        "mention",
        "mentioned",
        "talk",
        "talked",
        "discuss",
        "discussed",
        "share",
        "shared",
        "time",
        "times",
        "ever",
        "also",
        "just",
        "still",
        "yet",
        "only",
        "even",
        "really",
        "very",
        "get",
        "got",
        "gets",
        "getting",
        "go",
        "goes",
        "going",
        "went",
    ]
)
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def _query_words(query: str) -> list[str]:
    return _WORD.findall(query)


def lexical_query(query: str, is_speaker: Callable[[str], bool] = lambda word: False) -> str:
    """The query with question words, pronouns and speakers' names removed (other names and content
    words kept); the whole query when nothing would remain. ``is_speaker`` is asked of each word as
    written (a capital tells a name), less a possessive "'s".

    A speaker's name is a poor BM25 term: it is in every chunk they said (the index text starts
    with it) and in every greeting to them ("Hey Evan!"), so it ranks short chit-chat above the
    content words' matches. The speaker boost of :func:`retrieve` is what prefers a named speaker.
    """
    kept = []
    for word in _query_words(query):
        plain = word.replace("\u2019", "'")
        if plain.lower() in _QUESTION_WORDS or is_speaker(plain.removesuffix("'s")):
            continue
        kept.append(word)
    return " ".join(kept) if kept else query


def embedded_query(index: BrainIndex, query: str) -> str:
    """The question as the vector lane embeds it: a capitalized word that names a speaker by another
    name than their label (an alias others address them by: "Audrey" for the label "user") is written
    as the label, or the label's first name where it is a full name, possessive kept.

    A passage is embedded as ``Label: text``, a full name as its first name (:func:`~brainstore.
    retrieval.chunking.embedding_text`), so its vector carries whatever its Records call the
    speaker. Where that is their name, a question naming them is near their words; where it is a
    label (a role, an account id, "Person A"), it is not, unless the question says the label too. A
    label that holds the word ("Caroline" of "Caroline Reyes") is left as written."""

    def labelled(match: re.Match[str]) -> str:
        word = match.group(0)
        if not word[:1].isupper():
            return word
        plain = word.replace("\u2019", "'")
        name = plain.removesuffix("'s")
        speaker = index.speaker_named(name)
        if speaker is None or name.lower() in (w.lower() for w in _query_words(speaker)):
            return word
        label = index.speaker_label(speaker) or speaker
        return (first_name(label) or label) + word[len(name) :]

    return _WORD.sub(labelled, query)


_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})


def _named_speakers(index: BrainIndex, query: str, asker: str | None = None) -> set[str]:
    """The lowercased speakers the query names, by name or possessive ("Audrey's dogs"), and the
    ``asker`` when it speaks of itself ("what did I say about my trip?")."""
    words = _query_words(query)
    named = {index.speaker_named(w.replace("\u2019", "'").removesuffix("'s")) for w in words}
    if asker and any(w.lower() in _FIRST_PERSON for w in words):
        named.add(index.speaker_named(asker))
    return {speaker for speaker in named if speaker is not None}


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


def _unknowns(terms: list[str], selected: list[Passage]) -> list[str]:
    """Terms whose stem occurs in no selected passage."""
    if not terms:
        return []
    haystack = "\n".join(p.text for p in selected).lower()
    return [t for t in terms if _stem(t) not in haystack]


# ------------------------------------------------------------------------------------------ retrieve


def retrieve(
    index: BrainIndex,
    query: str,
    query_vec: np.ndarray | None,
    *,
    budget_tokens: int,
    deadline: float,
    eligible: ChunkFilter | None = None,
    excluded: frozenset[int] = frozenset(),
    now: datetime | None = None,
    k_lexical: int = LANE_DEPTH,
    k_vector: int = LANE_DEPTH,
    config: RetrievalConfig = DEFAULT_CONFIG,
    extra_lanes: Sequence[tuple[str, Callable[[], list[tuple[int, float]]], float]] = (),
    focus: Sequence[tuple[float, float]] = (),
    asker: str | None = None,
) -> Retrieval:
    """The evidence for ``query`` that fits ``budget_tokens`` (see the module docstring).

    A ``query_vec`` of ``None`` skips the vector lane. ``extra_lanes`` are (name, search, weight)
    lanes of the caller (the memory lane): each search returns ranked (chunk id, score) pairs and is
    fused like the built-in lanes.
    ``focus`` holds the periods the query names ("in October 2023", "last week"), as [start, end)
    Unix seconds: chunks said within one (or ``time_slack_days`` after it) get the time boost.
    ``asker`` is who the query's first person is (the Brain's self): "I", "me" and "my" name it.
    """
    lanes: list[dict] = []
    hidden = excluded  # ranking applies it and the filter itself, even when the selection takes it in
    selection: Selection | None = None
    admits: Callable[[int], bool] | None = None
    if eligible is not None:
        selection = index.select(eligible, excluded)
        admits = selection.__contains__
        excluded = frozenset()
    elif excluded:
        admits = lambda chunk_id: chunk_id not in excluded  # noqa: E731

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
        lanes.append(
            {"name": name, "candidates": len(hits), "ms": (time.monotonic() - start) * 1e3, "cut": False}
        )

    lex_query = lexical_query(query, index.is_speaker)
    allowed = None if selection is None else selection.ids
    run_lane("lexical", lambda: index.lexical(lex_query, k_lexical, allowed, excluded), config.lexical_weight)
    if query_vec is not None:
        run_lane(
            "vector", lambda: index.vector(query_vec, k_vector, selection, excluded), config.vector_weight
        )
    for name, search, weight in extra_lanes:
        run_lane(
            name,
            lambda search=search: [h for h in search() if admits is None or admits(h[0])],
            weight,
        )

    # --- fusion
    fused = kernels.rrf_fuse(ranked, weights, config.rrf_k) if ranked else []
    if config.feedback_weight and query_vec is not None and fused and "vector" in lane_hits:
        top = index.vectors([i for i, _ in fused[: config.feedback_docs]])
        if len(top):
            q2 = np.asarray(query_vec, dtype=np.float32) + config.feedback_weight * top.mean(axis=0)
            q2 /= max(float(np.linalg.norm(q2)), 1e-9)
            run_lane(
                "feedback", lambda: index.vector(q2, k_vector, selection, excluded), config.vector_weight
            )
            fused = kernels.rrf_fuse(ranked, weights, config.rrf_k)
    fused = fused[: config.max_fused]

    # --- one native pass (kernels.ChunkTable.rank): score-aware terms, speaker and time boosts, score
    # spread to the neighbouring turns, recency and trust, best first
    lexical_hits = lane_hits.get("lexical", [])
    named = _named_speakers(index, query, asker) if config.speaker_boost else set()
    slack = config.time_slack_days * 86400.0
    now_ts = (now or datetime.now(UTC)).timestamp()
    ranked = index.table.rank(
        fused,
        lane_hits.get("vector", []),
        lexical_hits,
        vector_weight=config.vector_score_weight,
        lexical_weight=config.lexical_score_weight / (max((s for _, s in lexical_hits), default=0.0) or 1.0),
        named=sorted(named),
        speaker_boost=1.0 + config.speaker_boost,
        kin=sorted(index.kin(named)) if config.stranger_factor != 1.0 else [],
        stranger_factor=config.stranger_factor,
        focus=[(start, end + slack) for start, end in focus],
        time_boost=1.0 + config.time_boost,
        neighbor_weights=config.neighbor_weights,
        neighbor_gap=config.neighbor_gap_seconds,
        next_factor=config.next_factor,
        neighbor_sources=config.neighbor_sources,
        since=None if eligible is None else eligible.since,
        until=None if eligible is None else eligible.until,
        sources=None if eligible is None else eligible.sources,
        excluded=hidden,
        now=now_ts,
        decay=math.log(2) / (config.recency_half_life_days * 86400.0),
        recency_weight=config.recency_weight,
        max_candidates=config.max_candidates,
    )

    get_chunk = index._chunks.get
    candidates = []
    for chunk_id, score, tokens, joined, before in ranked:
        c = get_chunk(chunk_id)
        if c is None:
            continue  # its Record was forgotten since the lanes ran
        candidates.append(Candidate(c, score, tokens, joined, before))

    # --- near-duplicates, packing
    # Only the head of the ranking can be packed: stop once it holds twice the budget (near-duplicate
    # detection is quadratic in the number of texts it compares).
    head, total = 0, 0
    limit = 2 * max(budget_tokens, 0)
    while head < len(candidates) and (total < limit or head < 20):
        total += candidates[head].tokens
        head += 1
    pool = candidates[:head]
    if pool:
        dupes = set(kernels.near_duplicates([c.chunk.text for c in pool], config.duplicate_threshold))
        pool = [c for i, c in enumerate(pool) if i not in dupes]
    if config.length_penalty:
        priority = [c.score / max(c.tokens, 1) ** config.length_penalty for c in pool]
    else:
        priority = [c.score for c in pool]
    if config.turn_penalty:
        priority = _later_in_turn(index, pool, priority, config)
    prev = _predecessors(pool)
    # A chunk packed next to its neighbour costs its text and a joining space, not a second header; a
    # line costs its speaker and text, and the first line of a day the day as well.
    joined = [c.joined for c in pool]
    for c, n in zip(pool, index.table.line_tokens([c.chunk.id for c in pool]), strict=True):
        c.line = n
    group, day_cost = _days(pool)
    # a line without its day, as the transcript serves all but a day's first; one that always names
    # its day (no group) costs its cited form
    lines = [c.tokens if g < 0 or c.line is None else c.line for c, g in zip(pool, group, strict=True)]
    short = _short_names(index, pool, group)
    named, name_cost = _speakers(pool, group, short)
    # a line by first name, and a speaker's first line the rest of their name as well
    lines = [n if s < 0 else n - name_cost[s] for n, s in zip(lines, named, strict=True)]
    chosen = kernels.pack(
        lines, priority, budget_tokens, prev=prev, joined=joined, groups=[(group, day_cost), (named, name_cost)]
    )
    # The charges were estimates (a day's cost, BPE across a joining space); the exact counts decide.
    selected = transcript(_runs(pool, prev, chosen), budget_tokens, short)
    used = sum(p.tokens for p in selected)
    unknowns = _unknowns(content_terms(query), selected)
    return Retrieval(selected, candidates, lanes, used, unknowns, lane_hits, short)


def _days(pool: list[Candidate]) -> tuple[list[int], list[int]]:
    """Each pool item's day as a group for :func:`kernels.pack` (-1 for a line that always names its
    day, see :func:`_always_dated`, or one the table no longer counts), and what the day adds to a line's header (`` (8 May 2023)``):
    the difference of the counts the index keeps for its first chunk's line with the day and without.
    (The transcript counts what it serves; no cache of days outlives the Records that had them.)"""
    position: dict[date, int] = {}
    cost: list[int] = []
    group = []
    for c in pool:
        if _always_dated(c.chunk) or c.line is None:  # no line count: its Record is being forgotten
            group.append(-1)
            continue
        day = c.chunk.occurred_at.date()
        if day not in position:
            position[day] = len(cost)
            cost.append(max(c.tokens - c.line, 0))
        group.append(position[day])
    return group, cost


def _short_names(index: BrainIndex, pool: list[Candidate], group: list[int]) -> dict[str, ShortName]:
    """The speakers of the pool's counted lines (see :func:`_speakers`) whom the transcript may name by
    first name after their first line, and the tokens a line saves by it: what the full label's
    further words cost (exact, see :func:`~brainstore.retrieval.chunking.first_name`)."""
    labels = {c.chunk.speaker for c, g in zip(pool, group, strict=True) if g >= 0 and c.chunk.speaker}
    names = index.short_names(labels) if labels else {}
    if not names:
        return {}
    counts = kernels.count_tokens([text for label, name in names.items() for text in (label, name)])
    return {
        label: ShortName(name, counts[2 * i] - counts[2 * i + 1]) for i, (label, name) in enumerate(names.items())
    }


def _speakers(pool: list[Candidate], group: list[int], short: dict[str, ShortName]) -> tuple[list[int], list[int]]:
    """Each pool item's speaker as a group for :func:`kernels.pack`, where the transcript names them
    in full once and by ``short`` after (-1 for any other line, as for one that always names its day:
    a redaction names its speaker in full), and what the full label adds to a line."""
    position: dict[str, int] = {}
    cost: list[int] = []
    out = []
    for c, g in zip(pool, group, strict=True):
        shortened = short.get(c.chunk.speaker) if g >= 0 and c.chunk.speaker else None
        if shortened is None:
            out.append(-1)
            continue
        if c.chunk.speaker not in position:
            position[c.chunk.speaker] = len(cost)
            cost.append(shortened.saved)
        out.append(position[c.chunk.speaker])
    return out, cost


def _always_dated(chunk: Chunk) -> bool:
    """A redaction names its day; a line with neither speaker nor source keeps ``(8 May 2023)`` before
    its text, or a text that starts ``Agenda: ...`` would read as said by "Agenda"."""
    return chunk.visibility == "redacted_summary" or not (chunk.speaker or chunk.source_name)


def _later_in_turn(
    index: BrainIndex, pool: list[Candidate], priority: list[float], config: RetrievalConfig
) -> list[float]:
    """``priority`` with each spoken chunk but the best of its turn lowered by ``turn_penalty`` times
    the best priority. A question's evidence is often spread over several turns (the things a person did,
    what led to a decision), and a turn is one person at one moment, mostly on one topic: its second
    sentence adds less evidence than another turn's best one, unless it scores that much higher. A
    chunk no one speaks (a document's passage, an event, a fact) is left alone: a document's passages
    are its sections, each as distinct as another document's.

    A turn is a speaker's run of Records only where their own times order it, else a Record
    (``ChunkTable.turns``): Records that share a time are in the order they came, and a history
    posted by concurrent clients with one time a session, penalised by the turns that order made,
    lost 0.06-0.07 of held-out LoCoMo recall."""
    spoken = [i for i, c in enumerate(pool) if c.chunk.speaker is not None]
    if len(spoken) < 2:  # a document's passages, or one message: no native call
        return priority
    turn_of = dict(
        zip(spoken, index.table.turns([pool[i].chunk.id for i in spoken], config.neighbor_gap_seconds), strict=True)
    )
    lowered = config.turn_penalty * max(priority)
    counted: set[int] = set()
    out = list(priority)
    for i in sorted(spoken, key=priority.__getitem__, reverse=True):
        if turn_of[i] in counted:
            out[i] -= lowered
        else:
            counted.add(turn_of[i])
    return out


def _predecessors(pool: list[Candidate]) -> list[int]:
    """For each pool item, the pool index of the chunk right before it in the same Record (-1 if
    that chunk is not in the pool). Redacted chunks stand alone: they are served as summaries."""
    position = {c.chunk.id: i for i, c in enumerate(pool) if c.chunk.visibility != "redacted_summary"}
    return [
        position.get(c.before, -1) if c.before is not None and c.chunk.id in position else -1 for c in pool
    ]


def _runs(pool: list[Candidate], prev: list[int], chosen: list[int]) -> list[list[Candidate]]:
    """The chosen pool items as runs: consecutive chosen chunks of one Record, in text order."""
    picked = set(chosen)
    follower = {p: i for i, p in enumerate(prev) if p >= 0 and i in picked}
    out: list[list[Candidate]] = []
    for i in chosen:
        if prev[i] in picked:
            continue  # inside a run that starts earlier
        run = [pool[i]]
        while (i := follower.get(i, -1)) >= 0:
            run.append(pool[i])
        out.append(run)
    return out


def transcript(
    runs: Sequence[Sequence[Candidate]], budget: int, short_names: dict[str, ShortName] | None = None
) -> list[Passage]:
    """``runs`` (consecutive chunks of one Record each) as passages in the order they were said (time,
    then the order the index took them in), each headed ``Speaker: text``, the first of each day
    ``Speaker (8 May 2023): text``: a reader of the lines in order knows each one's day, and the day
    is paid for once. A speaker of ``short_names`` is named by their label on their first line and
    by its short name after ("Caroline Reyes", then "Caroline"). A redacted chunk is served as its
    summary, which names its day. While the exact
    counts exceed ``budget`` the weakest run is left out (the budget is a promise). A lone chunk's
    line is counted here unless its candidate carries the count (``tokens`` dated, ``line`` not)."""
    ordered = sorted(runs, key=lambda run: (run[0].chunk.occurred_at, run[0].chunk.id))
    while True:
        passages = _lines(ordered, short_names or {})
        if sum(p.tokens for p in passages) <= budget or not passages:
            return passages
        weakest = min(range(len(passages)), key=lambda i: (passages[i].score, -passages[i].chunk.id))
        del ordered[weakest]


def _lines(ordered: Sequence[Sequence[Candidate]], short_names: dict[str, ShortName]) -> list[Passage]:
    passages: list[Passage] = []
    uncounted: list[Passage] = []
    day = None
    introduced: set[str] = set()  # speakers a line named in full
    for run in ordered:
        first = run[0].chunk
        said = first.occurred_at.date()
        dated = said != day or _always_dated(first)
        short = None
        if first.visibility == "redacted_summary":
            text = body = line(first, dated=True)
        else:
            body = first.text if len(run) == 1 else " ".join([c.chunk.text for c in run])
            if first.speaker in short_names:
                if first.speaker in introduced:
                    short = short_names[first.speaker]
                introduced.add(first.speaker)
            text = line_header(first, dated=dated, name=short and short.name) + body
        score = run[0].score if len(run) == 1 else max([c.score for c in run])
        tokens = _counted(run, text, dated, short)
        passage = Passage(tuple([c.chunk for c in run]), score, text, 0, body)
        if tokens is None:
            uncounted.append(passage)
        else:
            passage.tokens = tokens
        passages.append(passage)
        day = said
    if uncounted:
        for passage, tokens in zip(uncounted, kernels.count_tokens([p.text for p in uncounted]), strict=True):
            passage.tokens = tokens
    return passages


def _counted(run: Sequence[Candidate], text: str, dated: bool, short: ShortName | None = None) -> int | None:
    """A lone chunk's count as the index took it in: its cited form when ``text`` is it (a chunk
    stored by an older version may cite another form), its undated line (or redaction) else; by
    ``short`` name, what that saves less."""
    if len(run) > 1:
        return None
    candidate = run[0]
    if short is None:
        saved = 0
    else:
        saved = short.saved
        text = f"{candidate.chunk.speaker}{text[len(short.name) :]}"  # the line by full label
    if dated:
        return candidate.tokens - saved if candidate.tokens and text == cited_form(candidate.chunk) else None
    return None if candidate.line is None else candidate.line - saved
