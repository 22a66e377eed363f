"""Two `brainstore serve --engine postgres --workers 2` nodes on one database: what is written through
one is read through the other (watermarks, Contexts, erasure)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import Server

KEY = "sk_test_acme_s3cretvalue0001"


def call(server: Server, method: str, path: str, **kw: Any) -> httpx.Response:
    # A connection per request, so each node's workers share them out.
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as client:
        return client.request(method, path, **kw)


def context_at(server: Server, query: str, watermark: str, record_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """A Context at the watermark: pending (202) until derivation reached it, then a 200 that has it."""
    deadline = time.monotonic() + timeout
    while True:
        # A budget that a loaded machine does not run out of: a Context out of time says so and is
        # no stale answer, but it would not show the Record either.
        body = {"query": query, "budget": {"ms": 5000}}
        r = call(server, "POST", "/brains/b1/context", json=body, headers={"Brain-Watermark": watermark})
        assert r.status_code in (200, 202), r.text
        if r.status_code == 200:
            got: dict[str, Any] = r.json()
            assert record_id in {e["record_id"] for e in got["evidence"]}, got  # never a stale 200
            return got
        assert time.monotonic() < deadline, "the watermark was never reached"
        time.sleep(0.1)


def test_a_write_on_one_node_is_read_at_its_watermark_on_the_other(tmp_path: Path, postgres_url: str) -> None:
    nodes = [
        Server(tmp_path / name, "--workers", "2", "--database-url", postgres_url, engine="postgres")
        for name in ("n1", "n2")
    ]
    try:
        for node in nodes:
            node.start()
        n1, n2 = nodes
        made = call(n1, "POST", "/brains", json={"id": "b1", "self": {"type": "person", "name": "Ann"}})
        assert made.status_code == 201, made.text
        # The Brain's index is warm on the other node before the writes arrive.
        assert call(n2, "POST", "/brains/b1/context", json={"query": "kayak"}).status_code == 200
        texts = [
            "I bought a red kayak for the lake trip.",
            "My sister Lena plays the cello.",
            "The garden shed needs a new roof.",
            "We adopted a grey cat called Pixel.",
        ]
        written = []
        for i, text in enumerate(texts):
            writer, reader = nodes[i % 2], nodes[(i + 1) % 2]
            r = call(writer, "POST", "/brains/b1/records", json={"content": {"kind": "message", "text": text}})
            assert r.status_code == 202, r.text
            watermark, rid = r.headers["Brain-Watermark"], r.json()["id"]
            written.append(rid)
            delta = call(reader, "GET", "/brains/b1/memories", params={"since_watermark": watermark})
            assert delta.status_code == 200, delta.text
            context_at(reader, text, watermark, rid)
        gone = call(n1, "DELETE", f"/brains/b1/records/{written[0]}")
        assert gone.status_code == 200, gone.text
        for node in nodes:  # each node, each of its workers: none serves the erased Record
            for _ in range(4):
                body = {"query": "red kayak lake trip", "budget": {"ms": 5000}}
                r = call(node, "POST", "/brains/b1/context", json=body)
                assert r.status_code == 200, r.text
                assert written[0] not in r.text and "kayak" not in str(r.json()["evidence"]).lower()
    finally:
        for node in nodes:
            node.stop()
