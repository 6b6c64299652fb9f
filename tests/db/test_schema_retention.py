"""Partition upkeep and retention: ahead-of-time partitions, drops after the OTP sidecar purge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from psycopg import errors

from tests.support.rows import in_month, insert_message, month_start


def _partitions(db, parent: str) -> list[str]:
    rows = db.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = %s::regclass ORDER BY 1",
        (parent,),
    )
    return [name for (name,) in rows.fetchall()]


def _month_names(prefix: str, first: int, last: int) -> list[str]:
    return [f"{prefix}_{month_start(m):%Y_%m}" for m in range(first, last + 1)]


def test_the_migration_made_this_month_and_two_ahead(db):
    # The test template may have been built earlier; upkeep fills what is missing.
    db.execute("SELECT msg.ensure_partitions(now()), dlr.ensure_partitions(now())")
    assert set(_month_names("outbound_message", 0, 2)) <= set(_partitions(db, "msg.outbound_message"))
    assert set(_month_names("receipts", 0, 2)) <= set(_partitions(db, "dlr.delivery_receipts"))


def test_upkeep_creates_future_partitions_idempotently(db):
    start = month_start(5)
    assert db.execute("SELECT msg.ensure_partitions(%s)", (start,)).fetchone() == (3,)
    assert db.execute("SELECT msg.ensure_partitions(%s)", (start,)).fetchone() == (0,)
    assert db.execute("SELECT msg.ensure_partitions(%s, 3)", (start + timedelta(days=20),)).fetchone() == (1,)
    assert set(_month_names("outbound_message", 5, 8)) <= set(_partitions(db, "msg.outbound_message"))
    # Receipts likewise.
    assert db.execute("SELECT dlr.ensure_partitions(%s, 0)", (start,)).fetchone() == (1,)
    assert db.execute("SELECT dlr.ensure_partitions(%s, 0)", (start,)).fetchone() == (0,)


def test_partition_bounds_are_utc_months_whatever_the_session_zone(db):
    db.execute("SET TIME ZONE 'Asia/Kolkata'")
    db.execute("SELECT msg.ensure_partitions(%s, 0)", (month_start(7),))
    last_instant = month_start(8) - timedelta(microseconds=1)
    key = insert_message(db, created_at=last_instant)
    located = db.execute(
        "SELECT tableoid::regclass::text FROM msg.outbound_message WHERE id = %s AND created_at = %s", key
    ).fetchone()
    assert located == (f"msg.outbound_message_{month_start(7):%Y_%m}",)


def test_there_is_no_default_partition(db):
    with pytest.raises(errors.CheckViolation, match="no partition"):
        insert_message(db, created_at=datetime(2001, 1, 1, tzinfo=UTC))


def test_a_message_partition_is_dropped_only_after_its_otp_sidecar_is_purged(db):
    db.execute("SELECT msg.ensure_partitions(%s, 1)", (month_start(-13),))
    old = in_month(-13)
    otp = insert_message(db, message_class="otp", business_key="old-otp", created_at=old, provider_message_id="55")
    db.execute(
        """INSERT INTO msg.otp_verification
               (message_id, message_created_at, tenant_id, recipient, purpose, code_hmac, created_at, expires_at,
                max_attempts)
           VALUES (%s, %s, 'tenant-a', '919800000001', 'login', sha256('123456'), %s, %s, 5)""",
        (*otp, old, old + timedelta(minutes=10)),
    )
    insert_message(db, created_at=in_month(-12))
    cutoff = month_start(-11)

    # The sidecar's foreign key pins its month; the month after it goes.
    assert db.execute("SELECT msg.drop_message_partitions_before(%s)", (cutoff,)).fetchone() == (1,)
    names = _partitions(db, "msg.outbound_message")
    assert _month_names("outbound_message", -13, -13)[0] in names
    assert _month_names("outbound_message", -12, -12)[0] not in names
    with pytest.raises(errors.ForeignKeyViolation):  # nor can it be detached by hand
        db.execute(f"ALTER TABLE msg.outbound_message DETACH PARTITION msg.outbound_message_{old:%Y_%m}")

    assert db.execute("SELECT msg.purge_otp_verifications(%s)", (cutoff,)).fetchone() == (1,)
    assert db.execute("SELECT msg.drop_message_partitions_before(%s)", (cutoff,)).fetchone() == (1,)
    assert _month_names("outbound_message", -13, -13)[0] not in _partitions(db, "msg.outbound_message")
    # The dropped rows' keys are released; current months are untouched.
    assert db.execute("SELECT count(*) FROM msg.business_key_registry WHERE business_key = 'old-otp'").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM msg.provider_message_id_registry").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM msg.message_lookup").fetchone() == (0,)
    assert set(_month_names("outbound_message", 0, 0)) <= set(_partitions(db, "msg.outbound_message"))


def test_the_otp_purge_keeps_codes_that_are_still_valid(db):
    now = datetime.now(UTC)
    for minutes in (-10, 10):
        key = insert_message(db, message_class="otp", created_at=now - timedelta(minutes=20))
        db.execute(
            """INSERT INTO msg.otp_verification
                   (message_id, message_created_at, tenant_id, recipient, purpose, code_hmac, created_at,
                    expires_at, max_attempts)
               VALUES (%s, %s, 'tenant-a', '919800000001', 'login', sha256('1'), %s, %s, 5)""",
            (*key, key[1], now + timedelta(minutes=minutes)),
        )
    assert db.execute("SELECT msg.purge_otp_verifications(%s)", (now,)).fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM msg.otp_verification").fetchone() == (1,)


def test_receipt_partitions_drop_by_month(db):
    db.execute("SELECT dlr.ensure_partitions(%s, 1)", (month_start(-5),))
    assert db.execute("SELECT dlr.drop_receipt_partitions_before(%s)", (month_start(-4),)).fetchone() == (1,)
    names = _partitions(db, "dlr.delivery_receipts")
    assert _month_names("receipts", -5, -5)[0] not in names
    assert _month_names("receipts", -4, -4)[0] in names


def test_resolved_orphans_are_purged_and_unresolved_ones_kept(db):
    now = datetime.now(UTC)
    for msg_id, resolved in (("1", now - timedelta(days=40)), ("2", now - timedelta(days=5)), ("3", None)):
        db.execute(
            """INSERT INTO dlr.orphaned_receipts
                   (provider_message_id, status_word, raw_status, raw_payload, received_at, resolved_at)
               VALUES (%s, 'DELIVRD', 'DELIVRD', '{"k": 1}', %s, %s)""",
            (msg_id, now - timedelta(days=60), resolved),
        )
    assert db.execute("SELECT dlr.purge_resolved_orphans(%s)", (now - timedelta(days=30),)).fetchone() == (1,)
    left = db.execute("SELECT provider_message_id FROM dlr.orphaned_receipts ORDER BY 1").fetchall()
    assert left == [("2",), ("3",)]


def test_a_dropped_months_msgids_leave_the_registry_and_the_others_stay(db):
    db.execute("SELECT msg.ensure_partitions(%s, 1)", (month_start(-13),))
    insert_message(db, created_at=in_month(-13), provider_message_id="5501")
    insert_message(db, created_at=in_month(0), provider_message_id="5502")
    assert db.execute("SELECT msg.drop_message_partitions_before(%s)", (month_start(-11),)).fetchone() == (2,)
    left = db.execute("SELECT provider_message_id FROM msg.provider_message_id_registry").fetchall()
    assert left == [("5502",)]
