"""Memory quality on LoCoMo through the HTTP contract (see benches/memory_quality.py for the metrics).

Numbers are printed and stored in pytest-benchmark's extra_info; nothing here is a timed assertion.

Run: ``.venv/bin/python -m pytest benches/test_memory_quality_bench.py --benchmark-enable -s``
(``LOCOMO_CONVERSATIONS=44,47`` limits the run; ``MEMORY_QUALITY_EXAMPLES=5`` prints misses).
"""

from __future__ import annotations

import os
import statistics
from typing import Any

import pytest

from benches.locomo import HELD_OUT, TUNING
from benches.memory_quality import ConversationQuality, measure, table


def test_memory_quality_through_the_api(benchmark: Any) -> None:
    wanted = os.environ.get("LOCOMO_CONVERSATIONS")
    examples = int(os.environ.get("MEMORY_QUALITY_EXAMPLES", "0"))
    rows: list[ConversationQuality] = []

    def run() -> None:
        rows.extend(measure(wanted.split(",") if wanted else None, examples=examples))

    benchmark.pedantic(run, rounds=1, iterations=1)
    if not rows:
        pytest.skip("LoCoMo data not present (../shared/data/locomo)")
    for label, ids in (("tuning", TUNING), ("held_out", HELD_OUT)):
        part = [r for r in rows if r.sample_id in ids]
        if not part:
            continue
        obs = sum(r.observations for r in part)
        owned = sum(r.speaker_owned for r in part)
        mems = sum(r.memories for r in part)
        benchmark.extra_info[f"coverage_{label}"] = round(sum(r.covered for r in part) / obs, 4)
        benchmark.extra_info[f"right_owner_{label}"] = round(sum(r.right_owner for r in part) / obs, 4)
        benchmark.extra_info[f"misattribution_{label}"] = round(
            sum(r.misattributed for r in part) / max(owned, 1), 4
        )
        benchmark.extra_info[f"precision_{label}"] = round(sum(r.matching for r in part) / max(mems, 1), 4)
        benchmark.extra_info[f"memories_per_turn_{label}"] = round(mems / sum(r.turns for r in part), 3)
        benchmark.extra_info[f"extract_ms_median_{label}"] = round(
            statistics.median(x for r in part for x in r.extract_ms), 4
        )
    print("\nMemory quality on LoCoMo observations (memory engine, through the API)\n" + table(rows))
    for r in rows:
        for text in r.misses:
            print(f"{r.sample_id} miss: {text}")
        for text in r.wrong:
            print(f"{r.sample_id} misattributed: {text}")
