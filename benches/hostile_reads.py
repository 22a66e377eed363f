"""What a tenant with a valid key can make the server spend, as a client over loopback HTTP sees it,
through a real `brainstore serve` (DuckDB, or PostgreSQL with ``--engine postgres``): the figures
behind the fixes of a red-team pass.

* ``brains``: the server's resident memory a Brain of one Record costs (each Brain created, given one
  Record and asked one Context), from the server's processes' RSS before and after;
* ``memories``: a Brain of ``--records`` Records of ``--facts`` first-person facts each (about
  records x facts Memories), then listMemories pages as the client times them: ``as_of`` before every
  Memory at limit 1 and 100 (a page that filters out all it reads) and plain pages of 100; fast
  Contexts that include ``memories`` or ``profile`` or ask a ``schema``, against plain ones; the profile
  and the census; a walk through every Memory, 100 a page; and Contexts with ``memories``, with
  ``profile`` and with neither while another client posts a Record to the Brain every 0.1 s;
* ``thorough``: thorough Contexts on that Brain at 2,000 and 100,000 tokens (client wall time and the
  server's CPU a Context);
* ``answers`` (in process, no server): the thorough answer with the composer's shortlist
  (``MAX_EMBEDDED``) against embedding every sentence, on LoCoMo conversations (``--conversations``,
  default the held-out ones): how many answers are the same, and the CPU a thorough Context.

Run: ``PYTHONPATH=. .venv/bin/python -m benches.hostile_reads [--parts brains,memories,thorough,answers]``.
Nothing here is a timed assertion.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from benches.ingest import KEY, serve

HEADERS = {"Authorization": f"Bearer {KEY}"}


def rss_mib(session: int) -> float:
    """Resident memory of every live process of a session, MiB."""
    total = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            stat = (status.parent / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[3]) != session:
                continue
            total += next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("VmRSS"))
        except (OSError, StopIteration, IndexError, ValueError):
            continue
    return total / 1024


def wait_ready(http: httpx.Client, brain: str, record_id: str, timeout: float = 600, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while http.get(f"/brains/{brain}/records/{record_id}").json()["status"] not in ("ready", "failed"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{record_id} not ready after {timeout} s")
        time.sleep(poll)


def timed(http: httpx.Client, method: str, path: str, n: int, **kw: object) -> tuple[float, list[httpx.Response]]:
    """The client's median wall time (ms) of ``n`` requests, and their responses."""
    walls, answers = [], []
    for _ in range(n):
        start = time.perf_counter()
        answers.append(http.request(method, path, **kw))  # type: ignore[arg-type]
        walls.append((time.perf_counter() - start) * 1000)
    return statistics.median(walls), answers


def brains(count: int, engine: str) -> None:
    with serve(engine) as served, httpx.Client(base_url=served.base, headers=HEADERS, timeout=60) as http:
        def make(first: int, n: int) -> None:
            for i in range(first, first + n):
                http.post("/brains", json={"id": f"b{i}"}).raise_for_status()
                rid = http.post(f"/brains/b{i}/records", json={"content": f"I keep {i} bees on the roof."}).json()["id"]
                wait_ready(http, f"b{i}", rid)
                http.post(f"/brains/b{i}/context", json={"query": "bees"}).raise_for_status()

        make(0, 20)  # warm: the first Brains load the model and the code paths
        before = rss_mib(served.session)
        make(20, count)
        after = rss_mib(served.session)
    print(f"brains: {count} Brains of one Record, server RSS {before:.0f} -> {after:.0f} MiB, "
          f"{(after - before) / count:.3f} MiB a Brain")  # fmt: skip


def memories_and_thorough(records: int, facts: int, parts: set[str], engine: str) -> None:
    words = random.Random(2)
    names = ["".join(words.choice("bcdfgklmnprstvz") + words.choice("aeiou") for _ in range(3)).title() for _ in range(5000)]
    with serve(engine) as served, httpx.Client(base_url=served.base, headers=HEADERS, timeout=600) as http:
        http.post("/brains", json={"id": "m", "self": {"type": "person", "name": "Ann"}}).raise_for_status()
        started, last = time.monotonic(), ""
        for _ in range(records):
            text = " ".join(f"My friend {words.choice(names)} lives in {words.choice(names)}." for _ in range(facts))
            last = http.post("/brains/m/records", json={"content": {"kind": "message", "role": "user", "text": text}}).json()["id"]
        wait_ready(http, "m", last)
        print(f"a Brain of {records} Records x {facts} facts, ready in {time.monotonic() - started:.0f} s")
        if "memories" in parts:
            for label, params in (
                ("as_of before all, limit 1", {"as_of": "0001-01-01T00:00:00Z", "limit": "1"}),
                ("as_of before all, limit 100", {"as_of": "0001-01-01T00:00:00Z", "limit": "100"}),
                ("plain, limit 100", {"limit": "100"}),
            ):
                cpu = served.cpu_seconds()
                median, pages = timed(http, "GET", "/brains/m/memories", 5, params=params)
                cpu_ms = (served.cpu_seconds() - cpu) * 1000 / 5
                print(f"listMemories {label}: client p50 {median:.0f} ms, server CPU {cpu_ms:.0f} ms a page, "
                      f"{len(pages[0].json()['data'])} items, has_more {pages[0].json()['has_more']}")  # fmt: skip
            for include in (["evidence"], ["evidence", "memories"], ["evidence", "profile"]):
                body = {"query": "where does my friend live?", "include": include}
                median, _ = timed(http, "POST", "/brains/m/context", 5, json=body)
                print(f"fast Context include {include}: client p50 {median:.0f} ms")
            schema = {"type": "object", "properties": {"city": {"type": "string"}}}
            median, _ = timed(http, "POST", "/brains/m/context", 5, json={"query": "where does my friend live?", "schema": schema})
            print(f"fast Context with a schema: client p50 {median:.0f} ms")
            for label, path in (("profile", "/brains/m/profile"), ("census", "/brains/m/census")):
                median, _ = timed(http, "GET", path, 5)
                print(f"{label}: client p50 {median:.0f} ms")
            cpu, started, pages, listed, cursor = served.cpu_seconds(), time.perf_counter(), 0, 0, None
            while True:  # every Memory, 100 a page, as a client syncing the Brain reads them
                page = http.get("/brains/m/memories", params={"limit": "100", **({"cursor": cursor} if cursor else {})}).json()
                pages, listed, cursor = pages + 1, listed + len(page["data"]), page["next_cursor"]
                if not page["has_more"]:
                    break
            print(f"listMemories walk: {listed} Memories in {pages} pages, {time.perf_counter() - started:.1f} s "
                  f"(server CPU {served.cpu_seconds() - cpu:.1f} s)")  # fmt: skip
            under_posting(served.base, http)
        if "thorough" in parts:
            for tokens in (2000, 100_000):
                body = {"query": "where does my friend live?", "mode": "thorough", "budget": {"tokens": tokens}}
                cpu = served.cpu_seconds()
                median, answers = timed(http, "POST", "/brains/m/context", 5, json=body)
                cpu_ms = (served.cpu_seconds() - cpu) * 1000 / 5
                print(f"thorough Context at {tokens} tokens: client p50 {median:.0f} ms, server CPU {cpu_ms:.0f} ms, "
                      f"statuses {sorted({a.status_code for a in answers})}")  # fmt: skip


def under_posting(base: str, http: httpx.Client) -> None:
    """Fast Contexts with ``memories`` and without, alternating, while another client posts a Record to
    the Brain every 0.1 s (its Memories keep changing)."""
    stop = threading.Event()

    def post() -> None:
        with httpx.Client(base_url=base, headers=HEADERS, timeout=60) as poster:
            for i in itertools.count():
                if stop.is_set():
                    return
                text = f"My friend Zed{i} lives in Oslo."
                poster.post("/brains/m/records", json={"content": {"kind": "message", "role": "user", "text": text}})
                time.sleep(0.1)

    thread = threading.Thread(target=post)
    thread.start()
    walls: dict[str, list[float]] = {"memories": [], "profile": [], "plain": []}
    try:
        time.sleep(1.0)
        for _ in range(40):
            for label, include in (
                ("memories", ["evidence", "memories"]),
                ("profile", ["evidence", "profile"]),
                ("plain", ["evidence"]),
            ):
                started = time.perf_counter()
                http.post("/brains/m/context", json={"query": "where does my friend live?", "include": include})
                walls[label].append((time.perf_counter() - started) * 1000)
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join()
    for label, samples in walls.items():
        samples.sort()
        print(f"fast Context ({label}) while a Record is posted every 0.1 s: client p50 "
              f"{statistics.median(samples):.0f} ms, p90 {samples[int(0.9 * len(samples))]:.0f} ms")  # fmt: skip


def answers(conversations: list[str], per_conversation: int) -> None:
    """The composer's shortlist against every sentence, in process, on LoCoMo."""
    from tests.conftest import Api, open_engine

    from benches import locomo
    from brainstore.api.app import create_app
    from brainstore.service import answer

    service = open_engine("memory", Path(tempfile.mkdtemp()), rate_limit_per_minute=0)
    api = Api(create_app(service))
    api.brain("b1")
    questions: list[str] = []
    for conversation in locomo.load_conversations():
        if conversation.sample_id not in conversations:
            continue
        for m in locomo.stressed(conversation, None):
            api.remember("b1", locomo.content(m), occurred_at=m.occurred_at.isoformat())
        questions += [q.question for q, _ in locomo.scored_questions(conversation)][:per_conversation]
    assert service.wait_idle(600)
    shortlist, results = answer.MAX_EMBEDDED, {}
    for embedded in (10**9, shortlist, 10**9, shortlist):
        answer.MAX_EMBEDDED = embedded
        times = os.times()
        got = [
            (api.post("/brains/b1/context", {"query": q, "mode": "thorough", "budget": {"tokens": 2000}}).body.get("answer") or {}).get("text")
            for q in questions
        ]
        cpu = (os.times().user + os.times().system - times.user - times.system) * 1000 / len(questions)
        same = sum(a == b for a, b in zip(got, results.get(10**9, got), strict=True))
        results.setdefault(embedded, got)
        label = "every sentence" if embedded == 10**9 else f"the best {embedded}"
        print(f"answers, {label}: {cpu:.0f} ms of CPU a thorough Context, the same answer as every sentence's to {same}/{len(questions)}")
    answer.MAX_EMBEDDED = shortlist
    service.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="brains,memories,thorough,answers")
    parser.add_argument("--brains", type=int, default=200)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--facts", type=int, default=100)
    parser.add_argument("--conversations", default="44,47")
    parser.add_argument("--questions", type=int, default=40, help="questions a conversation (answers)")
    parser.add_argument("--engine", choices=("duckdb", "postgres"), default="duckdb")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if "brains" in parts:
        brains(args.brains, args.engine)
    if parts & {"memories", "thorough"}:
        memories_and_thorough(args.records, args.facts, parts, args.engine)
    if "answers" in parts:
        answers(args.conversations.split(","), args.questions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
