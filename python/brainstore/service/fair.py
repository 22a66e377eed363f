"""A thread pool that serves namespaces round robin: one tenant's backlog never delays another's task by
more than one task per worker, and each namespace has a cap on what it may have waiting."""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class NamespaceBusy(RuntimeError):
    """The namespace already has ``per_namespace`` tasks waiting."""


class FairExecutor:
    def __init__(self, workers: int, *, per_namespace: int = 64, name: str = "brainstore-fair") -> None:
        self.per_namespace = per_namespace
        self._queues: OrderedDict[str, deque[tuple[Future[Any], Callable[[], Any]]]] = OrderedDict()
        self._cond = threading.Condition()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, namespace: str, task: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the executor is shut down")
            if len(self._queues.get(namespace, ())) >= self.per_namespace:
                raise NamespaceBusy(namespace)  # before a queue is made: workers never meet an empty one
            self._queues.setdefault(namespace, deque()).append((future, task))
            self._cond.notify()
        return future

    def _next(self) -> tuple[Future[Any], Callable[[], Any]] | None:
        with self._cond:
            self._cond.wait_for(lambda: self._closed or bool(self._queues))
            if not self._queues:
                return None
            namespace, queue = next(iter(self._queues.items()))
            item = queue.popleft()
            if queue:
                self._queues.move_to_end(namespace)  # the namespace just served waits its next turn
            else:
                del self._queues[namespace]
            return item

    def _work(self) -> None:
        while (item := self._next()) is not None:
            future, task = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(task())
            except BaseException as exc:  # the caller reads it from the future
                future.set_exception(exc)

    def shutdown(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=timeout)
