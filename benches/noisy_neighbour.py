"""One tenant's requests in flight against another tenant's fast Context, as the second client sees it.

``brainstore serve`` (8 threads) on loopback; two tenants (projects), each with a Brain of the same
LoCoMo turns posted through the API. The quiet tenant asks fast Contexts one at a time, 0.1 s apart:
first alone, then while the busy tenant's ``--clients`` clients ask Contexts (``--mode`` fast or
thorough) back to back. Reported: the quiet tenant's client-side p50, p90 and max in both phases, and
the busy tenant's Contexts/s. Nothing here is a timed assertion.

Run: ``.venv/bin/python -m benches.noisy_neighbour [--engine duckdb] [--turns 600] [--mode thorough]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import httpx

from benches.ingest import DATA, QUIET_KEY, message, post_all, serve, turns, wait_ready
from brainstore.bench.loader import load_conversations

BUSY_KEY = "sk_test_busy_bench0003"


def questions(limit: int) -> list[str]:
    out = [q.question for conversation in load_conversations(DATA) for q in conversation.qa]
    return out[:limit]


def ask_quietly(base: str, asked: list[str], samples: int) -> list[float]:
    """``samples`` fast Contexts of the quiet tenant, 0.1 s apart: each one's client-side seconds."""
    waits = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {QUIET_KEY}"}, timeout=60) as http:
        for i in range(samples):
            started = time.perf_counter()
            http.post("/brains/b1/context", json={"query": asked[i % len(asked)]}).raise_for_status()
            waits.append(time.perf_counter() - started)
            time.sleep(0.1)
    return waits


def summary(waits: list[float]) -> str:
    ms = [w * 1000 for w in waits]
    return f"p50 {statistics.median(ms):.1f} ms, p90 {statistics.quantiles(ms, n=10)[-1]:.1f} ms, max {max(ms):.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="duckdb")
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--mode", default="thorough", choices=("fast", "thorough"))
    parser.add_argument("--samples", type=int, default=60)
    args = parser.parse_args(argv)
    items, asked = turns(args.turns), questions(200)
    with serve(args.engine) as served:
        base = served.base
        for key in (BUSY_KEY, QUIET_KEY):
            httpx.post(base + "/brains", json={"id": "b1"}, headers={"Authorization": f"Bearer {key}"}).raise_for_status()
            acked = post_all(base, key, "b1", [message(*t) for t in items], 8)
            wait_ready(base, key, "b1", [rid for rid, _ in acked])
        ask_quietly(base, asked, 5)  # warm
        alone = ask_quietly(base, asked, args.samples)

        stop = threading.Event()
        answered = [0] * args.clients

        failures: list[BaseException] = []

        def busy(client: int) -> None:
            body = {"mode": args.mode}
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {BUSY_KEY}"}, timeout=120) as http:
                i = client
                while not stop.is_set():
                    try:
                        reply = http.post("/brains/b1/context", json={**body, "query": asked[i % len(asked)]})
                        reply.raise_for_status()
                    except httpx.HTTPError as exc:  # a busy client that stopped would flatter the quiet one
                        failures.append(exc)
                        return
                    answered[client] += 1
                    i += args.clients

        workers = [threading.Thread(target=busy, args=(c,)) for c in range(args.clients)]
        for worker in workers:
            worker.start()
        time.sleep(2.0)  # the busy clients are under way
        started, before = time.monotonic(), sum(answered)
        loaded = ask_quietly(base, asked, args.samples)
        rate = (sum(answered) - before) / (time.monotonic() - started)
        stop.set()
        for worker in workers:
            worker.join()
    if failures:
        print(f"{len(failures)} busy clients failed, the first with: {failures[0]!r}", file=sys.stderr)
        return 1
    print(f"{args.engine}, {args.turns} turns a Brain, quiet tenant's fast Context:")
    print(f"  alone: {summary(alone)}")
    print(f"  beside {args.clients} clients of another tenant asking {args.mode} Contexts: {summary(loaded)}")
    print(f"  the busy tenant: {rate:.1f} {args.mode} Contexts/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
