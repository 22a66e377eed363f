"""Server-side latency of a fast Context through the whole app on a Brain of 100,000 chunks.

The request goes through Falcon in-process (falcon.testing, no socket): authentication, routing,
validation, the Brain lookup, the query embedding (the real ONNX model), the lexical, vector and memory
lanes, scoring, packing at budget.tokens 2000, the citations and the JSON body. Measured twice: the
wall time around each request, and the server's own ``budget.ms.used``. The 100k-chunk index is the
cached synthetic one of ``test_context_latency_bench.py`` (random vectors: see there), placed in the
Brain's slot of a memory-engine Service. Nothing here is a timed assertion.

Run: ``.venv/bin/python -m pytest benches/test_context_latency_api_bench.py -q -s -p no:cacheprovider``.
"""

from __future__ import annotations

import time
from typing import Any

import falcon.testing
import numpy as np

from benches.test_context_latency_bench import _queries, big_index  # noqa: F401  (fixture)
from brainstore.api.app import create_app
from brainstore.config import Config
from brainstore.retrieval.index import BrainIndex
from brainstore.service import Service
from brainstore.store.memory import MemoryStore

KEY = "sk_test_bench_latency0001"


def test_fast_context_latency_through_the_app(big_index: BrainIndex, benchmark: Any) -> None:  # noqa: F811
    service = Service(MemoryStore(), config=Config(engine="memory", rate_limit_per_minute=0))
    app = falcon.testing.TestClient(create_app(service))
    headers = {"Authorization": f"Bearer {KEY}"}
    assert app.simulate_post("/v1/brains", json={"id": "big"}, headers=headers).status_code == 201
    brain = service.store.get_brain("test:bench", "big")
    assert brain is not None
    service.evidence._indexes[brain.uid] = big_index  # the cached 100k index stands in for derived Records
    queries = _queries()
    for query in queries[:20]:  # warm-up
        app.simulate_post("/v1/brains/big/context", json={"query": query}, headers=headers)
    wall, server, sizes = [], [], []

    def run() -> None:
        for query in queries:
            started = time.perf_counter()
            result = app.simulate_post(
                "/v1/brains/big/context", json={"query": query, "budget": {"tokens": 2000}}, headers=headers
            )
            wall.append((time.perf_counter() - started) * 1e3)
            body = result.json
            server.append(body["budget"]["ms"]["used"])
            sizes.append(len(body["evidence"]))

    benchmark.pedantic(run, rounds=1, iterations=1)
    for label, samples in (("wall, through the app", wall), ("server budget.ms.used", server)):
        p50, p99 = np.percentile(samples, 50), np.percentile(samples, 99)
        benchmark.extra_info[f"{label} p50"] = round(float(p50), 2)
        benchmark.extra_info[f"{label} p99"] = round(float(p99), 2)
        print(f"\n{label}: p50 {p50:.2f} ms, p99 {p99:.2f} ms over {len(samples)} requests")
    print(f"evidence items per Context: median {int(np.median(sizes))}")
