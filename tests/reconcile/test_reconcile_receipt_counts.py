"""What the receipts stage reports of a day's raw rows (reconcile_receipts_counts.sql): every count pinned on
a day built to tell them apart, and on a day without rows."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import psycopg

from sms_pipeline.reconcile import transaction
from sms_pipeline.reconcile.receipts import ReceiptLoad, stage_new_receipts

DAY = date(2026, 3, 10)
SUBMITTED = datetime(2026, 3, 10, 6, 0, tzinfo=UTC)

# (msgId, status as the provider spelt it, submit time): '' and None are what a row can lack.
LINES = [
    ("m-a", "DELIVRD", SUBMITTED),  # a new event
    ("m-a", "delivrd ", SUBMITTED),  # the same event, spelt otherwise: a row, no new event
    ("m-b", "BLACKLST", SUBMITTED),  # unmapped, new
    ("m-c", "BLACKLST", SUBMITTED),  # unmapped, new
    ("m-c", "BLACKLST", SUBMITTED),  # unmapped, repeated: a row, no new event
    ("m-d", "NCPR", SUBMITTED),  # unmapped, new
    ("", "DELIVRD", SUBMITTED),  # no msgId: cannot be keyed
    ("0", "DELIVRD", SUBMITTED),  # a placeholder msgId: cannot be keyed
    ("m-e", "NCPR", None),  # no submit time: cannot be keyed, still an unmapped row
]  # fmt: skip


def _day_report(conn: psycopg.Connection, lines: list[tuple[str, str, datetime | None]]) -> None:
    conn.execute("SELECT dlr.ensure_day_report_partition(%s)", (DAY,))
    for line_no, (msg_id, status, submitted) in enumerate(lines, start=1):
        conn.execute("INSERT INTO dlr.day_report_rows (report_date, line_no, msg_id, status, provider_submit_at) "
                     "VALUES (%s, %s, %s, %s, %s)", (DAY, line_no, msg_id, status, submitted))


def _staged(conn: psycopg.Connection) -> ReceiptLoad:
    with transaction.reconciliation(conn, transaction.PUSH_PASS_WORK_MEM_MB):
        return stage_new_receipts(conn, DAY, SUBMITTED + timedelta(days=1))


def test_the_stage_counts_rows_unkeyed_rows_new_events_and_unmapped_words_each_apart(db):
    _day_report(db, LINES)
    load = _staged(db)
    assert (load.source_rows, load.unkeyed_rows, load.new_receipts, load.duplicate_rows) == (9, 3, 4, 2)
    assert (load.new_unmapped_receipts, load.unmapped_rows) == (3, 5)
    assert load.unmapped_words == {"BLACKLST": 3, "NCPR": 2}


def test_a_day_without_rows_counts_nothing(db):
    _day_report(db, [])
    load = _staged(db)
    assert (load.source_rows, load.unkeyed_rows, load.new_receipts, load.duplicate_rows) == (0, 0, 0, 0)
    assert (load.new_unmapped_receipts, load.unmapped_rows, load.unmapped_words) == (0, 0, {})
