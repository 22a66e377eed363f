"""kernels.ChunkTable.rank against the Python it replaced in retrieval.pipeline.retrieve.

The reference below is that Python, over plain dicts: scores must come back identical (the same
floating-point operations in the same order), not merely close, so that moving the pass into Rust
changed no Context. It has grown since with the ranking: spreading walks speakers' turns (a run of one
speaker's Records, as a chat's burst of messages is) instead of single Records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from brainstore import kernels
from brainstore.retrieval.chunking import TRUST_MULTIPLIER

MAX_TURN_RECORDS = 8  # rank.rs: past it, a run of one speaker's Records is one voice, not a turn


@dataclass
class Fact:
    ts: float
    source: str | None
    speaker: str | None
    trust: float
    tokens: int
    joined: int


@dataclass
class Knobs:
    vector_weight: float = 0.1
    lexical_weight: float = 0.15
    speaker_boost: float = 1.5
    stranger_factor: float = 0.4
    time_boost: float = 2.0
    neighbor_weights: tuple[float, ...] = (0.3, 0.3)
    neighbor_gap: float = 3600.0
    next_factor: float = 1.3
    neighbor_sources: int = 30
    decay: float = math.log(2) / (180 * 86400.0)
    recency_weight: float = 0.05
    max_candidates: int = 150


def reference(
    facts: dict[int, Fact],
    order: list[int],
    turns: dict[int, tuple[int, int]],
    fused: list[tuple[int, float]],
    vector: list[tuple[int, float]],
    lexical: list[tuple[int, float]],
    named: set[str],
    kin: set[str],
    focus: list[tuple[float, float]],
    flt: tuple[float | None, float | None, set[str] | None],
    excluded: set[int],
    now: float,
    k: Knobs,
) -> list[tuple[int, float, int, int, int]]:
    """The score pass, spreading and final scores as retrieve() did them in Python, and the turn
    packing counts each ranked chunk in (its first chunk, what ChunkTable.turns answers)."""
    # each source's chunks by time, then id (the order chunks come in): a conversation, however it
    # arrived and whatever other sources added in between
    previous: dict[int, int | None] = {}
    following: dict[int, int | None] = {}
    for source in {facts[c].source for c in order}:
        listed = sorted((c for c in order if facts[c].source == source), key=lambda c: (facts[c].ts, c))
        for before, after in zip([None, *listed], [*listed, None], strict=True):
            if after is not None:
                previous[after] = before
            if before is not None:
                following[before] = after

    since, until, sources = flt

    def admits(chunk_id: int) -> bool:  # what Selection.__contains__ answered: BrainIndex.select's rules
        f = facts[chunk_id]
        return (
            (since is None or f.ts >= since)
            and (until is None or f.ts <= until)
            and (sources is None or f.source in sources)
            and chunk_id not in excluded
        )

    vec, lex = dict(vector), dict(lexical)
    ids: list[int] = []
    base: list[float] = []
    for chunk_id, s in fused:
        f = facts.get(chunk_id)
        if f is None:
            continue
        v = vec.get(chunk_id, 0.0)
        s += (k.vector_weight * v if v > 0 else 0.0) + k.lexical_weight * lex.get(chunk_id, 0.0)
        if f.speaker is not None and named and f.speaker in named:
            s *= k.speaker_boost
        elif f.speaker is not None and named and f.speaker not in kin:
            s *= k.stranger_factor
        if focus and any(start <= f.ts < end for start, end in focus):
            s *= k.time_boost
        ids.append(chunk_id)
        base.append(s)

    def turn_span(chunk_id: int) -> tuple[int, int]:
        """The speaker's turn: the Record, with the same speaker's Records right before and after
        it (each within the gap of the next) when another speaker bounds the run on one side and
        it spans at most MAX_TURN_RECORDS Records."""
        own = turns.get(chunk_id, (chunk_id, chunk_id))
        speaker, source = facts[chunk_id].speaker, facts[chunk_id].source
        if speaker is None:
            return own
        ends, passed, bounded = [], 0, False
        for end, step in ((0, previous.get), (1, following.get)):
            at, n = own[end], 0
            while n < MAX_TURN_RECORDS and at in facts:
                nxt = step(at)
                other = facts.get(nxt)  # type: ignore[arg-type]
                if other is None or other.source != source or abs(other.ts - facts[at].ts) > k.neighbor_gap:
                    break
                if other.speaker != speaker:
                    bounded = True
                    break
                at, n = turns.get(nxt, (nxt, nxt))[end], n + 1  # type: ignore[arg-type]
            ends.append(at)
            passed += n
        return (ends[0], ends[1]) if bounded and passed < MAX_TURN_RECORDS else own

    def timed_turn(chunk_id: int) -> int:
        """The turn packing counts the chunk in: its turn_span where each Record of it was said later
        than the one before (walking from a Record's last chunk to the chunk after it), else its own
        Record."""
        own = turns.get(chunk_id, (chunk_id, chunk_id))
        first, last = turn_span(chunk_id)
        here = first
        for _ in range(MAX_TURN_RECORDS + 1):
            if here not in facts:  # a removed chunk's id still bounds its Record
                break
            record = turns.get(here, (here, here))
            if record[1] == last:
                return first
            nxt = following.get(record[1])
            if nxt is None or nxt not in facts or facts[nxt].ts <= facts[here].ts:
                break
            here = nxt
        return own[0]

    if any(k.neighbor_weights) and ids:
        position = {c: i for i, c in enumerate(ids)}
        extra: dict[int, float] = {}
        directions = ((0, previous.get, 1.0), (1, following.get, k.next_factor))

        for c, s in zip(ids[: k.neighbor_sources], base, strict=False):
            ts, source = facts[c].ts, facts[c].source
            for end, step, factor in directions:
                other_id = step(turn_span(c)[end])
                for weight in k.neighbor_weights:
                    other = facts.get(other_id)  # type: ignore[arg-type]
                    if other is None or other.source != source or abs(other.ts - ts) > k.neighbor_gap:
                        break
                    if admits(other_id):  # type: ignore[arg-type]
                        extra[other_id] = extra.get(other_id, 0.0) + weight * factor * s  # type: ignore[index]
                    other_id = step(turn_span(other_id)[end])  # type: ignore[arg-type]
        for other_id, bonus in extra.items():
            i = position.get(other_id)
            if i is not None:
                base[i] += bonus
            else:
                ids.append(other_id)
                base.append(bonus)
    recency = [math.exp(-k.decay * max(now - facts[c].ts, 0.0)) for c in ids]
    scores = kernels.final_scores(base, recency, [facts[c].trust for c in ids], k.recency_weight)
    ranked = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[: k.max_candidates]
    return [(ids[i], scores[i], facts[ids[i]].tokens, facts[ids[i]].joined, timed_turn(ids[i])) for i in ranked]


DAY = 86400.0


@st.composite
def scenarios(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(1, 40))
    # two alternate in bursts; one who seldom lets the other speak, or one throughout, in runs about as
    # long as MAX_TURN_RECORDS and longer
    speakers = draw(st.sampled_from([[None, "ann", "bob", "cy"], ["ann", "bob"], ["ann"] * 7 + ["bob"], ["ann"]]))
    sources = draw(st.sampled_from([[None, "chat", "mail"], ["chat"]]))
    ids = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n, unique=True))
    # a conversation's pace (most turns within the neighbour gap of the last) or times at random
    if draw(st.booleans()):
        steps = draw(st.lists(st.sampled_from([0.0, 60.0, 1800.0, 2 * DAY]), min_size=n, max_size=n))
        times = [sum(steps[: i + 1]) for i in range(n)]
    else:
        times = draw(st.lists(st.floats(0, 30 * DAY), min_size=n, max_size=n))
    # Records: runs of consecutive chunks in added order, each of one source and speaker, linked in a
    # shuffled text order; sources interleave as Records of several channels arrive.
    records: list[list[int]] = []
    rest = list(ids)
    while rest:
        size = draw(st.integers(1, 3))
        records.append(rest[:size])
        rest = rest[size:]
    facts = {}
    for record in records:
        source, speaker = draw(st.sampled_from(sources)), draw(st.sampled_from(speakers))
        for i in record:
            facts[i] = Fact(
                ts=times[ids.index(i)],
                source=source,
                speaker=speaker,
                trust=TRUST_MULTIPLIER[draw(st.sampled_from(sorted(TRUST_MULTIPLIER)))],
                tokens=draw(st.integers(1, 60)),
                joined=draw(st.integers(0, 60)),
            )
    removed = set(draw(st.lists(st.sampled_from(ids), max_size=3)))
    pool = [*ids, 20_000, 20_001]  # two ids the table never held
    scored = st.floats(0, 1, allow_nan=False)
    fused = draw(st.lists(st.tuples(st.sampled_from(pool), scored), max_size=30, unique_by=lambda t: t[0]))
    fused.sort(key=lambda t: (-t[1], t[0]))
    vector = draw(st.lists(st.tuples(st.sampled_from(pool), st.floats(-1, 1)), max_size=10))
    lexical = draw(st.lists(st.tuples(st.sampled_from(pool), st.floats(0, 20)), max_size=10))
    named = set(draw(st.lists(st.sampled_from(["ann", "bob", "zed"]), max_size=2)))
    kin = set(draw(st.lists(st.sampled_from(["ann", "bob", "cy"]), max_size=2)))
    focus = draw(st.lists(st.tuples(st.floats(0, 20 * DAY), st.floats(0, 10 * DAY)), max_size=2))
    focus = [(start, start + length) for start, length in focus]
    flt = (
        draw(st.none() | st.floats(0, 30 * DAY)),
        draw(st.none() | st.floats(0, 30 * DAY)),
        draw(st.none() | st.sets(st.sampled_from(["chat", "mail", "web"]))),
    )
    excluded = draw(st.sets(st.sampled_from(ids), max_size=5))
    knobs = Knobs(
        neighbor_weights=draw(st.sampled_from([(0.3, 0.3), (0.5,), (0.0, 0.0), (0.2, 0.1, 0.05)])),
        neighbor_gap=draw(st.sampled_from([3600.0, 5 * DAY])),
        neighbor_sources=draw(st.integers(0, 40)),
        max_candidates=draw(st.integers(0, 50)),
        stranger_factor=draw(st.sampled_from([1.0, 0.4])),
    )
    return facts, ids, records, removed, fused, vector, lexical, named, kin, focus, flt, excluded, knobs


@settings(deadline=None, max_examples=300)
@given(scenarios(), st.floats(0, 40 * DAY))
def test_rank_matches_the_python_it_replaced(scenario: tuple, now: float) -> None:
    facts, ids, records, removed, fused, vector, lexical, named, kin, focus, flt, excluded, k = scenario
    table = kernels.ChunkTable()
    table.add(
        ids,
        [facts[i].ts for i in ids],
        [facts[i].source for i in ids],
        [facts[i].speaker for i in ids],
        [facts[i].trust for i in ids],
        [facts[i].tokens for i in ids],
        [facts[i].joined for i in ids],
    )
    for record in records:
        table.link(list(reversed(record)))  # a text order the added order does not give
    table.remove(sorted(removed))
    live = {i: f for i, f in facts.items() if i not in removed}
    order = [i for i in ids if i not in removed]
    turns = {c: (min(r), max(r)) for r in records for c in r}

    got = table.rank(
        fused,
        vector,
        lexical,
        vector_weight=k.vector_weight,
        lexical_weight=k.lexical_weight,
        named=sorted(named),
        speaker_boost=k.speaker_boost,
        kin=sorted(kin),
        stranger_factor=k.stranger_factor,
        focus=focus,
        time_boost=k.time_boost,
        neighbor_weights=k.neighbor_weights,
        neighbor_gap=k.neighbor_gap,
        next_factor=k.next_factor,
        neighbor_sources=k.neighbor_sources,
        since=flt[0],
        until=flt[1],
        sources=flt[2],
        excluded=excluded,
        now=now,
        decay=k.decay,
        recency_weight=k.recency_weight,
        max_candidates=k.max_candidates,
    )
    want = reference(live, order, turns, fused, vector, lexical, named, kin, focus, flt, excluded, now, k)
    turned = table.turns([g[0] for g in got], k.neighbor_gap)
    assert [(*g[:4], turn) for g, turn in zip(got, turned, strict=True)] == want
    befores = {c: b for r in records for b, c in zip([None, *reversed(r)], reversed(r), strict=False)}
    assert all(g[4] == befores[g[0]] for g in got)


def test_a_removed_chunk_leaves_no_name_behind() -> None:
    table = kernels.ChunkTable()
    table.add([1, 2], [0.0, 1.0], ["mail from Eve", "chat"], ["eve", "ann"], [1.0, 1.0], [5, 5], [4, 4])
    assert table.names() == 4
    table.remove([1])
    assert (len(table), table.names()) == (1, 2)
    table.remove([2])
    assert (len(table), table.names()) == (0, 0)
