from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sms_pipeline.core.provider_time import (
    AmbiguousLocalTime,
    InvalidLocalTime,
    NonexistentLocalTime,
    day_bounds,
    format_local,
    format_schedule_time_sms,
    format_schedule_time_whatsapp,
    local_date,
    parse_human,
    parse_local,
)

LONDON = ZoneInfo("Europe/London")
KOLKATA = ZoneInfo("Asia/Kolkata")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("July 13, 2019 03:44:48", utc(2019, 7, 12, 22, 14, 48)),
        ("Jul 13, 2019 03:44:52", utc(2019, 7, 12, 22, 14, 52)),
        ("March 3, 2026 00:00:00", utc(2026, 3, 2, 18, 30)),
        (" Dec 31, 2025 23:59:59 ", utc(2025, 12, 31, 18, 29, 59)),
    ],
)
def test_parse_human_kolkata(text: str, expected: datetime) -> None:
    assert parse_human(text, KOLKATA) == expected


def test_parse_local_kolkata() -> None:
    assert parse_local("2026-01-15 10:00:00", KOLKATA) == utc(2026, 1, 15, 4, 30)
    assert parse_local("2026-01-15 10:00:00.25", KOLKATA) == utc(2026, 1, 15, 4, 30, 0, 250000)


@pytest.mark.parametrize(
    "parse, text",
    [
        (parse_human, "Julio 13, 2019 03:44:48"),
        (parse_human, "13 July 2019 03:44:48"),
        (parse_human, "February 30, 2026 10:00:00"),
        (parse_local, "2026-02-30 10:00:00"),
        (parse_local, "2026-1-5 10:00:00"),
        (parse_local, "2026-01-05T10:00:00"),
        (parse_local, "1700117933163"),
        (parse_local, ""),
    ],
)
def test_malformed_times_raise_naming_text(parse, text: str) -> None:
    with pytest.raises(InvalidLocalTime) as err:
        parse(text, KOLKATA)
    assert repr(text) in str(err.value)


def test_nonexistent_london_spring_forward() -> None:
    # 2026-03-29: 01:00 GMT jumps to 02:00 BST; 01:30 never happens.
    assert parse_local("2026-03-29 01:30:00", LONDON) == utc(2026, 3, 29, 1, 0)
    assert parse_human("March 29, 2026 01:59:59", LONDON) == utc(2026, 3, 29, 1, 0)
    with pytest.raises(NonexistentLocalTime):
        parse_local("2026-03-29 01:30:00", LONDON, nonexistent="raise")
    # Either side of the gap is ordinary.
    assert parse_local("2026-03-29 00:59:59", LONDON) == utc(2026, 3, 29, 0, 59, 59)
    assert parse_local("2026-03-29 02:00:00", LONDON) == utc(2026, 3, 29, 1, 0)


def test_ambiguous_london_fall_back() -> None:
    # 2026-10-25: 02:00 BST goes back to 01:00 GMT; 01:30 happens twice.
    assert parse_local("2026-10-25 01:30:00", LONDON) == utc(2026, 10, 25, 0, 30)
    assert parse_local("2026-10-25 01:30:00", LONDON, ambiguous="earlier") == utc(2026, 10, 25, 0, 30)
    assert parse_local("2026-10-25 01:30:00", LONDON, ambiguous="later") == utc(2026, 10, 25, 1, 30)
    assert parse_human("October 25, 2026 01:30:00", LONDON, ambiguous="later") == utc(2026, 10, 25, 1, 30)
    with pytest.raises(AmbiguousLocalTime):
        parse_human("Oct 25, 2026 01:30:00", LONDON, ambiguous="raise")
    # "raise" only raises when the time really is ambiguous or missing.
    strict = {"ambiguous": "raise", "nonexistent": "raise"}
    assert parse_local("2026-10-25 02:30:00", LONDON, **strict) == utc(2026, 10, 25, 2, 30)


def test_policy_names_are_checked() -> None:
    with pytest.raises(ValueError, match="ambiguous"):
        parse_local("2026-10-25 01:30:00", LONDON, ambiguous="late")  # type: ignore[arg-type]


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)))
def test_format_then_parse_round_trips(instant: datetime) -> None:
    instant = instant.replace(microsecond=0)
    for tz in (KOLKATA, LONDON):
        text = format_local(instant, tz)
        back = parse_local(text, tz, ambiguous="earlier")
        folded = parse_local(text, tz, ambiguous="later")
        assert instant in (back, folded)


def test_format_local_and_schedule_times() -> None:
    instant = utc(2026, 1, 15, 4, 30, 5)
    assert format_local(instant, KOLKATA) == "2026-01-15 10:00:05"
    assert format_schedule_time_sms(instant, KOLKATA) == "2026-01-15 10:00:05"
    assert format_schedule_time_whatsapp(instant, KOLKATA) == "2026-01-15 10:01"
    on_minute = utc(2026, 1, 15, 4, 30)
    assert format_schedule_time_whatsapp(on_minute, KOLKATA) == "2026-01-15 10:00"
    assert format_schedule_time_sms(on_minute + timedelta(microseconds=1), KOLKATA) == "2026-01-15 10:00:01"
    # Other offsets are converted, not reinterpreted.
    assert format_local(datetime(2026, 1, 15, 10, 0, tzinfo=timezone(timedelta(hours=5, minutes=30))), LONDON) == (
        "2026-01-15 04:30:00"
    )
    assert format_local(utc(2026, 7, 1, 12), LONDON) == "2026-07-01 13:00:00"


@pytest.mark.parametrize(
    "func", [format_local, format_schedule_time_sms, format_schedule_time_whatsapp, local_date]
)
def test_naive_datetimes_refused(func) -> None:
    with pytest.raises(ValueError, match="naive"):
        func(datetime(2026, 1, 15, 10, 0), KOLKATA)


def test_local_date() -> None:
    assert local_date(utc(2026, 1, 15, 18, 29, 59), KOLKATA) == date(2026, 1, 15)
    assert local_date(utc(2026, 1, 15, 18, 30), KOLKATA) == date(2026, 1, 16)


def test_day_bounds() -> None:
    start, end = day_bounds(date(2026, 3, 29), LONDON)
    assert (start, end) == (utc(2026, 3, 29), utc(2026, 3, 29, 23))
    assert end - start == timedelta(hours=23)
    start, end = day_bounds(date(2026, 10, 25), LONDON)
    assert end - start == timedelta(hours=25)
    start, end = day_bounds(date(2026, 1, 15), KOLKATA)
    assert (start, end) == (utc(2026, 1, 14, 18, 30), utc(2026, 1, 15, 18, 30))


def test_day_bounds_with_a_skipped_midnight() -> None:
    # Sao Paulo sprang forward at midnight on 2018-11-04: that day began at 01:00.
    start, end = day_bounds(date(2018, 11, 4), ZoneInfo("America/Sao_Paulo"))
    assert start == utc(2018, 11, 4, 3)
    assert end - start == timedelta(hours=23)


@given(st.dates(min_value=date(2000, 1, 1), max_value=date(2040, 1, 1)))
def test_day_bounds_tile_the_timeline(d: date) -> None:
    for tz in (LONDON, KOLKATA):
        start, end = day_bounds(d, tz)
        assert day_bounds(d + timedelta(days=1), tz)[0] == end
        assert local_date(start, tz) == d
        assert local_date(end - timedelta(microseconds=1), tz) == d
