"""Fast Context latency as a client sees it: ``brainstore serve`` on loopback, one keep-alive client.

Two Brains, each measured by the same client in one run (so the numbers pair up):

* ``--locomo 26``: a LoCoMo conversation ingested through the API (real embeddings), then every
  scored question of it asked as a fast Context at ``budget.tokens`` 2000;
* ``--chunks 100000``: a synthetic Brain of that many chunks (the text generator of
  ``test_context_latency_bench.py``, random unit vectors stored as the default model's embeddings:
  search cost depends on the graph's size, not on where the vectors came from), written straight
  into the DuckDB store before the server starts, queried with the synthetic questions of that bench.
  The first Context builds the Brain's index from the store (or loads it from the index files a
  run with the same ``--data-dir`` left); it is left out of the samples. At 1,000,000 chunks
  (``--chunks 1000000``, opt-in) seeding takes about 5 minutes and building the graph about 12.

For each request: the client's wall time (request written to response read, over a kept-alive
connection) and the server's ``budget.ms.used``; p50 and p99 of both, and of their difference (what
HTTP, gunicorn, Falcon, validation and serialization add). Each query is asked twice in turn, by httpx and
by the standard library's http.client, each on its own kept-alive connection: the difference between
the two rows is what the Python client library itself adds. Nothing here is a timed assertion.

``--turns 17600``: that many LoCoMo turns (every conversation, then again, each copy a year later)
posted through the API by 8 clients, as a hosted tenant would fill a Brain, and every LoCoMo question
asked of it (``--queries`` of them) twice: as soon as the last turn is ready, with the index the
ingestion built live and its files not yet written, and again after the server is restarted on the
same data directory, the index loaded from its files.

``--rebuild 180`` removes the synthetic Brain's index files before the server starts, as a crash before
they were written (or a PostgreSQL process start) leaves it: the first Context rebuilds the index from
the store and is answered from the exact matrix while the vector graph is built in the background.
For that many seconds after it one client asks fast Contexts without pause; p50 and p99 of each 10 s,
and when the index files appear (the graph built and saved), are printed before the usual measurement.

``--posting 4`` has another tenant's 4 clients post LoCoMo turns to a Brain of theirs, each as fast as
the server answers, while the synthetic Brain is measured: a bulk load beside the Contexts.

``--forgetting 2`` has another client forget one of the synthetic Brain's Records every 2 s while it
is measured (each forget deletes the Brain's index files, which are written again later: a save that
holds the GIL for most of a second at 100,000 chunks); run it for at least a minute of queries
(``--queries 2000``) to include a save. It changes the data directory: the Records it forgot are gone.

Run: ``.venv/bin/python -m benches.context_latency_http --chunks 100000 --locomo 26``
(``--engine memory`` serves the memory engine, ``--engine postgres`` PostgreSQL: a throwaway server on
loopback, fsync off, unless ``--database-url`` names one, and ``--workers`` processes; only
``--locomo`` and ``--turns`` apply to them).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

KEY = "sk_test_latency_http0001"
POSTING_KEY = "sk_test_latency_bulk0002"  # the other tenant of --posting
BUDGET = 2000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_synthetic(data_dir: Path, brain_id: str, n_chunks: int) -> None:
    """``n_chunks`` chunks of synthetic conversation in ``brain_id``, written straight to the store."""
    from benches.test_context_latency_bench import SPEAKERS, _vocabulary, _zipf_words
    from brainstore.app import build_service
    from brainstore.config import Config
    from brainstore.derive import source_text
    from brainstore.domain import Principal, Record, RecordStatus, StoredChunk
    from brainstore.retrieval.chunking import chunk_record
    from brainstore.retrieval.embedder import DEFAULT_MODEL_NAME

    config = Config(engine="duckdb", data_dir=data_dir, rate_limit_per_minute=0)
    service = build_service(config)
    try:
        principal = Principal(env="test", project="latency", scopes=frozenset(), key_label="k", key_hash="h")
        service.create_brain(principal, brain_id, name=None, self_entity=None)
        store = service.store
        brain = store.get_brain(principal.namespace, brain_id)
        assert brain is not None
        rng, nrng = random.Random(4), np.random.default_rng(4)
        vocab = _vocabulary(rng)
        start = datetime(2022, 1, 1, tzinfo=UTC)
        built, i = 0, 0
        while built < n_chunks:
            records, chunks = [], []
            while built < n_chunks and len(records) < 2000:
                words = _zipf_words(nrng, vocab, int(nrng.integers(8, 45)))
                when = start + timedelta(minutes=3 * i)
                content = {"kind": "message", "text": " ".join(words) + ".", "speaker": SPEAKERS[i % len(SPEAKERS)]}
                rid = f"rec_synthetic{i:09d}"
                src = source_text(content, self_name=None, occurred_at=when)
                drafts = chunk_record(rid, src, source_name=None, trust="normal", visibility="shareable")
                drafts = drafts[: n_chunks - built]
                vectors = nrng.standard_normal((len(drafts), 384)).astype("<f4")
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                records.append(
                    Record(rid, brain.uid, content, None, "shareable", when, when, "api", 0, "processing")
                )
                chunks += [StoredChunk(brain.uid, d, DEFAULT_MODEL_NAME, v.tobytes()) for d, v in zip(drafts, vectors, strict=True)]
                built += len(drafts)
                i += 1
            with store.atomic():
                for record in records:
                    store.insert_record(record)
                store.insert_chunks(chunks)
                store.append_record_statuses(
                    [RecordStatus(brain.uid, r.id, "ready", store.next_seq(brain.uid)) for r in records]
                )
    finally:
        service.stop()
        service.store.close()  # the server's worker opens the file next: DuckDB admits one process


class Server:
    def __init__(
        self, data_dir: Path, engine: str, threads: int, *, database_url: str | None = None, workers: int = 1
    ) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        env = dict(os.environ, BRAINSTORE_RATE_LIMIT="0")
        cmd = [
            str(Path(sys.executable).with_name("brainstore")), "serve", "--engine", engine, "--data-dir", str(data_dir),
            "--port", str(self.port), "--threads", str(threads), "--workers", str(workers),
        ]  # fmt: skip
        if database_url is not None:
            cmd += ["--database-url", database_url]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/brains/none", headers={"Authorization": f"Bearer {KEY}"}, timeout=2)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the server did not start")

    def rss_mib(self) -> float:
        """Resident memory of the server's processes (the arbiter and its worker)."""
        pids = [self.proc.pid]
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        if children.exists():
            pids += [int(p) for p in children.read_text().split()]
        total = 0
        for pid in pids:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        return total / 1024

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _turn_body(turn: Any, occurred_at: datetime) -> dict[str, Any]:
    """A LoCoMo turn as a rememberRecord body, said at ``occurred_at``."""
    return {
        "content": {"kind": "message", "text": turn.text, "speaker": turn.speaker, "role": "other"},
        "occurred_at": occurred_at.isoformat().replace("+00:00", "Z"),
    }


def ingest_locomo(client: httpx.Client, url: str, sample_id: str) -> list[str]:
    from benches import locomo

    [conversation] = [c for c in locomo.load_conversations() if c.sample_id == sample_id]
    brain = f"locomo-{sample_id}"
    client.post(f"{url}/brains", json={"id": brain}).raise_for_status()
    ids = []
    for turn in conversation.turns:
        reply = client.post(f"{url}/brains/{brain}/records", json=_turn_body(turn, turn.occurred_at))
        reply.raise_for_status()
        ids.append(reply.json()["id"])
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if client.get(f"{url}/brains/{brain}/records/{ids[-1]}").json()["status"] != "processing":
            break
        time.sleep(0.5)
    return [q.question for q, _ in locomo.scored_questions(conversation)]


def ingest_turns(url: str, brain: str, n: int) -> list[str]:
    """``n`` LoCoMo turns posted to a new Brain by 8 clients, every one ready when this returns; the
    scored LoCoMo questions, each once."""
    from benches import locomo
    from benches.ingest import post_all, wait_ready

    conversations = locomo.load_conversations()
    bodies: list[dict[str, Any]] = []
    while len(bodies) < n:
        years = len(bodies) // max(1, sum(len(c.turns) for c in conversations))
        for conversation in conversations:
            for turn in conversation.turns:
                bodies.append(_turn_body(turn, turn.occurred_at.replace(year=turn.occurred_at.year + years)))
        del bodies[n:]
    headers = {"Authorization": f"Bearer {KEY}"}
    httpx.post(f"{url}/brains", json={"id": brain}, headers=headers).raise_for_status()
    started = time.perf_counter()
    posted = post_all(url, KEY, brain, bodies, clients=8)
    wait_ready(url, KEY, brain, [record_id for record_id, _ in posted])
    print(f"ingested {n} turns in {time.perf_counter() - started:.0f} s", flush=True)
    return [q.question for c in conversations for q, _ in locomo.scored_questions(c)]


class StdlibClient:
    """The standard library's http.client on one kept-alive connection: next to httpx, how much of the
    gap between the server's ``ms.used`` and the client's wall time is the Python client library's."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._path = parts.path
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)

    def post(self, path: str, body: str) -> bytes:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}
        self._connection.request("POST", self._path + path, body=body, headers=headers)
        reply = self._connection.getresponse()
        data = reply.read()
        if reply.status != 200:
            raise RuntimeError(f"{reply.status}: {data[:200]!r}")
        return data

    def close(self) -> None:
        self._connection.close()


def measure(
    client: httpx.Client, url: str, brain: str, queries: list[str], include: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Each query asked by httpx and by http.client in turn (who goes first alternates), on their own
    kept-alive connections; per client, p50 and p99 of its wall time, the server's ``ms.used`` and
    their difference. ``include``: the Context's parts (the default: evidence)."""
    stdlib = StdlibClient(url)

    def by_httpx(body: str) -> bytes:
        reply = client.post(f"{url}/brains/{brain}/context", content=body, headers={"Content-Type": "application/json"})
        reply.raise_for_status()
        return reply.content

    def by_stdlib(body: str) -> bytes:
        return stdlib.post(f"/brains/{brain}/context", body)

    askers = {"httpx": by_httpx, "http.client": by_stdlib}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in askers}
    try:
        for i, query in enumerate(queries):
            request: dict[str, Any] = {"query": query, "budget": {"tokens": BUDGET}}
            if include:
                request["include"] = include
            body = json.dumps(request)
            for name in list(askers)[:: 1 if i % 2 == 0 else -1]:
                started = time.perf_counter()
                data = askers[name](body)
                elapsed = (time.perf_counter() - started) * 1e3
                samples[name].append((elapsed, json.loads(data)["budget"]["ms"]["used"]))
    finally:
        stdlib.close()
    results = {}
    for name, pairs in samples.items():
        w, s = np.asarray([p[0] for p in pairs]), np.asarray([p[1] for p in pairs])
        results[name] = {
            "n": len(w),
            "client p50": float(np.percentile(w, 50)),
            "client p99": float(np.percentile(w, 99)),
            "server p50": float(np.percentile(s, 50)),
            "server p99": float(np.percentile(s, 99)),
            "gap p50": float(np.percentile(w - s, 50)),
            "gap p99": float(np.percentile(w - s, 99)),
        }
    return results


class Forgetting:
    """Another client forgetting a random synthetic Record every ``every`` seconds, until stopped."""

    def __init__(self, url: str, brain: str, records: int, every: float) -> None:
        self.url, self.brain, self.records, self.every = url, brain, records, every
        self.statuses: Counter[int] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Forgetting:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        rng = random.Random()
        with httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as client:
            while not self._stop.wait(self.every):
                record = f"rec_synthetic{rng.randrange(self.records):09d}"
                self.statuses[client.delete(f"{self.url}/brains/{self.brain}/records/{record}").status_code] += 1


class Posting:
    """Another tenant's ``clients`` clients posting LoCoMo turns to a Brain of theirs, each as fast as the
    server answers, until stopped: a bulk load beside the Contexts measured. They run in a process of
    their own: threads of this one would hold its GIL against the client being measured."""

    def __init__(self, url: str, clients: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._posted = context.Value("q", 0)
        self._process = context.Process(target=_post_until, args=(url, clients, self._stop, self._posted), daemon=True)

    @property
    def posted(self) -> int:
        return int(self._posted.value)

    def __enter__(self) -> Posting:
        self._process.start()
        time.sleep(3.0)  # the load is under way before the first Context is measured
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(60)


def _post_until(url: str, clients: int, stop: Any, posted: Any) -> None:
    """Posting's process: ``clients`` threads posting turns until ``stop`` is set, counting in ``posted``."""
    from benches.ingest import message, turns

    bodies = [message(*turn) for turn in turns(6000)]
    headers = {"Authorization": f"Bearer {POSTING_KEY}"}
    if httpx.get(f"{url}/brains/bulk", headers=headers).status_code == 404:
        httpx.post(f"{url}/brains", json={"id": "bulk"}, headers=headers).raise_for_status()

    def run(first: int) -> None:
        with httpx.Client(headers=headers, timeout=60) as client:
            at = first
            while not stop.is_set():
                client.post(f"{url}/brains/bulk/records", json=bodies[at % len(bodies)]).raise_for_status()
                at += clients
                with posted.get_lock():
                    posted.value += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} on {os.cpu_count()} cores"


def while_rebuilt(client: httpx.Client, url: str, brain: str, queries: list[str], seconds: float, index_dir: Path) -> None:
    """Fast Contexts asked without pause for ``seconds``: p50 and p99 of each 10 s, and when the
    Brain's index files appeared."""
    started = window_started = time.perf_counter()
    window: list[float] = []
    saved = False
    i = 0
    while time.perf_counter() - started < seconds:
        asked = time.perf_counter()
        body = {"query": queries[i % len(queries)], "budget": {"tokens": BUDGET}}
        client.post(f"{url}/brains/{brain}/context", json=body).raise_for_status()
        window.append((time.perf_counter() - asked) * 1e3)
        i += 1
        if not saved and any(index_dir.glob("*/vectors.hnsw")):
            saved = True
            print(f"  index files written {time.perf_counter() - started:.0f} s after the first Context", flush=True)
        if time.perf_counter() - window_started >= 10:
            window.sort()
            print(
                f"  {time.perf_counter() - started:4.0f} s: n={len(window)} client p50 {statistics.median(window):6.2f} "
                f"p99 {window[int(0.99 * (len(window) - 1))]:6.2f} ms",
                flush=True,
            )
            window, window_started = [], time.perf_counter()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=0, help="synthetic Brain size (0: none)")
    parser.add_argument("--locomo", default=None, help="a LoCoMo conversation to ingest through the API")
    parser.add_argument("--turns", type=int, default=0, help="LoCoMo turns to post through the API (0: none)")
    parser.add_argument("--engine", choices=("duckdb", "memory", "postgres"), default="duckdb")
    parser.add_argument(
        "--database-url", default=None, help="postgres: the database (default: a throwaway server on loopback)"
    )
    parser.add_argument("--workers", type=int, default=1, help="worker processes (more than 1: postgres only)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--include", default=None, help="the Context's parts, comma-separated, e.g. evidence,memories (default: evidence)"
    )
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--data-dir", default=None, help="keep (and reuse) the seeded data directory here")
    parser.add_argument(
        "--posting", type=int, default=0, help="another tenant's clients posting Records throughout the measurement"
    )
    parser.add_argument(
        "--forgetting", type=float, default=0.0, help="another client forgets a synthetic Record every this many seconds"
    )
    parser.add_argument(
        "--rebuild", type=float, default=0.0, help="remove the index files first; measure this many seconds after"
    )
    args = parser.parse_args(argv)
    include = args.include.split(",") if args.include else None
    from benches.test_context_latency_bench import _queries

    with tempfile.TemporaryDirectory(prefix="brainstore-latency-") as tmp, contextlib.ExitStack() as owned:
        data_dir = Path(args.data_dir or tmp)
        database_url = args.database_url
        if args.engine == "postgres" and database_url is None:
            from tests.postgres_server import PostgresServer

            postgres = PostgresServer.start()
            owned.callback(postgres.stop)
            database_url = postgres.url(postgres.database())
        serving = {"database_url": database_url, "workers": args.workers}
        if args.chunks and args.engine == "duckdb" and not (data_dir / ".seeded").exists():
            started = time.perf_counter()
            seed_synthetic(data_dir, "big", args.chunks)
            (data_dir / ".seeded").write_text(str(args.chunks))
            print(f"seeded {args.chunks} chunks in {time.perf_counter() - started:.0f} s", flush=True)
        if args.rebuild and (data_dir / "index").is_dir():
            shutil.rmtree(data_dir / "index")
        server = Server(data_dir, args.engine, args.threads, **serving)
        try:
            headers = {"Authorization": f"Bearer {KEY}"}
            with httpx.Client(headers=headers, timeout=600) as client:
                results = {}
                if args.chunks and args.engine == "duckdb":
                    pool = _queries()  # 300 questions, asked again in turn when more are wanted
                    queries = [pool[i % len(pool)] for i in range(args.queries)]
                    started = time.perf_counter()
                    # no timeout: at 1,000,000 chunks, building the graph from the store takes many minutes
                    client.post(f"{server.url}/brains/big/context", json={"query": "warm up"}, timeout=None).raise_for_status()
                    print(
                        f"first Context (the index loaded from its files, or built from the store): {time.perf_counter() - started:.1f} s; "
                        f"server RSS {server.rss_mib():.0f} MiB",
                        flush=True,
                    )
                    if args.rebuild:
                        while_rebuilt(client, server.url, "big", queries, args.rebuild, data_dir / "index")
                    measure(client, server.url, "big", queries[:20])
                    with contextlib.ExitStack() as load:
                        # a synthetic Record has 2-3 chunks: a quarter of the chunk count are Records
                        forgetting = (
                            load.enter_context(Forgetting(server.url, "big", args.chunks // 4, args.forgetting))
                            if args.forgetting > 0
                            else None
                        )
                        posting = load.enter_context(Posting(server.url, args.posting)) if args.posting else None
                        started, posted = time.perf_counter(), posting.posted if posting else 0
                        results[f"{args.chunks} chunks"] = measure(client, server.url, "big", queries, include)
                        if posting is not None:
                            rate = (posting.posted - posted) / (time.perf_counter() - started)
                            print(f"the other tenant posted {rate:.0f} Records/s meanwhile", flush=True)
                    if forgetting is not None:
                        print(f"forgotten meanwhile, by status: {dict(forgetting.statuses)}", flush=True)
                if args.turns:
                    questions = ingest_turns(server.url, "turns", args.turns)
                    questions = [questions[i % len(questions)] for i in range(args.queries)]
                    results[f"{args.turns} turns, live"] = measure(client, server.url, "turns", questions, include)
                    server.stop()
                    server = Server(data_dir, args.engine, args.threads, **serving)
                    measure(client, server.url, "turns", questions[:20])
                    results[f"{args.turns} turns, loaded"] = measure(client, server.url, "turns", questions, include)
                if args.locomo:
                    questions = ingest_locomo(client, server.url, args.locomo)
                    measure(client, server.url, f"locomo-{args.locomo}", questions[:20])
                    asked = questions[: args.queries]
                    results[f"LoCoMo {args.locomo}"] = measure(client, server.url, f"locomo-{args.locomo}", asked, include)
        finally:
            server.stop()
    parts = args.include or "evidence"
    print(f"fast Context ({parts}) over loopback HTTP, {args.engine}, budget {BUDGET} ({_load()} at the end)")
    for name, by_client in results.items():
        for client_name, r in by_client.items():
            print(
                f"  {name:<22} {client_name:<11} n={r['n']:<4} client p50 {r['client p50']:6.2f} p99 {r['client p99']:6.2f} | "
                f"server p50 {r['server p50']:6.2f} p99 {r['server p99']:6.2f} | gap p50 {r['gap p50']:5.2f} p99 {r['gap p99']:5.2f} ms"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
