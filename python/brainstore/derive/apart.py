"""A process of its own for reading long texts, one call at a time.

A text that kills the process reading it (a crash in a library, a signal) or keeps it busy past its
time ends that process, not the server, and only the call in progress learns of it: the next call
starts a new process. A text that needs more memory than the process may take raises MemoryError in
it, instead of leaving the kernel to pick a process to kill, perhaps the server's. So the caller knows which text ended it, which a pool of processes does not say
(a dead worker fails every call queued in the pool, innocent or not).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from .model import ExtractorUnavailable

T = TypeVar("T")
# How long a new process may take to start and answer its first call (a Python interpreter and the
# modules it imports, at a low priority on a busy machine).
START_SECONDS = 60.0


class ReaderEnded(Exception):
    """The process ended during the call: killed, or ended because the call outlasted its time."""


class ReaderUnavailable(ExtractorUnavailable):
    """A new process did not start and answer: no text is at fault, so the call may be tried later."""


class ReaderProcess:
    """Calls a picklable function in a process of its own (spawned, so no thread or lock of the server
    is copied into it), at most ``seconds`` a call, one call at a time, in at most ``memory_bytes`` of
    address space (None: no bound)."""

    def __init__(self, *, seconds: float, nice: int = 0, memory_bytes: int | None = None) -> None:
        self.seconds = seconds
        self.nice = nice
        self.memory_bytes = memory_bytes
        self._lock = threading.Lock()  # one call at a time
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._closed = False

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in the process; what it raises is raised here, and ReaderEnded when
        the process ends before it answers."""
        with self._lock:
            process, conn = self._started()
            try:
                conn.send((fn, args, kwargs))
            except (BrokenPipeError, EOFError, ConnectionResetError) as exc:
                self._end()
                raise ReaderEnded(f"the process reading it had ended ({self._exit(process)})") from exc
            if not conn.poll(self.seconds):
                self._end()
                raise ReaderEnded(f"reading it took more than {self.seconds:.0f} s")
            try:
                answered, value = conn.recv()
            except (EOFError, ConnectionResetError, OSError) as exc:
                process.join(5)
                self._end()
                raise ReaderEnded(f"the process reading it ended ({self._exit(process)})") from exc
        if not answered:
            raise value
        result: T = value
        return result

    def close(self) -> None:
        """End the process; a call in progress raises ReaderEnded at once, later calls RuntimeError."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._end()
            finally:
                self._lock.release()
        elif (process := self._process) is not None:
            process.kill()  # a call in progress holds the lock until the process answers: now

    def _started(self) -> tuple[BaseProcess, Connection]:
        if self._closed:
            raise RuntimeError("the reader process is closed")
        if self._process is not None and self._conn is not None and self._process.is_alive():
            return self._process, self._conn
        self._end()  # it died between calls (the machine short of memory, say): not the next text's doing
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_serve, args=(theirs, self.nice, self.memory_bytes), name="brainstore-reader", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._conn = process, ours
        # It answers a first call of its own before it is given a text, so a process that cannot start
        # (or was closed meanwhile) is never charged to the text that would have been next.
        try:
            ours.send((os.getpid, (), {}))
            started = ours.poll(START_SECONDS) and ours.recv()[0] and not self._closed
        except (BrokenPipeError, EOFError, ConnectionResetError, OSError):
            started = False
        if not started:
            process.join(1)
            ended = self._exit(process)
            self._end()
            if self._closed:
                raise RuntimeError("the reader process is closed")
            raise ReaderUnavailable(f"the process to read long texts did not start ({ended})")
        return process, ours

    def _end(self) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is not None:
            process.kill()
            process.join(10)
        if conn is not None:
            conn.close()

    @staticmethod
    def _exit(process: BaseProcess) -> str:
        code = process.exitcode
        if code is None:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _serve(conn: Connection, nice: int, memory_bytes: int | None) -> None:
    """The process's loop: answer each call with (True, result) or (False, what it raised)."""
    if nice:
        with contextlib.suppress(OSError):  # not allowed: the default priority
            os.nice(nice)
    if memory_bytes is not None:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        except (ImportError, OSError, ValueError):  # not on this platform: unbounded, as the server is
            pass
    while True:
        try:
            fn, args, kwargs = conn.recv()
        except (EOFError, OSError):
            return  # the server closed its end
        try:
            reply: tuple[bool, Any] = (True, fn(*args, **kwargs))
        except Exception as exc:
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # what it returned or raised does not pickle
            conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
