"""Forgetting a large Brain, as another tenant's clients over loopback HTTP see it, through a real
`brainstore serve` (DuckDB, whose writers take turns).

A synthetic Brain of ``--chunks`` chunks (``benches.context_latency_http``'s, written straight into the
store, seeded once into ``--data-dir`` and copied for each run, which forgets it) is served; another
tenant posts a message every 0.1 s and asks a fast Context every 0.05 s; after 3 s the synthetic Brain is
forgotten, and the other tenant goes on for ``--after`` seconds (the compaction that takes the erased
bytes out of the file runs 5 s after the forget). Reported for each run: the forget's latency and receipt,
and the other tenant's POST and Context latencies before, during and after it (p50 and max). The Brain's
index is not loaded before (its first Context would load it: 30 s at 100,000 chunks). Run:
``PYTHONPATH=. .venv/bin/python -m benches.forget_brain_http [--chunks 100000] [--runs 3]``. Nothing here
is a timed assertion.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from benches.context_latency_http import KEY, Server, seed_synthetic
from benches.rederive_http import OtherTenant


def phases(samples: list[tuple[float, float]], forget: tuple[float, float], after: float) -> str:
    """p50 and max of the samples started before the forget, during it, and in ``after`` s after it."""
    begun, ended = forget
    parts = []
    for name, low, high in (("before", 0.0, begun), ("during", begun, ended), ("after", ended, ended + after)):
        waits = [ms for at, ms in samples if low <= at < high]
        parts.append(f"{name} p50 {statistics.median(waits):.1f} max {max(waits):.0f} ms ({len(waits)})" if waits else f"{name} -")
    return "; ".join(parts)


def run(source: Path, threads: int, after: float) -> None:
    with tempfile.TemporaryDirectory(prefix="brainstore-forget-") as tmp:
        data_dir = Path(tmp) / "data"
        shutil.copytree(source, data_dir)
        server = Server(data_dir, "duckdb", threads)
        try:
            with OtherTenant(server.url) as other:
                time.sleep(3.0)
                begun = time.monotonic()
                reply = httpx.delete(f"{server.url}/brains/big", headers={"Authorization": f"Bearer {KEY}"}, timeout=600)
                ended = time.monotonic()
                reply.raise_for_status()
                time.sleep(after)
            posts, contexts = other.posts, other.contexts
            print(
                f"forgetBrain {(ended - begun) * 1000:.0f} ms, deleted {reply.json()['deleted']}\n"
                f"  the other tenant's POST: {phases(posts, (begun, ended), after)}\n"
                f"  the other tenant's Context: {phases(contexts, (begun, ended), after)}",
                flush=True,
            )
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--after", type=float, default=10.0, help="seconds measured after the forget")
    parser.add_argument("--data-dir", default=None, help="keep (and reuse) the seeded data directory here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="brainstore-forget-seed-") as tmp:
        source = Path(args.data_dir or tmp)
        if not (source / ".seeded").exists() or (source / ".seeded").read_text() != str(args.chunks):
            started = time.perf_counter()
            seed_synthetic(source, "big", args.chunks)
            (source / ".seeded").write_text(str(args.chunks))
            print(f"seeded {args.chunks} chunks in {time.perf_counter() - started:.0f} s", flush=True)
        for _ in range(args.runs):
            run(source, args.threads, args.after)


if __name__ == "__main__":
    main()
