"""Provider-local report times to UTC, fast and with DST decided explicitly.

A day file holds up to millions of ``YYYY-MM-DD HH:MM:SS`` strings but only a
few thousand distinct minutes, and a UTC offset never changes inside a
minute, so each minute is localised once. A minute that is ambiguous or
skipped around a DST change goes through the full parser, whose policy
(first occurrence; a skipped time moves to the transition) applies.

The delivery time of a receipt cannot precede its submit time. When reading
an ambiguous delivery time as its first occurrence would make it do so, the
second occurrence is the only consistent reading, and it is taken.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from sms_pipeline.core.provider_time import localise, parse_local

_LOCAL = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", re.ASCII)


class LocalTimeParser:
    """``YYYY-MM-DD HH:MM:SS`` (provider-local) -> aware UTC, memoised per minute.

    Raises :class:`sms_pipeline.core.provider_time.InvalidLocalTime` for text
    in another format. One instance per load: the memo is not shared.
    """

    def __init__(self, tz: ZoneInfo) -> None:
        self._tz = tz
        self._minutes: dict[str, datetime | None] = {}  # None: ambiguous or skipped minute

    def parse(self, text: str) -> datetime:
        if not _LOCAL.fullmatch(text):
            return parse_local(text, self._tz)  # other spacing or a fraction; raises if malformed
        minute_key = text[:16]
        start = self._minutes.get(minute_key, ...)
        if start is ...:
            start = self._regular_minute_start(minute_key)
            self._minutes[minute_key] = start
        seconds = int(text[17:19])
        if start is None or seconds > 59:
            return parse_local(text, self._tz)
        return start + timedelta(seconds=seconds)

    def readings(self, text: str) -> tuple[datetime, datetime]:
        """``parse(text)`` and the second reading of its wall-clock time (the same unless the clocks went back)."""
        first = self.parse(text)
        if self._minutes.get(text[:16]) is not None:  # a regular minute: one reading
            return first, first
        return first, later_reading(first, self._tz)

    def _regular_minute_start(self, minute_key: str) -> datetime | None:
        try:
            wall = datetime.strptime(minute_key, "%Y-%m-%d %H:%M")
        except ValueError:
            return None  # let the full parser name the problem
        first = wall.replace(tzinfo=self._tz).astimezone(UTC)
        second = wall.replace(tzinfo=self._tz, fold=1).astimezone(UTC)
        return first if first == second else None


def consistent_done_time(submit_at: datetime | None, done_at: datetime | None, tz: ZoneInfo) -> datetime | None:
    """``done_at``, or its second reading when the first would precede ``submit_at``."""
    if submit_at is None or done_at is None or done_at >= submit_at:
        return done_at
    later = later_reading(done_at, tz)
    return later if later >= submit_at else done_at


def later_reading(done_at: datetime, tz: ZoneInfo) -> datetime:
    """The second reading of ``done_at``'s wall-clock time (``done_at`` itself when there is only one)."""
    return localise(done_at.astimezone(tz).replace(tzinfo=None), tz, ambiguous="later")
