"""Ingestion as a client sees it: Records/s from the first POST to all of them ready, through a real
`brainstore serve` on loopback, beside the embedder's own batched throughput on the same texts (the
floor no server on these cores can beat), and the fairness of derivation across tenants.

Run it: ``.venv/bin/python -m benches.ingest [--records 2000] [--engines duckdb,memory] [--fairness] [--documents]
[--no-throughput]``
or through pytest-benchmark (benches/test_ingest_bench.py); ``BRAINSTORE_EMBEDDER=onnx-int8`` measures
the int8 embedder (server and floor alike). ``--engines postgres`` serves PostgreSQL (a throwaway
server on loopback, fsync off; its CPU counts as the server's, and is also shown alone), with
``--workers`` processes.
``--tenants 8`` has the 8 clients post for 8 tenants, one each (a hosted server's many small writers)
instead of all for one. LoCoMo turns come from /work/shared/data/locomo.

Beside the rates it reports CPU time (Linux: from /proc): the floor's per text, and per Record the
server's (every process and thread of it, from the first POST to the last Record ready) and this
client's (its posting threads and its poller). On a machine whose cores are all busy, the rate is CPU
bound: ``cores / (server + client CPU a Record)`` is the most this work could reach with every core
busy, which shows how much of the gap to the floor is work and how much idle cores.
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from brainstore.bench.loader import load_conversations

DATA = Path("/work/shared/data/locomo")
KEY = "sk_test_ingest_bench0001"
QUIET_KEY = "sk_test_quiet_bench0002"


def turns(limit: int) -> list[tuple[str, str, str]]:
    """(speaker, occurred_at, text) of LoCoMo turns in conversation order, across conversations."""
    out = []
    for conversation in load_conversations(DATA):
        for turn in conversation.turns:
            out.append((turn.speaker, turn.occurred_at.isoformat(), turn.text))
            if len(out) == limit:
                return out
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_seconds_where(wanted: Callable[[int, list[str]], bool]) -> float:
    """User and system CPU of every live process ``wanted(pid, fields)`` picks, their waited-for children
    included; ``fields`` are /proc's stat after the command: state ppid pgrp session ... utime stime
    cutime cstime (0.0 where /proc is missing)."""
    total = 0
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if wanted(int(entry.parent.name), fields):
            total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def session_cpu_seconds(session: int) -> float:
    """CPU of every live process of a session."""
    return _cpu_seconds_where(lambda pid, fields: int(fields[3]) == session)


def own_cpu_seconds() -> float:
    """User and system CPU of this process, every thread."""
    times = os.times()
    return times.user + times.system


def busy_cores_rate(cores: int, cpu_ms: float) -> float:
    """Items a second that ``cpu_ms`` of CPU an item allows with every one of ``cores`` busy."""
    return cores * 1000 / max(cpu_ms, 1e-9)


def process_tree_cpu_seconds(root: int) -> float:
    """CPU of a live process and its live children (PostgreSQL's backends are the postmaster's
    children, each a session of its own)."""
    return _cpu_seconds_where(lambda pid, fields: pid == root or int(fields[1]) == root)


@dataclass
class Served:
    base: str  # the /v1 URL
    session: int  # the server's session id: the pid of the command, its leader
    database_pid: int | None = None  # PostgreSQL's postmaster: its backends' CPU is the server's too
    data_dir: str = ""  # the server's --data-dir

    def cpu_seconds(self) -> float:
        return session_cpu_seconds(self.session) + self.database_cpu_seconds()

    def database_cpu_seconds(self) -> float:
        """PostgreSQL's share of cpu_seconds (0 for an embedded engine)."""
        return process_tree_cpu_seconds(self.database_pid) if self.database_pid is not None else 0.0


# PostgreSQL for --engines postgres: one throwaway server on loopback (fsync off) for the run, a fresh
# database for each served engine.
_postgres: Any = None


def _postgres_database() -> tuple[str, int | None]:
    global _postgres
    if _postgres is None:
        from tests.postgres_server import PostgresServer

        _postgres = PostgresServer.start()
        atexit.register(_postgres.stop)
    return _postgres.url(_postgres.database()), _postgres.postmaster_pid()


@contextmanager
def serve(engine: str, *, threads: int = 8, workers: int = 1) -> Iterator[Served]:
    """A `brainstore serve` on a free loopback port and a fresh data directory (and database)."""
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        env = {**os.environ, "HOME": data, "BRAINSTORE_RATE_LIMIT": "0"}
        cmd = [sys.executable, "-m", "brainstore.cli", "serve", "--port", str(port), "--engine", engine,
               "--data-dir", data, "--threads", str(threads), "--workers", str(workers)]  # fmt: skip
        database_pid = None
        if engine == "postgres":
            url, database_pid = _postgres_database()
            cmd += ["--database-url", url]
        log = open(Path(data) / "server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, start_new_session=True)
        base = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    httpx.get(base + "/brains/x", timeout=1)
                    break
                except httpx.TransportError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError((Path(data) / "server.log").read_text()[-2000:]) from None
                    time.sleep(0.2)
            yield Served(base, proc.pid, database_pid, data)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()


def post_all(base: str, key: str, brain: str, items: list[dict], clients: int) -> list[tuple[str, float]]:
    """POST every item with ``clients`` threads; (record id, time acknowledged) of each."""
    acked: list[tuple[str, float]] = []
    lock = threading.Lock()
    queue = list(reversed(items))

    def work() -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            while True:
                with lock:
                    if not queue:
                        return
                    body = queue.pop()
                r = http.post(f"/brains/{brain}/records", json=body)
                r.raise_for_status()
                with lock:
                    acked.append((r.json()["id"], time.monotonic()))

    threads = [threading.Thread(target=work) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return acked


def wait_ready(base: str, key: str, brain: str, ids: list[str], timeout: float = 1800) -> dict[str, float]:
    """Poll until every Record is ready; when each was first seen ready (monotonic).

    One Brain's Records are derived in the order they were accepted, so each round stops at the first
    one still processing: polling all of them every round loaded the server it measures (thousands of
    getRecord calls a second competing with derivation for the same two cores)."""
    ready: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        pending = list(ids)
        while pending and time.monotonic() < deadline:
            while pending:
                status = http.get(f"/brains/{brain}/records/{pending[0]}").json()["status"]
                if status not in ("ready", "failed"):
                    break
                ready[pending.pop(0)] = time.monotonic()
            if pending:
                time.sleep(0.05)
    if len(ready) != len(ids):
        raise RuntimeError(f"{len(ids) - len(ready)} Records not ready after {timeout}s")
    return ready


def message(speaker: str, at: str, text: str) -> dict:
    return {"content": {"kind": "message", "text": text, "speaker": speaker, "role": "user"}, "occurred_at": at}


@dataclass
class Throughput:
    engine: str
    records: int
    accepted_per_s: float
    ready_per_s: float
    server_cpu_ms: float  # a Record, from the first POST to the last ready
    client_cpu_ms: float  # a Record, this process's posting threads and poller
    database_cpu_ms: float = 0.0  # a Record, the share of server_cpu_ms that PostgreSQL's backends spent

    @property
    def cpu_ms(self) -> float:
        """Server and client CPU a Record: the work the machine does for it."""
        return self.server_cpu_ms + self.client_cpu_ms


def tenant_key(tenant: int) -> str:
    """The key of a tenant (a project of its own) in the throughput runs; tenant 0 is KEY."""
    return KEY if tenant == 0 else f"sk_test_tenant{tenant}_bench{tenant:04d}"


def throughput(
    engine: str, items: list[tuple[str, str, str]], clients: int = 8, tenants: int = 1, workers: int = 1
) -> Throughput:
    """``items`` cut into ``tenants`` runs of consecutive turns, each posted by its own tenant to its own
    Brain, the ``clients`` shared out among them (one each at least)."""
    size = -(-len(items) // tenants)
    shares = [items[at : at + size] for at in range(0, len(items), size)]
    with serve(engine, workers=workers) as served:
        base = served.base
        for tenant, share in enumerate(shares):
            httpx.post(base + "/brains", json={"id": "b1", "self": {"type": "person", "name": share[0][0]}},
                       headers={"Authorization": f"Bearer {tenant_key(tenant)}"}).raise_for_status()  # fmt: skip
        server_cpu, database_cpu, client_cpu = served.cpu_seconds(), served.database_cpu_seconds(), own_cpu_seconds()
        start = time.monotonic()
        acked: list[list[tuple[str, float]]] = [[] for _ in shares]
        posters = [
            threading.Thread(
                target=lambda tenant=tenant, share=share: acked[tenant].extend(
                    post_all(base, tenant_key(tenant), "b1", [message(*t) for t in share], max(1, clients // len(shares)))
                )
            )
            for tenant, share in enumerate(shares)
        ]
        for poster in posters:
            poster.start()
        for poster in posters:
            poster.join()
        accepted = time.monotonic()
        for tenant, posted in enumerate(acked):
            wait_ready(base, tenant_key(tenant), "b1", [rid for rid, _ in posted])
        done = time.monotonic()
        server_cpu, client_cpu = served.cpu_seconds() - server_cpu, own_cpu_seconds() - client_cpu
        database_cpu = served.database_cpu_seconds() - database_cpu
    n = len(items)
    return Throughput(
        engine, n, n / (accepted - start), n / (done - start), server_cpu * 1000 / n, client_cpu * 1000 / n,
        database_cpu * 1000 / n,
    )  # fmt: skip


@dataclass
class Floor:
    per_s: float  # texts a second
    cpu_ms: float  # CPU a text (this process, every thread)


def embedder_floor(items: list[tuple[str, str, str]], batch: int = 64) -> Floor:
    """The offline embedder alone on the chunks these turns make, in batches: texts/s, and CPU a text."""
    from datetime import datetime

    from brainstore.derive import source_text
    from brainstore.domain import Record
    from brainstore.retrieval.chunking import embedding_text
    from brainstore.retrieval.embedder import load_embedder
    from brainstore.service.evidence import draft_chunks

    embedder = load_embedder(os.environ.get("BRAINSTORE_EMBEDDER"))  # the one the server runs
    texts = []
    for speaker, at, text in items:
        content = {"kind": "message", "text": text, "speaker": speaker, "role": "user"}
        when = datetime.fromisoformat(at)
        record = Record("rec_x", "brn_x", content, None, "shareable", when, when, "api", 0)
        texts += [embedding_text(d) for d in draft_chunks(record, source_text(content, self_name=None, occurred_at=when))]
    embedder.embed(texts[:batch])  # warm
    cpu, start = own_cpu_seconds(), time.monotonic()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    seconds, cpu = time.monotonic() - start, own_cpu_seconds() - cpu
    return Floor(len(items) / seconds, cpu * 1000 / len(items))


@dataclass
class Fairness:
    engine: str
    quiet_p50_s: float
    quiet_max_s: float
    samples: int
    # read-your-writes: a quiet Record posted, then a fast Context asked with its Brain-Watermark at once
    # (asked again on each 202) until one cites it: seconds from the POST, p50 and max; and the 202s
    read_p50_s: float
    read_max_s: float
    read_samples: int
    read_pending: int  # Contexts answered 202 (not yet at the watermark) on the way


def fairness(
    engine: str, bulk: list[tuple[str, str, str]], documents: int = 3, doc_chars: int = 150_000, workers: int = 1
) -> Fairness:
    """A quiet tenant's one-sentence Records, sent every 0.5 s while another tenant bulk-loads ``bulk``
    turns and ``documents`` long documents and until the last of them is derived (the backlog outlives
    the POSTs by far): seconds from POST to ready, p50 and max. Every other round reads its own write
    instead: a fast Context asked at once with the POST's Brain-Watermark, again on each 202, until it
    cites the new Record."""
    text = " ".join(t for _, _, t in bulk)
    doc = (text * (doc_chars // max(len(text), 1) + 1))[:doc_chars]
    with serve(engine, workers=workers) as served:
        base = served.base
        for key, brain in ((KEY, "bulk"), (QUIET_KEY, "quiet")):
            httpx.post(base + "/brains", json={"id": brain}, headers={"Authorization": f"Bearer {key}"}).raise_for_status()
        acked: list[tuple[str, float]] = []
        loader = threading.Thread(
            target=lambda: acked.extend(
                post_all(base, KEY, "bulk", [{"content": doc} for _ in range(documents)] + [message(*t) for t in bulk], 8)
            )
        )
        loader.start()
        waits: list[float] = []
        reads: list[float] = []
        stats: Counter[str] = Counter()
        with (
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {QUIET_KEY}"}, timeout=60) as http,
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as bulk_http,
        ):
            time.sleep(1.0)  # the bulk load is under way

            def backlog() -> bool:
                if loader.is_alive() or not acked:
                    return True
                return any(
                    bulk_http.get(f"/brains/bulk/records/{rid}").json()["status"] == "processing"
                    for rid in (acked[-1][0], *(rid for rid, _ in acked[:documents]))
                )

            while backlog() or len(waits) < 5 or len(reads) < 5:
                sent = time.monotonic()
                if len(reads) < len(waits):
                    reads.append(read_own_write(http, len(reads), stats) - sent)
                else:
                    rid = http.post("/brains/quiet/records", json={"content": "I had tea with Sam today."}).json()["id"]
                    while http.get(f"/brains/quiet/records/{rid}").json()["status"] != "ready":
                        time.sleep(0.02)
                    waits.append(time.monotonic() - sent)
                time.sleep(0.5)
                if len(waits) >= 400:
                    break
        loader.join()
    return Fairness(
        engine,
        statistics.median(waits),
        max(waits),
        len(waits),
        statistics.median(reads),
        max(reads),
        len(reads),
        stats["pending"],
    )


@dataclass
class DocumentFairness:
    engine: str
    quiet_p50_s: float
    quiet_max_s: float
    quiet_first_s: float  # the first, posted while the other tenant's documents wait to be read
    samples: int
    bulk_s: float  # from the first bulk POST to the last bulk document ready


def document_fairness(
    engine: str,
    bulk: list[tuple[str, str, str]],
    documents: int = 40,
    doc_chars: int = 190_000,
    quiet_chars: int = 25_000,
    workers: int = 1,
) -> DocumentFairness:
    """A quiet tenant's long documents (``quiet_chars``, long enough to be read apart from the worker),
    one at a time every 0.5 s, while another tenant posts ``documents`` documents of ``doc_chars``: seconds
    from each quiet POST to ready, p50 and max, until the bulk tenant's documents are all ready."""
    text = " ".join(t for _, _, t in bulk)
    whole = (text * ((doc_chars + quiet_chars) * 2 // max(len(text), 1) + 1))

    def cut(start: int, chars: int) -> str:
        start %= len(whole) - chars
        return whole[start : start + chars]

    with serve(engine, workers=workers) as served:
        base = served.base
        for key, brain in ((KEY, "bulk"), (QUIET_KEY, "quiet")):
            httpx.post(base + "/brains", json={"id": brain}, headers={"Authorization": f"Bearer {key}"}).raise_for_status()
        acked: list[tuple[str, float]] = []
        began = time.monotonic()
        loader = threading.Thread(
            target=lambda: acked.extend(
                post_all(base, KEY, "bulk", [{"content": cut(i * 7919, doc_chars)} for i in range(documents)], 4)
            )
        )
        loader.start()
        waits: list[float] = []
        with (
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {QUIET_KEY}"}, timeout=60) as http,
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as bulk_http,
        ):
            time.sleep(1.0)  # the bulk load is under way
            bulk_done: float | None = None
            while bulk_done is None or len(waits) < 5:
                sent = time.monotonic()
                reply = http.post("/brains/quiet/records", json={"content": cut(len(waits) * 104_729, quiet_chars)})
                reply.raise_for_status()
                rid = reply.json()["id"]
                while http.get(f"/brains/quiet/records/{rid}").json()["status"] == "processing":
                    time.sleep(0.05)
                waits.append(time.monotonic() - sent)
                if bulk_done is None and not loader.is_alive():
                    statuses = [bulk_http.get(f"/brains/bulk/records/{r}").json()["status"] for r, _ in acked]
                    if "processing" not in statuses:
                        bulk_done = time.monotonic() - began
                time.sleep(0.5)
        loader.join()
    assert bulk_done is not None
    return DocumentFairness(engine, statistics.median(waits), max(waits), waits[0], len(waits), bulk_done)


def read_own_write(http: httpx.Client, n: int, stats: Counter[str]) -> float:
    """Post a Record the quiet Brain has not heard (the ``n``th), then ask about it with the POST's
    Brain-Watermark until a Context cites it; when that Context came back (monotonic)."""
    town = f"Town{n:04d}"
    reply = http.post("/brains/quiet/records", json={"content": f"My sister moved to {town} last spring."})
    reply.raise_for_status()
    rid, watermark = reply.json()["id"], reply.headers["Brain-Watermark"]
    ask = {"query": f"Where did my sister move to? {town}"}
    while True:
        context = http.post("/brains/quiet/context", json=ask, headers={"Brain-Watermark": watermark})
        if context.status_code == 202:
            stats["pending"] += 1
            time.sleep(0.02)
            continue
        context.raise_for_status()
        if not any(c["record_id"] == rid for c in context.json()["citations"]):
            raise RuntimeError(f"a Context at the watermark of {rid} does not cite it")
        return time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--engines", default="duckdb,memory")
    parser.add_argument("--fairness", action="store_true")
    parser.add_argument(
        "--documents", action="store_true", help="a quiet tenant's long documents during another's (fairness)"
    )
    parser.add_argument("--tenants", type=int, default=1, help="the 8 clients post for this many tenants")
    parser.add_argument("--no-throughput", action="store_true", help="only the fairness runs asked for")
    parser.add_argument("--workers", type=int, default=1, help="the server's worker processes (postgres only)")
    args = parser.parse_args()
    items = turns(args.records)
    cores = os.cpu_count() or 1
    if not args.no_throughput:
        floor = embedder_floor(items)
        print(
            f"embedder floor: {floor.per_s:.1f} Records/s ({len(items)} LoCoMo turns, batches of 64), "
            f"{floor.cpu_ms:.1f} ms of CPU a text ({busy_cores_rate(cores, floor.cpu_ms):.0f}/s with {cores} cores busy)"
        )
        for engine in args.engines.split(","):
            result = throughput(engine, items, tenants=args.tenants, workers=args.workers)
            bound = busy_cores_rate(cores, result.cpu_ms)
            label = engine if args.tenants == 1 else f"{engine}, {args.tenants} tenants"
            print(
                f"{label}: {result.accepted_per_s:.1f} accepted/s, {result.ready_per_s:.1f} ready/s "
                f"({result.ready_per_s / floor.per_s:.2f} of the floor); CPU a Record: server "
                f"{result.server_cpu_ms:.1f} ms"
                + (f" (the database {result.database_cpu_ms:.2f})" if result.database_cpu_ms else "")
                + f", client {result.client_cpu_ms:.1f} ms "
                f"({bound:.0f}/s with {cores} cores busy, {bound / floor.per_s:.2f} of the floor)"
            )
    if args.fairness:
        for engine in args.engines.split(","):
            f = fairness(engine, items, workers=args.workers)
            print(
                f"{engine} fairness: quiet tenant ready in p50 {f.quiet_p50_s:.2f} s, max {f.quiet_max_s:.2f} s "
                f"({f.samples} samples); reads its own write in p50 {f.read_p50_s:.2f} s, max {f.read_max_s:.2f} s "
                f"({f.read_samples} samples, {f.read_pending} Contexts answered 202 on the way)"
            )
    if args.documents:
        for engine in args.engines.split(","):
            d = document_fairness(engine, items, workers=args.workers)
            print(
                f"{engine} long documents: quiet tenant's 25,000 characters ready in p50 {d.quiet_p50_s:.2f} s, "
                f"max {d.quiet_max_s:.2f} s, the first {d.quiet_first_s:.2f} s ({d.samples} samples) while "
                f"another tenant's 40 of 190,000 were all ready in {d.bulk_s:.1f} s"
            )


if __name__ == "__main__":
    main()
