"""What the access-pattern queries select (their plans are checked in test_schema_indexes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from schema_rows import fetch, insert_message
from sms_pipeline.db import queries

NOW = datetime.now(UTC).replace(microsecond=0)


def _claim(conn: psycopg.Connection, limit: int = 10, message_class: str = "transactional") -> list[int]:
    rows = conn.execute(
        queries.load("claim_queue"), {"channel": "sms", "message_class": message_class, "now": NOW, "limit": limit}
    )
    return [row[0] for row in rows.fetchall()]


def test_the_claim_takes_due_rows_oldest_due_first_and_skips_the_rest(db):
    old = insert_message(db, created_at=NOW - timedelta(minutes=9))
    scheduled_due = insert_message(db, created_at=NOW - timedelta(days=1), scheduled_for=NOW - timedelta(minutes=5))
    new = insert_message(db, created_at=NOW - timedelta(minutes=1))
    insert_message(db, created_at=NOW - timedelta(minutes=8), scheduled_for=NOW + timedelta(minutes=5))
    insert_message(db, created_at=NOW - timedelta(minutes=7), expires_at=NOW - timedelta(seconds=1))
    insert_message(db, created_at=NOW - timedelta(minutes=6), message_class="otp")
    insert_message(db, created_at=NOW - timedelta(minutes=6), channel="whatsapp")

    assert _claim(db, limit=2) == [old[0], scheduled_due[0]]
    assert fetch(db, old, "state", "claimed_at", "attempt_count", "updated_at") == ("claimed", NOW, 1, NOW)
    assert _claim(db) == [new[0]]
    assert _claim(db) == []


def test_two_workers_never_claim_the_same_row(db_url, db):
    for minutes in range(6):
        insert_message(db, created_at=NOW - timedelta(minutes=minutes))
    with psycopg.connect(db_url) as first, psycopg.connect(db_url) as second:
        taken_first = _claim(first, limit=4)  # transaction left open: rows stay locked
        taken_second = _claim(second, limit=4)
        first.commit()
        second.commit()
    assert len(taken_first) == 4
    assert len(taken_second) == 2
    assert not set(taken_first) & set(taken_second)


def test_stuck_claims_become_unknown_never_pending(db):
    stuck = insert_message(db, state="claimed", claimed_at=NOW - timedelta(minutes=10))
    fresh = insert_message(db, state="claimed", claimed_at=NOW - timedelta(minutes=1))
    moved = db.execute(queries.load("stuck_claims"), {"lease_expired_before": NOW - timedelta(minutes=5), "now": NOW})
    assert [row[0] for row in moved.fetchall()] == [stuck[0]]
    assert fetch(db, stuck, "state", "state_reason") == ("unknown", "lease_expired")
    assert fetch(db, fresh, "state") == ("claimed",)


def test_reconciliation_candidates_are_open_rows_in_the_window(db):
    at = NOW - timedelta(hours=3)
    submitted = insert_message(db, state="submitted", claimed_at=at, submitted_at=at, billable_units=1)
    unknown = insert_message(db, state="unknown", claimed_at=at + timedelta(minutes=1))
    insert_message(db, state="delivered", claimed_at=at, submitted_at=at, billable_units=1)
    insert_message(db, state="submitted", claimed_at=NOW, submitted_at=NOW, billable_units=1)
    rows = db.execute(
        queries.load("reconciliation_candidates"),
        {"attempted_from": at - timedelta(hours=1), "attempted_before": at + timedelta(hours=1)},
    ).fetchall()
    assert [(row[0], row[2]) for row in rows] == [(submitted[0], "submitted"), (unknown[0], "unknown")]


def test_correlation_candidates_match_recipient_sender_and_window_without_txn(db):
    at = NOW - timedelta(hours=1)
    params = {"recipient": "919800000009", "sender_id": "OTPSMS",
              "window_start": at - timedelta(seconds=90), "window_end": at + timedelta(seconds=90)}  # fmt: skip
    otp = {"message_class": "otp", "recipient": "919800000009", "sender_id": "OTPSMS"}
    first = insert_message(db, state="unknown", claimed_at=at - timedelta(seconds=30), **otp)
    resend = insert_message(db, state="submitted", claimed_at=at, submitted_at=at + timedelta(seconds=60),
                            billable_units=1, **otp)  # fmt: skip
    insert_message(db, state="unknown", claimed_at=at - timedelta(seconds=91), **otp)  # outside the window
    insert_message(db, state="submitted", claimed_at=at, submitted_at=at, billable_units=1,
                   provider_txn_id="6305583318236810379", **otp)  # fmt: skip
    insert_message(db, state="unknown", claimed_at=at, **{**otp, "sender_id": "SGCSMS"})
    rows = db.execute(queries.load("correlation_candidates"), params).fetchall()
    # Two candidates: the caller must call this ambiguous, never pick one.
    assert [row[0] for row in rows] == [first[0], resend[0]]
