"""A day reconciled late in a full month reads its own rows of the message partition through its indexes,
not the whole month (docs/design.md "Index probes late in the month")."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from tests.support.databases import plan_nodes, planned_query, reconciliation_planner
from tests.support.rows import month_start
from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction

PER_DAY = 5_000  # every message of the month still awaiting its receipts, as in a backfill after an outage

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

# The late day's msgIds, one per row, as the receipts stage and pass 1 leave them for pass 2: each with its
# row's transaction and recipient and one DELIVRD event not stored yet, no candidate by msgId (and, for the
# decisions, none by reconstruction).
DAY_INPUTS = {
    "reconcile_uncorrelated": """CREATE UNLOGGED TABLE reconcile_work.reconcile_uncorrelated AS
       SELECT 'msg-' || m.id AS msg_id, m.provider_txn_id AS txn_id, m.recipient, m.sender_id AS sender_name,
              m.submitted_at AS submit_at, NULL::bytea AS fingerprint, NULL::timestamptz AS alt_submit_at
         FROM msg.outbound_message m
        WHERE m.created_at >= %(day_start)s AND m.created_at < %(day_end)s""",
    "reconcile_pairs_by_msgid": """CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_msgid
       (msg_id text, message_id bigint, message_created_at timestamptz, pass smallint)""",
    "reconcile_pairs_by_reconstruction": """CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_reconstruction
       (LIKE reconcile_work.reconcile_pairs_by_msgid, same_text boolean)""",
    "reconcile_new_events": """CREATE UNLOGGED TABLE reconcile_work.reconcile_new_events AS
       SELECT row_number() OVER () AS receipt_id, u.msg_id, 'DELIVRD'::text AS status_word,
              dlr.submit_month(u.submit_at) AS submit_month, 'DELIVRD'::text AS raw_status,
              'delivered'::text AS outcome, u.txn_id, u.recipient, u.sender_name, NULL::text AS cause,
              NULL::text AS error_code, 1::smallint AS units, u.submit_at AS provider_submit_at,
              u.submit_at + interval '5 seconds' AS provider_done_at, 'day_report'::text AS source,
              NULL::bytea AS message_fingerprint, %(day_end)s::timestamptz + interval '1 day' AS first_seen_at
         FROM reconcile_work.reconcile_uncorrelated u""",
}


def _probes(db: psycopg.Connection, name: str, params: dict, partition: str) -> bool:
    """Whether the statement's plan reaches ``partition`` only by index lookups of the keys it joins on,
    never by reading it whole: no seq scan, no bitmap scan, and no index scan without a lookup condition
    (such as a merge join's pass over the whole key). None of these statements bounds the partition by a
    constant, so an index condition here is a lookup of the other side's keys."""
    (plan,) = db.execute("EXPLAIN (FORMAT JSON) " + planned_query(name), params).fetchone()[0]
    scans = [node for node in plan_nodes(plan["Plan"]) if node.get("Relation Name") == partition]
    assert scans, f"{name}: {partition} is not in the plan"
    return all(node["Node Type"] in ("Index Scan", "Index Only Scan") and "Index Cond" in node for node in scans)


def _planned_both_ways(db: psycopg.Connection, name: str, params: dict, partition: str) -> tuple[bool, bool]:
    """(probes at the server's own random_page_cost, probes at the reconciliation's), both with the rest of
    what ``reconciliation_planner`` sets as the run does (its parallel_tuple_cost)."""
    with reconciliation_planner(db, name):
        db.execute("RESET random_page_cost")
        at_server_price = _probes(db, name, params, partition)
        db.execute("SELECT set_config('random_page_cost', %s, false)", (transaction.RANDOM_PAGE_COST,))
        return at_server_price, _probes(db, name, params, partition)


@pytest.mark.slow
@pytest.mark.every_server  # plans differ between Postgres versions
def test_a_late_day_of_a_full_month_probes_the_message_indexes_instead_of_reading_the_month(db):
    start, end = month_start(-1), month_start(0)
    days = (end - start).days
    partition = f"outbound_message_{start:%Y_%m}"
    db.execute("SELECT msg.ensure_partitions(%s, 3)", (start,))
    db.execute(SEED, {"start": start, "spacing": timedelta(days=1) / PER_DAY, "rows": PER_DAY * days})
    db.execute("VACUUM ANALYZE msg.outbound_message")
    day_start = start + timedelta(days=days - 3)  # 27 days of rows before it in a month of 30
    for table, statement in DAY_INPUTS.items():
        db.execute(statement, {"day_start": day_start, "day_end": day_start + timedelta(days=1)})
        transaction.analyze(db, table)
    (day_rows,) = db.execute("SELECT count(*) FROM reconcile_work.reconcile_uncorrelated").fetchone()
    assert day_rows == PER_DAY

    # Each join with the month's partition, with the work tables it reads made as the run makes them: pass
    # 2 (by transaction and recipient), the decisions (each row's state), the message UPDATE. At the
    # server's own price each reads the whole month (a check of the scenario: if a version of Postgres
    # probes at that price too, this test shows nothing there); at the reconciliation's each probes.
    steps = [
        ("reconcile_correlate_by_transaction", {}, "reconcile_pairs_by_transaction"),
        ("reconcile_correlate_decide", None, "reconcile_decisions"),
        ("reconcile_apply_events", None, "reconcile_events"),
        ("reconcile_apply_decide", {}, "reconcile_message_decisions"),
        ("reconcile_apply_messages", {"window_ms": 90_000, "spread_ms": 21_600_000,
                                      "now": day_start + timedelta(days=2)}, None),
    ]
    for name, params, makes in steps:
        if params is not None:
            at_server_price, at_run_price = _planned_both_ways(db, name, params, partition)
            assert not at_server_price, f"{name}: probes at the server's own price already (no scenario)"
            assert at_run_price, f"{name}: reads {partition} beyond the day's rows at the run's price"
        if makes is not None:
            queries.run(db, name)
            transaction.analyze(db, makes)
