"""Marts build time against history size: is one day's incremental build independent of history?

Builds a scratch database on the active server (embedded by default, or
SMS_PIPELINE_DATABASE_URL's server) and, by default, drops it afterwards:

1. the window days (the measured partition D and its lookback days) get a
   fixed set of messages and receipts, identical in every measurement;
2. ``--small`` historical messages (with receipts) are loaded on the days
   before the window, the marts' incremental run for D is timed (twice);
3. history grows to ``--large``, the same run is timed again (twice), then a
   full refresh (every day from the first partition) is timed once.

The dbt command is the one the Dagster asset runs (``windows.marts_window``
-> ``dbt_vars`` -> ``dbt build --vars ... --selector daily_marts``). Besides
the wall time of the dbt command (which includes dbt's own start and project
parse, a constant), it reports how long dbt's execution of the five models
and their tests took (``run_results.json``: the phase's wall time, and the
per-node times summed), and dbt's own CPU: on a shared machine the wall
time mostly measures the neighbours.

History is bulk-loaded with ``session_replication_role = replica`` (row
triggers off: the business-key registry and the transition guard are not
what is measured; CHECK constraints still apply).

    python bench/marts_build.py [--small 1000000] [--large 10000000] [--window-day-messages 20000]
                                [--receipts-per-message 0.25] [--keep]
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import psycopg
from dagster_dbt import DbtCliResource

# Partitions from a fixed day, not the one an installation recorded (the benchmark's database is its
# own): the pipeline's modules read the first partition day when imported (docs/design.md#first-partition-day).
os.environ.setdefault("SMS_PIPELINE_PARTITION_START", "2026-01-01")

from sms_pipeline import settings as settings_module
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.db import connection, migrate
from sms_pipeline.marts.dbt_env import dbt_env_for_url, dbt_environment
from sms_pipeline.marts.project import dbt_project, prepare_manifest
from sms_pipeline.orchestration.marts_assets import dbt_build_args
from sms_pipeline.orchestration.windows import dbt_vars, marts_window

DATABASE = "sms_bench_marts"
DAY = date(2026, 11, 20)  # the measured partition

# One statement generates N messages from generate_series: pseudo-random but
# deterministic per g (hashint8), realistic proportions of classes and states.
_MESSAGES = """
WITH s AS (
    SELECT g,
           (hashint8(g) & 2147483647) %% 1000 AS r,
           g %% 10 AS k,
           %(start)s::timestamptz + ((hashint8(g + 7) & 2147483647) %% %(span_s)s) * interval '1 second' AS t
      FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g
), m AS (
    SELECT g, r, t,
           CASE WHEN k < 2 THEN 'otp' WHEN k < 7 THEN 'transactional' ELSE 'promotional' END AS cls,
           CASE WHEN k < 2 THEN 1 WHEN k < 7 THEN 1 + (r %% 2) ELSE 2 + (r %% 2) END AS segs,
           CASE WHEN r < 850 THEN 'delivered' WHEN r < 900 THEN 'failed' WHEN r < 930 THEN 'expired'
                WHEN r < 965 THEN 'submitted' WHEN r < 980 THEN 'rejected' WHEN r < 990 THEN 'unknown'
                ELSE 'failed_not_submitted' END AS outcome
      FROM s
)
INSERT INTO msg.outbound_message
    (business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
     state, state_reason, created_at, claimed_at, submitted_at, delivered_at,
     billable_units, cost, cost_currency, provider_message_id, correlation_result)
SELECT %(prefix)s || g, 'tenant-' || (g %% 7), 'sms', cls, '9198' || lpad((g %% 100000000)::text, 8, '0'),
       upper(left(cls, 3)) || 'SND', 'bench', 'GSM7', segs,
       (CASE WHEN outcome = 'failed_not_submitted' THEN 'failed' ELSE outcome END)::msg.message_state,
       CASE WHEN outcome = 'failed_not_submitted' THEN 'not_submitted' END,
       t - interval '1 second', t - interval '500 milliseconds',
       CASE WHEN outcome IN ('delivered', 'failed', 'expired', 'submitted') THEN t END,
       CASE WHEN outcome = 'delivered' THEN t + (1 + r %% 120) * interval '1 second' END,
       CASE WHEN outcome IN ('delivered', 'failed', 'expired', 'submitted') THEN segs END,
       -- one row in 200 billed without a price (unpriced)
       CASE WHEN outcome IN ('delivered', 'failed', 'expired', 'submitted') AND g %% 200 <> 0
            THEN segs * CASE cls WHEN 'otp' THEN 0.0123 WHEN 'transactional' THEN 0.0079 ELSE 0.0042 END END,
       CASE WHEN outcome IN ('delivered', 'failed', 'expired', 'submitted') AND g %% 200 <> 0 THEN 'INR' END,
       CASE WHEN outcome IN ('delivered', 'failed', 'expired', 'submitted') THEN %(prefix)s || g END,
       CASE WHEN outcome IN ('delivered', 'failed', 'expired') THEN 'matched'::msg.correlation_result END
  FROM m
"""

# Receipts for a share of the same messages (same g, same submit time t).
_RECEIPTS = """
WITH s AS (
    SELECT g,
           %(start)s::timestamptz + ((hashint8(g + 7) & 2147483647) %% %(span_s)s) * interval '1 second' AS t
      FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS g
     WHERE (hashint8(g + 13) & 2147483647) %% 1000 < %(per_mille)s
)
INSERT INTO dlr.delivery_receipts
    (provider_message_id, status_word, raw_status, outcome, provider_submit_at, submit_month,
     provider_done_at, source, first_seen_at, correlation_result, correlated_at)
SELECT %(prefix)s || g, 'DELIVRD', 'DELIVRD', 'delivered', t, dlr.submit_month(t),
       t + interval '5 seconds', 'day_report', t + interval '1 day', 'matched', t + interval '1 day'
  FROM s
"""


@dataclass(frozen=True)
class Measurement:
    label: str
    history: int
    wall_s: float
    execution_s: float
    models_s: float
    tests_s: float
    dbt_cpu_s: float


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load(conn: psycopg.Connection, prefix: str, lo: int, hi: int, start: datetime, end: datetime,
         receipts_per_message: float, chunk: int = 500_000) -> None:
    span_s = int((end - start).total_seconds())
    with conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica")
        for a in range(lo, hi + 1, chunk):
            b = min(a + chunk - 1, hi)
            params = {"start": start, "span_s": span_s, "lo": a, "hi": b, "prefix": prefix,
                      "per_mille": int(receipts_per_message * 1000)}
            cur.execute(_MESSAGES, params)
            cur.execute(_RECEIPTS, params)
            conn.commit()
            print(f"  {prefix}: {b - lo + 1:,} of {hi - lo + 1:,} messages", flush=True)
        cur.execute("SET session_replication_role = DEFAULT")
    conn.commit()


def analyse(conn: psycopg.Connection) -> None:
    """Statistics, and the receipts laid out as the pipeline leaves them: it stores a day's receipts
    together, so a partition's physical order follows the submit time, which the submit-time BRIN
    (V85) relies on; the loads above generate them in hash order. VACUUM summarises the BRIN."""
    conn.autocommit = True
    with conn.transaction():
        conn.execute("CREATE TEMPORARY TABLE receipts_by_submit_time ON COMMIT DROP AS "
                     "SELECT * FROM dlr.delivery_receipts ORDER BY provider_submit_at")
        conn.execute("TRUNCATE dlr.delivery_receipts")
        conn.execute("INSERT INTO dlr.delivery_receipts OVERRIDING SYSTEM VALUE SELECT * FROM receipts_by_submit_time")
    conn.execute("ANALYZE msg.outbound_message")
    conn.execute("VACUUM ANALYZE dlr.delivery_receipts")
    conn.autocommit = False


def run_dbt(url: str, args: list[str]) -> tuple[float, dict, float]:
    dbt = DbtCliResource(project_dir=dbt_project())
    cpu_before = children_cpu_s()
    started = time.perf_counter()
    with dbt_environment(dbt_env_for_url(url)), tempfile.TemporaryDirectory(prefix="sms-dbt-bench-") as target:
        invocation = dbt.cli(args, target_path=Path(target)).wait()
        results = invocation.get_artifact("run_results.json")
    return time.perf_counter() - started, results, children_cpu_s() - cpu_before


def measure(url: str, settings: settings_module.Settings, label: str, history: int, *,
            full_refresh: bool = False) -> Measurement:
    tz = settings.provider_timezone
    window = marts_window(DAY, DAY, tz, lookback_days=settings.lookback_days,
                          history_start=settings.partition_start, full_refresh=full_refresh)
    args = [*dbt_build_args(dbt_vars(window, tz), full_refresh=full_refresh), "--selector", "daily_marts"]
    wall, results, cpu = run_dbt(url, args)
    models = sum(r["execution_time"] for r in results["results"] if r["unique_id"].startswith("model."))
    tests = sum(r["execution_time"] for r in results["results"] if r["unique_id"].startswith("test."))
    m = Measurement(label, history, wall, results["elapsed_time"], models, tests, cpu)
    print(f"  {label}: wall {wall:.1f} s, execution {m.execution_s:.2f} s, models {models:.2f} s, "
          f"tests {tests:.2f} s, dbt CPU {cpu:.1f} s", flush=True)
    return m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--window-day-messages", type=int, default=20_000)
    parser.add_argument("--receipts-per-message", type=float, default=0.25)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()

    settings = settings_module.load()
    tz = settings.provider_timezone
    admin = connection.server_url(settings)
    url = connection.with_database(admin, DATABASE)
    with connection.connect_url(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    prepare_manifest()
    try:
        window = marts_window(DAY, DAY, tz, lookback_days=settings.lookback_days,
                              history_start=settings.partition_start)
        history_start, _ = day_bounds(settings.partition_start, tz)
        with connection.connect_url(url) as conn:
            migrate.upgrade(conn)
            conn.execute("SELECT msg.ensure_partitions(%s, 12)", (history_start,))
            conn.execute("SELECT dlr.ensure_partitions(%s, 12)", (history_start,))
            conn.commit()
            days = (window.last_day - window.first_day).days + 1
            print(f"window {window.first_day}..{window.last_day}: {days} x {args.window_day_messages:,} messages")
            load(conn, "w", 1, days * args.window_day_messages, window.start, window.end, args.receipts_per_message)
            print(f"history {settings.partition_start}..{window.first_day - timedelta(days=1)}")
            load(conn, "h", 1, args.small, history_start, window.start, args.receipts_per_message)
            analyse(conn)

        run_dbt(url, dbt_build_args({"provider_timezone": tz.key}) + ["--selector", "marts_views",
                                                                        "--indirect-selection", "cautious"])
        measurements = [measure(url, settings, f"incremental {DAY}, run {i}", args.small) for i in (1, 2)]

        with connection.connect_url(url) as conn:
            load(conn, "h", args.small + 1, args.large, history_start, window.start, args.receipts_per_message)
            analyse(conn)
        measurements += [measure(url, settings, f"incremental {DAY}, run {i}", args.large) for i in (1, 2)]
        measurements.append(measure(url, settings, "full refresh", args.large, full_refresh=True))

        with connection.connect_url(url) as conn:
            sizes = conn.execute(
                "SELECT (SELECT count(*) FROM msg.outbound_message), (SELECT count(*) FROM dlr.delivery_receipts),"
                " pg_size_pretty(pg_database_size(current_database()))").fetchone()
    finally:
        if not args.keep:
            with connection.connect_url(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')

    print(f"\nrows at the end: {sizes[0]:,} messages, {sizes[1]:,} receipts, database {sizes[2]}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("\n| run | history messages | dbt wall | execution | models | tests | dbt CPU |\n"
          "|---|---|---|---|---|---|---|")
    for m in measurements:
        print(f"| {m.label} | {m.history:,} | {m.wall_s:.1f} s | {m.execution_s:.2f} s | {m.models_s:.2f} s "
              f"| {m.tests_s:.2f} s | {m.dbt_cpu_s:.1f} s |")
    small = min(m.execution_s for m in measurements if m.history == args.small and "incremental" in m.label)
    large = min(m.execution_s for m in measurements if m.history == args.large and "incremental" in m.label)
    print(f"\nincremental execution, best of two: {small:.2f} s at {args.small:,}, {large:.2f} s at "
          f"{args.large:,}: ratio {large / small:.2f}")


if __name__ == "__main__":
    main()
