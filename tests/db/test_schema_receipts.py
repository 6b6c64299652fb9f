"""Receipt events, orphans, the raw day-report load and checkpoints."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from psycopg import errors
from psycopg.types.json import Jsonb

NOW = datetime.now(UTC).replace(microsecond=0)

INSERT_RECEIPT = """
INSERT INTO dlr.delivery_receipts
    (provider_message_id, status_word, raw_status, outcome, provider_submit_at, submit_month, source, first_seen_at)
VALUES (%(msg_id)s, %(word)s, %(raw)s, %(outcome)s, %(submit_at)s, dlr.submit_month(%(submit_at)s), %(source)s, %(seen)s)
ON CONFLICT (provider_message_id, status_word, submit_month) DO NOTHING
"""


def _receipt(db, word: str, outcome: str, submit_at: datetime, source: str = "day_report", raw: str | None = None):
    return db.execute(
        INSERT_RECEIPT,
        {"msg_id": "9308878062554710043", "word": word, "raw": raw or word, "outcome": outcome,
         "submit_at": submit_at, "source": source, "seen": NOW},  # fmt: skip
    ).rowcount


def test_each_status_of_a_message_is_its_own_event_and_a_replay_is_a_no_op(db):
    submit = NOW - timedelta(hours=2)
    assert _receipt(db, "ACCEPTD", "intermediate", submit) == 1
    assert _receipt(db, "DELIVRD", "delivered", submit) == 1  # not hidden by the earlier ACCEPTD
    # The same status again, from another source with millisecond precision.
    assert _receipt(db, "DELIVRD", "delivered", submit + timedelta(milliseconds=417), "getdlr", "DELIVERED") == 0
    rows = db.execute("SELECT status_word FROM dlr.delivery_receipts ORDER BY receipt_id").fetchall()
    assert rows == [("ACCEPTD",), ("DELIVRD",)]


def test_submit_month_must_match_the_submit_time(db):
    db.execute("SELECT dlr.ensure_partitions(%s, 1)", (NOW,))
    next_month = db.execute("SELECT dlr.submit_month(%s + interval '1 month')", (NOW,)).fetchone()[0]
    with pytest.raises(errors.CheckViolation, match="submit_month_check"):
        db.execute(
            """INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome,
                   provider_submit_at, submit_month, source, first_seen_at)
               VALUES ('1', 'DELIVRD', 'DELIVRD', 'delivered', %s, %s, 'getdlr', now())""",
            (NOW, next_month),
        )


def test_receipt_vocabularies_are_closed(db):
    base = {"msg_id": "1", "word": "DELIVRD", "raw": "x", "outcome": "delivered", "submit_at": NOW,
            "source": "getdlr", "seen": NOW}  # fmt: skip
    for change, constraint in (
        ({"outcome": "success"}, "delivery_receipts_outcome_check"),
        ({"source": "webhook"}, "delivery_receipts_source_check"),
        ({"word": "delivrd"}, "delivery_receipts_status_word_check"),
    ):
        with pytest.raises(errors.CheckViolation) as raised:
            db.execute(INSERT_RECEIPT, {**base, **change})
        assert raised.value.diag.constraint_name == constraint


def test_a_disposition_needs_a_matched_message(db):
    _receipt(db, "UNDELIV", "failed", NOW)
    with pytest.raises(errors.CheckViolation):
        db.execute("UPDATE dlr.delivery_receipts SET disposition = 'conflicting_final'")
    with pytest.raises(errors.CheckViolation):
        db.execute(
            "UPDATE dlr.delivery_receipts SET message_id = 1, message_created_at = now(), correlation_result = 'ambiguous'"
        )
    db.execute(
        """UPDATE dlr.delivery_receipts
              SET message_id = 1, message_created_at = now(), correlation_result = 'matched',
                  correlated_at = now(), disposition = 'conflicting_final'"""
    )


def test_an_orphan_is_recorded_once_and_points_at_the_receipt_it_became(db):
    orphan = """INSERT INTO dlr.orphaned_receipts (provider_message_id, status_word, raw_status, source, raw_payload,
                    received_at)
                VALUES ('42', 'DELIVRD', 'DELIVRD', 'getdlr', %s, now())
                ON CONFLICT (provider_message_id, status_word) DO NOTHING"""
    payload = Jsonb({"msgId": "42", "status": "DELIVRD", "submitTime": "1700117933163"})
    assert db.execute(orphan, (payload,)).rowcount == 1
    assert db.execute(orphan, (payload,)).rowcount == 0
    with pytest.raises(errors.CheckViolation):  # a link without its partition column
        db.execute("UPDATE dlr.orphaned_receipts SET resolved_at = now(), resolved_receipt_id = 7")
    db.execute(
        "UPDATE dlr.orphaned_receipts SET resolved_at = now(), resolved_receipt_id = 7, "
        "resolved_receipt_submit_month = dlr.submit_month(now())"
    )
    stored = db.execute("SELECT raw_payload->>'msgId' FROM dlr.orphaned_receipts").fetchone()
    assert stored == ("42",)


def test_a_day_report_load_is_replaced_by_truncate_and_copy_in_one_transaction(db):
    day = date(2026, 11, 28)
    (partition,) = db.execute("SELECT dlr.ensure_day_report_partition(%s)", (day,)).fetchone()
    assert partition == "dlr.day_report_rows_20261128"
    assert db.execute("SELECT dlr.ensure_day_report_partition(%s)", (day,)).fetchone() == (partition,)
    columns = "report_date, line_no, msg_id, transaction_id, mobile, status, message_fingerprint, units"
    digest = b"\xab" * 32

    def load(rows):
        with db.transaction():
            db.execute(f"TRUNCATE {partition}")
            with db.cursor().copy(f"COPY dlr.day_report_rows ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)

    load([(day, n, f"93088780625547100{n:02d}", "0", "919999999999", "ENROUTE", digest, "1") for n in range(1, 4)])
    load([(day, n, f"93088780625547100{n:02d}", "0", "919999999999", "DELIVRD", digest, "1") for n in range(1, 3)])
    rows = db.execute("SELECT line_no, status FROM dlr.day_report_rows ORDER BY line_no").fetchall()
    assert rows == [(1, "DELIVRD"), (2, "DELIVRD")]
    # The raw load keeps the provider's "0" as evidence; only the message text is never kept.
    with pytest.raises(errors.CheckViolation, match="message_fingerprint"):
        db.execute(
            "INSERT INTO dlr.day_report_rows (report_date, line_no, message_fingerprint) "
            "VALUES (%s, 9, convert_to('Your OTP is 123456', 'UTF8'))",
            (day,),
        )
    assert db.execute("SELECT dlr.drop_day_report_partitions_before(%s)", (day,)).fetchone() == (0,)
    assert db.execute("SELECT dlr.drop_day_report_partitions_before(%s)", (day + timedelta(days=1),)).fetchone() == (1,)
    assert db.execute("SELECT to_regclass(%s)", (partition,)).fetchone() == (None,)


def test_report_checkpoints_are_one_per_kind_and_date(db):
    upsert = """INSERT INTO dlr.report_checkpoints (report_kind, report_date, checksum, rows, bytes, fetched_at, loaded_at)
                VALUES ('day', '2026-11-28', %s, 10, 2048, now(), now())
                ON CONFLICT (report_kind, report_date) DO UPDATE
                   SET checksum = EXCLUDED.checksum, rows = EXCLUDED.rows, bytes = EXCLUDED.bytes,
                       fetched_at = EXCLUDED.fetched_at, loaded_at = EXCLUDED.loaded_at
                 WHERE dlr.report_checkpoints.checksum <> EXCLUDED.checksum"""
    assert db.execute(upsert, ("c1",)).rowcount == 1
    assert db.execute(upsert, ("c1",)).rowcount == 0
    assert db.execute(upsert, ("c2",)).rowcount == 1
    assert db.execute("SELECT count(*) FROM dlr.report_checkpoints").fetchone() == (1,)
