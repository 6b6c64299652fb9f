"""Incremental behaviour over a few days of daily runs.

One test on purpose: every dbt run costs seconds, and the steps are the life
of a real week (a day built, built again, late changes arriving, the lookback
run, a full rebuild).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.support.marts import Marts, mart_rows, rows_as_dicts
from tests.support.rows import billed, ensure_partitions, insert_messages

pytestmark = pytest.mark.slow

D = date(2026, 4, 14)
NOON = datetime(2026, 4, 14, 6, 30, tzinfo=UTC)  # 12:00 in Kolkata
LAST_SECOND_OF_D_1 = datetime(2026, 4, 13, 18, 29, 59, tzinfo=UTC)  # 23:59:59 local on D-1


PRICED = {"billable_units": 1, "cost": Decimal("0.0079"), "cost_currency": "INR"}  # one unit at 0.0079 INR


def _cost_of(db_url: str, sender_id: str) -> list[tuple]:
    return [tuple(r.values()) for r in rows_as_dicts(
        db_url, "SELECT day, currency, messages_submitted, cost, unknown_messages, unknown_units, unknown_cost_at_risk"
                " FROM marts.cost_daily WHERE sender_id = %s ORDER BY day", (sender_id,))]


def _by_class(db_url: str, day: date) -> list[dict]:
    return rows_as_dicts(db_url, "SELECT sender_id, submitted, delivered, still_pending, unknown "
                                 "FROM marts.delivery_by_class_daily WHERE day = %s ORDER BY sender_id", (day,))


def test_daily_runs_rebuild_identically_and_the_lookback_catches_late_changes(settings, db_url):
    with psycopg.connect(db_url, autocommit=True) as conn:
        ensure_partitions(conn, date(2026, 4, 1))
        insert_messages(conn, 40, state="delivered", latency_s=3, **billed(NOON - timedelta(days=1), **PRICED))
        insert_messages(conn, 7, state="failed", **billed(NOON - timedelta(days=3), **PRICED, message_class="otp"))
        insert_messages(conn, 3, state="submitted", **billed(NOON - timedelta(days=1), **PRICED, sender_id=None))
        # still pending on D-2: its final receipt arrives late
        [(late_id, late_created)] = insert_messages(conn, state="submitted", sender_id="LATEDL",
                                                    **billed(NOON - timedelta(days=2), **PRICED))
        # claimed in the last second of D-1, outcome unknown, alone under its sender
        [(moved_id, moved_created)] = insert_messages(conn, state="unknown", sender_id="LATEBD",
                                                      created_at=LAST_SECOND_OF_D_1, claimed_at=LAST_SECOND_OF_D_1)
        conn.execute("INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from)"
                     " VALUES ('acme', 'sms', 'transactional', 0.0079, 'INR', '2026-04-01')")
    marts = Marts(settings)
    marts.build_views()

    # The run for D-1 (window D-6 .. D-1), then the same run again: identical.
    marts.build_day(D - timedelta(days=1))
    first = mart_rows(db_url)
    assert len(first["reconciliation_daily"]) == 6
    assert _by_class(db_url, D - timedelta(days=2)) == [
        {"sender_id": "LATEDL", "submitted": 1, "delivered": 0, "still_pending": 1, "unknown": 0}]
    assert {r["sender_id"]: r["unknown"] for r in _by_class(db_url, D - timedelta(days=1))}["LATEBD"] == 1
    # while unknown, its possible cost counts on its attempt's day, priced by the rate card
    assert _cost_of(db_url, "LATEBD") == [
        (D - timedelta(days=1), "INR", 0, Decimal("0.0000"), 1, 1, Decimal("0.0079"))]
    marts.build_day(D - timedelta(days=1))
    assert mart_rows(db_url) == first

    # Reconciliation, later: the final receipt arrived; the unknown row proved
    # submitted, the provider's submit time one second after local midnight.
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("UPDATE msg.outbound_message SET state = 'delivered', delivered_at = submitted_at + interval '42 s'"
                     " WHERE id = %s AND created_at = %s", (late_id, late_created))
        conn.execute("UPDATE msg.outbound_message SET state = 'submitted', submitted_at = %s, billable_units = 1,"
                     " cost = 0.0079, cost_currency = 'INR' WHERE id = %s AND created_at = %s",
                     (LAST_SECOND_OF_D_1 + timedelta(seconds=2), moved_id, moved_created))

    # The daily run for D re-runs the lookback days.
    marts.build_day(D)
    assert _by_class(db_url, D - timedelta(days=2)) == [
        {"sender_id": "LATEDL", "submitted": 1, "delivered": 1, "still_pending": 0, "unknown": 0}]
    # the row left D-1 (its group there is gone, not stale) and counts on D
    assert "LATEBD" not in {r["sender_id"] for r in _by_class(db_url, D - timedelta(days=1))}
    assert _by_class(db_url, D) == [
        {"sender_id": "LATEBD", "submitted": 1, "delivered": 0, "still_pending": 1, "unknown": 0}]
    # settled: billed on D, no longer at risk anywhere
    assert _cost_of(db_url, "LATEBD") == [(D, "INR", 1, Decimal("0.0079"), 0, 0, Decimal("0.0000"))]
    assert rows_as_dicts(db_url, "SELECT delivered, max_seconds FROM marts.delivery_latency_daily WHERE day = %s",
                         (D - timedelta(days=2),)) == [{"delivered": 1, "max_seconds": Decimal("42.000000")}]
    assert [r["unknown_rows_open"] for r in rows_as_dicts(
        db_url, "SELECT unknown_rows_open FROM marts.reconciliation_daily WHERE day >= %s ORDER BY day",
        (D - timedelta(days=2),))] == [0, 0, 0]
    incremental = mart_rows(db_url)

    # The weekly full rebuild gives the same marts, plus a reconciliation row
    # for every day since the first partition.
    marts.build_day(D, full_refresh=True)
    rebuilt = mart_rows(db_url)
    recon, recent = rebuilt.pop("reconciliation_daily"), incremental.pop("reconciliation_daily")
    first_partition = settings.partition_start
    assert [r[0] for r in recon] == [first_partition + timedelta(days=i)
                                     for i in range((D - first_partition).days + 1)]
    assert [r for r in recon if r[0] >= recent[0][0]] == recent
    assert all(r[1:] == (0,) * 10 for r in recon if r[0] < recent[0][0])
    assert rebuilt == incremental
    # dbt's grants came back with the rebuilt tables
    with psycopg.connect(make_conninfo(db_url, user="marts_reader", password="")) as reader:
        assert reader.execute("SELECT sum(messages_submitted) FROM marts.cost_daily").fetchone()[0] == 52
