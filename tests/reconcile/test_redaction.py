"""Body redaction (docs/design.md#redaction-and-erasure): what goes, what stays, and the guards that hold it.

Rows are written straight into the message table in the states redaction
meets; the guards are proven by the database refusing each forbidden write.
The marts' side (every mart unchanged) is proven with real dbt in
test_erasure.py, which redacts after erasing.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors

from sms_pipeline.core import fingerprint
from sms_pipeline.reconcile.redaction import redact_final_bodies
from tests.support.rows import billed, ensure_partitions, in_month, insert_message

NOW = in_month(0, day=20)
OLD = NOW - timedelta(days=31)
RECENT = NOW - timedelta(days=29)
BODY = "Ihr Paket ist unterwegs: Größe M"
KEY = b"redaction-test-key-0123456789"


def _row(db: psycopg.Connection, state: str, at, **columns) -> tuple:
    money = dict(billable_units=1, cost=Decimal("0.0079"), cost_currency="INR")
    clocks = billed(at, **money) if state not in ("pending", "rejected") else dict(created_at=at, claimed_at=at)
    return insert_message(db, state=state, body=BODY, message_fingerprint=fingerprint.text_fingerprint(KEY, BODY),
                          **clocks, **columns)


def _columns(db: psycopg.Connection, key: tuple) -> dict:
    cur = db.execute("SELECT body, body_length, body_redacted_at, message_fingerprint, segments, billable_units, "
                     "cost, cost_currency, state FROM msg.outbound_message WHERE id = %s AND created_at = %s", key)
    return dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))


@pytest.fixture
def db_with_months(db):
    ensure_partitions(db, in_month(-2), 3)
    return db


def test_final_rows_past_the_horizon_lose_their_body_and_keep_fingerprint_length_and_money(db_with_months):
    db = db_with_months
    final = [_row(db, state, OLD) for state in ("delivered", "failed", "expired", "rejected", "delivered")]
    waiting = [_row(db, "submitted", OLD), _row(db, "pending", OLD), _row(db, "unknown", OLD)]
    recent = _row(db, "delivered", RECENT)
    before = {key: _columns(db, key) for key in [*final, *waiting, recent]}

    assert redact_final_bodies(db, NOW, after_days=30, batch_size=2) == len(final)

    for key in final:
        after = _columns(db, key)
        assert after["body"] is None and after["body_length"] == len(BODY) and after["body_redacted_at"] == NOW
        unchanged = ("message_fingerprint", "segments", "billable_units", "cost", "cost_currency", "state")
        assert {c: after[c] for c in unchanged} == {c: before[key][c] for c in unchanged}
    for key in [*waiting, recent]:
        assert _columns(db, key) == before[key]
    assert redact_final_bodies(db, NOW, after_days=30) == 0  # a second run finds nothing
    assert redact_final_bodies(db, NOW + timedelta(days=400), after_days=0) == 0  # 0 = never
    assert _columns(db, recent)["body"] == BODY


def _refused(db: psycopg.Connection, statement: str, key: tuple, guard: str) -> None:
    with pytest.raises(errors.CheckViolation) as raised:
        db.execute(statement + " WHERE id = %s AND created_at = %s", key)
    assert raised.value.diag.constraint_name == guard


def test_a_body_goes_only_from_a_final_row_and_never_comes_back(db_with_months):
    db = db_with_months
    pending, submitted = _row(db, "pending", OLD), _row(db, "submitted", OLD)
    redact = "UPDATE msg.outbound_message SET body = NULL, body_length = char_length(body), body_redacted_at = now()"
    for key in (pending, submitted):
        _refused(db, redact, key, "outbound_message_body_redaction")
    _refused(db, "UPDATE msg.outbound_message SET body = 'something else'", pending,
             "outbound_message_body_redaction")

    delivered = _row(db, "delivered", OLD)
    _refused(db, "UPDATE msg.outbound_message SET body = NULL, body_length = 3, body_redacted_at = now()", delivered,
             "outbound_message_body_redaction")  # the length is the body's own
    assert redact_final_bodies(db, NOW, after_days=30) == 1
    _refused(db, f"UPDATE msg.outbound_message SET body = '{BODY}', body_length = NULL, body_redacted_at = NULL",
             delivered, "outbound_message_body_redaction")
    _refused(db, "UPDATE msg.outbound_message SET body_length = 1", delivered, "outbound_message_body_redaction")
    _refused(db, "UPDATE msg.outbound_message SET cost = 0", delivered, "outbound_message_money_immutable")


def test_a_row_without_a_body_must_say_it_was_redacted_and_be_final(db_with_months):
    db = db_with_months
    for columns in (dict(state="delivered"), dict(state="delivered", body_redacted_at=NOW),
                    dict(state="submitted", body_redacted_at=NOW, body_length=4)):
        with pytest.raises(errors.CheckViolation) as raised:
            insert_message(db, body=None, **billed(OLD, billable_units=1), **columns)
        assert raised.value.diag.constraint_name == "outbound_message_body_redacted_check"
