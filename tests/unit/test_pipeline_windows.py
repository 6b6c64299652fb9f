from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.orchestration.windows import dbt_vars, window_for_days

KOLKATA = ZoneInfo("Asia/Kolkata")
LONDON = ZoneInfo("Europe/London")


def test_one_day_in_kolkata_is_half_open_and_zone_aware():
    w = window_for_days(date(2026, 11, 28), date(2026, 11, 28), KOLKATA)
    assert w.start == datetime(2026, 11, 27, 18, 30, tzinfo=timezone.utc)
    assert w.end == datetime(2026, 11, 28, 18, 30, tzinfo=timezone.utc)
    assert w.days() == [date(2026, 11, 28)]


def test_lookback_extends_the_start_only():
    w = window_for_days(date(2026, 11, 28), date(2026, 11, 28), KOLKATA, lookback_days=5)
    assert w.first_day == date(2026, 11, 23)
    assert w.end == datetime(2026, 11, 28, 18, 30, tzinfo=timezone.utc)
    assert len(w.days()) == 6


def test_dst_day_in_london_is_23_hours():
    w = window_for_days(date(2026, 3, 29), date(2026, 3, 29), LONDON)
    assert (w.end - w.start).total_seconds() == 23 * 3600


def test_dbt_vars_are_aware_iso_bounds():
    w = window_for_days(date(2026, 10, 25), date(2026, 10, 25), LONDON)
    v = dbt_vars(w, LONDON)
    assert v["window_start"] == "2026-10-24T23:00:00+00:00"
    assert v["window_end"] == "2026-10-26T00:00:00+00:00"  # 25-hour day
    assert v["provider_timezone"] == "Europe/London"


def test_reversed_range_refused():
    with pytest.raises(ValueError):
        window_for_days(date(2026, 1, 2), date(2026, 1, 1), KOLKATA)
