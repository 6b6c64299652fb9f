"""marts.campaign_daily from rows written by SQL: ties out with the message rows to the paisa, counts every
outcome once, and ``report cost --by campaign`` prints it.

Day D = 2026-03-10 in Asia/Kolkata (UTC+05:30). Two campaigns of two tenants:

spring-sale (acme, promotional), provider-side:
    5 delivered (1 unit, 0.0079 each, latencies 1..5 s), 2 failed (2 units, 0.0158 each),
    1 expired after billing, 1 submitted still awaiting a receipt (0.0079) -> billed 9, 11 units, 0.0869;
    3 scheduled (handed over on D-1, due on D at 16:00: the provider holds them, counted on D), 2 cancelled,
    1 rejected: never billed;
    1 delivered on D+1 (outside the window).
winter-otp (beta, transactional): 3 delivered at odd prices 0.0071 + 0.0083 + 0.0107 = 0.0261.
And billed rows of no campaign, which campaign_daily leaves out.
"""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg
import pytest

from tests.support.environment import settings_for
from tests.support.marts import rows_as_dicts
from tests.support.rows import ensure_partitions

from sms_pipeline.definitions import ASSET_CHECKS, ASSETS
from sms_pipeline.marts.dbt_env import dbt_env_for_url, dbt_environment
from sms_pipeline.marts.project import dbt_cli
from sms_pipeline.orchestration.asset_keys import PROVIDER_SUMMARY
from sms_pipeline.orchestration.resources import build_resources
from sms_pipeline.orchestration.schedules import DAILY_SELECTION

pytestmark = pytest.mark.slow

D = date(2026, 3, 10)
IST_10_00 = datetime(2026, 3, 10, 4, 30, tzinfo=UTC)
JOB = "campaign_marts"
TZ = ZoneInfo("Asia/Kolkata")
CAMPAIGN_DAILY = dg.AssetKey(["marts", "campaign_daily"])
HANDED_OVER_AT = IST_10_00 - timedelta(hours=23)  # claimed by the worker on D-1 at 11:00, ahead of its time
HANDED_OVER_DUE = IST_10_00 + timedelta(hours=6)  # 16:00 on D in Kolkata


def _campaign(conn: psycopg.Connection, name: str, provider_side: bool) -> int:
    return conn.execute(
        "INSERT INTO msg.campaign (name, provider_side, local_time, time_zone, scheduled_for, created_at, updated_at)"
        " VALUES (%s, %s, '2026-03-10 10:00', 'Asia/Kolkata', %s, %s, %s) RETURNING id",
        (name, provider_side, IST_10_00, IST_10_00 - timedelta(days=1), IST_10_00 - timedelta(days=1))).fetchone()[0]


def _rows(conn: psycopg.Connection, count: int, *, submitted_at: datetime | None = IST_10_00,
          latency_s: int | None = None, **columns: Any) -> None:
    """``count`` rows of a campaign, claimed a second before ``submitted_at`` (or at 10:00 when not submitted);
    ``latency_s``: the i-th row (from 0) delivered latency_s + i seconds after submission."""
    claimed = (submitted_at or IST_10_00) - timedelta(seconds=1)
    values = {"tenant_id": "acme", "message_class": "promotional", "sender_id": "ACMEPR", "segments": 1,
              "created_at": claimed - timedelta(hours=12), "claimed_at": claimed, "submitted_at": submitted_at,
              **columns}
    names = sorted(values)
    delivered = "" if latency_s is None else ", %(submitted_at)s::timestamptz + make_interval(secs => %(l)s + g)"
    conn.execute(
        f"INSERT INTO msg.outbound_message (business_key, recipient, channel, body, encoding, {', '.join(names)}"
        f"{', delivered_at' if latency_s is not None else ''}) "
        f"SELECT %(key)s || g, '9198' || lpad(g::text, 8, '0'), 'sms', 'hello', 'GSM7', "
        f"{', '.join(f'%({n})s' for n in names)}{delivered} FROM generate_series(0, %(count)s - 1) AS g",
        {**values, "key": f"bk-{uuid.uuid4().hex}-", "count": count, "l": latency_s})


def _insert(conn: psycopg.Connection) -> tuple[int, int]:
    ensure_partitions(conn, date(2026, 2, 1))
    sale, otp = _campaign(conn, "spring-sale", True), _campaign(conn, "winter-otp", False)
    one = dict(campaign_id=sale, billable_units=1, cost=Decimal("0.0079"), cost_currency="INR")
    _rows(conn, 5, state="delivered", latency_s=1, **one)
    _rows(conn, 2, state="failed", **{**one, "billable_units": 2, "cost": Decimal("0.0158")})
    _rows(conn, 1, state="expired", state_reason="receipt_expired", **one)
    _rows(conn, 1, state="submitted", **one)
    _rows(conn, 3, state="scheduled", submitted_at=None, campaign_id=sale, provider_txn_id="5718742519829975000",
          provider_campaign_id="4242", scheduled_for=HANDED_OVER_DUE, claimed_at=HANDED_OVER_AT,
          created_at=HANDED_OVER_AT - timedelta(hours=1))
    _rows(conn, 2, state="expired", state_reason="cancelled", submitted_at=None, campaign_id=sale)
    _rows(conn, 1, state="rejected", state_reason="invalid_mobile", submitted_at=None, campaign_id=sale)
    _rows(conn, 1, state="delivered", latency_s=1, submitted_at=IST_10_00 + timedelta(days=1), **one)
    for cost in ("0.0071", "0.0083", "0.0107"):
        _rows(conn, 1, state="delivered", latency_s=2, tenant_id="beta", message_class="transactional",
              campaign_id=otp, billable_units=1, cost=Decimal(cost), cost_currency="INR")
    _rows(conn, 4, state="delivered", latency_s=1, billable_units=1, cost=Decimal("0.0079"), cost_currency="INR")
    return sale, otp


@pytest.fixture(scope="module")
def built(marts_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[dg.ExecuteInProcessResult, int, int]:
    """The daily job's marts of D (window D-5 .. D) with their dbt tests, as the daily run builds them."""
    settings = settings_for(marts_db_url, tmp_path_factory.mktemp("home"))
    with psycopg.connect(marts_db_url, autocommit=True) as conn:
        sale, otp = _insert(conn)
    selection = DAILY_SELECTION - dg.AssetSelection.groups("ingest", "reconcile") - dg.AssetSelection.assets(
        PROVIDER_SUMMARY)
    defs = dg.Definitions(assets=ASSETS, asset_checks=ASSET_CHECKS,
                          jobs=[dg.define_asset_job(JOB, selection=selection)],
                          resources=build_resources(settings, secrets_by_name=False))
    result = defs.resolve_job_def(JOB).execute_in_process(partition_key=D.isoformat())
    return result, sale, otp


@pytest.fixture
def cli_database_url(marts_db_url: str) -> str:
    return marts_db_url


def test_campaign_daily_ties_out_with_the_message_rows_to_the_paisa(built, marts_db_url):
    result, *_ = built
    assert result.success
    mart = rows_as_dicts(marts_db_url, "SELECT campaign_id, day, tenant_id, message_class, cost, billable_units "
                                       "FROM marts.campaign_daily ORDER BY 1, 2, 3, 4")
    # Straight from the rows, not through dbt: billed = submitted and not rejected, on the local day of the attempt.
    rows = rows_as_dicts(marts_db_url, """
        SELECT campaign_id,
               (coalesce(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at)
                    AT TIME ZONE 'Asia/Kolkata')::date AS day,
               tenant_id, message_class,
               coalesce(sum(cost) FILTER (WHERE submitted_at IS NOT NULL AND state <> 'rejected'), 0) AS cost,
               coalesce(sum(billable_units) FILTER (WHERE submitted_at IS NOT NULL AND state <> 'rejected'), 0)
                   AS billable_units
          FROM msg.outbound_message
         WHERE campaign_id IS NOT NULL
           AND coalesce(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at) < %s
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4""", (datetime(2026, 3, 10, 18, 30, tzinfo=UTC),))
    assert mart == rows
    assert sum(r["cost"] for r in mart) == Decimal("0.0869") + Decimal("0.0261")


def test_campaign_daily_counts_every_outcome_once(built, marts_db_url):
    result, sale, otp = built
    (row,) = rows_as_dicts(marts_db_url, "SELECT * FROM marts.campaign_daily WHERE campaign_id = %s", (sale,))
    assert row == {
        "day": D, "campaign_id": sale, "campaign_name": "spring-sale", "tenant_id": "acme",
        "message_class": "promotional", "currency": "INR", "messages": 15, "submitted": 9, "billable_units": 11,
        "cost": Decimal("0.0869"), "delivered": 5, "failed": 2, "expired": 1, "cancelled": 2, "rejected": 1,
        "pending": 4, "median_latency_seconds": Decimal("3"), "delivery_ratio": Decimal("0.5556"),
    }
    (other,) = rows_as_dicts(marts_db_url, "SELECT tenant_id, cost, delivered, pending FROM marts.campaign_daily "
                                           "WHERE campaign_id = %s", (otp,))
    assert other == {"tenant_id": "beta", "cost": Decimal("0.0261"), "delivered": 3, "pending": 0}
    checks = [e for e in result.get_asset_check_evaluations() if e.asset_key == CAMPAIGN_DAILY]
    assert {e.check_name for e in checks} >= {"campaign_daily_ties_to_messages", "campaign_daily_one_currency"}
    assert all(e.passed for e in checks), [e.check_name for e in checks if not e.passed]


def test_a_scheduled_row_counts_on_its_due_day_not_its_hand_over_day(built, marts_db_url):
    result, sale, _ = built
    assert result.success
    days = rows_as_dicts(marts_db_url, "SELECT day, pending FROM marts.campaign_daily WHERE campaign_id = %s",
                         (sale,))
    # The 3 rows handed over on D-1 are pending on D (with D's billed one awaiting a receipt), D-1 has no row.
    assert days == [{"day": D, "pending": 4}]
    assert (HANDED_OVER_AT.astimezone(TZ).date(), HANDED_OVER_DUE.astimezone(TZ).date()) == (D - timedelta(days=1), D)


def test_report_cost_by_campaign(built, run):
    code, out, _ = run("report", "cost", "--by", "campaign", "--from", "2026-03-10", "--to", "2026-03-10",
                       "--format", "csv")
    assert code == 0
    lines = list(csv.DictReader(io.StringIO(out)))
    assert [(r["campaign_name"], r["tenant_id"], r["cost"], r["pending"]) for r in lines] == [
        ("spring-sale", "acme", "0.0869", "4"), ("winter-otp", "beta", "0.0261", "0")]
    code, out, _ = run("report", "cost", "--by", "campaign", "--from", "2026-03-10", "--to", "2026-03-10",
                       "--tenant", "beta")
    assert code == 0 and "winter-otp" in out and "spring-sale" not in out and "0.0261" in out


def test_the_dbt_unit_test_of_campaign_daily_passes(built, marts_db_url, tmp_path):
    dbt = dbt_cli()
    with dbt_environment(dbt_env_for_url(marts_db_url)):
        invocation = dbt.cli(["test", "--select", "campaign_daily,test_type:unit"], raise_on_error=False,
                             target_path=tmp_path / "target").wait()
    run_results = invocation.get_artifact("run_results.json")["results"]
    results = {r["unique_id"].split(".")[-1]: r["status"] for r in run_results}
    assert results == {"campaign_outcomes_and_cost": "pass"}
