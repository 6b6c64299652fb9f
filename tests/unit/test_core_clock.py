import threading
from datetime import UTC, datetime, timedelta, timezone

import pytest

from sms_pipeline.core.clock import (
    Clock,
    ClockAheadOfRealTime,
    ClockMovedBackwards,
    FrozenClock,
    RealClock,
    VirtualClock,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_real_clock_is_aware_utc() -> None:
    clock: Clock = RealClock()
    now = clock.now()
    assert now.tzinfo is UTC
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)


def test_virtual_clock_moves_only_when_told() -> None:
    clock = VirtualClock(START)
    assert clock.now() == START
    assert clock.advance(timedelta(hours=1)) == START + timedelta(hours=1)
    assert clock.set(START + timedelta(days=2)) == clock.now() == START + timedelta(days=2)
    assert clock.advance(timedelta(0)) == START + timedelta(days=2)


def test_virtual_clock_normalises_to_utc() -> None:
    clock = VirtualClock(datetime(2026, 1, 1, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))))
    assert clock.now() == START and clock.now().tzinfo is UTC


def test_virtual_clock_never_ahead_of_real_time() -> None:
    future = datetime.now(UTC) + timedelta(minutes=5)
    with pytest.raises(ClockAheadOfRealTime):
        VirtualClock(future)
    clock = VirtualClock(START)
    with pytest.raises(ClockAheadOfRealTime):
        clock.set(future)
    with pytest.raises(ClockAheadOfRealTime):
        clock.advance(future - START)
    assert clock.now() == START


def test_virtual_clock_is_monotonic() -> None:
    clock = VirtualClock(START + timedelta(days=1))
    with pytest.raises(ClockMovedBackwards):
        clock.set(START)
    with pytest.raises(ClockMovedBackwards):
        clock.advance(timedelta(seconds=-1))
    assert clock.now() == START + timedelta(days=1)


def test_naive_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        VirtualClock(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        FrozenClock(datetime(2026, 1, 1))


def test_virtual_clock_is_thread_safe() -> None:
    clock = VirtualClock(START)
    threads = [
        threading.Thread(target=lambda: [clock.advance(timedelta(seconds=1)) for _ in range(500)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert clock.now() == START + timedelta(seconds=4000)


def test_frozen_clock_may_be_in_the_future() -> None:
    future = datetime(2100, 1, 1, tzinfo=UTC)
    assert FrozenClock(future).now() == future
