"""A fixed one-minute window per key, per process: the counter resets at the window's edge."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from brainstore.errors import error


class FixedWindowLimiter:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._window: int | None = None
        self._counts: dict[str, int] = {}

    def hit(self, key: str) -> None:
        if self.per_minute <= 0:
            return
        now = self._clock()
        window = int(now // 60)
        with self._lock:
            if window != self._window:
                self._window, self._counts = window, {}
            count = self._counts.get(key, 0) + 1
            self._counts[key] = count
        if count > self.per_minute:
            retry = round((window + 1) * 60 - now, 3)
            raise error(
                "too_many_requests",
                f"Authorization: more than {self.per_minute} requests this minute for this key",
                retry_after_seconds=max(retry, 0.001),
            )
