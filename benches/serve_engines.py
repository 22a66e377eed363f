"""Ingestion and Context latency through a real `brainstore serve`, per engine and worker count.

For each of DuckDB (1 worker), PostgreSQL (1 worker) and PostgreSQL (2 workers), in one run, on a fresh
data directory and database each:

- Records/s from the first POST to every Record ready: ``--clients`` concurrent clients post ``--texts``
  short texts (LoCoMo turns when the data is there, else generated sentences) to one Brain, then one
  client polls each Record until it is ready. The accepted rate (202s) is printed beside it.
- Fast Context latency over HTTP from one client on a small Brain (``--small`` Records, all ready),
  after a warm-up: p50 and p99 of the client's wall time and of the server's ``budget.ms.used``.

The embedder's own batched throughput on the same texts (in this process, batches of 64) is printed
first, as the ceiling ingestion cannot pass. PostgreSQL is a throwaway server (tests/postgres_server.py)
with fsync off; the numbers are for comparing engines on this machine, not for capacity planning.

Run: ``.venv/bin/python -m benches.serve_engines [--texts 2000] [--clients 8]``. Not a test.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from tests.e2e.conftest import free_port
from tests.postgres_server import PostgresServer

from benches.locomo import load_conversations

KEY = "sk_test_bench_serve00001"
HEADERS = {"Authorization": f"Bearer {KEY}"}


def short_texts(n: int) -> list[str]:
    texts = [t.text for c in load_conversations() for t in c.turns if 10 <= len(t.text) <= 300]
    if len(texts) < n:
        rnd = random.Random(1)
        names, verbs, things = ["Ana", "Ben", "Caro", "Dev"], ["likes", "visited", "bought", "lost"], ["tea", "Lisbon", "a bike", "keys"]
        texts += [f"{rnd.choice(names)} {rnd.choice(verbs)} {rnd.choice(things)} on day {i}." for i in range(n)]
    return texts[:n]


def embedder_throughput(texts: list[str]) -> float:
    from brainstore.retrieval.embedder import load_embedder

    embedder = load_embedder(None)
    embedder.embed(texts[:64])  # warm-up
    started = time.perf_counter()
    for at in range(0, len(texts), 64):
        embedder.embed(texts[at : at + 64])
    return len(texts) / (time.perf_counter() - started)


class Serve:
    def __init__(self, engine: str, workers: int, root: Path, database_url: str | None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/v1"
        data = root / f"{engine}-{workers}"
        data.mkdir()
        cmd = [
            sys.executable, "-m", "brainstore.cli", "serve", "--port", str(self.port), "--engine", engine,
            "--data-dir", str(data), "--threads", "8", "--workers", str(workers),
        ]  # fmt: skip
        if database_url:
            cmd += ["--database-url", database_url]
        env = {**os.environ, "HOME": str(data), "BRAINSTORE_RATE_LIMIT": "0"}
        self.log = (data / "server.log").open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(self.base + "/brains/x", timeout=1.0)
                return
            except httpx.TransportError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {(data / 'server.log').read_text()[-2000:]}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def ingest(base: str, brain: str, texts: list[str], clients: int) -> dict[str, float]:
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
        assert client.post("/brains", json={"id": brain}).status_code == 201
    accepted_at: list[float] = []

    def post(chunk: list[str]) -> list[str]:
        ids = []
        with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
            for text in chunk:
                r = client.post(f"/brains/{brain}/records", json={"content": {"kind": "message", "text": text, "role": "user"}})
                assert r.status_code == 202, r.text
                ids.append(r.json()["id"])
                accepted_at.append(time.perf_counter())
        return ids

    shares = [texts[i::clients] for i in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        ids = [i for part in pool.map(post, shares) for i in part]
    accepted = time.perf_counter() - started
    waiting = list(ids)
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
        while waiting:
            still = []
            for rid in waiting:
                status = client.get(f"/brains/{brain}/records/{rid}").json()["status"]
                assert status != "failed", rid
                if status != "ready":
                    still.append(rid)
            waiting = still
            if waiting:
                time.sleep(0.5)
    ready = time.perf_counter() - started
    return {"accepted_per_s": len(ids) / accepted, "ready_per_s": len(ids) / ready, "ready_s": ready}


def context_latency(base: str, brain: str, queries: list[str]) -> dict[str, float]:
    wall, server = [], []
    with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as client:
        for i, query in enumerate(queries):
            started = time.perf_counter()
            r = client.post(f"/brains/{brain}/context", json={"query": query, "budget": {"tokens": 2000}})
            elapsed = (time.perf_counter() - started) * 1e3
            assert r.status_code == 200, r.text
            if i >= 20:  # warm-up: every worker builds the Brain's index on its first Context
                wall.append(elapsed)
                server.append(r.json()["budget"]["ms"]["used"])
    return {
        "wall_p50": float(np.percentile(wall, 50)),
        "wall_p99": float(np.percentile(wall, 99)),
        "server_p50": float(np.percentile(server, 50)),
        "server_p99": float(np.percentile(server, 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--small", type=int, default=200, help="Records of the Brain Contexts are measured on")
    parser.add_argument("--queries", type=int, default=220)
    parser.add_argument("--only", default="", help="comma-separated labels, e.g. postgres-2")
    args = parser.parse_args()
    texts = short_texts(args.texts + args.small + args.queries)
    bulk, small, queries = texts[: args.texts], texts[args.texts : args.texts + args.small], texts[-args.queries :]
    print(f"{len(bulk)} texts, median {statistics.median(len(t) for t in bulk):.0f} characters")
    print(f"embedder, batches of 64, in-process: {embedder_throughput(bulk):.0f} texts/s", flush=True)
    pg = PostgresServer.start()
    try:
        with tempfile.TemporaryDirectory(prefix="brainstore-bench-") as root:
            for engine, workers in (("duckdb", 1), ("postgres", 1), ("postgres", 2)):
                label = f"{engine}-{workers}"
                if args.only and label not in args.only.split(","):
                    continue
                database = pg.database() if engine == "postgres" else None
                server = Serve(engine, workers, Path(root), pg.url(database) if database else None)
                try:
                    got: dict[str, Any] = ingest(server.base, "bulk", bulk, args.clients)
                    ingest(server.base, "small", small, args.clients)
                    got |= context_latency(server.base, "small", queries)
                    if database:  # the pools keep what they grew to (idle connections close after 10 min)
                        got["connections"] = pg.connections(database)
                finally:
                    server.stop()
                    if database:
                        pg.drop(database)
                print(
                    f"{label}: {got['ready_per_s']:.1f} Records/s ready ({got['ready_s']:.0f} s; "
                    f"{got['accepted_per_s']:.0f}/s accepted); Context wall p50 {got['wall_p50']:.1f} ms, "
                    f"p99 {got['wall_p99']:.1f} ms (server p50 {got['server_p50']:.1f}, p99 {got['server_p99']:.1f})"
                    + (f"; {got['connections']} connections open" if "connections" in got else ""),
                    flush=True,
                )
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
