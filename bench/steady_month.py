"""A steady month: 30 provider days sent and reconciled one day at a time, as the daily schedule runs them.

    python bench/steady_month.py [--days 30] [--messages-per-day 100000]

The other shape of a month. ``bench/backfill_month.py`` loads every day's
outbound rows first and then catches up on all days in one run, so each day
is reconciled against a full month partition. Here the partition fills as
the days go, as it does in production.

Setup (not timed): a scratch database (dropped afterwards); a simulator
process bills ``--days`` consecutive provider days of ``--messages-per-day``
messages each (the mix of ``bench/day_traffic.py``), ending four days ago.
Its clock stands after the last day, so every day's report is complete.

Then, for each day in order:

1. (not timed) that day's outbound rows go into ``msg.outbound_message``
   through its triggers, as the send worker leaves them, and the table is
   analysed (fresher statistics than production's, where autovacuum
   analyses a month's partition only after a tenth of it changed);
2. (timed) the daily schedule's tick after that day (02:00 provider-local):
   one ``dg.materialize`` of the daily ingest and reconciliation assets over
   the partitions the schedule's own ``daily_days`` gives (the day and the
   lookback days before it), with the clock at the tick.

Reports each tick's wall time, the new day's reconciliation (its
``duration_s``) and the lookback days' reconciliations, the first ticks
with the whole lookback against the last, the states left and peak memory
growth (over the whole run: not comparable with the catch-up's). The marts (dbt)
are not part of it; ``bench/marts_build.py`` measures them.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from datetime import date, time as clock_time, timedelta
from pathlib import Path
from statistics import mean
from typing import NamedTuple
from zoneinfo import ZoneInfo

import dagster as dg

# Partitions from a fixed day (see bench/backfill_month.py).
os.environ.setdefault("SMS_PIPELINE_PARTITION_START", "2026-01-01")

from sms_pipeline import hmac_keys
from sms_pipeline import settings as settings_module
from sms_pipeline.db import connection
from sms_pipeline.orchestration.resources import ClockResource, build_resources
from sms_pipeline.orchestration.schedules import DAILY_CRON, daily_days, partition_range_tags

from backfill_month import daily_assets, durations, month_command, outcome
from day_traffic import (TZ_NAME, TrafficDay, local_instant, prepare_database, settings_environ,
                         simulated_traffic, staged_outbound_rows, utc_now)
from reconcile_day import PeakRss
from send_support import scratch_database

RECONCILIATION = "msg/reconciliation"
EDGE_DAYS = 5  # the first and the last full ticks compared


class Tick(NamedTuple):
    day: date
    partitions: int  # the day and its lookback days
    wall_s: float
    day_reconciliation_s: float
    lookback_reconciliations_s: float


def daily_tick(cron: str) -> clock_time:
    """The time of day of a daily cron expression ("M H * * *")."""
    minute, hour, *rest = cron.split()
    if rest != ["*", "*", "*"]:
        raise ValueError(f"not a daily cron expression: {cron!r}")
    return clock_time(int(hour), int(minute))


def main() -> None:
    args, first, last = month_command(__doc__)
    memory = PeakRss()
    started_at, load_before = utc_now(), os.getloadavg()[0]
    tz = ZoneInfo(TZ_NAME)
    tick = daily_tick(DAILY_CRON)
    ticks: list[Tick] = []
    with scratch_database("month", keep=args.keep_database, partitions=False) as url:
        with connection.connect_url(url, autocommit=True) as conn:
            prepare_database(conn, first)
        days = [TrafficDay(first + timedelta(days=n), args.messages_per_day) for n in range(args.days)]
        with tempfile.TemporaryDirectory(prefix="bench-steady-") as tmp, \
                simulated_traffic(days, utc_now() - timedelta(minutes=5), Path(tmp)) as traffic, \
                connection.connect_url(url, autocommit=True) as conn:
            settings = settings_module.load({**os.environ, **settings_environ(url, traffic.base_url,
                                                                              first - timedelta(days=1))})
            instance = dg.DagsterInstance.ephemeral()
            memory.reset_peak()
            inserted = 0
            with staged_outbound_rows(conn, traffic, hmac_keys.text_key(settings)) as insert:
                for day in (d.day for d in days):
                    inserted += insert(day)
                    conn.execute("ANALYZE msg.outbound_message")
                    tick_at = local_instant(day + timedelta(days=1), tick)
                    # from the bench's first day: there is no traffic before it
                    run_first, run_last = daily_days(tick_at, tz, first, settings.lookback_days)
                    resources = {  # the project's resources; secrets inline (the settings are not os.environ)
                        **build_resources(settings, secrets_by_name=False),
                        "clock": ClockResource(frozen_at=tick_at.isoformat()),
                    }
                    started = time.perf_counter()
                    result = dg.materialize(daily_assets(), resources=resources, instance=instance,
                                            tags=partition_range_tags(run_first, run_last), raise_on_error=False)
                    wall = time.perf_counter() - started
                    if not result.success:
                        raise SystemExit(f"the tick after {day} failed: see the run's events above")
                    reconciled = dict(durations(result)[RECONCILIATION])
                    ticks.append(Tick(day, (run_last - run_first).days + 1, wall, reconciled.pop(day.isoformat()),
                                      sum(reconciled.values())))
            growth = memory.peak_growth_mb()
            if inserted != traffic.outbound_rows:  # a row sent outside the days would never be reconciled
                raise SystemExit(f"{inserted:,} of {traffic.outbound_rows:,} outbound rows fell on the days")
        states, receipts = outcome(url)

    print(f"run of {started_at:%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average before/after {load_before:.1f} / {os.getloadavg()[0]:.1f}")
    print(f"{args.days} provider days {first}..{last}, {traffic.billed:,} billed messages, "
          f"{traffic.outbound_rows:,} outbound rows, lookback {settings.lookback_days} days")
    print(f"states afterwards: {states}; receipt events: {receipts:,}\n")
    print("| day | partitions run | tick wall s | the day's reconciliation s | the lookback days' reconciliations s |")
    print("|---|---|---|---|---|")
    for t in ticks:
        print(f"| {t.day} | {t.partitions} | {t.wall_s:.1f} | {t.day_reconciliation_s:.2f} | "
              f"{t.lookback_reconciliations_s:.2f} |")
    # Only ticks with the whole lookback compare: the first ones run fewer partitions.
    full = [t for t in ticks if t.partitions == max(t.partitions for t in ticks)]
    edge = min(EDGE_DAYS, len(full) // 2)
    if edge:
        print(f"\n| measurement, mean over {edge} ticks of {full[0].partitions} partitions | first | last |")
        print("|---|---|---|")
        for label, field in (("tick wall s", "wall_s"), ("the day's reconciliation s", "day_reconciliation_s"),
                             ("the lookback days' reconciliations s", "lookback_reconciliations_s")):
            print(f"| {label} | {mean(getattr(t, field) for t in full[:edge]):.2f} | "
                  f"{mean(getattr(t, field) for t in full[-edge:]):.2f} |")
    print(f"\nall ticks: {sum(t.wall_s for t in ticks):.0f} s; peak memory growth of the process over the whole "
          f"run (staging, every tick on one Dagster instance): {growth:.0f} MB")


if __name__ == "__main__":
    main()
