"""Ablation of the retrieval pipeline on LoCoMo, per split and category: what each mechanism earns.

Every variant is the default :class:`RetrievalConfig` with one change (or a pipeline switch), run
through :func:`retrieve` on indexes built exactly as ``benches/test_locomo_bench.py`` builds them
(one Record per turn, the service's default embedder, questions embedded as a Context embeds its
question, embeddings cached under ``/tmp``). Tune on the
tuning split; report the held-out split (``--split held-out``).

Besides the plain data, ``--stress`` runs one of the perturbations of :data:`locomo.STRESSES` (each
described where it is defined), which take away LoCoMo's conventions, to see what a mechanism is
worth where they are absent (data nobody tuned on rarely has them). Each message Record
is keyed ``<turn>#<n>`` so that a question's evidence turn is cited when any of its messages is.

``--one-brain`` puts every LoCoMo conversation into one Brain (about 5,900 turns of ten pairs of
people) and asks the split's questions of it, as a Brain holding many conversations is asked about one
of them; only a conversation's own turns count as its questions' evidence.

Run: ``.venv/bin/python -m benches.locomo_ablation --split tuning --variants base,no_speaker_boost``
(``--list`` prints the variants).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np

from brainstore.derive import source_text
from brainstore.retrieval import chunking, pipeline
from brainstore.retrieval.chunking import ChunkDraft, chunk_record, embedding_text
from brainstore.retrieval.index import BrainIndex
from brainstore.retrieval.pipeline import DEFAULT_CONFIG, RetrievalConfig, embedded_query, retrieve
from brainstore.service.context import query_periods

from . import locomo
from .test_locomo_bench import default_embedder, embed_cached

BUDGETS = (1000, 2000)


def _cfg(**changes: Any) -> dict[str, Any]:
    return {"config": dataclasses.replace(DEFAULT_CONFIG, **changes)}


#: name -> what the variant changes: a config, and optional switches (``focus``: pass the periods
#: the query names; ``speakers``: strip speakers' names from the lexical query; ``aliases``: a name
#: others address a speaker by names that speaker; ``asker``: the Brain's self is who "I" is in a
#: question; ``depth``: candidates per lane).
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "no_speaker_boost": _cfg(speaker_boost=0.0),
    "no_stranger_factor": _cfg(stranger_factor=1.0),
    "stranger_07": _cfg(stranger_factor=0.7),
    "no_time_boost": _cfg(time_boost=0.0),
    "no_focus": {"focus": False},
    "no_spreading": _cfg(neighbor_weights=()),
    "spread_one": _cfg(neighbor_weights=(0.3,)),
    "spread_symmetric": _cfg(next_factor=1.0),
    "no_score_terms": _cfg(vector_score_weight=0.0, lexical_score_weight=0.0),
    "no_recency": _cfg(recency_weight=0.0),
    "no_dedup": _cfg(duplicate_threshold=1.0),
    "rrf_60": _cfg(rrf_k=60.0),
    "rrf_30": _cfg(rrf_k=30.0),
    "lexical_only": _cfg(vector_weight=0.0, vector_score_weight=0.0),
    "vector_only": _cfg(lexical_weight=0.0, lexical_score_weight=0.0),
    "lexical_half": _cfg(lexical_weight=0.5),
    "keep_speaker_words": {"speakers": False},
    "no_aliases": {"aliases": False},
    "no_asker": {"asker": False},
    "feedback_03": _cfg(feedback_weight=0.3),
    "feedback_06": _cfg(feedback_weight=0.6, feedback_docs=5),
    "spread_three": _cfg(neighbor_weights=(0.3, 0.3, 0.15)),
    "spread_sources_60": _cfg(neighbor_sources=60),
    "lanes_300": {"depth": 300, **_cfg(max_fused=300, max_candidates=300)},
    "gap_1h": _cfg(neighbor_gap_seconds=3600.0),
    "gap_6h": _cfg(neighbor_gap_seconds=6 * 3600.0),
    "no_turn_penalty": _cfg(turn_penalty=0.0),
    "turn_penalty_01": _cfg(turn_penalty=0.1),
    "turn_penalty_06": _cfg(turn_penalty=0.6),
}


@dataclasses.dataclass
class Built:
    conversation: locomo.Conversation
    index: BrainIndex
    questions: list[tuple[locomo.Question, set[str]]]
    qvecs: np.ndarray
    at: datetime
    asker: str | None  # the Brain's self, who "I" is in the questions
    messages: dict[str, locomo.Message]  # by record id


def build(conversation: locomo.Conversation, embedder: Any, stress: str | None) -> Built:
    drafts, messages = [], {}
    for n, m in enumerate(locomo.stressed(conversation, stress)):
        src = source_text(locomo.content(m), self_name=None, occurred_at=m.occurred_at)
        record_id = f"{m.dia_id}#{n}"
        messages[record_id] = m
        drafts.extend(chunk_record(record_id, src, source_name=m.source, trust="normal", visibility="shareable"))
    index = BrainIndex(embedder.dimension, embedder.model_name)
    # embedded as "Speaker: text": only the stresses that change a speaker or a text need vectors of their own
    changed = ("anonymous", "chat", "surnamed", "interleaved", "transcripts", "lowercase")
    tag = f"chunks-{conversation.sample_id}" + (f"-{stress}" if stress in changed else "")
    index.add(drafts, embed_cached(embedder, [embedding_text(d) for d in drafts], tag), leads(messages, drafts))
    questions = [
        (dataclasses.replace(q, question=locomo.asked(conversation, q.question, stress)), evidence)
        for q, evidence in locomo.scored_questions(conversation)
    ]
    tag = f"questions-{conversation.sample_id}" + ("-first_person" if stress == "first_person" else "")
    qvecs = embed_cached(embedder, [embedded_query(index, q.question) for q, _ in questions], tag, queries=True)
    # Asked now, as the service asks (relative periods and recency resolve against the clock).
    return Built(
        conversation, index, questions, qvecs, datetime.now(UTC), locomo.brain_self(conversation, stress), messages
    )


def one_brain(built: list[Built], embedder: Any) -> list[Built]:
    """``built`` with one index holding every conversation's chunks (their record ids prefixed by the
    conversation's), each conversation's messages keyed by those ids."""
    index = BrainIndex(embedder.dimension, embedder.model_name)
    names = [f.name for f in dataclasses.fields(ChunkDraft)]
    out = []
    for b in built:
        chunks = sorted(b.index.chunks(), key=lambda c: c.id)
        messages = {f"{b.conversation.sample_id}/{k}": m for k, m in b.messages.items()}
        drafts = [
            ChunkDraft(**{**{n: getattr(c, n) for n in names}, "record_id": f"{b.conversation.sample_id}/{c.record_id}"})
            for c in chunks
        ]
        index.add(drafts, b.index.vectors([c.id for c in chunks]), leads(messages, drafts))
        out.append(dataclasses.replace(b, messages=messages))
    return [dataclasses.replace(b, index=index) for b in out]


def leads(messages: dict[str, locomo.Message], drafts: list[ChunkDraft]) -> list[str | None]:
    """The whitespace before each draft in its Record (:func:`chunking.leads`), as the service gives."""
    out: list[str | None] = []
    for record_id, group in itertools.groupby(drafts, key=lambda d: d.record_id):
        out += chunking.leads(messages[record_id].text, list(group))
    return out


def measure(built: list[Built], variant: dict[str, Any]) -> dict[int, dict[int, list[float]]]:
    config: RetrievalConfig = variant.get("config", DEFAULT_CONFIG)
    depth: int = variant.get("depth", pipeline.LANE_DEPTH)
    per: dict[int, dict[int, list[float]]] = {b: {1: [], 2: [], 3: [], 4: []} for b in BUDGETS}
    original: Callable[..., str] = pipeline.lexical_query
    if variant.get("speakers") is False:
        pipeline.lexical_query = lambda query, is_speaker=None: original(query)  # type: ignore[assignment]
    named = BrainIndex.speaker_named
    if variant.get("aliases") is False:
        BrainIndex.speaker_named = lambda self, word: word.lower() if word.lower() in self._speakers else None  # type: ignore[method-assign]
    try:
        for b in built:
            for (question, evidence), qvec in zip(b.questions, b.qvecs, strict=True):
                focus = query_periods(question.question, b.at) if variant.get("focus", True) else []
                for budget in BUDGETS:
                    result = retrieve(
                        b.index, question.question, qvec, budget_tokens=budget, deadline=time.monotonic() + 5,
                        focus=focus, config=config, now=b.at, k_lexical=depth, k_vector=depth,
                        asker=b.asker if variant.get("asker", True) else None,
                    )  # fmt: skip
                    selected = {  # the turns of what was cited (of this conversation: see --one-brain)
                        turn
                        for p in result.selected
                        if p.chunk.record_id in b.messages
                        for turn in locomo.turns_cited(b.messages[p.chunk.record_id], p.chunk.start, p.chunks[-1].end)
                    }
                    per[budget][question.category].append(locomo.score(selected, evidence))
    finally:
        pipeline.lexical_query = original  # type: ignore[assignment]
        BrainIndex.speaker_named = named  # type: ignore[method-assign]
    return per


def row(name: str, per: dict[int, dict[int, list[float]]], base: dict[int, float] | None) -> tuple[str, dict[int, float]]:
    cells, overall = [], {}
    for budget in BUDGETS:
        scores = [s for v in per[budget].values() for s in v]
        overall[budget] = float(np.mean(scores))
        delta = f" ({100 * (overall[budget] - base[budget]):+.1f})" if base else ""
        cats = " ".join(f"{np.mean(per[budget][c]):.3f}" for c in (1, 2, 3, 4))
        cells.append(f"{overall[budget]:.3f}{delta:<8} [{cats}]")
    return f"{name:<20} " + " | ".join(cells), overall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("tuning", "held-out"), default="tuning")
    parser.add_argument("--variants", default="base")
    parser.add_argument("--stress", choices=locomo.STRESSES, default=None)
    parser.add_argument("--one-brain", action="store_true", help="every conversation in one Brain")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(VARIANTS))
        return 0
    embedder = default_embedder()
    ids = locomo.TUNING if args.split == "tuning" else locomo.HELD_OUT
    everyone = locomo.load_conversations()
    conversations = [c for c in everyone if c.sample_id in ids]
    if not conversations:
        print("LoCoMo data not found", file=sys.stderr)
        return 1
    if args.one_brain:
        built = [b for b in one_brain([build(c, embedder, args.stress) for c in everyone], embedder) if b.conversation.sample_id in ids]
    else:
        built = [build(c, embedder, args.stress) for c in conversations]
    n = sum(len(b.questions) for b in built)
    print(f"LoCoMo {args.split} ({n} questions){' stress ' + args.stress if args.stress else ''}"
          f"{', one Brain' if args.one_brain else ''}: "
          f"recall @1000 | @2000 [categories 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop]")
    base = None
    for name in args.variants.split(","):
        line, overall = row(name, measure(built, VARIANTS[name]), base)
        base = base or overall
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
