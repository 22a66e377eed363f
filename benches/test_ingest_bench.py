"""Ingestion through a real ``brainstore serve`` (see benches/ingest.py): Records/s from the first POST
to all ready, 8 clients, per engine, beside the embedder's own batched rate on the same texts in the
same run; with ``INGEST_FAIRNESS=1`` also a quiet tenant's wait during another tenant's bulk load.

Numbers are printed and stored in pytest-benchmark's extra_info; nothing here is a timed assertion.

Run: ``.venv/bin/python -m pytest benches/test_ingest_bench.py --benchmark-enable -s``
(``INGEST_RECORDS``, default 1000; ``INGEST_ENGINES``, default duckdb,memory).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from benches.ingest import DATA, embedder_floor, fairness, throughput, turns


def test_ingest_throughput_beside_the_embedder_floor(benchmark: Any) -> None:
    if not DATA.exists():
        pytest.skip(f"LoCoMo data not present ({DATA})")
    items = turns(int(os.environ.get("INGEST_RECORDS", "1000")))
    engines = os.environ.get("INGEST_ENGINES", "duckdb,memory").split(",")
    lines: list[str] = []

    def run() -> None:
        floor = embedder_floor(items)
        benchmark.extra_info["embedder_floor_per_s"] = round(floor.per_s, 1)
        benchmark.extra_info["embedder_floor_cpu_ms"] = round(floor.cpu_ms, 2)
        lines.append(f"embedder floor: {floor.per_s:.1f} Records/s, {floor.cpu_ms:.1f} ms of CPU a text ({len(items)} LoCoMo turns)")
        for engine in engines:
            result = throughput(engine, items)
            benchmark.extra_info[f"{engine}_accepted_per_s"] = round(result.accepted_per_s, 1)
            benchmark.extra_info[f"{engine}_ready_per_s"] = round(result.ready_per_s, 1)
            benchmark.extra_info[f"{engine}_share_of_floor"] = round(result.ready_per_s / floor.per_s, 3)
            benchmark.extra_info[f"{engine}_server_cpu_ms"] = round(result.server_cpu_ms, 2)
            benchmark.extra_info[f"{engine}_client_cpu_ms"] = round(result.client_cpu_ms, 2)
            if result.database_cpu_ms:
                benchmark.extra_info[f"{engine}_database_cpu_ms"] = round(result.database_cpu_ms, 2)
            lines.append(
                f"{engine}: {result.accepted_per_s:.1f} accepted/s, {result.ready_per_s:.1f} ready/s "
                f"({result.ready_per_s / floor.per_s:.2f} of the floor); CPU a Record: server "
                f"{result.server_cpu_ms:.1f} ms, client {result.client_cpu_ms:.1f} ms"
            )
            if os.environ.get("INGEST_FAIRNESS") == "1":
                fair = fairness(engine, items)
                benchmark.extra_info[f"{engine}_quiet_p50_s"] = round(fair.quiet_p50_s, 3)
                benchmark.extra_info[f"{engine}_quiet_max_s"] = round(fair.quiet_max_s, 3)
                benchmark.extra_info[f"{engine}_read_own_write_p50_s"] = round(fair.read_p50_s, 3)
                benchmark.extra_info[f"{engine}_read_own_write_max_s"] = round(fair.read_max_s, 3)
                lines.append(
                    f"{engine} fairness: quiet tenant ready in p50 {fair.quiet_p50_s:.2f} s, "
                    f"max {fair.quiet_max_s:.2f} s ({fair.samples} samples); reads its own write in p50 "
                    f"{fair.read_p50_s:.2f} s, max {fair.read_max_s:.2f} s ({fair.read_pending} answers 202)"
                )

    benchmark.pedantic(run, rounds=1, iterations=1)
    print("\n" + "\n".join(lines))
