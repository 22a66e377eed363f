"""`brainstore serve --engine postgres --workers 2`: real gunicorn workers sharing one database."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.e2e.conftest import Server

KEY = "sk_test_acme_s3cretvalue0001"


def worker_pids(master: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            found.append(int(stat.parent.name))
    return found


def test_two_workers_share_the_database_and_accept_each_others_watermarks(tmp_path: Path, postgres_url: str) -> None:
    server = Server(tmp_path / "data", "--workers", "2", "--database-url", postgres_url, engine="postgres").start()
    try:
        assert server.proc is not None and len(worker_pids(server.proc.pid)) == 2
        headers = {"Authorization": f"Bearer {KEY}"}

        def call(method: str, path: str, **kw: object) -> httpx.Response:
            # A connection per request, so the workers share them out.
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
                return client.request(method, path, **kw)  # type: ignore[arg-type]

        assert call("POST", "/brains", json={"id": "b1"}).status_code == 201
        made = []
        for i in range(20):
            r = call("POST", "/brains/b1/records", json={"content": f"Note {i}: Alice likes tea number {i}."})
            assert r.status_code == 202, r.text
            made.append(r.json()["id"])
            delta = call("GET", "/brains/b1/memories", params={"since_watermark": r.headers["Brain-Watermark"]})
            assert delta.status_code == 200, delta.text  # whichever worker issued it
        for rid in made:
            assert call("GET", f"/brains/b1/records/{rid}").status_code == 200
        gone = call("DELETE", f"/brains/b1/records/{made[0]}")
        assert gone.status_code == 200, gone.text
        assert call("GET", f"/brains/b1/records/{made[0]}").status_code == 404
        assert call("DELETE", "/brains/b1").status_code == 200
        assert call("GET", "/brains/b1").status_code == 404
    finally:
        server.stop()
