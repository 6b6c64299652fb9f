"""Provider wall-clock strings <-> aware UTC datetimes, in an explicit zone.

The provider writes local times without an offset. Around a DST change a
local time can occur twice (ambiguous) or not at all (nonexistent); both are
decided by an explicit policy here instead of whatever a library defaults to.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

Ambiguous = Literal["earlier", "later", "raise"]
Nonexistent = Literal["shift_forward", "raise"]

# English month names, independent of the process locale (%B is not).
_MONTHS = {
    name: number
    for number, full in enumerate(
        ("january", "february", "march", "april", "may", "june", "july",
         "august", "september", "october", "november", "december"),
        start=1,
    )
    for name in (full, full[:3])
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HUMAN = re.compile(r"([A-Za-z]+)\.?\s+(\d{1,2}),\s*(\d{4})\s+(\d{1,2}):(\d{2}):(\d{2})", re.ASCII)
_LOCAL = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?", re.ASCII)
_WALL_CLOCK = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?", re.ASCII)


class InvalidLocalTime(ValueError):
    """A provider time string in an unexpected format."""


class AmbiguousLocalTime(ValueError):
    """A local time that occurs twice (clocks went back)."""


class NonexistentLocalTime(ValueError):
    """A local time skipped by the clocks going forward."""


def _require_aware(dt: datetime) -> None:
    if dt.tzinfo is None or dt.utcoffset() is None:
        raise ValueError(f"naive datetime refused (time zone unknown): {dt!r}")


def _wall(dt: datetime) -> datetime:
    return dt.replace(tzinfo=None, fold=0)


def _first_instant_with_offset(low: datetime, high: datetime, tz: ZoneInfo) -> datetime:
    """Earliest instant in (low, high] with high's UTC offset (the transition)."""
    target = high.astimezone(tz).utcoffset()
    lo, hi = 0, (high - low) // timedelta(microseconds=1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (low + timedelta(microseconds=mid)).astimezone(tz).utcoffset() == target:
            hi = mid
        else:
            lo = mid
    return low + timedelta(microseconds=hi)


def localise(
    wall: datetime,
    tz: ZoneInfo,
    *,
    ambiguous: Ambiguous = "earlier",
    nonexistent: Nonexistent = "shift_forward",
) -> datetime:
    """Interpret a naive wall-clock time in ``tz`` and return it in UTC.

    Ambiguous: "earlier" (the first occurrence, fold=0), "later", or "raise".
    Nonexistent: "shift_forward" (the first valid instant after the gap, i.e.
    the transition itself) or "raise". Both are detected by converting fold=0
    and fold=1 to UTC and back: two readings that round-trip mean ambiguous,
    two that do not mean the time fell in a gap.
    """
    if wall.tzinfo is not None:
        raise ValueError(f"expected a naive wall-clock time, got {wall!r}")
    if ambiguous not in ("earlier", "later", "raise"):
        raise ValueError(f"ambiguous must be 'earlier', 'later' or 'raise', got {ambiguous!r}")
    if nonexistent not in ("shift_forward", "raise"):
        raise ValueError(f"nonexistent must be 'shift_forward' or 'raise', got {nonexistent!r}")
    wall = wall.replace(fold=0)
    first = wall.replace(tzinfo=tz).astimezone(UTC)
    second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first == second:
        return first
    if _wall(first.astimezone(tz)) == wall:  # both readings exist: ambiguous
        if ambiguous == "raise":
            raise AmbiguousLocalTime(f"{wall} occurs twice in {tz}")
        return first if ambiguous == "earlier" else second
    if nonexistent == "raise":
        raise NonexistentLocalTime(f"{wall} does not exist in {tz} (clocks went forward)")
    # In a gap fold=0 applies the old offset and fold=1 the new one, so the
    # transition instant lies between the two readings.
    low, high = sorted((first, second))
    return _first_instant_with_offset(low, high, tz)


def wall_clock_instant(text: str, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """A time a person asked for, "YYYY-MM-DD HH:MM[:SS]" on the clocks of ``tz``: (wall clock, UTC instant).

    Strict where :func:`parse_local` is lenient: a time the clocks skip or
    show twice (DST) is refused, since either reading would be a guess about
    when the person meant to send.
    """
    match = _WALL_CLOCK.fullmatch(text.strip())
    if match is None:
        raise InvalidLocalTime(f"expected 'YYYY-MM-DD HH:MM' (or HH:MM:SS), got {text!r}")
    wall = _build(text, tuple(int(part or 0) for part in match.groups()))
    try:
        return wall, localise(wall, tz, ambiguous="raise", nonexistent="raise")
    except AmbiguousLocalTime:
        raise AmbiguousLocalTime(f"{wall:%Y-%m-%d %H:%M:%S} happens twice in {tz} (the clocks go back "
                                 "then): pick a time outside that hour") from None
    except NonexistentLocalTime:
        raise NonexistentLocalTime(f"{wall:%Y-%m-%d %H:%M:%S} does not exist in {tz} (the clocks skip it "
                                   "going forward): pick a time outside that hour") from None


def _build(text: str, parts: tuple[int, ...]) -> datetime:
    try:
        return datetime(*parts)
    except ValueError as exc:
        raise InvalidLocalTime(f"not a valid date and time: {text!r} ({exc})") from None


def parse_human(
    text: str,
    tz: ZoneInfo,
    *,
    ambiguous: Ambiguous = "earlier",
    nonexistent: Nonexistent = "shift_forward",
) -> datetime:
    """Parse "July 13, 2019 03:44:48" (also "Jul 3, 2019 ...") in ``tz`` to UTC."""
    match = _HUMAN.fullmatch(text.strip())
    month = _MONTHS.get(match.group(1).lower()) if match else None
    if match is None or month is None:
        raise InvalidLocalTime(f"expected 'Month D, YYYY HH:MM:SS', got {text!r}")
    day, year, hour, minute, second = map(int, match.groups()[1:])
    wall = _build(text, (year, month, day, hour, minute, second))
    return localise(wall, tz, ambiguous=ambiguous, nonexistent=nonexistent)


def parse_local(
    text: str,
    tz: ZoneInfo,
    *,
    ambiguous: Ambiguous = "earlier",
    nonexistent: Nonexistent = "shift_forward",
) -> datetime:
    """Parse "YYYY-MM-DD HH:MM:SS" (optionally with a fraction) in ``tz`` to UTC."""
    match = _LOCAL.fullmatch(text.strip())
    if match is None:
        raise InvalidLocalTime(f"expected 'YYYY-MM-DD HH:MM:SS', got {text!r}")
    *fields, fraction = match.groups()
    micro = int((fraction or "0").ljust(6, "0"))
    wall = _build(text, (*map(int, fields), micro))
    return localise(wall, tz, ambiguous=ambiguous, nonexistent=nonexistent)


def format_local(dt: datetime, tz: ZoneInfo) -> str:
    """``dt`` as provider-local "YYYY-MM-DD HH:MM:SS" (fraction dropped)."""
    _require_aware(dt)
    return dt.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")


def _ceil(dt: datetime, unit: timedelta) -> datetime:
    since_epoch = dt - _EPOCH
    return _EPOCH + unit * -(-since_epoch // unit)  # integer ceiling, exact


def format_schedule_time_sms(dt: datetime, tz: ZoneInfo) -> str:
    """SMS ``scheduleTime`` ("YYYY-MM-DD HH:MM:SS"), rounded up to the second.

    Rounding up means the provider never sends before the requested time.
    """
    _require_aware(dt)
    return format_local(_ceil(dt, timedelta(seconds=1)), tz)


def format_schedule_time_whatsapp(dt: datetime, tz: ZoneInfo) -> str:
    """WhatsApp ``scheduletime`` ("YYYY-MM-DD HH:MM"), rounded up to the minute."""
    _require_aware(dt)
    return _ceil(dt, timedelta(minutes=1)).astimezone(tz).strftime("%Y-%m-%d %H:%M")


def local_date(dt: datetime, tz: ZoneInfo) -> date:
    """The provider-local calendar day of an instant (the partition key)."""
    _require_aware(dt)
    return dt.astimezone(tz).date()


def day_bounds(d: date, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """Half-open UTC bounds [start, end) of local day ``d``; 23 to 25 hours long.

    A midnight skipped by DST starts the day at the first instant that exists.
    """
    start = localise(datetime.combine(d, time()), tz)
    end = localise(datetime.combine(d + timedelta(days=1), time()), tz)
    return start, end
