"""OTP sends have no transaction id (docs/receipt-cases.md#case-9 and #case-11): reconstruction, three-valued."""

from __future__ import annotations

from datetime import timedelta


def test_case_9_transaction_id_zero_is_absent_and_reconstruction_matches(world):
    key = world.otp("919700000010")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    msg_id = world.msg_id_of("919700000010")
    row = world.row(key)
    assert (row["provider_message_id"], row["provider_txn_id"]) == (msg_id, None)
    assert (row["correlation_result"], row["correlation_window_ms"]) == ("matched", 90_000)
    assert row["state"] == world.expected_state(msg_id, world.clock.now())
    raw = world.conn.execute("SELECT DISTINCT transaction_id FROM dlr.day_report_rows").fetchall()
    assert raw == [("0",)]  # the provider's "0" stays in the raw load; the receipt has no transaction
    assert {r["provider_txn_id"] for r in world.receipts(msg_id)} == {None}


def test_case_11_two_otps_to_one_number_inside_the_window_are_both_ambiguous(world):
    first = world.otp("919700000011")
    world.move_to(world.clock.now() + timedelta(seconds=40))  # a resend after retryAfter, inside 90 s
    second = world.otp("919700000011")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    world.run_daily(world.day)  # and again: still nothing guessed
    for key in (first, second):
        row = world.row(key)
        assert (row["state"], row["correlation_result"], row["provider_message_id"]) == (
            "submitted", "ambiguous", None)
        assert row["correlation_window_ms"] == 90_000
    assert world.conn.execute("SELECT DISTINCT correlation_result::text FROM dlr.delivery_receipts").fetchall() == [
        ("ambiguous",)]
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone() == (0,)
    assert [e.mobile for e in world.ledger()] == ["919700000011"] * 2  # never re-sent


def test_an_otp_outside_the_window_of_another_is_matched_alone(world):
    first = world.otp("919700000012")
    world.move_to(world.clock.now() + timedelta(minutes=5))
    second = world.otp("919700000012")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    assert [world.row(k)["correlation_result"] for k in (first, second)] == ["matched", "matched"]
    assert world.row(first)["provider_message_id"] != world.row(second)["provider_message_id"]
