"""LoCoMo retrieval through the HTTP contract: the measurement issue 4 names, end to end.

Each conversation becomes a Brain; each turn a Record (kind message, speaker, occurred_at from the
session date) sent through the client to the real Falcon app (in-process WSGI transport, the memory
engine); each question of categories 1-4 a fast Context at budget.tokens 1000 and 2000. A question's
score is the share of its evidence turns cited by the Context. Numbers are printed and stored in
pytest-benchmark's extra_info; nothing here is a timed assertion.

Run: ``make bench`` or ``.venv/bin/python -m pytest benches/test_locomo_api_bench.py -s -p no:cacheprovider``
(``LOCOMO_CONVERSATIONS=26,30`` limits the run; ``LOCOMO_ENGINE=duckdb`` runs it on the DuckDB store in
a temporary data directory instead of the memory store; ``LOCOMO_STRESS`` sends the turns under one of
the perturbations of ``benches.locomo.STRESSES``, e.g. ``chat``: each turn a burst of messages;
``LOCOMO_ONE_BRAIN=1`` sends every conversation to one Brain and asks the wanted conversations'
questions of it, a conversation's own turns its only evidence).
"""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from benches.locomo import (
    HELD_OUT,
    TUNING,
    Message,
    asked,
    brain_self,
    content,
    load_conversations,
    score,
    scored_questions,
    stressed,
    turns_cited,
)
from brainstore.api.app import create_app
from brainstore.app import build_service
from brainstore.client import Client
from brainstore.config import Config
from brainstore.service import Service
from brainstore.store.memory import MemoryStore

KEY = "sk_test_bench_locomo0001"
BUDGETS = (1000, 2000)


def post(client: Client, brain: str, conversation: Any, stress: str | None, me: str | None) -> dict[str, Message]:
    """Send the conversation's Records to ``brain``; what each Record id was sent as."""
    sent: dict[str, Message] = {}
    for m in stressed(conversation, stress):
        when = m.occurred_at.isoformat().replace("+00:00", "Z")
        record = client.remember_record(brain, content(m, me), occurred_at=when, source={"name": m.source})
        sent[record["id"]] = m
    return sent


def ask(
    client: Client, brain: str, conversation: Any, stress: str | None, sent: dict[str, Message]
) -> tuple[dict[int, list[tuple[int, float]]], list[float]]:
    """Each scored question of the conversation as a fast Context of ``brain``, scored by the turns its
    citations quote among ``sent`` (another conversation's Records in the Brain count for nothing)."""
    results: dict[int, list[tuple[int, float]]] = defaultdict(list)
    latencies: list[float] = []
    for question, evidence in scored_questions(conversation):
        for budget in BUDGETS:
            ctx = client.create_context(brain, asked(conversation, question.question, stress), budget={"tokens": budget})
            latencies.append(ctx["budget"]["ms"]["used"])
            cited = {
                turn
                for c in ctx["citations"]
                if c["record_id"] in sent
                for turn in turns_cited(sent[c["record_id"]], c["span"]["start"], c["span"]["end"])
            }
            results[budget].append((question.category, score(cited, evidence)))
    return results, latencies


def run_conversation(client: Client, service: Service, conversation: Any) -> dict[str, Any]:
    brain = f"locomo-{conversation.sample_id}"
    stress = os.environ.get("LOCOMO_STRESS") or None
    me = brain_self(conversation, stress)
    client.create_brain(brain, name=f"LoCoMo {conversation.sample_id}", self={"type": "person", "name": me} if me else None)
    started = time.perf_counter()
    sent = post(client, brain, conversation, stress, me)
    assert service.wait_idle(timeout=600)
    ingest_s = time.perf_counter() - started
    results, latencies = ask(client, brain, conversation, stress, sent)
    return {"results": results, "ingest_s": ingest_s, "turns": len(conversation.turns), "latencies": latencies}


def run_one_brain(client: Client, service: Service, everyone: list[Any], wanted: list[Any]) -> dict[str, dict[str, Any]]:
    """Every conversation's Records in one Brain, then the wanted conversations' questions asked of it."""
    stress = os.environ.get("LOCOMO_STRESS") or None
    client.create_brain("locomo-all", name="Every LoCoMo conversation")
    started = time.perf_counter()
    sent = {c.sample_id: post(client, "locomo-all", c, stress, None) for c in everyone}
    assert service.wait_idle(timeout=1800)
    ingest_s = time.perf_counter() - started
    out = {}
    for conversation in wanted:
        results, latencies = ask(client, "locomo-all", conversation, stress, sent[conversation.sample_id])
        turns = len(conversation.turns)
        out[conversation.sample_id] = {
            "results": results, "ingest_s": ingest_s * turns / sum(len(c.turns) for c in everyone), "turns": turns,
            "latencies": latencies,
        }  # fmt: skip
    return out


def test_locomo_recall_through_the_api(benchmark: Any, tmp_path: Path) -> None:
    conversations = load_conversations()
    if not conversations:
        pytest.skip("LoCoMo data not present (../shared/data/locomo)")
    everyone = conversations
    wanted = os.environ.get("LOCOMO_CONVERSATIONS")
    if wanted:
        conversations = [c for c in conversations if c.sample_id in wanted.split(",")]
    if os.environ.get("LOCOMO_ENGINE", "memory") == "duckdb":
        service = build_service(Config(engine="duckdb", data_dir=tmp_path, rate_limit_per_minute=0))
    else:
        service = Service(MemoryStore(), config=Config(engine="memory", rate_limit_per_minute=0))
        service.start()
    app = create_app(service)
    client = Client("http://bench/v1", KEY, transport=httpx.WSGITransport(app=app))
    per_conv: dict[str, dict[str, Any]] = {}

    def run() -> None:
        if os.environ.get("LOCOMO_ONE_BRAIN"):
            per_conv.update(run_one_brain(client, service, everyone, conversations))
            return
        for conversation in conversations:
            per_conv[conversation.sample_id] = run_conversation(client, service, conversation)

    benchmark.pedantic(run, rounds=1, iterations=1)
    service.stop()

    lines = []
    for label, ids in (("all", None), ("tuning", TUNING), ("held-out", HELD_OUT)):
        for budget in BUDGETS:
            scores = [
                s for sid, r in per_conv.items() if ids is None or sid in ids for _, s in r["results"][budget]
            ]
            if scores:
                mean = statistics.fmean(scores)
                benchmark.extra_info[f"recall_{label}_{budget}"] = round(mean, 4)
                lines.append(f"{label:>8} @ {budget}: {mean:.3f} over {len(scores)} questions")
    for budget in BUDGETS:
        by_cat: dict[int, list[float]] = defaultdict(list)
        for r in per_conv.values():
            for cat, s in r["results"][budget]:
                by_cat[cat].append(s)
        lines.append(f"  @ {budget} by category: " + ", ".join(f"{c}: {statistics.fmean(v):.3f}" for c, v in sorted(by_cat.items())))
    turns = sum(r["turns"] for r in per_conv.values())
    ingest = sum(r["ingest_s"] for r in per_conv.values())
    latencies = sorted(x for r in per_conv.values() for x in r["latencies"])
    lines.append(f"ingest: {turns} turns in {ingest:.1f} s ({turns / ingest:.0f} turns/s)")
    lines.append(f"server-side context ms: p50 {latencies[len(latencies) // 2]}, p99 {latencies[int(len(latencies) * 0.99)]}")
    engine = service.config.engine
    print(f"\nLoCoMo through the API ({engine} store)\n" + "\n".join(lines))
