"""``make load``: a real ``brainstore serve`` under a mixed workload, then a check that nothing was lost.

1. Starts ``brainstore serve`` (DuckDB engine) on a free loopback port with a temporary data directory
   and a rate limit far above what the run can reach (a 429 is an error here, not back-pressure).
2. Creates a few Brains and seeds each with Records, then runs ``benches/load/locustfile.py`` with
   locust headless: concurrent clients, no think time, for ``--seconds``.
3. Reports requests/s, p50 and p99 (locust's own statistics) per operation, and every failure.
4. Checks every Record acknowledged with 202 (seeded or under load): getRecord until it is ready, up
   to ``--verify-timeout`` seconds. A Record the server no longer knows is lost.
5. Stops the server whatever happens: on success, failure, Ctrl-C, SIGTERM, and (through the kernel's
   parent-death signal) even when this process is killed.

Exit status 0 only when there were no failed requests, no lost Record and every Record became ready.
Run it with ``make load`` (``LOAD_SECONDS``, ``LOAD_USERS``); locust lives in its own virtualenv.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from brainstore.client import Client
from brainstore.errors import NotFound

HERE = Path(__file__).resolve().parent
KEY = "sk_test_load_s3cret0001"
OPERATIONS = ("rememberRecord", "createContext", "listMemories", "acceptObject")
SEED_RECORDS = 20
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In a child's process: SIGTERM when this runner dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Server:
    def __init__(self, workdir: Path, threads: int) -> None:
        self.port = free_port()
        self.data_dir = workdir / "data"
        self.log = workdir / "server.log"
        self.threads = threads
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 90.0) -> None:
        env = {
            **os.environ,
            "HOME": str(self.data_dir.parent),  # gunicorn's control socket, if any, stays in the workdir
            "BRAINSTORE_RATE_LIMIT": "1000000000",
        }
        cmd = [sys.executable, "-m", "brainstore.cli", "serve", "--port", str(self.port), "--engine", "duckdb",
               "--data-dir", str(self.data_dir), "--threads", str(self.threads)]  # fmt: skip
        with self.log.open("ab") as log:
            # Its own session, so a signal to the group reaches gunicorn's worker too.
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=log, env=env, start_new_session=True, preexec_fn=_die_with_parent
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited:\n{self.log.read_text()[-2000:]}")
            try:
                httpx.get(self.base_url + "/brains/x", timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError(f"server did not answer in {timeout:.0f} s:\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


def seed(client: Client, brains: int, run_id: str) -> tuple[list[str], list[dict[str, str]]]:
    ids = [f"load-{i}-{run_id}" for i in range(brains)]
    acked = []
    for brain in ids:
        client.create_brain(brain, self={"type": "person", "name": "Ana"})
        for n in range(SEED_RECORDS):
            text = f"I went rowing on the river with Ben on day {n} and we talked about moving to Lisbon."
            record = client.remember_record(brain, {"kind": "message", "role": "user", "text": text})
            acked.append({"brain": brain, "record_id": record["id"]})
    return ids, acked


def run_locust(
    locust: str, server: Server, brains: list[str], workdir: Path, seconds: int, users: int
) -> int:
    env = {
        **os.environ,
        "LOAD_API_KEY": KEY,
        "LOAD_BRAINS": ",".join(brains),
        "LOAD_ACKED": str(workdir / "acked.jsonl"),
    }
    cmd = [
        locust, "-f", str(HERE / "locustfile.py"), "--headless", "--host", f"http://127.0.0.1:{server.port}",
        "--users", str(users), "--spawn-rate", str(users), "--run-time", f"{seconds}s", "--stop-timeout", "30",
        "--csv", str(workdir / "stats"), "--only-summary", "--loglevel", "WARNING",
    ]  # fmt: skip
    with (workdir / "locust.log").open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, preexec_fn=_die_with_parent)
        try:
            return proc.wait(timeout=seconds + 120)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=10)


def read_stats(workdir: Path) -> tuple[dict[str, dict[str, float]], list[dict[str, str]]]:
    stats: dict[str, dict[str, float]] = {}
    with (workdir / "stats_stats.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            name = "total" if row["Name"] == "Aggregated" else row["Name"]
            stats[name] = {
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "requests_per_s": float(row["Requests/s"]),
                "p50_ms": float(row["50%"]) if row["50%"] != "N/A" else float("nan"),
                "p99_ms": float(row["99%"]) if row["99%"] != "N/A" else float("nan"),
            }
    failures_csv = workdir / "stats_failures.csv"
    failures = list(csv.DictReader(failures_csv.open(encoding="utf-8"))) if failures_csv.exists() else []
    return stats, failures


def verify(client: Client, acked: list[dict[str, str]], timeout: float) -> dict[str, Any]:
    """Every acknowledged Record: stored, and ready within ``timeout`` seconds from now."""
    started = time.monotonic()
    deadline = started + timeout
    counts = {"acknowledged": len(acked), "ready": 0, "failed": 0, "lost": 0, "not_ready": 0}
    lost: list[dict[str, str]] = []
    for item in acked:  # derivation runs in arrival order: waiting on each in turn polls little
        while True:
            try:
                status = client.get_record(item["brain"], item["record_id"])["status"]
            except NotFound:
                counts["lost"] += 1
                lost.append(item)
                break
            if status != "processing":
                counts["ready" if status == "ready" else "failed"] += 1
                break
            if time.monotonic() > deadline:
                counts["not_ready"] += 1
                break
            time.sleep(0.2)
    counts["seconds_until_all_ready"] = round(time.monotonic() - started, 1)
    return {**counts, "lost_records": lost[:20]}


def report(stats: dict[str, dict[str, float]], failures: list[dict[str, str]], records: dict[str, Any],
           seconds: int, users: int) -> str:  # fmt: skip
    lines = [
        f"{users} concurrent clients for {seconds} s (locust headless, no think time), DuckDB engine",
        "",
        "| operation | requests | requests/s | p50 (ms) | p99 (ms) | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in (*OPERATIONS, "total"):
        s = stats.get(name)
        if s is not None:
            lines.append(
                f"| {name} | {s['requests']:.0f} | {s['requests_per_s']:.1f} | {s['p50_ms']:.0f} | "
                f"{s['p99_ms']:.0f} | {s['failures']:.0f} |"
            )
    for failure in failures:
        lines.append(
            f"  error: {failure['Method']} {failure['Name']}: {failure['Error']} x{failure['Occurrences']}"
        )
    lines += [
        "",
        f"Records acknowledged (202): {records['acknowledged']}; ready: {records['ready']}; failed: "
        f"{records['failed']}; lost: {records['lost']}; not ready after the timeout: {records['not_ready']} "
        f"(all ready {records['seconds_until_all_ready']} s after the load stopped)",
    ]
    return "\n".join(lines)


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("LOAD_SECONDS", 60)))
    parser.add_argument("--users", type=int, default=int(os.environ.get("LOAD_USERS", 8)))
    parser.add_argument("--brains", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8, help="the server's gunicorn threads")
    parser.add_argument("--verify-timeout", type=float, default=600.0)
    parser.add_argument("--locust", default=shutil.which("locust") or "locust")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, _terminate)
    workdir = Path(tempfile.mkdtemp(prefix="brainstore-load-"))
    server = Server(workdir, args.threads)
    ok = False
    try:
        server.start()
        with Client(server.base_url, KEY, timeout=60.0) as client:
            brains, acked = seed(client, args.brains, os.urandom(3).hex())
            code = run_locust(args.locust, server, brains, workdir, args.seconds, args.users)
            if not (workdir / "stats_stats.csv").exists():
                print(
                    f"locust failed (exit {code}):\n{(workdir / 'locust.log').read_text()[-3000:]}",
                    file=sys.stderr,
                )
                return 1
            stats, failures = read_stats(workdir)
            acked_path = workdir / "acked.jsonl"
            acked += (
                [json.loads(line) for line in acked_path.read_text().splitlines()]
                if acked_path.exists()
                else []
            )
            records = verify(client, acked, args.verify_timeout)
        print(report(stats, failures, records, args.seconds, args.users))
        if args.json:
            numbers = {
                "seconds": args.seconds,
                "users": args.users,
                "operations": stats,
                "failures": failures,
            }
            Path(args.json).write_text(json.dumps({**numbers, "records": records}, indent=2) + "\n")
        errors = stats.get("total", {}).get("failures", 0)
        ok = errors == 0 and records["lost"] == 0 and records["not_ready"] == 0 and records["failed"] == 0
        return 0 if ok else 1
    except KeyboardInterrupt:
        print("make load: interrupted; stopping the server", file=sys.stderr)
        return 130
    finally:
        server.stop()
        if not ok and server.log.exists():
            print(f"server log (last lines):\n{server.log.read_text()[-2000:]}", file=sys.stderr)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
