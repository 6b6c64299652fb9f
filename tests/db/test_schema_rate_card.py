"""Rate card: one price per tenant, channel and class on any day; no price means no cost."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal

import psycopg
import pytest
from psycopg import errors

INSERT = """INSERT INTO msg.rate_card (tenant_id, channel, message_class, unit_price, currency, valid_from, valid_to)
            VALUES ('tenant-a', 'sms', %s, %s, %s, %s, %s)"""


def _price(db, at: datetime, zone: str = "UTC", message_class: str = "otp"):
    return db.execute(
        "SELECT * FROM msg.unit_price('tenant-a', 'sms', %s, %s, %s)", (message_class, at, zone)
    ).fetchall()


def test_prices_follow_their_half_open_validity(db):
    db.execute(INSERT, ("otp", Decimal("0.1234"), "INR", "2026-01-01", "2026-06-01"))
    db.execute(INSERT, ("otp", Decimal("0.2000"), "INR", "2026-06-01", None))
    assert _price(db, datetime(2026, 5, 31, 23, 59, tzinfo=UTC)) == [(Decimal("0.1234"), "INR")]
    assert _price(db, datetime(2026, 6, 1, tzinfo=UTC)) == [(Decimal("0.2000"), "INR")]
    # 31 May 20:00 UTC is already 1 June in the provider's zone.
    assert _price(db, datetime(2026, 5, 31, 20, 0, tzinfo=UTC), "Asia/Kolkata") == [(Decimal("0.2000"), "INR")]
    assert _price(db, datetime(2025, 12, 31, tzinfo=UTC)) == []
    assert _price(db, datetime(2026, 7, 1, tzinfo=UTC), message_class="promotional") == []


@pytest.mark.parametrize(
    ("valid_from", "valid_to", "currency"),
    [("2026-03-01", "2026-04-01", "INR"), ("2025-01-01", None, "INR"), ("2026-05-31", "2026-07-01", "USD")],
)
def test_overlapping_validity_is_refused_whatever_the_currency(db, valid_from, valid_to, currency):
    db.execute(INSERT, ("otp", Decimal("0.1"), "INR", "2026-01-01", "2026-06-01"))
    with pytest.raises(errors.ExclusionViolation, match="overlaps"):
        db.execute(INSERT, ("otp", Decimal("0.2"), currency, valid_from, valid_to))
    # Adjacent is fine, and other classes are independent.
    db.execute(INSERT, ("otp", Decimal("0.2"), "INR", "2026-06-01", None))
    db.execute(INSERT, ("transactional", Decimal("0.2"), "INR", "2026-01-01", None))


def test_an_update_cannot_create_an_overlap(db):
    db.execute(INSERT, ("otp", Decimal("0.1"), "INR", "2026-01-01", "2026-06-01"))
    db.execute(INSERT, ("otp", Decimal("0.2"), "INR", "2026-06-01", None))
    with pytest.raises(errors.ExclusionViolation):
        db.execute("UPDATE msg.rate_card SET valid_to = '2026-06-02' WHERE unit_price = 0.1")


def test_concurrent_overlapping_inserts_leave_one(db_url, db):
    barrier = threading.Barrier(2, timeout=10)
    outcomes: list[str] = []

    def insert(price: str) -> None:
        with psycopg.connect(db_url) as conn:
            barrier.wait()
            try:
                conn.execute(INSERT, ("otp", Decimal(price), "INR", "2026-01-01", None))
                conn.commit()
                outcomes.append("inserted")
            except errors.ExclusionViolation:
                outcomes.append("refused")

    threads = [threading.Thread(target=insert, args=(p,)) for p in ("0.1", "0.2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["inserted", "refused"]
    assert db.execute("SELECT count(*) FROM msg.rate_card").fetchone() == (1,)


def test_prices_are_never_negative_and_validity_never_empty(db):
    with pytest.raises(errors.CheckViolation):
        db.execute(INSERT, ("otp", Decimal("-0.01"), "INR", "2026-01-01", None))
    with pytest.raises(errors.CheckViolation):
        db.execute(INSERT, ("otp", Decimal("0.01"), "INR", "2026-01-01", "2026-01-01"))
