"""docs/receipt-cases.md#case-16: provider-local times across a DST change (Europe/London as provider zone)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from tests.support.numbers import numbers
from tests.support.reconcile import world_for

FALL_BACK = date(2026, 10, 25)  # 01:00-02:00 happens twice in Europe/London


def test_sends_inside_the_repeated_hour_are_matched_and_keep_their_instants(db_url, tmp_path):
    for world in world_for(db_url, tmp_path, tz_name="Europe/London", day=FALL_BACK, start=time(0, 10)):
        first_reading = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 01:30 BST
        second_reading = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 01:30 GMT, same wall clock
        world.move_to(first_reading)
        batch = world.send(numbers(3))
        otp_first = world.otp("919700000020")
        world.move_to(second_reading)
        otp_second = world.otp("919700000021")
        (unknown_second,) = world.send_ambiguous(["919700000022"], "accept_then_drop")
        world.move_to(datetime(2026, 10, 26, 3, 0, tzinfo=UTC))
        world.run_daily(FALL_BACK)

        for recipient, key in zip(numbers(3), batch):
            row = world.row(key)
            msg_id = world.msg_id_of(recipient)
            assert row["provider_message_id"] == msg_id
            assert row["state"] == world.expected_state(msg_id, world.clock.now())
            submit_times = {r["provider_submit_at"] for r in world.receipts(msg_id)}
            assert submit_times == {first_reading.replace(microsecond=0)}
        # OTP: no transaction id, reconstruction by time. The day file's "01:30:00" is read as the first
        # occurrence; the row sent in the second one is still found through the other reading.
        for recipient, key in (("919700000020", otp_first), ("919700000021", otp_second)):
            row = world.row(key)
            assert (row["correlation_result"], row["provider_message_id"]) == ("matched", world.msg_id_of(recipient))
        # An `unknown` row confirmed by such a receipt is billed at the reading nearer its own attempt.
        row = world.row(unknown_second)
        # (a final failure or expiry names itself instead: receipt_failed / receipt_expired)
        confirmed = "submission_confirmed" if row["state"] in ("submitted", "delivered") else f"receipt_{row['state']}"
        assert (row["correlation_result"], row["state_reason"]) == ("matched", confirmed)
        assert row["submitted_at"] == second_reading
