"""A throwaway PostgreSQL server for the tests: one per run, a fresh database per test.

``BRAINSTORE_TEST_DATABASE_URL`` uses a running server instead: a superuser's URL (the tests create
databases, and the erasure tests read pages with the pageinspect extension).
Otherwise the server binaries (Debian's ``postgresql`` package: /usr/lib/postgresql/<version>/bin) start
a cluster in a temporary directory on a free loopback port, without durability (fsync off: a test
database is thrown away). PostgreSQL refuses to run as root, so as root the cluster belongs to the
``postgres`` user. Missing binaries are an error, never a skip: CI installs them (.ci/run).
"""

from __future__ import annotations

import glob
import itertools
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from brainstore.store.postgres import PostgresStore

ENV_URL = "BRAINSTORE_TEST_DATABASE_URL"


def _bin_dir() -> Path:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3].split(".")[0])
    )
    if not candidates:
        raise RuntimeError(
            "PostgreSQL server binaries not found (initdb): install Debian's `postgresql` package "
            f"(`apt-get install postgresql`, as .ci/run does) or set {ENV_URL} to a server's URL"
        )
    return Path(candidates[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """Databases on one server: ``database()`` makes a fresh one (migrated from a template or empty)."""

    def __init__(self, admin_url: str, *, owned: tuple[Path, Path] | None = None) -> None:
        self.admin_url = admin_url
        self._owned = owned  # (bin dir, cluster directory) of a server this run started
        self._prefix = f"bs_{os.getpid()}_{secrets.token_hex(3)}"
        self._names = itertools.count()
        self._lock = threading.Lock()
        self._admin = psycopg.connect(admin_url, autocommit=True)
        self.template = f"{self._prefix}_template"
        self._admin.execute(f'CREATE DATABASE "{self.template}"')
        store = PostgresStore(self.url(self.template), pool_size=1)
        try:
            store.migrate()
        finally:
            store.close()

    @classmethod
    def start(cls) -> PostgresServer:
        url = os.environ.get(ENV_URL)
        if url:
            return cls(url)
        bin_dir = _bin_dir()
        root = Path(tempfile.mkdtemp(prefix="brainstore-pg-"))
        as_root = os.geteuid() == 0
        run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
        if as_root:
            shutil.chown(root, "postgres", "postgres")
        data = root / "data"
        port = _free_port()
        options = (
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        try:
            subprocess.run(
                [*run_as, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
                 "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            subprocess.run(
                [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"),
                 "-w", "-t", "60", "start"],
                check=True, capture_output=True, timeout=90,
            )  # fmt: skip
        except subprocess.CalledProcessError as exc:
            log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"could not start PostgreSQL: {exc.stderr.decode(errors='replace')}{log}") from exc
        try:
            return cls(f"postgresql://postgres@127.0.0.1:{port}/postgres", owned=(bin_dir, root))
        except BaseException:
            cls._stop_cluster(bin_dir, root)
            raise

    def postmaster_pid(self) -> int | None:
        """The server's first process, when this run started it (its backends are its children)."""
        if self._owned is None:
            return None
        return int((self._owned[1] / "data" / "postmaster.pid").read_text().split()[0])

    def url(self, dbname: str) -> str:
        return make_conninfo(self.admin_url, dbname=dbname)

    def database(self, *, migrated: bool = True) -> str:
        """A new database (a copy of the migrated template, or empty); its name."""
        with self._lock:
            name = f"{self._prefix}_{next(self._names)}"
            template = f' TEMPLATE "{self.template}"' if migrated else ""
            self._admin.execute(f'CREATE DATABASE "{name}"{template}')
        return name

    def drop(self, name: str) -> None:
        with self._lock:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def connections(self, name: str) -> int:
        with self._lock:
            row = self._admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]).fetchone()
        return int(row[0]) if row else 0

    def stop(self) -> None:
        try:
            self.drop(self.template)
        finally:
            self._admin.close()
            if self._owned is not None:
                self._stop_cluster(*self._owned)

    @staticmethod
    def _stop_cluster(bin_dir: Path, root: Path) -> None:
        run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(
            [*run_as, str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "-w", "stop"],
            capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
