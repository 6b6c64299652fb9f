"""Each index of dlr.delivery_receipts is read by its queries at volume, and the receipts' day windows (the
marts, a day's row count) read the submit-time BRIN instead of whole partitions (V85,
docs/design.md#receipt-indexes)."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from sms_pipeline.orchestration.windows import marts_window
from tests.db.test_schema_indexes import MONTHS_BACK, NOW, ROWS, SEED, _index_parents, _scans
from tests.support.environment import settings_for
from tests.support.marts import Marts
from tests.support.databases import planned_query, reconciliation_planner
from tests.support.rows import month_start

# One final event per finished message, stored as the reconciliation stores them: a day's events
# together, the morning after (never after NOW), in msgId order, linked to their message; one in fifty
# matched nothing and waits (an orphan).
RECEIPTS = """
INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome, provider_submit_at,
                                   submit_month, source, first_seen_at, message_id, message_created_at,
                                   correlation_result, correlated_at, disposition)
SELECT provider_message_id, w, w, CASE w WHEN 'DELIVRD' THEN 'delivered' ELSE 'failed' END, submitted_at,
       dlr.submit_month(submitted_at), 'day_report', seen,
       CASE WHEN NOT orphan THEN id END, CASE WHEN NOT orphan THEN created_at END,
       (CASE WHEN orphan THEN 'not_found' ELSE 'matched' END)::msg.correlation_result, seen,
       CASE WHEN NOT orphan THEN 'applied' END
  FROM (SELECT id, created_at, provider_message_id, submitted_at, id %% 50 = 0 AS orphan,
               LEAST(date_trunc('day', submitted_at) + interval '1 day 2 hours', %(now)s::timestamptz) AS seen,
               CASE state WHEN 'delivered' THEN 'DELIVRD' ELSE 'UNDELIV' END AS w
          FROM msg.outbound_message WHERE state IN ('delivered', 'failed')) AS finished
 ORDER BY seen, provider_message_id
"""

INDEXES = {"delivery_receipts_pkey", "delivery_receipts_event_key", "delivery_receipts_message_idx",
           "delivery_receipts_uncorrelated_idx", "delivery_receipts_first_seen_at_idx",
           "delivery_receipts_provider_submit_at_idx"}

LAST_MONTH_DAY = month_start(-1) + timedelta(days=10)

# (query, the index it reads, parameters). The keys are the table's constraints (a stored event's
# identity); every other index is here with its readers.
READERS = [
    # A day's row count (the receipts asset's metadata): a range of the submit-time BRIN in its month.
    ("metadata_delivery_receipts_of_day", "delivery_receipts_provider_submit_at_idx",
     {"day_start": LAST_MONTH_DAY, "day_end": LAST_MONTH_DAY + timedelta(days=1)}),
    # Freshness: the newest first_seen_at, one entry from the end of each partition's btree.
    ("seconds_since_last_receipt", "delivery_receipts_first_seen_at_idx", {"now": NOW}),
    ("reconcile_health_receipts_awaited", "delivery_receipts_first_seen_at_idx",
     {"now": NOW, "expected_lag": timedelta(hours=1)}),
    # The last 24 hours' events (the exporter's is in test_metrics_plans).
    ("reconcile_health_orphan_rate", "delivery_receipts_first_seen_at_idx",
     {"since": NOW - timedelta(hours=24), "now": NOW}),
    # A message's receipts.
    ("ops_message_receipts", "delivery_receipts_message_idx", {"ids": [1000, 50_000, 150_000]}),
    ("reconcile_non_submission", "delivery_receipts_message_idx",
     {"day_start": NOW - timedelta(days=2), "day_end": NOW - timedelta(days=1), "spread": timedelta(hours=6),
      "complete_until": NOW - timedelta(days=1), "now": NOW}),
    # The events still waiting for correlation, tried again on every run.
    ("reconcile_correlate_uncorrelated", "delivery_receipts_uncorrelated_idx",
     {"time_zone": "Asia/Kolkata", "every_waiting": True}),
    ("reconcile_orphans_open", "delivery_receipts_uncorrelated_idx", {"every_waiting": True}),
]  # fmt: skip


def _load(db: psycopg.Connection) -> set[str]:
    """Messages and their receipts over MONTHS_BACK months, analysed and summarised; the receipt partitions
    of months before the current one (history: a reader that scans one whole reads the past)."""
    start = month_start(-MONTHS_BACK)
    db.execute("SELECT msg.ensure_partitions(%s, %s)", (start, MONTHS_BACK + 2))
    db.execute("SELECT dlr.ensure_partitions(%s, %s)", (start, MONTHS_BACK + 2))
    db.execute(SEED, {"now": NOW, "rows": ROWS, "spacing": (NOW - start) / ROWS})
    db.execute(RECEIPTS, {"now": NOW})
    db.execute("ANALYZE msg.outbound_message")
    db.execute("VACUUM ANALYZE dlr.delivery_receipts")  # VACUUM summarises the BRIN's block ranges
    current = f"receipts_{NOW:%Y_%m}"
    populated = {name.split(".")[1] for (name,) in db.execute(
        "SELECT DISTINCT tableoid::regclass::text FROM dlr.delivery_receipts").fetchall()}
    assert len(populated) == MONTHS_BACK + 1
    return populated - {current}


def _reconcile_inputs(db: psycopg.Connection) -> None:
    """The work tables the correlation reads, as a run's staging leaves them (a few new events)."""
    db.execute("""CREATE UNLOGGED TABLE reconcile_work.reconcile_source_rows AS
                  SELECT 'new-' || g AS msg_id, 'SGCSMS'::text AS sender_name, NULL::bytea AS message_fingerprint
                    FROM generate_series(1, 300) AS g""")
    db.execute("""CREATE UNLOGGED TABLE reconcile_work.reconcile_new_events AS
                  SELECT msg_id, NULL::text AS txn_id, NULL::text AS recipient, sender_name,
                         %(now)s::timestamptz AS provider_submit_at, 'day_report'::text AS source, message_fingerprint
                    FROM reconcile_work.reconcile_source_rows""", {"now": NOW})
    db.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_uncorrelated AS "
               "SELECT msg_id FROM reconcile_work.reconcile_source_rows")
    for table in ("reconcile_source_rows", "reconcile_new_events", "reconcile_uncorrelated"):
        db.execute(f"ANALYZE reconcile_work.{table}")


def test_the_receipt_table_has_exactly_the_indexes_read_here(db):
    """A new index on the receipts is paid on every event stored: it comes with its reader above."""
    names = {name for (name,) in db.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'dlr' AND tablename = 'delivery_receipts'")}
    assert names == INDEXES
    assert INDEXES - {"delivery_receipts_pkey", "delivery_receipts_event_key"} == {index for _, index, _ in READERS}
    (method,) = db.execute("""SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam
                               WHERE c.oid = 'dlr.delivery_receipts_provider_submit_at_idx'::regclass""").fetchone()
    assert method == "brin"


@pytest.mark.slow
@pytest.mark.every_server  # plans differ between Postgres versions
def test_each_receipt_index_is_read_by_its_queries_at_volume(db):
    history = _load(db)
    _reconcile_inputs(db)
    for name, index, params in READERS:
        # What a CREATE TABLE ... AS plans is its query (and reconcile_uncorrelated exists already).
        query = planned_query(name)
        with reconciliation_planner(db, name):
            indexes, seq_scans = _scans(db, query, params)
        assert index in indexes, f"{name}: planned on {indexes or 'no index'}"
        assert not seq_scans & history, f"{name}: seq scan on {seq_scans & history}"


def _receipt_scans(db: psycopg.Connection, database: str) -> tuple[dict[str, int], dict[str, int]]:
    """(sequential scans per receipt partition, scans per parent index) counted so far in ``database``,
    once no other session is connected to it (a session's counts are published when it ends)."""
    for _ in range(100):
        others = db.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                            (database,)).fetchone()[0]
        if not others:
            break
        db.execute("SELECT pg_sleep(0.1)")
    db.execute("SELECT pg_stat_clear_snapshot()")
    tables = dict(db.execute("SELECT relname, seq_scan FROM pg_stat_user_tables "
                             "WHERE schemaname = 'dlr' AND relname LIKE 'receipts\\_%'").fetchall())
    parents = _index_parents(db)
    indexes: dict[str, int] = {}
    for name, scans in db.execute("SELECT indexrelname, idx_scan FROM pg_stat_user_indexes "
                                  "WHERE schemaname = 'dlr' AND relname LIKE 'receipts\\_%'").fetchall():
        parent = parents.get(name, name)
        indexes[parent] = indexes.get(parent, 0) + scans
    return tables, indexes


@pytest.mark.slow
@pytest.mark.every_server  # plans differ between Postgres versions
def test_a_marts_day_reads_the_receipts_of_its_window_through_the_brin(db, db_url, tmp_path):
    _load(db)
    settings = settings_for(db_url, tmp_path / "home")
    day = (NOW - timedelta(days=2)).astimezone(settings.provider_timezone).date()
    window = marts_window(day, day, settings.provider_timezone, lookback_days=settings.lookback_days,
                          history_start=settings.partition_start)
    # The tie-out reads a day beyond either end of the window: months without a receipt in that reach
    # must not be read at all.
    outside = {name.split(".")[1] for (name,) in db.execute(
        """SELECT tableoid::regclass::text FROM dlr.delivery_receipts GROUP BY 1
            HAVING max(provider_submit_at) < %(start)s::timestamptz - interval '1 day'
                OR min(provider_submit_at) >= %(end)s::timestamptz + interval '1 day'""",
        {"start": window.start, "end": window.end})}
    assert outside, "the history must reach beyond the window"
    marts = Marts(settings)
    marts.build_views()
    database = db.execute("SELECT current_database()").fetchone()[0]
    tables_before, indexes_before = _receipt_scans(db, database)

    assert marts.build_day(day).success

    tables_after, indexes_after = _receipt_scans(db, database)
    scanned_whole = {t for t in outside if tables_after[t] > tables_before[t]}
    assert not scanned_whole, f"the marts of {day} read whole partitions of other months: {scanned_whole}"
    brin = "delivery_receipts_provider_submit_at_idx"
    assert indexes_after[brin] > indexes_before[brin], "the marts' window did not read the submit-time BRIN"
