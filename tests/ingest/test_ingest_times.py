"""Report times to UTC: the per-minute parser agrees with the core parser; DST decided explicitly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.core.provider_time import InvalidLocalTime, parse_local
from sms_pipeline.ingest.times import LocalTimeParser, consistent_done_time

LONDON = ZoneInfo("Europe/London")
KOLKATA = ZoneInfo("Asia/Kolkata")


def _walls(day: str, step: timedelta) -> list[str]:
    start = datetime.fromisoformat(f"{day} 00:00:00")
    return [(start + step * i).strftime("%Y-%m-%d %H:%M:%S") for i in range(int(timedelta(days=1) / step))]


@pytest.mark.parametrize(("tz", "day"), [(LONDON, "2026-03-29"), (LONDON, "2026-10-25"), (KOLKATA, "2026-10-25")])
def test_the_memoised_parser_agrees_with_the_core_parser_all_day(tz, day):
    parser = LocalTimeParser(tz)
    for wall in _walls(day, timedelta(minutes=7, seconds=13)) + ["2026-10-25 01:30:00", "2026-03-29 01:30:00"]:
        assert parser.parse(wall) == parse_local(wall, tz), wall


def test_a_repeated_wall_time_reads_as_its_first_occurrence_and_a_skipped_one_as_the_transition():
    parser = LocalTimeParser(LONDON)
    assert parser.parse("2026-10-25 01:30:00") == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # BST reading
    assert parser.parse("2026-03-29 01:30:00") == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # moved to 02:00 BST


@pytest.mark.parametrize("text", ["2026-10-25", "25/10/2026 01:30:00", "2026-13-01 00:00:00", "2026-10-25 24:00:00"])
def test_malformed_times_are_refused(text):
    with pytest.raises(InvalidLocalTime):
        LocalTimeParser(LONDON).parse(text)


def test_a_delivery_in_the_repeated_hour_is_read_after_its_submission():
    submit = datetime(2026, 10, 25, 0, 59, 50, tzinfo=UTC)  # 01:59:50 BST
    first_reading = parse_local("2026-10-25 01:00:10", LONDON)  # 00:00:10 UTC: before the submission
    assert consistent_done_time(submit, first_reading, LONDON) == datetime(2026, 10, 25, 1, 0, 10, tzinfo=UTC)


def test_other_delivery_times_are_left_alone():
    submit = datetime(2026, 10, 25, 0, 20, tzinfo=UTC)  # 01:20 BST
    in_first_hour = parse_local("2026-10-25 01:40:00", LONDON)
    assert consistent_done_time(submit, in_first_hour, LONDON) == in_first_hour
    assert consistent_done_time(submit, None, LONDON) is None
    assert consistent_done_time(None, in_first_hour, LONDON) == in_first_hour
    # Before the submission but not ambiguous: the provider's data is odd, and kept as it says.
    odd = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
    assert consistent_done_time(odd + timedelta(hours=1), odd, LONDON) == odd
