"""What the access-pattern queries select (their plans are checked in test_schema_indexes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from tests.support.rows import fetch, insert_message
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

