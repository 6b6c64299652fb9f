"""cost_daily's exposure of unknown rows and its unpriced money, from the rows to ``report cost``.

Day D = 2026-03-10 in Asia/Kolkata (UTC+05:30). One tenant with a long name
(a table cut to 80 columns would cut it). Its rate card for sms
transactional: 0.0070 INR per unit until D, 0.0079 INR from D (provider-local
days); nothing for promotional.

transactional, LONGTX:
    2 billed on D at 0.0079;
    unknown A: created on D-1, claimed 30 s after local midnight starting D,
        2 segments -> day D, priced at the claim: 2 x 0.0079 = 0.0158
        (created_at, or the claim's UTC date, would give 0.0070);
    unknown C: claimed in the last second of D-1, 1 segment -> day D-1 at 0.0070.
promotional, LONGPR (no rate): 3 submitted and 1 failed, 2 units each,
    unpriced; unknown B, 3 segments, claimed on D: no rate, cost at risk NULL.

The marts are built by the daily job's selection (without ingest and
reconciliation), so the same run evaluates the unpriced-units health check
on cost_daily once it is built.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import dagster as dg
import psycopg
import pytest

from tests.support.environment import settings_for
from tests.support.marts import rows_as_dicts
from tests.support.rows import billed, ensure_partitions, insert_messages

from sms_pipeline.definitions import ASSET_CHECKS, ASSETS
from sms_pipeline.orchestration.asset_keys import COST_DAILY, PROVIDER_SUMMARY
from sms_pipeline.orchestration.resources import build_resources
from sms_pipeline.orchestration.schedules import DAILY_SELECTION

pytestmark = pytest.mark.slow

D = date(2026, 3, 10)
TENANT = "acme-finance-and-operations-india-private-limited"
MIDNIGHT_STARTING_D = datetime(2026, 3, 9, 18, 30, tzinfo=UTC)
IST_10_00 = datetime(2026, 3, 10, 4, 30, tzinfo=UTC)
MARTS_OF_THE_DAILY_JOB = "marts_of_the_daily_job"


def _insert(conn: psycopg.Connection) -> None:
    ensure_partitions(conn, date(2026, 2, 1))
    conn.execute(
        "INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from, valid_to)"
        " VALUES (%(t)s, 'sms', 'transactional', 0.0070, 'INR', '2026-02-01', '2026-03-10'),"
        "        (%(t)s, 'sms', 'transactional', 0.0079, 'INR', '2026-03-10', NULL)", {"t": TENANT})
    tx = dict(tenant_id=TENANT, sender_id="LONGTX")
    insert_messages(conn, 2, state="delivered", latency_s=1,
                    **billed(IST_10_00, billable_units=1, cost=Decimal("0.0079"), cost_currency="INR", **tx))
    insert_messages(conn, 1, state="unknown", segments=2, created_at=MIDNIGHT_STARTING_D - timedelta(hours=8),
                    claimed_at=MIDNIGHT_STARTING_D + timedelta(seconds=30), **tx)
    insert_messages(conn, 1, state="unknown", created_at=MIDNIGHT_STARTING_D - timedelta(hours=1),
                    claimed_at=MIDNIGHT_STARTING_D - timedelta(seconds=1), **tx)
    promo = dict(tenant_id=TENANT, sender_id="LONGPR", message_class="promotional", segments=2, billable_units=2)
    insert_messages(conn, 3, state="submitted", **billed(IST_10_00, **promo))
    insert_messages(conn, 1, state="failed", **billed(IST_10_00, **promo))
    insert_messages(conn, 1, state="unknown", tenant_id=TENANT, sender_id="LONGPR", message_class="promotional",
                    segments=3, created_at=IST_10_00, claimed_at=IST_10_00)


@pytest.fixture(scope="module")
def daily_marts(marts_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> dg.ExecuteInProcessResult:
    """The daily job's selection without ingest, reconciliation and the provider's summary: the marts of D
    (window D-5 .. D) and the health checks on them, the clock the morning after."""
    settings = settings_for(marts_db_url, tmp_path_factory.mktemp("home"))
    with psycopg.connect(marts_db_url, autocommit=True) as conn:
        _insert(conn)
    selection = DAILY_SELECTION - dg.AssetSelection.groups("ingest", "reconcile") - dg.AssetSelection.assets(
        PROVIDER_SUMMARY)
    defs = dg.Definitions(assets=ASSETS, asset_checks=ASSET_CHECKS,
                          jobs=[dg.define_asset_job(MARTS_OF_THE_DAILY_JOB, selection=selection)],
                          resources=build_resources(settings, secrets_by_name=False))
    morning_after = datetime(2026, 3, 11, 3, 0, tzinfo=UTC).isoformat()
    return defs.resolve_job_def(MARTS_OF_THE_DAILY_JOB).execute_in_process(
        partition_key=D.isoformat(), run_config={"resources": {"clock": {"config": {"frozen_at": morning_after}}}})


@pytest.fixture
def cli_database_url(marts_db_url: str) -> str:
    return marts_db_url


EXPECTED = [
    # day, sender, currency, submitted, units, cost, unpriced units, cost of failed,
    # unknown messages, unknown units, unknown cost at risk
    (D - timedelta(days=1), "LONGTX", "INR", 0, 0, Decimal("0.0000"), 0, Decimal("0.0000"), 1, 1, Decimal("0.0070")),
    # unpriced and unknown without a rate: unknown money is NULL, never 0
    (D, "LONGPR", None, 4, 8, None, 8, None, 1, 3, None),
    (D, "LONGTX", "INR", 2, 2, Decimal("0.0158"), 0, Decimal("0.0000"), 1, 2, Decimal("0.0158")),
]


def test_unknown_rows_are_priced_at_their_claim_and_unpriced_money_stays_null(daily_marts, marts_db_url):
    assert daily_marts.success
    rows = rows_as_dicts(marts_db_url, "SELECT * FROM marts.cost_daily ORDER BY day, sender_id")
    assert {(r["tenant_id"], r["channel"]) for r in rows} == {(TENANT, "sms")}
    assert [(r["day"], r["sender_id"], r["currency"], r["messages_submitted"], r["billable_units"], r["cost"],
             r["unpriced_units"], r["cost_of_failed"], r["unknown_messages"], r["unknown_units"],
             r["unknown_cost_at_risk"]) for r in rows] == EXPECTED
    at_risk = next(r for r in rows if r["day"] == D and r["sender_id"] == "LONGTX")["unknown_cost_at_risk"]
    assert str(at_risk) == "0.0158"  # exact NUMERIC, scale and all


def test_the_days_totals_carry_the_exposure_and_say_unpriced(daily_marts):
    [materialization] = [m for m in daily_marts.asset_materializations_for_node("marts_daily")
                         if m.asset_key == COST_DAILY and m.partition == D.isoformat()]
    records = [r.data for r in materialization.metadata["day_totals"].records]
    assert [(r["currency"], r["cost"], r["cost_of_failed"], r["unknown_messages"], r["unknown_units"],
             r["unknown_cost_at_risk"]) for r in records] == [
        ("(unpriced)", "unpriced", "unpriced", 1, 3, "unpriced"),
        ("INR", "0.0158", "0.0000", 1, 2, "0.0158"),
    ]


def test_the_daily_run_flags_unpriced_units_once_cost_daily_is_built(daily_marts):
    evaluations = {(e.asset_key, e.check_name): e for e in daily_marts.get_asset_check_evaluations()}
    unpriced = evaluations[(COST_DAILY, "unpriced_units")]
    assert not unpriced.passed and unpriced.severity == dg.AssetCheckSeverity.WARN
    assert unpriced.metadata["unpriced_units"].value == 8
    # evaluated after the mart it sits on was built, in the same run
    events = daily_marts.all_events
    built = next(i for i, e in enumerate(events)
                 if e.is_step_materialization and e.asset_key == COST_DAILY)
    checked = next(i for i, e in enumerate(events) if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
                   and e.asset_check_evaluation_data.check_name == "unpriced_units")
    assert built < checked


def test_report_cost_csv_leaves_unknown_money_empty(daily_marts, run):
    code, out, _ = run("report", "cost", "--from", "2026-03-09", "--to", "2026-03-10", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["sender_id"], r["currency"], r["cost"], r["cost_of_failed"], r["unknown_messages"],
             r["unknown_units"], r["unknown_cost_at_risk"]) for r in rows] == [
        ("LONGTX", "INR", "0.0000", "0.0000", "1", "1", "0.0070"),
        ("LONGPR", "", "", "", "1", "3", ""),
        ("LONGTX", "INR", "0.0158", "0.0000", "1", "2", "0.0158"),
    ]


def test_report_cost_piped_prints_whole_values_and_unpriced_lines(daily_marts, run):
    # captured output is not a terminal: no width, no "…", whatever the tenant's name
    code, out, _ = run("report", "cost", "--from", "2026-03-09", "--to", "2026-03-10", COLUMNS="80")
    assert code == 0
    assert "…" not in out
    lines = out.splitlines()
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    header = next([cell.strip() for cell in line.split("┃")[1:-1]] for line in lines if line.startswith("┃"))
    assert header[-3:] == ["unknown_messages", "unknown_units", "unknown_cost_at_risk"]
    by_sender = {(row[4], row[5]): dict(zip(header, row)) for row in cells if row[0] != "total"}
    assert by_sender[("LONGPR", "")]["tenant_id"] == TENANT
    assert [by_sender[("LONGPR", "")][name] for name in ("cost", "cost_of_failed", "unknown_cost_at_risk")] == \
        ["unpriced"] * 3
    totals = {row[5]: dict(zip(header, row)) for row in cells if row[0] == "total"}
    assert totals["(unpriced)"]["cost"] == "unpriced" and totals["(unpriced)"]["unpriced_units"] == "8"
    assert (totals["INR"]["cost"], totals["INR"]["unknown_units"], totals["INR"]["unknown_cost_at_risk"]) == \
        ("0.0158", "3", "0.0228")

