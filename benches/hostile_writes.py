"""What one tenant's ordinary-looking messages can make derivation spend, as a client over loopback HTTP
sees it, through a real `brainstore serve` (DuckDB, or PostgreSQL): the figures behind bounding the memory
rules.

Each pattern is a Brain whose self is "Ann" and ``--records`` messages of hers, posted one after another,
each a sentence the extractor reads as a Memory:

* ``plain``: "I met Person{i} yesterday." (no attribute: the baseline);
* ``employer``: "I work at Company{i}." (a single-valued attribute, a new value each time, no change
  stated: every value conflicts with the others);
* ``likes``: "I love Thing{i}." (a many-valued attribute, a new value each time);
* ``moves``: "I moved to City{i}." (a change each time: each closes the last);
* ``repeat``: "I love cake." (the same assertion each time: one Memory, citing the first Records);
* ``dated``: "I worked at Acme in March 1900." (the same assertion at another stated month each time:
  each disputes every earlier one).

For each: seconds from the first POST to the last Record ready, then the marginal cost: further
Records posted one at a time, each waited for (POST to ready, median), and the data directory's size
(DuckDB's file; a PostgreSQL server keeps its own). Run: ``PYTHONPATH=. .venv/bin/python -m
benches.hostile_writes [--records 1500] [--patterns plain,employer] [--engines duckdb,postgres]``.
Nothing here is a timed assertion.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import datetime
from pathlib import Path

import httpx

from benches.hostile_reads import wait_ready
from benches.ingest import KEY, serve

PATTERNS = {
    "plain": "I met Person{i} yesterday.",
    "employer": "I work at Company{i}.",
    "likes": "I love Thing{i}.",
    "moves": "I moved to City{i}.",
    "repeat": "I love cake.",
    "dated": "I worked at Acme in {month} {year}.",
}
MONTHS = [datetime(2000, month, 1).strftime("%B") for month in range(1, 13)]
MARGINAL = 20


def message(text: str) -> dict:
    return {"content": {"kind": "message", "role": "user", "text": text}}


def ready(http: httpx.Client, brain: str, record_id: str) -> None:
    wait_ready(http, brain, record_id, timeout=1800, poll=0.005)  # polled often: the latency is measured


def said(template: str, i: int) -> str:
    return template.format(i=i, month=MONTHS[i % 12], year=1900 + i // 12)


def megabytes(directory: str) -> float:
    return sum(f.stat().st_size for f in Path(directory).rglob("*") if f.is_file()) / 2**20


def run(engine: str, pattern: str, records: int) -> str:
    template = PATTERNS[pattern]
    with serve(engine) as served, httpx.Client(
        base_url=served.base, headers={"Authorization": f"Bearer {KEY}"}, timeout=60
    ) as http:
        http.post("/brains", json={"id": "ann", "self": {"type": "person", "name": "Ann"}}).raise_for_status()
        start = time.monotonic()
        last = ""
        for i in range(records):
            reply = http.post("/brains/ann/records", json=message(said(template, i)))
            reply.raise_for_status()
            last = reply.json()["id"]
        ready(http, "ann", last)
        bulk = time.monotonic() - start
        marginal = []
        for i in range(records, records + MARGINAL):
            began = time.monotonic()
            reply = http.post("/brains/ann/records", json=message(said(template, i)))
            reply.raise_for_status()
            ready(http, "ann", reply.json()["id"])
            marginal.append(time.monotonic() - began)
        size = megabytes(served.data_dir)
    return (
        f"{engine:8s} {pattern:9s} {records} Records ready in {bulk:6.1f} s ({records / bulk:6.1f}/s); "
        f"the next ones POST to ready p50 {1000 * statistics.median(marginal):6.1f} ms; data {size:7.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--patterns", default=",".join(PATTERNS))
    parser.add_argument("--engines", default="duckdb")
    args = parser.parse_args()
    for engine in args.engines.split(","):
        for pattern in args.patterns.split(","):
            print(run(engine, pattern, args.records), flush=True)


if __name__ == "__main__":
    main()
