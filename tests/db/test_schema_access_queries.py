"""What the access-pattern queries select (their plans are checked in test_schema_indexes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from tests.support.rows import fetch, insert_message, insert_messages
from sms_pipeline.db import queries

NOW = datetime.now(UTC).replace(microsecond=0)


def _claim(conn: psycopg.Connection, limit: int = 10, message_class: str = "transactional") -> list[int]:
    """Both statements of a claim, taking every row the first one locked."""
    rows = conn.execute(
        queries.load("claim_candidates"), {"channel": "sms", "message_class": message_class, "now": NOW, "limit": limit}
    ).fetchall()
    if rows:
        conn.execute(queries.load("claim_take"),
                     {"ids": [r[0] for r in rows], "created_ats": [r[1] for r in rows], "now": NOW})
    return [row[0] for row in rows]


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


def test_the_lease_gives_back_never_started_claims_and_makes_started_sends_unknown(db):
    lease = {"lease_expired_before": NOW - timedelta(minutes=5), "now": NOW}
    stale_claim = insert_message(db, state="claimed", claimed_at=NOW - timedelta(minutes=10))
    fresh_claim = insert_message(db, state="claimed", claimed_at=NOW - timedelta(minutes=1))
    stale_send = insert_message(db, state="sending", claimed_at=NOW - timedelta(minutes=10))
    fresh_send = insert_message(db, state="sending", claimed_at=NOW - timedelta(minutes=1))

    released = db.execute(queries.load("stuck_claims"), lease).fetchall()
    unknown = db.execute(queries.load("stuck_sending"), lease).fetchall()

    assert [row[0] for row in released] == [stale_claim[0]]
    assert [row[0] for row in unknown] == [stale_send[0]]
    # Provably never sent: back in the queue. Possibly sent: unknown, never pending.
    assert fetch(db, stale_claim, "state", "state_reason") == ("pending", "lease_expired_unsent")
    assert fetch(db, stale_send, "state", "state_reason") == ("unknown", "lease_expired")
    assert fetch(db, fresh_claim, "state") == ("claimed",)
    assert fetch(db, fresh_send, "state") == ("sending",)


def test_starting_a_request_moves_claimed_rows_to_sending_and_expires_the_overdue(db):
    due = insert_message(db, state="claimed", claimed_at=NOW - timedelta(seconds=5))
    overdue = insert_message(db, state="claimed", claimed_at=NOW - timedelta(seconds=5),
                             expires_at=NOW - timedelta(seconds=1))
    given_back = insert_message(db, state="pending")  # the lease gave it back meanwhile
    keys = [due, overdue, given_back]
    params = {"ids": [k[0] for k in keys], "created_ats": [k[1] for k in keys], "now": NOW}

    expired, expired_keys, left_out = db.execute(queries.load("worker_start_request"), params).fetchone()

    assert (expired, left_out) == ([overdue[0]], [given_back[0]])
    assert expired_keys == list(fetch(db, overdue, "attempt_key"))
    assert fetch(db, due, "state") == ("sending",)
    assert fetch(db, overdue, "state", "state_reason") == ("expired", "expired_unsent")
    assert fetch(db, given_back, "state") == ("pending",)
    # twice: nothing moves, every row is left out
    again = db.execute(queries.load("worker_start_request"), params).fetchone()
    assert again[0] == [] and sorted(again[2]) == sorted(params["ids"])


def test_the_sending_step_is_a_hot_update(db, db_url):
    """`claimed -> sending` changes no indexed value (`queue_state` reads `sending` as `claimed`) and its
    new row version fits on the row's page beside the claim's (fillfactor 33): Postgres writes no index
    entry for it."""
    rows = insert_messages(db, 300, created_at=NOW - timedelta(minutes=1))
    assert len(_claim(db, limit=300)) == 300  # committed, as the worker's claim is
    partition = f"msg.outbound_message_{rows[0][1]:%Y_%m}"
    assert db.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", (partition,)).fetchone() == (
        ["fillfactor=33"],)
    with psycopg.connect(db_url) as conn:  # one transaction, whose own counts pg_stat_xact_* shows
        conn.execute(queries.load("worker_start_request"),
                     {"ids": [r[0] for r in rows], "created_ats": [rows[0][1]], "now": NOW})
        updated, hot = conn.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relid = %s::regclass",
            (partition,)).fetchone()
    assert (updated, hot) == (300, 300)
