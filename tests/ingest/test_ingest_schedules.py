"""Schedules evaluated at chosen instants (DST changes included), jobs, and `dagster definitions validate`.

The schedules are module-level definitions of one deployment, whose provider zone and first
partition day are read when the pipeline is imported: each deployment tried here is a fresh
process with its own variables, which evaluates the ticks and reports them as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.support.environment import app_environ
from sms_pipeline.definitions import defs
from sms_pipeline.orchestration.asset_keys import DAY_REPORT, INTRADAY_DELIVERY_REPORTS, TRANSACTION_REPORTS

LONDON = ZoneInfo("Europe/London")
KOLKATA = ZoneInfo("Asia/Kolkata")
UTC = ZoneInfo("UTC")


# Evaluates ticks of the deployment's schedules; prints one JSON object per tick.
TICKS_SCRIPT = """
import json, sys
from datetime import datetime
import dagster as dg
from sms_pipeline.orchestration import schedules
from sms_pipeline.orchestration.partitions import DAY_PARTITIONS
for name, at in json.loads(sys.argv[1]):
    schedule = getattr(schedules, name)
    instant = datetime.fromisoformat(at)
    data = schedule.evaluate_tick(dg.build_schedule_context(scheduled_execution_time=instant))
    print(json.dumps({
        "cron": schedule.cron_schedule, "zone": schedule.execution_timezone, "skip": data.skip_message,
        "requests": [[r.run_key, r.partition_key_range and [r.partition_key_range.start, r.partition_key_range.end]]
                     for r in data.run_requests or []],
        "closed": DAY_PARTITIONS.get_partition_keys(current_time=instant),
    }))
"""


def _ticks(tz: ZoneInfo, ticks: list[tuple[str, datetime]], tmp_path: Path, **env: str) -> list[dict]:
    """The deployment with provider zone ``tz`` (lookback 5 days, ``env`` more), ticked at each instant."""
    variables = app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home"), SMS_PROVIDER_TIMEZONE=tz.key,
                            SMS_PIPELINE_LOOKBACK_DAYS="5", **env)
    done = subprocess.run([sys.executable, "-c", TICKS_SCRIPT, json.dumps([[n, at.isoformat()] for n, at in ticks])],
                          env=variables, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


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
def test_the_daily_tick_requests_yesterday_and_the_lookback_as_one_run(tz, tick_utc, yesterday, tmp_path):
    (tick,) = _ticks(tz, [("daily_reports_schedule", tick_utc)], tmp_path)

    assert (tick["cron"], tick["zone"]) == ("0 2 * * *", tz.key)
    assert tick_utc.astimezone(tz).hour == 2  # the instants above are the provider's 02:00
    ((run_key, days),) = tick["requests"]
    first = yesterday - timedelta(days=5)
    assert run_key == f"daily:{yesterday.isoformat()}"
    assert days == [first.isoformat(), yesterday.isoformat()]
    # Exactly the days Dagster itself considers closed at that instant.
    assert tick["closed"][-1] == yesterday.isoformat() and first.isoformat() in tick["closed"]


def test_the_lookback_stops_at_the_first_partition_and_nothing_runs_before_it(tmp_path):
    after, before = _ticks(KOLKATA, [("daily_reports_schedule", datetime(2026, 6, 9, 20, 30, tzinfo=UTC)),
                                     ("daily_reports_schedule", datetime(2026, 6, 6, 20, 30, tzinfo=UTC))],
                           tmp_path, SMS_PIPELINE_PARTITION_START="2026-06-07")
    assert after["requests"][0][1] == ["2026-06-07", "2026-06-09"]
    assert not before["requests"] and "2026-06-07" in before["skip"]


def test_hourly_ticks_in_the_repeated_hour_get_their_own_run_keys(tmp_path):
    first_0105 = datetime(2026, 10, 25, 0, 5, tzinfo=UTC)  # 01:05 BST
    second_0105 = datetime(2026, 10, 25, 1, 5, tzinfo=UTC)  # 01:05 GMT, an hour later
    ticks = _ticks(LONDON, [("hourly_schedule", first_0105), ("hourly_schedule", second_0105)], tmp_path)
    keys = []
    for tick in ticks:
        assert (tick["cron"], tick["zone"]) == ("5 * * * *", "Europe/London")
        ((run_key, _),) = tick["requests"]
        keys.append(run_key)
    assert keys[0] != keys[1]


def test_the_jobs_select_by_group_and_cadence():
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
