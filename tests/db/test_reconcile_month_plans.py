"""A day reconciled late in a full month reads its own rows of the message partition through the key,
not the whole month (docs/design.md "Index probes late in the month")."""

from __future__ import annotations

import re
from datetime import timedelta

import psycopg
import pytest

from tests.db.test_schema_indexes import _scans
from tests.support.databases import reconciliation_planner
from tests.support.rows import month_start
from sms_pipeline.db import queries

ROWS = 150_000  # a month of 5,000 messages a day, every one still awaiting its receipts
DAYS = 30
LATE_DAY = 28  # the day reconciled: 1/30 of the partition, with 27 days of rows before it

# The month's rows in creation order (ids follow it), each sent by transaction three seconds after it was
# made; no msgId yet.
SEED = """
INSERT INTO msg.outbound_message
    (business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
     state, provider_txn_id, created_at, claimed_at, submitted_at, billable_units, updated_at)
SELECT 'month-' || g, 'tenant-a', 'sms', 'transactional', '9198' || lpad(g::text, 8, '0'), 'SGCSMS', 'body',
       'GSM7', 1, 'submitted', 'txn-' || (g / 50), created, created + interval '2 seconds',
       created + interval '3 seconds', 1, created
  FROM (SELECT g, %(start)s::timestamptz + (g - 1) * %(spacing)s::interval AS created
          FROM generate_series(1, %(rows)s) AS g) AS made
"""

# What the correlation leaves for the late day: each of its rows matched by transaction to one msgId, one
# DELIVRD event each, not stored yet.
DAY_WORK_TABLES = [
    """CREATE UNLOGGED TABLE reconcile_work.reconcile_decisions AS
       SELECT 'msg-' || m.id AS msg_id, m.id AS message_id, m.created_at AS message_created_at,
              2::smallint AS pass, true AS matched
         FROM msg.outbound_message m
        WHERE m.created_at >= %(day_start)s AND m.created_at < %(day_end)s""",
    """CREATE UNLOGGED TABLE reconcile_work.reconcile_uncorrelated AS
       SELECT d.msg_id, m.provider_txn_id AS txn_id, m.recipient, m.sender_id AS sender_name,
              m.submitted_at AS submit_at, NULL::bytea AS fingerprint, NULL::timestamptz AS alt_submit_at
         FROM reconcile_work.reconcile_decisions d
         JOIN msg.outbound_message m ON m.id = d.message_id AND m.created_at = d.message_created_at""",
    """CREATE UNLOGGED TABLE reconcile_work.reconcile_new_events AS
       SELECT d.message_id AS receipt_id, d.msg_id, 'DELIVRD'::text AS status_word,
              date_trunc('month', u.submit_at AT TIME ZONE 'UTC')::date AS submit_month,
              'DELIVRD'::text AS raw_status, 'delivered'::text AS outcome, u.txn_id, u.recipient,
              u.sender_name, NULL::text AS cause, NULL::text AS error_code, 1::smallint AS units,
              u.submit_at AS provider_submit_at, u.submit_at + interval '5 seconds' AS provider_done_at,
              'day_report'::text AS source, NULL::bytea AS message_fingerprint,
              u.submit_at + interval '1 day' AS first_seen_at
         FROM reconcile_work.reconcile_decisions d
         JOIN reconcile_work.reconcile_uncorrelated u ON u.msg_id = d.msg_id""",
]


def _query(name: str) -> str:
    """What the statement plans: the query of a CREATE TABLE ... AS, any other statement as it is."""
    return re.sub(r"(?ms)^CREATE UNLOGGED TABLE [\w.]+ AS\s*$", "", queries.load(name))


def _analyze_work_tables(db: psycopg.Connection) -> None:
    for (table,) in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'reconcile_work'").fetchall():
        db.execute(f"ANALYZE reconcile_work.{table}")


@pytest.mark.slow
@pytest.mark.every_server  # plans differ between Postgres versions
def test_a_late_day_of_a_full_month_probes_the_message_key_instead_of_reading_the_month(db):
    start = month_start(-1)
    partition = f"outbound_message_{start:%Y_%m}"
    db.execute("SELECT msg.ensure_partitions(%s, 3)", (start,))
    db.execute(SEED, {"start": start, "spacing": timedelta(days=DAYS) / ROWS, "rows": ROWS})
    db.execute("VACUUM ANALYZE msg.outbound_message")
    day_start = start + timedelta(days=LATE_DAY - 1)
    for statement in DAY_WORK_TABLES:
        db.execute(statement, {"day_start": day_start, "day_end": day_start + timedelta(days=1)})
    _analyze_work_tables(db)
    (day_rows,) = db.execute("SELECT count(*) FROM reconcile_work.reconcile_decisions").fetchone()
    assert ROWS // DAYS - 10 <= day_rows <= ROWS // DAYS + 10

    queries.run(db, "reconcile_apply_events")
    _analyze_work_tables(db)

    # The scenario is the one that matters: at the server's own price for a page read out of order, the
    # day's decisions join the message partition by reading all of it.
    _, seq_scans = _scans(db, _query("reconcile_apply_decide"), {})
    assert partition in seq_scans, "the server's own planner probed the key already: no month to avoid here"

    # The reconciliation's planner probes the partition's key for the day's rows: the decisions, then
    # (from the work table they make, as the run makes it) the message UPDATE.
    with reconciliation_planner(db, "reconcile_apply_decide"):
        indexes, seq_scans = _scans(db, _query("reconcile_apply_decide"), {})
        assert "outbound_message_pkey" in indexes and partition not in seq_scans, (indexes, seq_scans)
        queries.run(db, "reconcile_apply_decide")
        _analyze_work_tables(db)
        params = {"window_ms": 90_000, "spread_ms": 21_600_000, "now": day_start + timedelta(days=2)}
        indexes, seq_scans = _scans(db, _query("reconcile_apply_messages"), params)
        assert "outbound_message_pkey" in indexes and partition not in seq_scans, (indexes, seq_scans)
