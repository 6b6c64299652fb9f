"""The hourly intraday run: today's getDlr pull reconciled, so OTP outcomes are known within the hour."""

from __future__ import annotations

from datetime import timedelta

from tests.support.numbers import numbers


def test_an_otp_and_a_batch_are_reconciled_within_the_hour(world):
    otp = world.otp("919700000040")
    batch = world.send(numbers(5))
    world.move_to(world.clock.now() + timedelta(hours=1))
    world.run_hourly()
    msg_id = world.msg_id_of("919700000040")
    row = world.row(otp)
    assert (row["provider_message_id"], row["correlation_result"]) == (msg_id, "matched")
    assert row["state"] == world.expected_state(msg_id, world.clock.now())
    assert {r["source"] for r in world.receipts(msg_id)} == {"getdlr"}
    for key in batch:
        assert world.row(key)["correlation_result"] == "matched"
    # today is not complete: no proof of non-submission can happen from an intraday pull
    assert world.conn.execute("SELECT count(*) FROM msg.outbound_message WHERE state_reason = 'not_submitted'"
                              ).fetchone() == (0,)
