"""Schedules evaluated at chosen instants (DST changes included), jobs, and `dagster definitions validate`."""

from __future__ import annotations

import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest

from sms_pipeline import settings as settings_module
from tests.support.environment import app_environ
from sms_pipeline.definitions import build_definitions
from sms_pipeline.orchestration.ingest_assets import DAY_REPORT, INTRADAY_DELIVERY_REPORTS, TRANSACTION_REPORTS
from sms_pipeline.orchestration.partitions import day_partitions

LONDON = ZoneInfo("Europe/London")
KOLKATA = ZoneInfo("Asia/Kolkata")
UTC = ZoneInfo("UTC")


def _settings(tz: ZoneInfo, **env: str) -> settings_module.Settings:
    return settings_module.load({"SMS_PROVIDER_TIMEZONE": tz.key, "SMS_PIPELINE_LOOKBACK_DAYS": "5", **env})


def _tick(settings: settings_module.Settings, name: str, at: datetime):
    defs = build_definitions(settings)
    schedule = defs.resolve_schedule_def(name)
    return schedule, schedule.evaluate_tick(dg.build_schedule_context(scheduled_execution_time=at))


@pytest.mark.parametrize(
    ("tz", "tick_utc", "yesterday"),
    [
        # London, the night the clocks go forward: 02:00 BST is 01:00 UTC.
        (LONDON, datetime(2026, 3, 29, 1, 0, tzinfo=UTC), date(2026, 3, 28)),
        # ... and the morning after (a 23-hour day has closed).
        (LONDON, datetime(2026, 3, 30, 1, 0, tzinfo=UTC), date(2026, 3, 29)),
        # London, the night the clocks go back: 02:00 GMT is 02:00 UTC, after 01:xx came twice.
        (LONDON, datetime(2026, 10, 25, 2, 0, tzinfo=UTC), date(2026, 10, 24)),
        (LONDON, datetime(2026, 10, 26, 2, 0, tzinfo=UTC), date(2026, 10, 25)),
        # Kolkata: 02:00 IST is 20:30 UTC the day before; a UTC date would be a day off.
        (KOLKATA, datetime(2026, 6, 9, 20, 30, tzinfo=UTC), date(2026, 6, 9)),
    ],
)
def test_the_daily_tick_requests_yesterday_and_the_lookback_as_one_run(tz, tick_utc, yesterday):
    settings = _settings(tz)
    schedule, data = _tick(settings, "daily_reports_schedule", tick_utc)

    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 2 * * *", tz.key)
    assert tick_utc.astimezone(tz).hour == 2  # the instants above are the provider's 02:00
    (request,) = data.run_requests
    first = yesterday - timedelta(days=5)
    assert request.run_key == f"daily:{yesterday.isoformat()}"
    assert request.partition_key_range == dg.PartitionKeyRange(first.isoformat(), yesterday.isoformat())
    # Exactly the days Dagster itself considers closed at that instant.
    closed = day_partitions(settings).get_partition_keys(current_time=tick_utc)
    assert closed[-1] == yesterday.isoformat() and first.isoformat() in closed


def test_the_lookback_stops_at_the_first_partition_and_nothing_runs_before_it():
    settings = _settings(KOLKATA, SMS_PIPELINE_PARTITION_START="2026-06-07")
    _, data = _tick(settings, "daily_reports_schedule", datetime(2026, 6, 9, 20, 30, tzinfo=UTC))
    assert data.run_requests[0].partition_key_range == dg.PartitionKeyRange("2026-06-07", "2026-06-09")

    _, before = _tick(settings, "daily_reports_schedule", datetime(2026, 6, 6, 20, 30, tzinfo=UTC))
    assert not before.run_requests and "2026-06-07" in before.skip_message


def test_hourly_ticks_in_the_repeated_hour_get_their_own_run_keys():
    settings = _settings(LONDON)
    first_0105 = datetime(2026, 10, 25, 0, 5, tzinfo=UTC)  # 01:05 BST
    second_0105 = datetime(2026, 10, 25, 1, 5, tzinfo=UTC)  # 01:05 GMT, an hour later
    keys = []
    for at in (first_0105, second_0105):
        schedule, data = _tick(settings, "hourly_schedule", at)
        assert (schedule.cron_schedule, schedule.execution_timezone) == ("5 * * * *", "Europe/London")
        (request,) = data.run_requests
        keys.append(request.run_key)
    assert keys[0] != keys[1]


def test_the_jobs_select_by_group_and_cadence():
    defs = build_definitions(_settings(KOLKATA))
    daily = defs.resolve_job_def("daily_reports_job").asset_layer.selected_asset_keys
    hourly = defs.resolve_job_def("hourly_job").asset_layer.selected_asset_keys
    assert {DAY_REPORT, TRANSACTION_REPORTS} <= daily and INTRADAY_DELIVERY_REPORTS not in daily
    assert INTRADAY_DELIVERY_REPORTS in hourly and not {DAY_REPORT, TRANSACTION_REPORTS} & hourly


@pytest.mark.slow  # a fresh process loads every module (dbt manifest included)
def test_dagster_definitions_validate_loads_the_definitions(tmp_path: Path):
    env = app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home"))
    env.pop("DAGSTER_HOME", None)
    dagster = Path(sys.executable).with_name("dagster")
    done = subprocess.run([str(dagster), "definitions", "validate", "-m", "sms_pipeline.definitions"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All code locations passed validation" in done.stdout + done.stderr
