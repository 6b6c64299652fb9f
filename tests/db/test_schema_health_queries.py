"""The named health queries: oldest pending age, pending ratio, receipt freshness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.support.rows import any_state_columns, insert_message
from sms_pipeline.db import queries

NOW = datetime.now(UTC).replace(microsecond=0)


def _one(db, name: str, **params):
    return db.execute(queries.load(name), params).fetchone()


def test_oldest_pending_age_is_zero_not_null_on_an_empty_queue(db):
    assert _one(db, "oldest_pending_age_seconds", now=NOW) == (0,)
    # Finished work and work scheduled for later are not waiting.
    insert_message(db, state="delivered", created_at=NOW - timedelta(hours=5), **any_state_columns(NOW))
    insert_message(db, created_at=NOW - timedelta(hours=5), scheduled_for=NOW + timedelta(hours=1))
    assert _one(db, "oldest_pending_age_seconds", now=NOW) == (0,)


def test_oldest_pending_age_counts_pending_and_claimed_from_when_they_were_due(db):
    insert_message(db, created_at=NOW - timedelta(seconds=30))
    insert_message(db, state="claimed", created_at=NOW - timedelta(seconds=200), claimed_at=NOW)
    assert _one(db, "oldest_pending_age_seconds", now=NOW) == (200,)
    insert_message(db, created_at=NOW - timedelta(days=2), scheduled_for=NOW - timedelta(seconds=500))
    assert _one(db, "oldest_pending_age_seconds", now=NOW) == (500,)


def test_pending_ratio_denominator_is_everything_submitted(db):
    at = NOW - timedelta(minutes=10)
    billed = {"claimed_at": at, "submitted_at": at, "billable_units": 1}
    for state in ("submitted", "delivered", "delivered", "failed", "expired"):
        insert_message(db, message_class="otp", state=state, created_at=at, **billed)
    # Never submitted: not in the denominator.
    insert_message(db, message_class="otp", state="rejected", created_at=at, claimed_at=at)
    insert_message(db, message_class="otp", state="failed", state_reason="not_submitted", created_at=at, claimed_at=at)
    insert_message(db, message_class="otp", state="unknown", created_at=at, claimed_at=at)
    insert_message(db, message_class="otp", state="pending", created_at=at)
    # Outside the window.
    insert_message(db, message_class="otp", state="submitted", created_at=NOW - timedelta(hours=3), **billed)

    rows = db.execute(queries.load("pending_ratio_by_class"), {"since": NOW - timedelta(hours=1), "until": NOW})
    by_class = {cls: (submitted, pending, ratio) for cls, submitted, pending, ratio in rows.fetchall()}
    assert by_class == {
        "otp": (5, 1, Decimal("0.2")),
        "promotional": (0, 0, 0),
        "transactional": (0, 0, 0),
    }


def test_pending_ratio_climbs_to_one_when_no_receipt_arrives(db):
    at = NOW - timedelta(minutes=10)
    for _ in range(3):
        insert_message(db, state="submitted", created_at=at, **any_state_columns(at))
    rows = db.execute(queries.load("pending_ratio_by_class"), {"since": NOW - timedelta(hours=1), "until": NOW})
    assert ("transactional", 3, 3, Decimal(1)) in rows.fetchall()


def test_seconds_since_last_receipt(db):
    assert _one(db, "seconds_since_last_receipt", now=NOW) == (None,)
    for seen in (NOW - timedelta(seconds=90), NOW - timedelta(hours=2)):
        db.execute(
            """INSERT INTO dlr.delivery_receipts
                   (provider_message_id, status_word, raw_status, outcome,
                    provider_submit_at, submit_month, source, first_seen_at)
               VALUES (%(id)s, 'DELIVRD', 'DELIVRD', 'delivered', %(seen)s, dlr.submit_month(%(seen)s),
                       'day_report', %(seen)s)""",
            {"id": str(seen.timestamp()).replace(".", ""), "seen": seen},
        )
    assert _one(db, "seconds_since_last_receipt", now=NOW) == (90,)


SCHEMA_QUERIES = [
    "claim_candidates", "stuck_claims", "stuck_sending", "oldest_pending_age_seconds", "pending_ratio_by_class", "seconds_since_last_receipt",
    "outbound_queue_observation",
]  # fmt: skip


def test_every_schema_query_is_valid_sql_for_this_schema(db):
    """EXPLAIN plans each query with its parameters, so a renamed column breaks here."""
    params = {
        "now": NOW, "channel": "sms", "message_class": "otp", "limit": 10,
        "lease_expired_before": NOW, "since": NOW, "until": NOW,
    }  # fmt: skip
    for name in SCHEMA_QUERIES:
        db.execute("EXPLAIN " + queries.load(name), params)


def test_unknown_query_names_are_refused():
    with pytest.raises(queries.UnknownQuery):
        queries.load("no_such_query")
    with pytest.raises(queries.UnknownQuery):
        queries.load("../V1__schemas")
