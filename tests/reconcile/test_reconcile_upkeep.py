"""Hourly upkeep: validity expiry, partitions ahead, retention; a second run moves nothing."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from tests.support.numbers import numbers
from sms_pipeline.core.clock import FrozenClock
from sms_pipeline.reconcile.housekeeping import RECEIPT_RETENTION, run_upkeep


def _upkeep(db, settings, now):
    return run_upkeep(db, FrozenClock(now), claim_lease_s=settings.claim_lease_s, validity_h=settings.validity_h,
                      provider_timezone=settings.provider_timezone)


def test_submitted_rows_past_validity_expire_and_a_later_final_is_only_recorded(world):
    # 200 messages: some still open after the first day whatever the day's draws (about 6% each).
    recipients = numbers(200)
    keys = dict(zip(recipients, world.send(recipients)))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    open_rows = [r for r in recipients if world.row(keys[r])["state"] == "submitted"]
    assert open_rows
    costs = {r: world.row(keys[r])["cost"] for r in open_rows}

    world.move_to(world.at(world.day + timedelta(days=4), 11))  # 97 h after the send: validity (96 h) passed
    world.run_upkeep()
    for recipient in open_rows:
        row = world.row(keys[recipient])
        assert (row["state"], row["state_reason"], row["cost"]) == ("expired", "no_final_receipt", costs[recipient])

    late = open_rows[0]
    msg_id = world.msg_id_of(late)
    world.inject_getdlr(world.day, msg_id, "DELIVRD", recipient=late, submit_at=world.submitted_at(msg_id),
                        done_at=world.clock.now())
    world.run_daily(world.day)
    row = world.row(keys[late])
    assert (row["state"], row["conflicting_final_status"]) == ("expired", "DELIVRD")


def test_retention_and_partitions_ahead_then_nothing_the_second_time(db, settings):
    now = datetime.now(UTC).replace(microsecond=0)
    old = now - timedelta(days=150)
    db.execute("SELECT dlr.ensure_partitions(%s, 0)", (old,))
    db.execute(
        """INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome,
               provider_submit_at, submit_month, source, first_seen_at)
           VALUES ('1000000000000000001', 'DELIVRD', 'DELIVRD', 'delivered', %s, dlr.submit_month(%s),
                   'day_report', %s)""",
        (old, old, old),
    )
    for msg_id, resolved_at in (("1000000000000000002", now - timedelta(days=40)), ("1000000000000000003", None)):
        db.execute(
            """INSERT INTO dlr.orphaned_receipts (provider_message_id, status_word, raw_status, source, raw_payload,
                   received_at, resolved_at)
               VALUES (%s, 'DELIVRD', 'DELIVRD', 'getdlr', '{}', %s, %s)""",
            (msg_id, now - timedelta(days=45), resolved_at),
        )

    # Every month that ended before the horizon goes: the 150-day-old one, and
    # whichever of the test database's own partitions (made from 3 months
    # back) has also passed it by today's date (on the 30th: one more).
    expired = db.execute(
        """SELECT count(*) FROM msg.month_partitions('dlr.delivery_receipts', 'receipts')
            WHERE (month + interval '1 month')::timestamp AT TIME ZONE 'UTC' <= %s""",
        (now - RECEIPT_RETENTION,),
    ).fetchone()[0]
    assert expired >= 1
    done = _upkeep(db, settings, now)
    assert done.receipt_partitions_dropped == expired
    assert done.orphans_purged == 1
    assert db.execute("SELECT provider_message_id FROM dlr.orphaned_receipts").fetchall() == [("1000000000000000003",)]
    assert db.execute("SELECT count(*) FROM dlr.delivery_receipts").fetchone() == (0,)
    months_ahead = db.execute(
        "SELECT count(*) FROM msg.month_partitions('dlr.delivery_receipts', 'receipts') WHERE month > %s",
        (now.date(),),
    ).fetchone()[0]
    assert months_ahead >= 2

    again = _upkeep(db, settings, now)
    assert all(value == 0 for value in asdict(again).values()), asdict(again)
