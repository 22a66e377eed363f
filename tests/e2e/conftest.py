"""A real `brainstore serve` (gunicorn) on 127.0.0.1, started and stopped by the tests."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from brainstore.retrieval.embedder import _cache_dir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(
        self,
        data_dir: Path,
        *args: str,
        engine: str = "duckdb",
        env: dict[str, str] | None = None,
        open_files: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.open_files = open_files  # the server's RLIMIT_NOFILE, soft and hard, when set
        self.env = env or {}
        self.args = args
        self.engine = engine
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir / "server.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 60.0) -> Server:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "brainstore.cli", "serve",
            "--port", str(self.port), "--engine", self.engine,
            "--data-dir", str(self.data_dir), "--threads", "4", *self.args,
        ]  # fmt: skip
        # The user's cache, not the data directory's: each server would make the int8 query model anew.
        env = {**os.environ, "HOME": str(self.data_dir), "BRAINSTORE_CACHE_DIR": str(_cache_dir().parent), **self.env}
        with self.log.open("ab") as log:
            # Its own session, so a kill reaches gunicorn's worker too.
            limit = self.open_files
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=log,
                env=env,
                start_new_session=True,
                preexec_fn=None if limit is None else lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)),
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
            try:
                httpx.get(self.base_url + "/brains/x", timeout=1.0)
                return self
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()  # a server that never answered must not outlive the test
        raise RuntimeError(f"server did not answer in {timeout}s: {self.log.read_text()[-2000:]}")

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "data").start()
    yield srv
    srv.stop()
