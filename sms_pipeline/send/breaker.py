"""A circuit breaker for sends: stop claiming after repeated failures (pure).

Closed: sends go out; ``failure_threshold`` failed sends in a row open it.
Open: nothing is claimed for ``cooldown_s``. Then half-open: requests may
go again as trials (one per worker thread at most); the first success closes
the breaker, the first failure opens it for another cooldown. (Reserving a
single trial would need every caller that claims nothing to hand it back.)
Time is an injected monotonic seconds function, so tests drive it without
sleeping. Thread-safe: the worker's threads share one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum


class BreakerState(StrEnum):
    closed = "closed"
    open = "open"
    half_open = "half_open"


class CircuitBreaker:
    def __init__(self, failure_threshold: int, cooldown_s: float,
                 now: Callable[[], float] = time.monotonic) -> None:
        if failure_threshold < 1:
            raise ValueError(f"failure threshold must be at least 1, got {failure_threshold}")
        if cooldown_s <= 0:
            raise ValueError(f"cooldown must be positive, got {cooldown_s}")
        self._threshold = failure_threshold
        self._cooldown = cooldown_s
        self._now = now
        self._lock = threading.Lock()
        self._state = BreakerState.closed
        self._failures = 0
        self._opened_at = 0.0

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._current()

    def _current(self) -> BreakerState:
        if self._state is BreakerState.open and self._now() - self._opened_at >= self._cooldown:
            self._state = BreakerState.half_open
        return self._state

    def allow(self) -> bool:
        """May requests go out now (closed, or half-open for a trial)?"""
        with self._lock:
            return self._current() is not BreakerState.open

    def seconds_until_retry(self) -> float:
        """0 when a request may go; otherwise how long the cooldown still runs."""
        with self._lock:
            if self._current() is not BreakerState.open:
                return 0.0
            return max(0.0, self._cooldown - (self._now() - self._opened_at))

    def record_success(self) -> None:
        with self._lock:
            self._state = BreakerState.closed
            self._failures = 0

    def record_failure(self) -> bool:
        """Count a failed send; True when this failure opened the breaker (it was closed or half-open)."""
        with self._lock:
            self._failures += 1
            was_open = self._current() is BreakerState.open
            if self._current() is BreakerState.half_open or self._failures >= self._threshold:
                self._state = BreakerState.open
                self._opened_at = self._now()
            return not was_open and self._state is BreakerState.open
