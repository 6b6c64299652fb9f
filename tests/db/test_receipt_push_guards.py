"""The receipt-push inbox's guards (V75, R__receipt_push.sql): a stored push is evidence.

Only the reconciliation's mark may follow the insert, once; a row leaves
only after it was reconciled (dlr.purge_receipt_push_inbox); refused pushes go
after their horizon (dlr.purge_receipt_push_rejects).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from psycopg import errors

SUBMIT = datetime(2026, 3, 2, 5, 0, tzinfo=UTC)


def _push(db, msg_id: str = "4000000001", code: str = "000", **columns) -> None:
    values = {"provider_message_id": msg_id, "error_code": code, "provider_txn_id": "7000001",
              "recipient": "919800000001", "provider_submit_at": SUBMIT,
              "provider_done_at": SUBMIT + timedelta(seconds=5), "report_date": date(2026, 3, 2), **columns}
    names = ", ".join(values)
    db.execute(f"INSERT INTO dlr.receipt_push_inbox ({names}) VALUES ({', '.join(['%s'] * len(values))})",
               list(values.values()))


def test_a_stored_field_never_changes(db):
    _push(db)
    with pytest.raises(errors.CheckViolation, match="only gets its reconciled time"):
        db.execute("UPDATE dlr.receipt_push_inbox SET recipient = '919800000002'")
    with pytest.raises(errors.CheckViolation, match="only gets its reconciled time"):
        db.execute("UPDATE dlr.receipt_push_inbox SET provider_done_at = NULL, reconciled_at = now()")


def test_the_reconciled_time_is_set_once(db):
    _push(db)
    db.execute("UPDATE dlr.receipt_push_inbox SET reconciled_at = now()")
    with pytest.raises(errors.CheckViolation, match="only gets its reconciled time"):
        db.execute("UPDATE dlr.receipt_push_inbox SET reconciled_at = now() + interval '1 hour'")
    with pytest.raises(errors.CheckViolation, match="only gets its reconciled time"):
        db.execute("UPDATE dlr.receipt_push_inbox SET reconciled_at = NULL")


def test_an_unreconciled_push_is_never_deleted(db):
    _push(db)
    with pytest.raises(errors.CheckViolation, match="never reconciled is refused"):
        db.execute("DELETE FROM dlr.receipt_push_inbox")
    assert db.execute("SELECT dlr.purge_receipt_push_inbox(now() + interval '1 day')").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM dlr.receipt_push_inbox").fetchone() == (1,)


def test_the_purge_removes_reconciled_pushes_older_than_the_horizon_only(db):
    now = db.execute("SELECT now()").fetchone()[0]
    _push(db, "4000000001", reconciled_at=now - timedelta(hours=50))
    _push(db, "4000000002", reconciled_at=now - timedelta(hours=1))
    _push(db, "4000000003", received_at=now - timedelta(days=5))  # old, never reconciled
    assert db.execute("SELECT dlr.purge_receipt_push_inbox(%s)", (now - timedelta(hours=48),)).fetchone() == (1,)
    left = db.execute("SELECT provider_message_id FROM dlr.receipt_push_inbox ORDER BY 1").fetchall()
    assert left == [("4000000002",), ("4000000003",)]


def test_refused_pushes_are_purged_after_the_horizon_only(db):
    now = db.execute("SELECT now()").fetchone()[0]
    for received_at in (now - timedelta(days=31), now - timedelta(days=29)):
        db.execute("INSERT INTO dlr.receipt_push_rejects (received_at, reason, fields) VALUES (%s, 'bad', '{}')",
                   (received_at,))
    assert db.execute("SELECT dlr.purge_receipt_push_rejects(%s)", (now - timedelta(days=30),)).fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM dlr.receipt_push_rejects").fetchone() == (1,)
