"""Forgetting one copy of a long document that other copies also state, as clients over loopback HTTP see
it, through a real `brainstore serve` (DuckDB, or PostgreSQL): the Memories the copy's Records supported
are left to the other copies and re-derived from them, in batches, each in a transaction of the store's
write lock; meanwhile another tenant posts a message every 0.1 s and asks for a Context every 0.05 s.

A document of ``--chars`` characters of LoCoMo turns is posted ``--copies`` times into one Brain (with
more than 16 copies, each Memory has more supporters than it cites, and re-derivation looks them up too),
all derived, then the first copy is forgotten. Reported: the forget's own latency, the seconds until
every re-derived Memory is listed again (re-derivation done), and the other tenant's POST and Context
latencies over that time (p50, p99, max) and how many it made. Run: ``PYTHONPATH=. .venv/bin/python -m
benches.rederive_http [--engines duckdb,postgres] [--copies 2] [--chars 150000]``. Nothing here is a timed
assertion.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

import httpx

from benches.hostile_reads import wait_ready
from benches.ingest import KEY, QUIET_KEY, serve
from brainstore.bench.loader import load_conversations

LOCOMO = Path("/work/shared/data/locomo")


def document(chars: int) -> str:
    """LoCoMo turns, a paragraph every five, up to ``chars`` characters."""
    turns = [turn.text for conversation in load_conversations(LOCOMO) for turn in conversation.turns]
    parts: list[str] = []
    size = 0
    while size < chars:
        turn = turns[len(parts) % len(turns)]
        parts.append(turn + (" " if len(parts) % 5 else "\n\n"))
        size += len(parts[-1])
    return "".join(parts)


def listed(http: httpx.Client, brain: str) -> int:
    """Memories listMemories shows (pending ones are not), every page."""
    count, cursor = 0, None
    while True:
        page = http.get(f"/brains/{brain}/memories", params={"limit": "200", **({"cursor": cursor} if cursor else {})}).json()
        count += len(page["data"])
        if not page["has_more"]:
            return count
        cursor = page["next_cursor"]


class OtherTenant:
    """Another tenant of ``base`` (``QUIET_KEY``, its Brain ``notes``) posting a message every 0.1 s and
    asking a fast Context every 0.05 s until the block ends: each one's (monotonic start, milliseconds)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.posts: list[tuple[float, float]] = []
        self.contexts: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=("/brains/notes/records", {"content": "Water the basil."}, self.posts, 0.1)),
            threading.Thread(target=self._loop, args=("/brains/notes/context", {"query": "when is the basil watered"}, self.contexts, 0.05)),
        ]  # fmt: skip

    def __enter__(self) -> OtherTenant:
        with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {QUIET_KEY}"}) as quiet:
            quiet.post("/brains", json={"id": "notes"}).raise_for_status()
            quiet.post("/brains/notes/records", json={"content": "I water the basil on Sundays."}).raise_for_status()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _loop(self, path: str, body: dict, samples: list[tuple[float, float]], pause: float) -> None:
        with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {QUIET_KEY}"}, timeout=600) as quiet:
            while not self._stop.is_set():
                started = time.monotonic()
                quiet.post(path, json=body).raise_for_status()
                samples.append((started, (time.monotonic() - started) * 1000))
                time.sleep(pause)


def spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered):.1f} p99 {p99:.1f} max {ordered[-1]:.0f} ms ({len(ordered)})"


def run(engine: str, copies: int, chars: int) -> None:
    text = document(chars)
    with serve(engine) as served:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=served.base, headers=headers, timeout=600) as http:
            http.post("/brains", json={"id": "docs"}).raise_for_status()
            ids = [http.post("/brains/docs/records", json={"content": {"kind": "document", "text": text}}).json()["id"]
                   for _ in range(copies)]  # fmt: skip
            for record_id in ids:
                wait_ready(http, "docs", record_id, timeout=3600, poll=0.5)
            before = listed(http, "docs")
            with OtherTenant(served.base) as other:
                time.sleep(1.0)
                started = time.perf_counter()
                receipt = http.delete(f"/brains/docs/records/{ids[0]}").json()
                forget_ms = (time.perf_counter() - started) * 1000
                # every Memory re-derived is listed again (those the copy alone supported are erased with it)
                expected = before - receipt["deleted"]["memories"]
                while listed(http, "docs") < expected and time.perf_counter() - started < 1800:
                    time.sleep(0.2)
                rederived_s = time.perf_counter() - started
    posts, contexts = [ms for _, ms in other.posts], [ms for _, ms in other.contexts]
    print(
        f"{engine}: {copies} copies of {len(text):,} characters, {before} Memories; the forget "
        f"{forget_ms:.0f} ms ({receipt['rederiving']['memories']} to re-derive), re-derived in {rederived_s:.1f} s\n"
        f"  the other tenant meanwhile: POST {spread(posts)}; Context {spread(contexts)}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="duckdb", help="comma-separated: duckdb, postgres")
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--chars", type=int, default=150_000)
    args = parser.parse_args()
    for engine in args.engines.split(","):
        run(engine, args.copies, args.chars)


if __name__ == "__main__":
    main()
