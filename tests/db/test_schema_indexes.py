"""Each access pattern's live query runs on its partial index at realistic volume."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql

from tests.support.campaigns import add_campaign
from tests.support.databases import plan_nodes, planned_query, reconciliation_planner, strip_create_table_as
from tests.support.rows import month_start
from sms_pipeline.core.clock import FrozenClock

ROWS = 200_000
CAMPAIGN_ROWS = 40_000
MONTHS_BACK = 3

# One INSERT through the parent (registries and all), rows spread evenly from
# the start of the month MONTHS_BACK months ago until now, oldest first (so
# every past month's partition is full-sized). Proportions as a steady pipeline leaves
# them: older rows finished (mostly delivered), the last three days still
# partly awaiting receipts, the last minutes still queued. One row in five is
# OTP (no transaction id); a few hundred recipients per sender repeat.
SEED = """
INSERT INTO msg.outbound_message
    (business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
     state, state_reason, provider_txn_id, provider_message_id, created_at, claimed_at, submitted_at,
     billable_units, updated_at)
SELECT 'seed-' || g, 'tenant-a', 'sms', cls, '9198' || lpad((g %% 50000)::text, 8, '0'),
       CASE cls WHEN 'otp' THEN 'OTPSMS' ELSE 'SGCSMS' END, 'body', 'GSM7', 1,
       st::msg.message_state, NULL,
       CASE WHEN cls <> 'otp' AND st NOT IN ('pending', 'claimed') THEN 'txn-' || (g / 50) END,
       CASE WHEN st IN ('delivered', 'failed', 'expired', 'submitted') THEN 'm' || g END,
       created, claimed, submitted, CASE WHEN submitted IS NOT NULL THEN 1 END, created
  FROM (
    SELECT g, cls, st, created,
           CASE WHEN st <> 'pending' THEN created + interval '2 seconds' END AS claimed,
           CASE WHEN st IN ('submitted', 'delivered', 'failed', 'expired') THEN created + interval '3 seconds' END
               AS submitted
      FROM (
        SELECT g, cls, created,
               CASE
                 WHEN age < interval '10 minutes' THEN CASE WHEN bucket < 90 THEN 'pending' ELSE 'claimed' END
                 WHEN age < interval '3 days' THEN
                   CASE WHEN bucket < 30 THEN 'submitted' WHEN bucket < 90 THEN 'delivered'
                        WHEN bucket < 95 THEN 'failed' WHEN bucket < 99 THEN 'rejected' ELSE 'unknown' END
                 ELSE
                   CASE WHEN bucket < 88 THEN 'delivered' WHEN bucket < 94 THEN 'failed'
                        WHEN bucket < 96 THEN 'expired' WHEN bucket < 99 THEN 'rejected' ELSE
                        CASE WHEN g %% 7 = 0 THEN 'unknown' ELSE 'delivered' END END
               END AS st
          FROM (
            SELECT g, (g * 7919) %% 100 AS bucket,
                   CASE WHEN g %% 5 = 0 THEN 'otp' WHEN g %% 5 = 1 THEN 'promotional' ELSE 'transactional' END AS cls,
                   %(now)s::timestamptz - (%(rows)s - g) * %(spacing)s::interval AS created,
                   (%(rows)s - g) * %(spacing)s::interval AS age
              FROM generate_series(1, %(rows)s) AS g
          ) numbered
      ) staged
  ) timed
"""

NOW = datetime.now(UTC).replace(microsecond=0)


def _index_parents(db: psycopg.Connection) -> dict[str, str]:
    """Partition index name -> the parent (partitioned) index it belongs to."""
    rows = db.execute(
        """SELECT child.relname, parent.relname
             FROM pg_inherits i
             JOIN pg_class child ON child.oid = i.inhrelid
             JOIN pg_class parent ON parent.oid = i.inhparent
            WHERE parent.relkind = 'I'"""
    )
    return dict(rows.fetchall())


def _scans(db: psycopg.Connection, query: str, params: dict, *, generic: bool = False) -> tuple[set[str], set[str]]:
    """(parent indexes scanned, tables sequentially scanned) in the query's plan.

    ``generic``: the plan a prepared statement settles on, made without the values. EXPLAIN of a statement
    with bound values plans for those values whatever plan_cache_mode says; only a prepared statement's
    EXECUTE honours it (Postgres 15 has no EXPLAIN (GENERIC_PLAN)). The values go to EXECUTE as literals
    (a utility statement's bound parameters get no types); the parameter types are the server's inference.
    """
    if not generic:
        (plan,) = db.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchone()[0]
    else:
        for n, name in enumerate(params, start=1):
            query = query.replace(f"%({name})s", f"${n}")
        assert "%(" not in query
        # A CREATE TABLE ... AS cannot be prepared: its query can, and is what is planned.
        query = strip_create_table_as(query)
        db.execute(sql.SQL("PREPARE access_pattern AS {}").format(sql.SQL(query)))
        try:
            db.execute("SET plan_cache_mode = force_generic_plan")
            values = sql.SQL(", ").join(map(sql.Literal, params.values()))
            arguments = sql.SQL(" ({})").format(values) if params else sql.SQL("")  # none: no parentheses
            (plan,) = db.execute(sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE access_pattern{}").format(arguments)
                                 ).fetchone()[0]
        finally:
            db.execute("RESET plan_cache_mode")
            db.execute("DEALLOCATE access_pattern")
    parents = _index_parents(db)
    indexes, seq_scans = set(), set()
    for node in plan_nodes(plan["Plan"]):
        if "Index Name" in node:
            indexes.add(parents.get(node["Index Name"], node["Index Name"]))
        if node["Node Type"] == "Seq Scan":
            seq_scans.add(node["Relation Name"])
    return indexes, seq_scans


ACCESS_PATTERNS = [
    ("claim_candidates", "outbound_message_claim_idx",
     {"channel": "sms", "message_class": "transactional", "now": NOW, "limit": 500}),
    # A provider-side campaign's hand-over: one campaign's pending rows in id order.
    ("campaign_send_candidates", "outbound_message_campaign_handover_idx",
     {"channel": "sms", "message_class": "promotional", "now": NOW, "limit": 1000}),
    ("stuck_claims", "outbound_message_lease_idx",
     {"lease_expired_before": NOW - timedelta(minutes=5), "now": NOW}),
    ("stuck_sending", "outbound_message_lease_idx",
     {"lease_expired_before": NOW - timedelta(minutes=5), "now": NOW}),
    # Rows awaiting evidence whose attempt time lies in one day (the by-transaction reports' selection).
    ("ingest_open_transactions", "outbound_message_open_idx",
     {"report_date": (NOW - timedelta(days=2)).date(), "day_start": NOW - timedelta(days=2),
      "day_end": NOW - timedelta(days=1), "final_words": ["DELIVRD", "UNDELIV"]}),
    # Correlation pass 2: by transaction + recipient, against rows with no msgId yet
    # (reads the work tables of _correlation_inputs).
    ("reconcile_correlate_by_transaction", "outbound_message_txn_idx", {}),
    # A provider-side campaign's cancel and move, one transaction at a time (one statement per transaction:
    # without the transaction in the index each would read all the campaign's scheduled rows).
    ("campaign_cancel_transaction", "outbound_message_txn_idx",
     {"campaign_id": 1, "txn_id": "campaign-txn-7", "now": NOW}),
    ("campaign_reschedule_transaction", "outbound_message_txn_idx",
     {"campaign_id": 1, "txn_id": "campaign-txn-7", "at": NOW + timedelta(days=2), "now": NOW}),
    # Correlation pass 3: reconstruction against rows without a transaction id
    # (reads the work tables of _correlation_inputs).
    ("reconcile_correlate_by_reconstruction", "outbound_message_correlate_idx",
     {"window": timedelta(seconds=90), "spread": timedelta(hours=6)}),
]  # fmt: skip


def _provider_side_campaign(db: psycopg.Connection) -> None:
    """Campaign 1: CAMPAIGN_ROWS rows the provider holds (`scheduled`), 1,000 to a transaction."""
    campaign_id = add_campaign(db, FrozenClock(NOW), [], at=NOW + timedelta(days=1))  # no rows: scheduled ones below
    assert campaign_id == 1  # the id the access patterns name
    db.execute(
        """INSERT INTO msg.outbound_message
               (business_key, tenant_id, channel, message_class, recipient, sender_id, body, encoding, segments,
                state, campaign_id, provider_campaign_id, provider_txn_id, created_at, claimed_at, scheduled_for,
                updated_at)
           SELECT 'campaign-' || g, 'tenant-a', 'sms', 'promotional', '9197' || lpad(g::text, 8, '0'), 'SGCSMS',
                  'body', 'GSM7', 1, 'scheduled', %(campaign_id)s, 'campaign-' || (g / 10000),
                  'campaign-txn-' || (g / 1000),
                  %(now)s, %(now)s, %(at)s, %(now)s
             FROM generate_series(0, %(rows)s - 1) AS g""",
        {"at": NOW + timedelta(days=1), "now": NOW - timedelta(hours=1), "rows": CAMPAIGN_ROWS,
         "campaign_id": campaign_id},
    )


def _correlation_inputs(db: psycopg.Connection) -> None:
    """The work tables passes 2 and 3 read, as a day's earlier passes leave them: msgIds without candidates
    yet, half of them with a transaction id (pass 2 looks those up; pass 3 tries all of them)."""
    db.execute(
        """CREATE UNLOGGED TABLE reconcile_work.reconcile_uncorrelated AS
           SELECT 'msg-' || g AS msg_id, CASE WHEN g > 300 THEN 'txn-' || (g * 53 %% 3000) END AS txn_id,
                  '9198' || lpad((g * 97 %% 50000)::text, 8, '0') AS recipient, 'OTPSMS'::text AS sender_name,
                  %(at)s::timestamptz - g * interval '1 minute' AS submit_at, NULL::timestamptz AS alt_submit_at,
                  NULL::bytea AS fingerprint
             FROM generate_series(1, 600) AS g""",
        {"at": NOW - timedelta(days=1)},
    )
    db.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_msgid "
               "(msg_id text, message_id bigint, message_created_at timestamptz, pass smallint)")
    db.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_pairs_by_transaction "
               "(LIKE reconcile_work.reconcile_pairs_by_msgid)")
    for table in ("reconcile_uncorrelated", "reconcile_pairs_by_msgid", "reconcile_pairs_by_transaction"):
        db.execute(f"ANALYZE reconcile_work.{table}")


@pytest.mark.slow
@pytest.mark.every_server  # plans differ between Postgres versions
def test_each_access_pattern_uses_its_partial_index_at_volume(db):
    start = month_start(-MONTHS_BACK)
    db.execute("SELECT msg.ensure_partitions(%s, %s)", (start, MONTHS_BACK + 2))
    spacing = (NOW - start) / ROWS
    db.execute(SEED, {"now": NOW, "rows": ROWS, "spacing": spacing})
    _provider_side_campaign(db)
    db.execute("ANALYZE msg.outbound_message")
    states = dict(db.execute("SELECT state::text, count(*) FROM msg.outbound_message GROUP BY 1").fetchall())
    assert sum(states.values()) == ROWS + CAMPAIGN_ROWS
    assert 0 < states["pending"] < states["submitted"] < states["delivered"]
    assert states["scheduled"] == CAMPAIGN_ROWS

    # Months ahead are empty; reading an empty table is free, whatever the plan.
    populated = {
        name
        for (name,) in db.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM msg.outbound_message"
        ).fetchall()
    }
    populated = {name.removeprefix("msg.") for name in populated}
    assert len(populated) == MONTHS_BACK + 1

    _correlation_inputs(db)
    for name, index, params in ACCESS_PATTERNS:
        # What a CREATE TABLE ... AS plans is its query (pass 2's table exists already: pass 3 reads it).
        query = planned_query(name)
        with reconciliation_planner(db, name):
            indexes, seq_scans = _scans(db, query, params)
            assert index in indexes, f"{name}: planned on {indexes or 'no index'}"
            assert not seq_scans & populated, f"{name}: seq scan on {seq_scans & populated}"

            # The same holds for the generic plan a prepared statement settles on.
            indexes, _ = _scans(db, query, params, generic=True)
            assert index in indexes, f"{name} (generic plan): planned on {indexes or 'no index'}"


def test_the_transaction_index_holds_only_rows_awaiting_evidence_or_held_by_the_provider(db):
    """Pass 2 looks among `submitted`/`unknown` rows, a campaign's cancel and move among `scheduled` ones. A
    row in any other state takes no entry: the day's UPDATE that closes a million rows writes none here.
    The index's own predicate, evaluated for a row with a transaction id in each state."""
    (predicate,) = db.execute("SELECT pg_get_expr(indpred, indrelid) FROM pg_index "
                              "WHERE indexrelid = 'msg.outbound_message_txn_idx'::regclass").fetchone()
    held = {
        state: db.execute(
            sql.SQL("SELECT {} FROM (SELECT 'txn-1'::text AS provider_txn_id, {state}::msg.message_state AS state, "
                    "{state}::msg.message_state AS queue_state) AS row_version"
                    ).format(sql.SQL(predicate), state=sql.Literal(state))
        ).fetchone()[0]
        for (state,) in db.execute("SELECT unnest(enum_range(NULL::msg.message_state))::text").fetchall()
    }
    assert {state for state, is_held in held.items() if is_held} == {"submitted", "unknown", "scheduled"}
