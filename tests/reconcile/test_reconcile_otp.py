"""OTP sends have no transaction id (docs/receipt-cases.md#case-9 and #case-11): reconstruction, three-valued."""

from __future__ import annotations

from datetime import timedelta


def test_case_9_transaction_id_zero_is_absent_and_reconstruction_matches(world, run):
    key = world.otp("919700000010")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    msg_id = world.msg_id_of("919700000010")
    row = world.row(key)
    assert (row["provider_message_id"], row["provider_txn_id"]) == (msg_id, None)
    assert (row["correlation_result"], row["correlation_window_ms"]) == ("matched", 90_000)
    assert row["correlation_evidence"] == "fingerprint"
    assert row["state"] == world.expected_state(msg_id, world.clock.now())
    raw = world.conn.execute("SELECT DISTINCT transaction_id FROM dlr.day_report_rows").fetchall()
    assert raw == [("0",)]  # the provider's "0" stays in the raw load; the receipt has no transaction
    assert {r["provider_txn_id"] for r in world.receipts(msg_id)} == {None}
    code, out, _ = run("messages", "show", "--recipient", "+919700000010")
    assert code == 0 and "correlation=matched evidence=fingerprint" in out


def test_case_11_two_otps_to_one_number_inside_the_window_are_each_matched_by_fingerprint(world):
    first = world.otp("919700000011", fault="accept_then_drop")  # taken, the answer lost: `unknown`
    world.move_to(world.clock.now() + timedelta(seconds=40))  # a resend after retryAfter, inside 90 s
    second = world.otp("919700000011")
    assert [world.row(k)["state"] for k in (first, second)] == ["unknown", "submitted"]
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    world.run_daily(world.day)  # and again: nothing changes
    first_id, second_id = (e.msg_id for e in world.ledger())
    for key, msg_id in ((first, first_id), (second, second_id)):
        row = world.row(key)
        # different codes, different texts: each receipt had one candidate
        assert (row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
            "matched", "fingerprint", msg_id)
        assert row["state"] == world.expected_state(msg_id, world.clock.now())
        assert row["correlation_window_ms"] == 90_000
    assert world.conn.execute("SELECT DISTINCT correlation_result::text FROM dlr.delivery_receipts").fetchall() == [
        ("matched",)]
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone() == (0,)
    assert [e.mobile for e in world.ledger()] == ["919700000011"] * 2  # never re-sent


def test_two_identical_texts_to_one_number_inside_the_window_stay_ambiguous(world):
    first = world.send_ambiguous(["919700000013"], "accept_then_drop", text="Your parcel is at the door")
    world.move_to(world.clock.now() + timedelta(seconds=40))
    second = world.send_ambiguous(["919700000013"], "accept_then_drop", text="Your parcel is at the door")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    for key in (*first, *second):
        row = world.row(key)
        assert row["message_fingerprint"] is not None  # the same fingerprint: no evidence apart
        assert (row["state"], row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
            "unknown", "ambiguous", None, None)
    assert world.conn.execute("SELECT DISTINCT correlation_result::text FROM dlr.delivery_receipts").fetchall() == [
        ("ambiguous",)]


def test_create_time_chooses_between_two_candidates_but_never_drops_a_lone_one(world):
    first = world.otp("919700000014")
    world.move_to(world.clock.now() + timedelta(seconds=40))  # inside the window: each row a candidate of both
    second = world.otp("919700000014")
    lone = world.otp("919700000015")
    created_at = world.row(lone)["provider_created_at"]
    assert None not in (created_at, world.row(first)["provider_created_at"], world.row(second)["provider_created_at"])
    world.conn.execute("UPDATE msg.outbound_message SET provider_created_at = %s WHERE id = %s AND created_at = %s",
                       (created_at - timedelta(milliseconds=1500), *lone))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day, reconcile=False)
    world.conn.execute("UPDATE dlr.day_report_rows SET message_fingerprint = NULL")  # the text tells nothing here
    world.run_daily(world.day, ingest=False)
    for key, entry in zip((first, second, lone), world.ledger(), strict=True):
        row = world.row(key)
        assert (row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
            "matched", "reconstruction", entry.msg_id)
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone() == (0,)


def test_text_and_create_time_pointing_at_different_rows_leave_both_ambiguous(world):
    first = world.otp("919700000017")
    world.move_to(world.clock.now() + timedelta(seconds=40))
    second = world.otp("919700000017")
    swapped = [(world.row(other)["provider_created_at"], *key) for key, other in ((first, second), (second, first))]
    world.conn.cursor().executemany(
        "UPDATE msg.outbound_message SET provider_created_at = %s WHERE id = %s AND created_at = %s", swapped)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    for key in (first, second):  # each receipt: one row has its text, the other its time; nothing is guessed
        row = world.row(key)
        assert (row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
            "ambiguous", None, None)


def test_an_otp_outside_the_window_of_another_is_matched_alone(world):
    first = world.otp("919700000012")
    world.move_to(world.clock.now() + timedelta(minutes=5))
    second = world.otp("919700000012")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    assert [world.row(k)["correlation_result"] for k in (first, second)] == ["matched", "matched"]
    assert world.row(first)["provider_message_id"] != world.row(second)["provider_message_id"]
