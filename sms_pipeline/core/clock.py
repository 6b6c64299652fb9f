"""The one source of "now" for everything that drives message state.

Code takes a :class:`Clock` and passes ``clock.now()`` into SQL, so tests and
the demo can share a virtual clock with the simulator.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class ClockAheadOfRealTime(ValueError):
    """A virtual clock asked to move past real time."""


class ClockMovedBackwards(ValueError):
    """A virtual clock asked to move to an earlier instant."""


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, aware, in UTC."""
        ...


def _utc(dt: datetime) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"naive datetime refused (time zone unknown): {dt!r}")
    return dt.astimezone(UTC)


class RealClock:
    """Wall-clock time; what separate production processes use."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class VirtualClock:
    """A clock that moves only when told, never backwards, never past real time.

    Not past real time because Dagster has no future partitions and the
    provider refuses future report dates. Thread-safe: the simulator and the
    application may share one instance.
    """

    def __init__(self, start: datetime) -> None:
        self._lock = threading.Lock()
        self._now = self._checked(_utc(start), current=None)

    @staticmethod
    def _checked(target: datetime, current: datetime | None) -> datetime:
        real = datetime.now(UTC)
        if target > real:
            raise ClockAheadOfRealTime(f"virtual time {target.isoformat()} is ahead of real time {real.isoformat()}")
        if current is not None and target < current:
            raise ClockMovedBackwards(
                f"virtual time cannot go back from {current.isoformat()} to {target.isoformat()}"
            )
        return target

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, dt: datetime) -> datetime:
        """Move to ``dt`` (not earlier than now, not later than real time)."""
        target = _utc(dt)
        with self._lock:
            self._now = self._checked(target, self._now)
            return self._now

    def advance(self, delta: timedelta) -> datetime:
        """Move forward by ``delta`` (non-negative) and return the new time."""
        if delta < timedelta(0):
            raise ClockMovedBackwards(f"cannot advance by a negative amount: {delta}")
        with self._lock:
            self._now = self._checked(self._now + delta, self._now)
            return self._now


class FrozenClock:
    """A fixed instant, for unit tests of pure logic.

    Unlike :class:`VirtualClock` it may be set in the future: nothing real
    (Dagster, the provider) ever sees it.
    """

    def __init__(self, instant: datetime) -> None:
        self._instant = _utc(instant)

    def now(self) -> datetime:
        return self._instant
