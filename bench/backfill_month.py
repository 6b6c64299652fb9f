"""A month's catch-up after an outage: 30 provider days backfilled through Dagster in one run.

    python bench/backfill_month.py [--days 30] [--messages-per-day 100000]

Setup (not timed): a scratch database (dropped afterwards); a simulator
process bills ``--days`` consecutive provider days of ``--messages-per-day``
messages each (the mix of ``bench/day_traffic.py``), ending four days ago;
the matching outbound rows go into ``msg.outbound_message``. Nothing has
been ingested or reconciled: the pipeline was down for the whole range.

Timed: one ``dg.materialize`` of the daily ingest and reconciliation assets
(``dlr/day_report``, ``dlr/transaction_reports``, and ``dlr/receipts`` with
``msg/reconciliation``, one multi-asset whose time is in the latter's
``duration_s``) over the whole range, as a backfill run of the daily
job does (partition range tags, one run, days in order), with the clock at
the time of the catch-up. Reports wall time, time per day, each asset's
share (from its per-day ``duration_s`` metadata) and peak memory growth.
The marts (dbt) are not part of this run; ``bench/marts_build.py`` measures them.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections import defaultdict
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg

# Partitions from a fixed day, not the one an installation recorded (the benchmark's database is its
# own): the pipeline's modules read the first partition day when imported (docs/design.md#first-partition-day).
os.environ.setdefault("SMS_PIPELINE_PARTITION_START", "2026-01-01")

from sms_pipeline import hmac_keys
from sms_pipeline import settings as settings_module
from sms_pipeline.db import connection
from sms_pipeline.definitions import ASSETS as PIPELINE_ASSETS
from sms_pipeline.orchestration.resources import ClockResource, build_resources
from sms_pipeline.orchestration.schedules import partition_range_tags

from day_traffic import (TZ_NAME, TrafficDay, load_outbound_rows, prepare_database, settings_environ,
                         simulated_traffic, utc_now)
from send_support import scratch_database
from reconcile_day import PeakRss

DAILY_ASSETS = ("dlr/day_report", "dlr/transaction_reports", "dlr/receipts", "msg/reconciliation")


def daily_assets() -> list:
    """The pipeline's own definitions of DAILY_ASSETS (the marts left out)."""
    return [a for a in PIPELINE_ASSETS if any(k.to_user_string() in DAILY_ASSETS for k in a.keys)]


def durations(result: dg.ExecuteInProcessResult) -> dict[str, list[tuple[str, float]]]:
    """Each asset's ``duration_s`` metadata as (partition, seconds), in materialisation order."""
    found: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization
        duration = materialization.metadata.get("duration_s")
        if duration is not None:
            found[materialization.asset_key.to_user_string()].append(
                (materialization.partition, float(duration.value)))
    return found


def outcome(url: str) -> tuple[dict[str, int], int]:
    """The message states and the number of receipt events a run left."""
    with connection.connect_url(url) as conn:
        states = dict(conn.execute("SELECT state::text, count(*) FROM msg.outbound_message GROUP BY 1").fetchall())
        return states, conn.execute("SELECT count(*) FROM dlr.delivery_receipts").fetchone()[0]


def month_command(doc: str) -> tuple[argparse.Namespace, date, date]:
    """The command line of the month benches, and the first and last provider day it names: ``--days``
    days ending four days ago (every one closed and past its lookback)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--messages-per-day", type=int, default=100_000)
    parser.add_argument("--keep-database", action="store_true", help="keep the scratch database (for EXPLAIN)")
    args = parser.parse_args()
    last = datetime.now(ZoneInfo(TZ_NAME)).date() - timedelta(days=4)
    return args, last - timedelta(days=args.days - 1), last


def main() -> None:
    args, first, last = month_command(__doc__)
    memory = PeakRss()
    started_at, load_before = utc_now(), os.getloadavg()[0]
    catch_up_at = utc_now() - timedelta(minutes=5)
    with scratch_database("month", keep=args.keep_database, partitions=False) as url:
        with connection.connect_url(url, autocommit=True) as conn:
            prepare_database(conn, first)
        days = [TrafficDay(first + timedelta(days=n), args.messages_per_day) for n in range(args.days)]
        setup_started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench-backfill-") as tmp, \
                simulated_traffic(days, catch_up_at, Path(tmp)) as traffic:
            settings = settings_module.load({**os.environ, **settings_environ(url, traffic.base_url,
                                                                              first - timedelta(days=1))})
            with connection.connect_url(url, autocommit=True) as conn:
                outbound = load_outbound_rows(conn, traffic, hmac_keys.text_key(settings))
                conn.execute("VACUUM ANALYZE msg.outbound_message")
                conn.execute("CHECKPOINT")
            setup_s = time.perf_counter() - setup_started
            resources = {  # the project's resources; secrets inline (the settings are not os.environ)
                **build_resources(settings, secrets_by_name=False),
                "clock": ClockResource(frozen_at=catch_up_at.isoformat()),
            }
            memory.reset_peak()
            started = time.perf_counter()
            result = dg.materialize(daily_assets(), resources=resources, instance=dg.DagsterInstance.ephemeral(),
                                    tags=partition_range_tags(first, last), raise_on_error=False)
            wall = time.perf_counter() - started
            growth = memory.peak_growth_mb()
        states, receipts = outcome(url)

    per_asset = {asset: [seconds for _, seconds in found] for asset, found in durations(result).items()}

    print(f"run of {started_at:%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average before/after {load_before:.1f} / {os.getloadavg()[0]:.1f}")
    print(f"{args.days} provider days {first}..{last}, {traffic.billed:,} billed messages, {outbound:,} outbound "
          f"rows (setup {setup_s:.0f} s, not timed); run {'succeeded' if result.success else 'FAILED'}")
    print(f"states afterwards: {states}; receipt events: {receipts:,}\n")
    print("| measurement | result |")
    print("|---|---|")
    print(f"| wall time of the backfill run (one dg.materialize, {args.days} days) | {wall:.0f} s |")
    print(f"| per day | {wall / args.days:.1f} s ({args.messages_per_day * args.days / wall:,.0f} messages/s) |")
    for asset in DAILY_ASSETS:
        values = per_asset.get(asset, [])
        if values:
            print(f"| {asset}: per-day duration_s (mean / max over {len(values)} days) | "
                  f"{sum(values) / len(values):.2f} s / {max(values):.2f} s |")
    print(f"| peak memory growth of the process during the run | {growth:.0f} MB |")


if __name__ == "__main__":
    main()
