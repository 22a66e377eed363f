"""End to end against a real gunicorn on loopback, through the Python client."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from brainstore.client import Client
from brainstore.errors import BrainstoreError
from tests.conftest import KEY
from tests.e2e.conftest import Server

pytestmark = pytest.mark.slow


def wait_ready(client: Client, brain: str, record_id: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = client.get_record(brain, record_id)
        if record["status"] != "processing":
            return record
        time.sleep(0.05)
    raise AssertionError(f"{record_id} still processing after {timeout}s")


def test_a_session_through_the_client(server: Server) -> None:
    with Client(server.base_url, KEY) as client:
        client.create_brain("alice", self={"type": "person", "name": "Alice"})
        rec = client.remember_record(
            "alice", {"kind": "message", "role": "user", "text": "I live in Lisbon."}, occurred_at="2024-03-01T10:00:00Z"
        )
        assert rec["status"] == "processing" and client.last_watermark.startswith("wm_")
        assert wait_ready(client, "alice", rec["id"])["status"] == "ready"
        page = client.list_memories("alice")
        assert any("Lisbon" in m["statement"] for m in page["data"])
        with pytest.raises(BrainstoreError) as caught:
            client.get_record("alice", "rec_missing")
        assert caught.value.code == "record_not_found" and caught.value.status == 404


def test_a_wrong_method_is_http_405_through_the_server_options_included(server: Server) -> None:
    """OPTIONS answered 200 with an empty body labelled JSON (Falcon's default responder), for any
    Brain; every other wrong method's Allow listed OPTIONS."""
    headers = {"Authorization": f"Bearer {KEY}"}
    for method in ("OPTIONS", "PUT"):
        for path in ("/brains/no-such-brain/memories", "/brains/no-such-brain/records/rec_x"):
            response = httpx.request(method, server.base_url + path, headers=headers, timeout=10)
            assert response.status_code == 405, (method, path, response.text)
            assert response.headers["content-type"] == "application/json"
            assert response.json()["code"] == "http_405"
            assert response.headers["allow"] == ("GET" if path.endswith("memories") else "DELETE, GET")


def test_kill_9_right_after_202_loses_no_record(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data").start()
    with Client(srv.base_url, KEY) as client:
        client.create_brain("b1")
        ids = [client.remember_record("b1", f"note number {i}")["id"] for i in range(20)]
        keyed = client.remember_record("b1", "sent once", idempotency_key="k-1")["id"]
    srv.kill9()
    srv = Server(tmp_path / "data").start()
    try:
        with Client(srv.base_url, KEY) as client:
            for record_id in ids:
                assert client.get_record("b1", record_id)["id"] == record_id
            assert wait_ready(client, "b1", ids[-1])["status"] == "ready"
            # The Idempotency-Key outlives the process: a replay returns the original Record.
            assert client.remember_record("b1", "sent once", idempotency_key="k-1")["id"] == keyed
    finally:
        srv.stop()


def test_hosted_refuses_to_start_without_a_registry(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "brainstore.cli", "serve", "--deployment", "hosted", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "key registry" in result.stderr


def test_sigterm_during_derivation_stops_cleanly_and_the_rest_resumes(tmp_path: Path) -> None:
    srv = Server(tmp_path / "data").start()
    with Client(srv.base_url, KEY) as client:
        client.create_brain("b1")
        ids = [client.remember_record("b1", f"I planted {i} tulips in the garden today.")["id"] for i in range(60)]
    assert srv.proc is not None
    srv.stop()  # SIGTERM while most of them are still being derived
    log = srv.log.read_text(errors="replace")
    assert srv.proc.returncode == 0, log[-3000:]
    assert "terminate called" not in log and "Traceback" not in log, log[-3000:]
    assert "was sent SIG" not in log, log[-3000:]  # the worker exited, not died of a signal
    srv = Server(tmp_path / "data").start()
    try:
        with Client(srv.base_url, KEY) as client:
            assert all(wait_ready(client, "b1", record_id)["status"] == "ready" for record_id in ids)
    finally:
        srv.stop()
