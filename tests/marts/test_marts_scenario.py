"""A hand-built day with known answers: every cell of every mart, exactly.

Day D = 2026-03-10 in Asia/Kolkata (UTC+05:30), built as partition D with the
default lookback of 5 days (window 2026-03-05 .. 2026-03-10). Rows and
receipts are inserted with SQL, as the worker and reconciliation would leave
them; the marts are built by the real Dagster assets running real dbt.

acme, sms, transactional, ACMETX, GSM-7, 1 segment, 0.0079 INR:
    950 delivered (latencies 1..950 s), 30 failed, 20 expired -> 1000 billed,
    cost 1000 x 0.0079 = 7.9000, cost of failed (50) = 0.3950;
    2 unknown (at risk: 2 units x 0.0079, the rate card's price from March),
    1 failed/not_submitted, 1 pending (never claimed).
globex, sms, transactional, ACMETX, 0.0100 USD: 1 delivered after 60 s.
acme, sms, otp, ACMEOT, UCS-2, 3 segments, 0.0123 INR per unit (0.0369 per message):
    8 delivered (1..8 s), 1 still pending, 1 failed; 2 rejected (no cost).
acme, sms, promotional, ACMEPR, 2 segments: 3 priced at 0.0042 per unit
    (0.0084 each, delivered after 10/20/30 s) and 5 unpriced, still pending
    (their cost is NULL, never 0).
acme, whatsapp, transactional, ACMETX, 0.0300 INR: 1 still pending.
acme, sms, transactional, ACMEBD, 0.0079 INR: one submitted at 23:59:59.999999
    local (day D), one created in February and submitted on D; one at 00:00:00
    local on D+1 (outside the window).
acme, sms, transactional, ACMETX, 0.0079 INR on D-4: 1 still pending (its
    provider summary was never fetched).
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.support.environment import settings_for
from tests.support.marts import MARTS_TABLES, Marts, rows_as_dicts
from tests.support.rows import billed, ensure_partitions, insert_messages

from sms_pipeline.marts.dbt_env import dbt_env_for_url, dbt_environment
from sms_pipeline.marts.project import dbt_cli
from sms_pipeline.marts.provider_summary import SenderSummary, store_summary

# Every dbt model is built here, so the external-server pass keeps this module.
pytestmark = [pytest.mark.slow, pytest.mark.every_server]

D = date(2026, 3, 10)
IST_10_00 = datetime(2026, 3, 10, 4, 30, tzinfo=UTC)  # 10:00 in Kolkata on D
LAST_INSTANT_OF_D = datetime(2026, 3, 10, 18, 29, 59, 999999, tzinfo=UTC)
FIRST_INSTANT_AFTER_D = datetime(2026, 3, 10, 18, 30, tzinfo=UTC)
INR_TX = Decimal("0.0079")


def _insert_scenario(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    ensure_partitions(conn, date(2026, 2, 1))
    rows: dict[str, list[tuple]] = {}
    tx = dict(sender_id="ACMETX", billable_units=1, cost=INR_TX, cost_currency="INR")
    rows["tx_delivered"] = insert_messages(conn, 950, state="delivered", latency_s=1, **billed(IST_10_00, **tx))
    insert_messages(conn, 30, state="failed", **billed(IST_10_00, **tx))
    insert_messages(conn, 20, state="expired", **billed(IST_10_00, **tx))
    insert_messages(conn, 2, state="unknown", created_at=IST_10_00, claimed_at=IST_10_00)
    insert_messages(conn, 1, state="failed", state_reason="not_submitted", created_at=IST_10_00, claimed_at=IST_10_00)
    insert_messages(conn, 1, state="pending", created_at=IST_10_00)
    insert_messages(conn, 1, state="delivered", latency_s=60, tenant_id="globex",
                    **billed(IST_10_00, sender_id="ACMETX", billable_units=1, cost=Decimal("0.0100"),
                              cost_currency="USD"))

    otp = dict(message_class="otp", sender_id="ACMEOT", encoding="UCS2", segments=3)
    otp_billed = dict(otp, billable_units=3, cost=Decimal("0.0369"), cost_currency="INR")
    insert_messages(conn, 8, state="delivered", latency_s=1, **billed(IST_10_00, **otp_billed))
    insert_messages(conn, 1, state="submitted", **billed(IST_10_00, **otp_billed))
    insert_messages(conn, 1, state="failed", **billed(IST_10_00, **otp_billed))
    insert_messages(conn, 2, state="rejected", created_at=IST_10_00, claimed_at=IST_10_00, **otp)

    promo = dict(message_class="promotional", sender_id="ACMEPR", segments=2, billable_units=2)
    for latency in (10, 20, 30):
        insert_messages(conn, 1, state="delivered", latency_s=latency,
                        **billed(IST_10_00, cost=Decimal("0.0084"), cost_currency="INR", **promo))
    insert_messages(conn, 5, state="submitted", **billed(IST_10_00, **promo))  # unpriced: no cost, no currency

    insert_messages(conn, 1, state="submitted", channel="whatsapp",
                    **billed(IST_10_00, sender_id="ACMETX", billable_units=1, cost=Decimal("0.0300"),
                              cost_currency="INR"))

    boundary = dict(sender_id="ACMEBD", billable_units=1, cost=INR_TX, cost_currency="INR")
    insert_messages(conn, 1, state="submitted", **billed(LAST_INSTANT_OF_D, **boundary))
    insert_messages(conn, 1, state="submitted", **billed(FIRST_INSTANT_AFTER_D, **boundary))
    insert_messages(conn, 1, state="submitted", created_at=datetime(2026, 2, 20, tzinfo=UTC),
                    claimed_at=IST_10_00, submitted_at=IST_10_00, **boundary)

    insert_messages(conn, 1, state="submitted", **billed(IST_10_00 - timedelta(days=4), **tx))
    # what prices the unknown rows' exposure (the billed rows above carry their cost already)
    conn.execute("INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from)"
                 " VALUES ('acme', 'sms', 'transactional', %s, 'INR', '2026-03-01')", (INR_TX,))
    return rows


def _insert_receipt(conn: psycopg.Connection, msg_id: str, submit_at: datetime, *, outcome: str = "delivered",
                    status: str = "DELIVRD", correlation: str | None = None, message: tuple | None = None,
                    disposition: str | None = None) -> None:
    conn.execute(
        """INSERT INTO dlr.delivery_receipts
               (provider_message_id, status_word, raw_status, outcome, provider_submit_at, submit_month,
                provider_done_at, source, first_seen_at, message_id, message_created_at,
                correlation_result, correlated_at, disposition)
           VALUES (%s, %s, %s, %s, %s, dlr.submit_month(%s), %s, 'day_report', %s, %s, %s, %s, %s, %s)""",
        (msg_id, status, status, outcome, submit_at, submit_at, submit_at + timedelta(seconds=5),
         submit_at + timedelta(hours=20), message[0] if message else None, message[1] if message else None,
         correlation, submit_at + timedelta(hours=20) if correlation else None, disposition),
    )


def _insert_orphan(conn: psycopg.Connection, msg_id: str, received_at: datetime,
                   resolved_at: datetime | None = None) -> None:
    conn.execute(
        """INSERT INTO dlr.orphaned_receipts
               (provider_message_id, status_word, raw_status, source, raw_payload, received_at, resolved_at, created_at)
           VALUES (%s, 'DELIVRD', 'DELIVRD', 'day_report', %s, %s, %s, %s)""",
        (msg_id, json.dumps({"msgId": msg_id}), received_at, resolved_at, received_at),
    )


def _insert_reconciliation_evidence(conn: psycopg.Connection, delivered: list[tuple]) -> None:
    # D: 6 matched (one of them a conflicting final), 2 not found, 1 ambiguous
    for i, message in enumerate(delivered[:5]):
        _insert_receipt(conn, f"90000000000000000{i:03d}", IST_10_00, correlation="matched", message=message,
                        disposition="applied")
    _insert_receipt(conn, "90000000000000000000", IST_10_00, status="UNDELIV", outcome="failed",
                    correlation="matched", message=delivered[0], disposition="conflicting_final")
    _insert_receipt(conn, "91000000000000000001", IST_10_00, correlation="not_found")
    _insert_receipt(conn, "91000000000000000002", LAST_INSTANT_OF_D, correlation="not_found")
    _insert_receipt(conn, "92000000000000000001", IST_10_00, correlation="ambiguous")
    # D-1: one matched receipt; D+1: one outside the window
    _insert_receipt(conn, "93000000000000000001", IST_10_00 - timedelta(days=1), correlation="matched",
                    message=delivered[10], disposition="applied")
    _insert_receipt(conn, "94000000000000000001", FIRST_INSTANT_AFTER_D, correlation="not_found")
    # orphans: two reached us on D (one resolved on D), one on D-1 resolved on D
    _insert_orphan(conn, "95000000000000000001", IST_10_00, resolved_at=IST_10_00 + timedelta(hours=3))
    _insert_orphan(conn, "95000000000000000002", IST_10_00)
    _insert_orphan(conn, "95000000000000000003", IST_10_00 - timedelta(days=1), resolved_at=IST_10_00)


def _store_provider_summaries(conn: psycopg.Connection) -> None:
    fetched = datetime(2026, 3, 11, tzinfo=UTC)
    store_summary(conn, D, [
        SenderSummary("ACMEBD", 2, 0, 0, 2, 2),
        SenderSummary("ACMEOT", 10, 8, 1, 1, 30),
        SenderSummary("ACMEPR", 8, 3, 0, 5, 16),
        SenderSummary("ACMETX", 1001, 951, 30, 20, 1001),
    ], fetched)
    store_summary(conn, D - timedelta(days=1), [], fetched)  # fetched, no traffic: no row at all
    store_summary(conn, D - timedelta(days=2), [SenderSummary("OTHER", 5, 5, 0, 0, 5)], fetched)


@pytest.fixture(scope="module")
def scenario(marts_db_url: str, tmp_path_factory: pytest.TempPathFactory):
    settings = settings_for(marts_db_url, tmp_path_factory.mktemp("home"))
    with psycopg.connect(marts_db_url, autocommit=True) as conn:
        rows = _insert_scenario(conn)
        _insert_reconciliation_evidence(conn, rows["tx_delivered"])
        _store_provider_summaries(conn)
    marts = Marts(settings)
    marts.build_views()
    result = marts.build_day(D)
    return marts, result


def _table(db_url: str, name: str, order: str) -> list[dict]:
    return rows_as_dicts(db_url, f"SELECT * FROM marts.{name} ORDER BY {order}")


def _d(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


D_4 = D - timedelta(days=4)

EXPECTED_COST = [
    # day, tenant, channel, class, sender, currency, submitted, units, cost, rejected, unpriced, cost_of_failed,
    # unknown messages, unknown units, unknown cost at risk
    (D_4, "acme", "sms", "transactional", "ACMETX", "INR", 1, 1, "0.0079", 0, 0, "0.0000", 0, 0, "0.0000"),
    (D, "acme", "sms", "otp", "ACMEOT", "INR", 10, 30, "0.3690", 0, 0, "0.0369", 0, 0, "0.0000"),
    # rejected only: nothing billed is a known 0
    (D, "acme", "sms", "otp", "ACMEOT", None, 0, 0, "0.0000", 2, 0, "0.0000", 0, 0, "0.0000"),
    (D, "acme", "sms", "promotional", "ACMEPR", "INR", 3, 6, "0.0252", 0, 0, "0.0000", 0, 0, "0.0000"),
    # unpriced: the cost is unknown (NULL), never 0; none of them failed, so that cost is a known 0
    (D, "acme", "sms", "promotional", "ACMEPR", None, 5, 10, None, 0, 10, "0.0000", 0, 0, "0.0000"),
    (D, "acme", "sms", "transactional", "ACMEBD", "INR", 2, 2, "0.0158", 0, 0, "0.0000", 0, 0, "0.0000"),
    (D, "acme", "sms", "transactional", "ACMETX", "INR", 1000, 1000, "7.9000", 0, 0, "0.3950", 2, 2, "0.0158"),
    (D, "acme", "whatsapp", "transactional", "ACMETX", "INR", 1, 1, "0.0300", 0, 0, "0.0000", 0, 0, "0.0000"),
    (D, "globex", "sms", "transactional", "ACMETX", "USD", 1, 1, "0.0100", 0, 0, "0.0000", 0, 0, "0.0000"),
]

EXPECTED_LATENCY = [
    # day, channel, class, delivered, p50, p90, p99, max (nearest rank)
    (D, "sms", "otp", 8, "4", "8", "8", "8"),
    (D, "sms", "promotional", 3, "20", "30", "30", "30"),
    # 1..950 plus globex's 60: the 476th, 856th and 942nd of 951 values
    (D, "sms", "transactional", 951, "475", "855", "941", "950"),
]

EXPECTED_BY_CLASS = [
    # day, channel, class, sender, submitted, delivered, failed, expired, pending, unknown, rate, pending ratio
    (D_4, "sms", "transactional", "ACMETX", 1, 0, 0, 0, 1, 0, "0.0000", "1.0000"),
    (D, "sms", "otp", "ACMEOT", 10, 8, 1, 0, 1, 0, "0.8000", "0.1000"),
    (D, "sms", "promotional", "ACMEPR", 8, 3, 0, 0, 5, 0, "0.3750", "0.6250"),
    (D, "sms", "transactional", "ACMEBD", 2, 0, 0, 0, 2, 0, "0.0000", "1.0000"),
    (D, "sms", "transactional", "ACMETX", 1001, 951, 30, 20, 0, 2, "0.9500", "0.0000"),
    (D, "whatsapp", "transactional", "ACMETX", 1, 0, 0, 0, 1, 0, "0.0000", "1.0000"),
]

EXPECTED_RECONCILIATION = {
    # receipts, matched, not_found, ambiguous, opened, resolved, open, unknown, conflicting, not_submitted
    date(2026, 3, 5): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    date(2026, 3, 6): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    date(2026, 3, 7): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    date(2026, 3, 8): (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    date(2026, 3, 9): (1, 1, 0, 0, 1, 0, 0, 0, 0, 0),
    D: (9, 6, 2, 1, 2, 2, 1, 2, 1, 1),
}

EXPECTED_TIEOUT = [
    # day, sender, ours, provider, difference, status: this scenario loads summaries but no day report,
    # so no day can be itemised (test_marts_tieout_buckets has the buckets)
    (D_4, "ACMETX", 1, None, None, "day_report_not_loaded"),  # and no summary either
    (D - timedelta(days=2), "OTHER", 0, 5, 5, "day_report_not_loaded"),
    (D, "ACMEBD", 2, 2, 0, "day_report_not_loaded"),
    (D, "ACMEOT", 30, 30, 0, "day_report_not_loaded"),
    (D, "ACMEPR", 16, 16, 0, "day_report_not_loaded"),
    (D, "ACMETX", 1001, 1001, 0, "day_report_not_loaded"),
]


def test_cost_daily_every_cell(scenario, marts_db_url):
    rows = _table(marts_db_url, "cost_daily", "day, tenant_id, channel, message_class, sender_id, currency NULLS LAST")
    got = [(r["day"], r["tenant_id"], r["channel"], r["message_class"], r["sender_id"], r["currency"],
            r["messages_submitted"], r["billable_units"], r["cost"], r["rejected_messages"], r["unpriced_units"],
            r["cost_of_failed"], r["unknown_messages"], r["unknown_units"], r["unknown_cost_at_risk"]) for r in rows]
    expected = [(*e[:8], _d(e[8]), e[9], e[10], _d(e[11]), e[12], e[13], _d(e[14])) for e in EXPECTED_COST]
    assert got == expected
    # exact decimals, scale and all: 1000 x 0.0079 is 7.9000, not 7.9 or 7.900000001
    tx = next(r for r in rows if r["sender_id"] == "ACMETX" and r["day"] == D and r["tenant_id"] == "acme"
              and r["channel"] == "sms")
    assert isinstance(tx["cost"], Decimal) and str(tx["cost"]) == "7.9000"


def test_delivery_latency_daily_every_cell(scenario, marts_db_url):
    rows = _table(marts_db_url, "delivery_latency_daily", "day, channel, message_class")
    got = [(r["day"], r["channel"], r["message_class"], r["delivered"], r["p50_seconds"], r["p90_seconds"],
            r["p99_seconds"], r["max_seconds"]) for r in rows]
    assert got == [(*e[:4], *(_d(x) for x in e[4:])) for e in EXPECTED_LATENCY]


def test_delivery_by_class_daily_every_cell(scenario, marts_db_url):
    rows = _table(marts_db_url, "delivery_by_class_daily", "day, channel, message_class, sender_id")
    got = [(r["day"], r["channel"], r["message_class"], r["sender_id"], r["submitted"], r["delivered"],
            r["failed"], r["expired"], r["still_pending"], r["unknown"], r["delivery_rate"],
            r["still_pending_ratio"]) for r in rows]
    assert got == [(*e[:10], _d(e[10]), _d(e[11])) for e in EXPECTED_BY_CLASS]


def test_reconciliation_daily_has_every_window_day(scenario, marts_db_url):
    rows = _table(marts_db_url, "reconciliation_daily", "day")
    got = {r["day"]: (r["receipts"], r["matched"], r["not_found"], r["ambiguous"], r["orphans_opened"],
                      r["orphans_resolved"], r["orphans_open"], r["unknown_rows_open"], r["conflicting_finals"],
                      r["not_submitted"]) for r in rows}
    assert got == EXPECTED_RECONCILIATION


def test_provider_tieout_daily_and_its_check(scenario, marts_db_url):
    _, result = scenario
    rows = _table(marts_db_url, "provider_tieout_daily", "day, sender_id")
    got = [(r["day"], r["sender_id"], r["our_units"], r["provider_units"], r["difference"], r["status"])
           for r in rows]
    assert got == EXPECTED_TIEOUT
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    # days that cannot be compared do not tie out: a warning that names them, not an error
    assert checks["provider_tieout_difference_is_zero"].passed is False
    assert checks["provider_tieout_difference_is_zero"].severity.value == "WARN"
    failed = {name for name, c in checks.items() if not c.passed}
    assert failed == {"provider_tieout_difference_is_zero"}


def test_cost_asset_metadata_shows_the_days_totals(scenario):
    _, result = scenario
    [materialization] = [m for m in result.asset_materializations_for_node("marts_daily")
                         if m.asset_key.path == ["marts", "cost_daily"]]
    table = materialization.metadata["day_totals"]
    records = [r.data for r in table.records]
    assert records == [
        {"day": "2026-03-10", "currency": "(unpriced)", "messages_submitted": 5, "billable_units": 10,
         "cost": "unpriced", "rejected_messages": 2, "unpriced_units": 10, "cost_of_failed": "0.0000",
         "unknown_messages": 0, "unknown_units": 0, "unknown_cost_at_risk": "0.0000"},
        {"day": "2026-03-10", "currency": "INR", "messages_submitted": 1016, "billable_units": 1039,
         "cost": "8.3400", "rejected_messages": 0, "unpriced_units": 0, "cost_of_failed": "0.4319",
         "unknown_messages": 2, "unknown_units": 2, "unknown_cost_at_risk": "0.0158"},
        {"day": "2026-03-10", "currency": "USD", "messages_submitted": 1, "billable_units": 1,
         "cost": "0.0100", "rejected_messages": 0, "unpriced_units": 0, "cost_of_failed": "0.0000",
         "unknown_messages": 0, "unknown_units": 0, "unknown_cost_at_risk": "0.0000"},
    ]


def test_a_range_run_gives_each_day_its_own_cost_totals(scenario):
    marts, _ = scenario
    result = marts.build_days(D_4, D)
    days_of_totals = {m.partition: [r.data["day"] for r in m.metadata["day_totals"].records]
                      for m in result.asset_materializations_for_node("marts_daily")
                      if m.asset_key.path == ["marts", "cost_daily"]}
    assert days_of_totals[D_4.isoformat()] == [D_4.isoformat()]
    assert days_of_totals[(D - timedelta(days=2)).isoformat()] == []  # a day without traffic: no totals
    assert days_of_totals[D.isoformat()] == [D.isoformat()] * 3  # (unpriced), INR, USD
    assert len(days_of_totals) == 5
    # each day's own rows (not the table's), under the mart's real name
    rows = {(m.asset_key.path[-1], m.partition): m.metadata["dagster/row_count"].value
            for m in result.asset_materializations_for_node("marts_daily")}
    assert rows[("cost_daily", D_4.isoformat())] == 1
    assert rows[("cost_daily", D.isoformat())] == len([r for r in EXPECTED_COST if r[0] == D])
    assert {rows[("reconciliation_daily", (D_4 + timedelta(days=n)).isoformat())] for n in range(5)} == {1}
    names = {m.metadata["dagster/table_name"].value for m in result.asset_materializations_for_node("marts_daily")}
    assert names == {f"marts.{mart}" for mart in {*MARTS_TABLES, "campaign_daily"}}


@pytest.fixture
def cli_database_url(marts_db_url: str) -> str:
    """The commands read the scenario's marts."""
    return marts_db_url


def test_report_cost_csv_is_exact_and_filters_by_tenant(scenario, run):
    code, out, _ = run("report", "cost", "--from", "2026-03-10", "--to", "2026-03-10", "--tenant", "acme",
                       "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["tenant_id"] for r in rows} == {"acme"}
    tx = next(r for r in rows if r["sender_id"] == "ACMETX" and r["channel"] == "sms")
    assert (tx["messages_submitted"], tx["billable_units"], tx["cost"], tx["cost_of_failed"]) == \
        ("1000", "1000", "7.9000", "0.3950")
    assert (tx["unknown_messages"], tx["unknown_units"], tx["unknown_cost_at_risk"]) == ("2", "2", "0.0158")
    # the unpriced group on its own line, its cost an empty field (NULL), never 0.0000
    [unpriced] = [r for r in rows if r["sender_id"] == "ACMEPR" and r["currency"] == ""]
    assert (unpriced["messages_submitted"], unpriced["unpriced_units"], unpriced["cost"]) == ("5", "10", "")
    assert sum(Decimal(r["cost"]) for r in rows if r["cost"]) == Decimal("8.3400")


def test_report_cost_table_lists_rows_and_totals(scenario, run):
    code, out, _ = run("report", "cost", "--from", "2026-03-01", "--to", "2026-03-31")
    assert code == 0
    assert "7.9000" in out and "8.3479" in out  # ACMETX on D; INR total of the month (D-4's 0.0079 too)
    lines = out.splitlines()
    # piped (not a terminal): whole values at any width, nothing cut to "…"
    assert "…" not in out and "transactional" in out and "unknown_cost_at_risk" in out
    # the unpriced group's line and the unpriced total read "unpriced", never 0.0000
    [unpriced] = [line for line in lines if "ACMEPR" in line and "INR" not in line]
    assert unpriced.split("│")[9].strip() == "unpriced"
    [total] = [line for line in lines if "total" in line and "(unpriced)" in line]
    assert total.split("│")[9].strip() == "unpriced"
    [inr_total] = [line for line in lines if "total" in line and "INR" in line]
    assert [cell.strip() for cell in inr_total.split("│")[13:16]] == ["2", "2", "0.0158"]
    code, _, err = run("report", "cost", "--from", "2026-03-10", "--to", "2026-03-01")
    assert code == 2
    assert "before" in err


def test_marts_reader_reads_marts_only(scenario, marts_db_url):
    reader = make_conninfo(marts_db_url, user="marts_reader", password="")
    with psycopg.connect(reader, autocommit=True) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == "marts_reader"
        assert conn.execute("SELECT count(*) FROM marts.cost_daily").fetchone()[0] == len(EXPECTED_COST)
        for table in ("delivery_latency_daily", "delivery_by_class_daily", "reconciliation_daily",
                      "provider_tieout_daily"):
            conn.execute(f"SELECT * FROM marts.{table}").fetchall()
        for table in ("msg.outbound_message", "dlr.delivery_receipts", "transform.int_messages__final_state"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT 1 FROM {table} LIMIT 1")


def test_dbt_unit_tests_pass(scenario, marts_db_url, tmp_path):
    """The final-state, latency, ratio and cost logic on their fixtures (dbt unit tests)."""
    dbt = dbt_cli()
    with dbt_environment(dbt_env_for_url(marts_db_url)):
        invocation = dbt.cli(["test", "--select", "test_type:unit"], raise_on_error=False,
                             target_path=tmp_path / "target").wait()
    results = {r["unique_id"].split(".")[-1]: r["status"] for r in invocation.get_artifact("run_results.json")["results"]}
    assert results == {
        "final_state_per_message": "pass",
        "latency_percentiles_are_nearest_rank": "pass",
        "ratios_divide_by_everything_submitted": "pass",
        "cost_counts_billed_rows_only": "pass",
        "campaign_outcomes_and_cost": "pass",
    }


def test_each_mart_carries_its_column_types_and_lineage(scenario):
    _, result = scenario
    [cost] = [m for m in result.asset_materializations_for_node("marts_daily")
              if m.asset_key.path == ["marts", "cost_daily"]]
    columns = {c.name: c.type for c in cost.metadata["dagster/column_schema"].schema.columns}
    # read from the database the run built in (not the parse-time "parse-only" one)
    assert columns["cost"] == "numeric(18,4)" and columns["billable_units"] == "bigint"
    assert columns["day"] == "date"
    lineage = cost.metadata["dagster/column_lineage"].column_lineage.deps_by_column
    deps = {column: {(d.asset_key.path[-1], d.column_name) for d in found} for column, found in lineage.items()}
    assert deps["cost"] == {("int_messages__final_state", "cost"), ("int_messages__final_state", "is_billed")}
    assert deps["cost_of_failed"] == {("int_messages__final_state", name)
                                      for name in ("cost", "delivery_outcome", "is_billed")}
    # a group holds billed rows and the exposure of unknown rows
    assert deps["sender_id"] == {("int_messages__final_state", "sender_id"),
                                 ("int_messages__unknown_exposure", "sender_id")}
    assert deps["unknown_cost_at_risk"] == {("int_messages__unknown_exposure", name)
                                            for name in ("cost_at_risk", "message_id")}
    assert set(deps) == set(columns)
