"""Partition windows as values: pure, so they can be unit-tested.

A run for days ``[first, last]`` with a lookback of ``n`` days rebuilds the
half-open window ``[start(first) - n days, end(last))`` in the provider's
zone; dbt receives the bounds as time-zone-aware ISO strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sms_pipeline.core.provider_time import day_bounds


@dataclass(frozen=True)
class Window:
    """Half-open ``[start, end)`` in UTC, plus the provider-local days it covers."""

    start: datetime
    end: datetime
    first_day: date
    last_day: date

    def days(self) -> list[date]:
        count = (self.last_day - self.first_day).days + 1
        return [self.first_day + timedelta(days=i) for i in range(count)]


def window_for_days(first_day: date, last_day: date, tz: ZoneInfo, lookback_days: int = 0) -> Window:
    if last_day < first_day:
        raise ValueError(f"window ends ({last_day}) before it starts ({first_day})")
    if lookback_days < 0:
        raise ValueError("lookback_days must be zero or more")
    first = first_day - timedelta(days=lookback_days)
    start, _ = day_bounds(first, tz)
    _, end = day_bounds(last_day, tz)
    return Window(start=start, end=end, first_day=first, last_day=last_day)


def dbt_vars(window: Window, tz: ZoneInfo) -> dict[str, str]:
    """``--vars`` for an incremental dbt run over ``window``."""
    return {
        "window_start": window.start.isoformat(),
        "window_end": window.end.isoformat(),
        "first_day": window.first_day.isoformat(),
        "last_day": window.last_day.isoformat(),
        "provider_timezone": tz.key,
    }


def marts_window(
    first_day: date,
    last_day: date,
    tz: ZoneInfo,
    *,
    lookback_days: int,
    history_start: date,
    full_refresh: bool = False,
) -> Window:
    """The window one dbt run over partitions ``[first_day, last_day]`` rebuilds.

    Incremental: the partitions plus ``lookback_days`` before them, so late
    receipts reach the marts; never before ``history_start`` (the first
    partition), so the marts only hold partition days. Full refresh: every
    day from ``history_start`` through ``last_day``.
    """
    floor = min(history_start, first_day)
    if full_refresh:
        return window_for_days(floor, last_day, tz)
    if lookback_days < 0:
        raise ValueError("lookback_days must be zero or more")
    first = max(first_day - timedelta(days=lookback_days), floor)
    return window_for_days(first, last_day, tz)
