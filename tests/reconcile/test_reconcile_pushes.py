"""Receipt pushes reconciled by `reconcile recent` (sms_pipeline.reconcile.pushes).

Messages are sent by the real worker against the simulator; the pushes are
written to dlr.receipt_push_inbox as the receiver writes them (ON CONFLICT
DO NOTHING), and the code table comes from the simulator's
/info/deliverycodes through the real client.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from sms_pipeline.core.clock import FrozenClock
from sms_pipeline.ingest.delivery_codes import DeliveryCodesRefused, refresh_delivery_codes
from sms_pipeline.provider.results import DeliveryCode
from sms_pipeline.reconcile.housekeeping import run_upkeep
from sms_pipeline.reconcile.pushes import NoCodeTable, PushPass
from sms_pipeline.reconcile.transaction import RECONCILE_LOCK
from sms_pipeline.reconcile.run import reconcile_day
from sms_pipeline.simulator import generation
from tests.support.numbers import numbers
from tests.support.pushes import (
    HOLD_S, codes_from_provider, final_push, inbox, one_sent, provider_seconds, push, run_pass)
from tests.support.reconcile import World, world_for

@pytest.fixture
def codes(world):
    codes_from_provider(world)
    return world


def test_a_delivered_push_moves_a_submitted_row_to_delivered(codes):
    world = codes
    ((key, msg_id),) = one_sent(world)
    done = world.clock.now() + timedelta(seconds=7)
    assert push(world, msg_id, "000", done_at=done)
    result = run_pass(world)
    row = world.row(key)
    assert (row["state"], row["final_status"], row["delivered_at"]) == ("delivered", "DELIVRD", provider_seconds(done, world))
    (receipt,) = world.receipts(msg_id)
    assert (receipt["source"], receipt["outcome"], receipt["disposition"]) == ("push", "delivered", "applied")
    assert (result.reconciled, result.correlation.by_transaction, result.applied.moves) == (
        1, 1, {"submitted->delivered": 1})
    assert result.lag_p50_s is not None and 0 <= result.lag_p50_s <= result.lag_p95_s < 60
    assert all(r["reconciled_at"] is not None for r in inbox(world))
    assert run_pass(world) is None  # nothing waits any more


def test_a_failure_stamped_with_a_delivered_time_ends_failed(codes):
    world = codes
    ((key, msg_id),) = one_sent(world)
    assert push(world, msg_id, "001", done_at=world.clock.now() + timedelta(seconds=30))
    run_pass(world)
    row = world.row(key)
    assert (row["state"], row["state_reason"], row["final_status"], row["provider_cause"], row["delivered_at"]) == (
        "failed", "receipt_failed", "UNDELIV", "Absent Subscriber", None)


def test_an_unmapped_code_is_kept_counted_and_moves_nothing(codes):
    world = codes
    ((key, msg_id),) = one_sent(world)
    assert push(world, msg_id, "099")
    result = run_pass(world)
    (receipt,) = world.receipts(msg_id)
    assert (receipt["status_word"], receipt["raw_status"], receipt["outcome"], receipt["disposition"]) == (
        "CODE_099", "CODE_099", "unmapped", "ignored_unmapped")
    assert (result.receipts.new_unmapped_receipts, result.receipts.unmapped_words) == (1, {"CODE_099": 1})
    assert world.row(key)["state"] == "submitted"
    assert result.reconciled == 1


def test_the_same_push_twice_is_one_event_and_codes_of_one_word_are_one_event(codes):
    world = codes
    (_, first), (_, second) = one_sent(world, 2)
    assert push(world, first, "000")
    assert not push(world, first, "000")  # the provider's repeat: the receiver's insert is a no-op
    assert push(world, second, "001") and push(world, second, "002")  # two codes, one word (UNDELIV)
    result = run_pass(world)
    assert [r["status_word"] for r in world.receipts(first)] == ["DELIVRD"]
    assert [r["status_word"] for r in world.receipts(second)] == ["UNDELIV"]
    assert (result.receipts.source_rows, result.receipts.new_receipts, result.reconciled) == (3, 2, 3)


def test_reordered_pushes_follow_the_forward_only_rule(codes):
    world = codes
    (one, one_id), (two, two_id) = one_sent(world, 2)
    now = world.clock.now()
    # In one pass: the later failure arrived first; the earliest final by provider time is applied.
    assert push(world, one_id, "001", done_at=now + timedelta(minutes=5), received_ago_s=2)
    assert push(world, one_id, "000", done_at=now + timedelta(minutes=1))
    run_pass(world)
    row = world.row(one)
    assert (row["state"], row["final_status"], row["conflicting_final_status"]) == ("delivered", "DELIVRD", "UNDELIV")
    # Across passes, as between any two runs: the final applied first stays, a later one is a conflict.
    assert push(world, two_id, "001", done_at=now + timedelta(minutes=5))
    run_pass(world)
    assert push(world, two_id, "000", done_at=now + timedelta(minutes=1))
    run_pass(world)
    row = world.row(two)
    assert (row["state"], row["final_status"], row["conflicting_final_status"]) == ("failed", "UNDELIV", "DELIVRD")
    assert {r["status_word"]: r["disposition"] for r in world.receipts(two_id)} == {
        "UNDELIV": "applied", "DELIVRD": "conflicting_final"}


def test_an_early_push_waits_and_matches_on_a_later_pass(codes):
    world = codes
    recipient = numbers(1, start=700)[0]
    key = world.send_then_crash(recipient)  # the provider has it; our row has no answer yet
    msg_id = world.msg_id_of(recipient)
    assert push(world, msg_id, "000")
    early = run_pass(world)
    assert (early.held, early.reconciled, early.receipts.new_receipts, early.orphans.opened) == (1, 0, 0, 0)
    assert world.receipts(msg_id) == [] and inbox(world)[0]["reconciled_at"] is None
    again = run_pass(world)
    assert (again.held, again.reconciled) == (1, 0)  # still waiting: retried on every pass
    (entry,) = [e for e in world.ledger() if e.msg_id == msg_id]
    world.answer_written(key, entry.transaction_id)
    late = run_pass(world)
    assert (late.held, late.reconciled, late.correlation.by_transaction) == (0, 1, 1)
    row = world.row(key)
    assert (row["state"], row["provider_message_id"], row["correlation_evidence"]) == (
        "delivered", msg_id, "transaction")


def test_an_otp_push_is_matched_by_recipient_and_the_answers_second_and_never_by_a_near_second(codes):
    # An OTP row has no transaction id and learns no msgId from its answer, and a push carries no sender and
    # no text: what ties them is the recipient and the answer's createTime, to the second.
    world = codes
    recipient = numbers(1, start=720)[0]
    first = world.otp(recipient)
    world.move_to(world.clock.now() + timedelta(seconds=40))  # a resend after retryAfter, inside the window
    second = world.otp(recipient)
    first_id, second_id = (e.msg_id for e in world.ledger())
    created = world.row(first)["provider_created_at"]
    assert created is not None and created == provider_seconds(world.submitted_at(first_id), world)
    # A push to that number two seconds off the first's createTime: both rows are within the window,
    # neither in the second, so it matches neither (it waits, then becomes an orphan).
    assert push(world, "8999999998", "000", recipient=recipient,
                submit_at=world.submitted_at(first_id) + timedelta(seconds=2))
    near = run_pass(world)
    assert (near.held, near.reconciled, near.correlation.by_reconstruction) == (1, 0, 0)
    # Each push at its own row's second: each matched to its own row, in the first pass.
    assert push(world, first_id, "000") and push(world, second_id, "001")
    result = run_pass(world)
    assert (result.held, result.reconciled, result.correlation.by_reconstruction, result.correlation.ambiguous) == (
        1, 2, 2, 0)
    for key, msg_id, state in ((first, first_id, "delivered"), (second, second_id, "failed")):
        row = world.row(key)
        assert (row["state"], row["provider_message_id"], row["correlation_evidence"]) == (
            state, msg_id, "reconstruction")
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone() == (0,)


def test_two_otps_to_one_number_in_one_second_leave_a_push_ambiguous(codes):
    world = codes
    recipient = numbers(1, start=730)[0]
    first = world.otp(recipient)
    world.move_to(world.clock.now() + timedelta(seconds=40))
    second = world.otp(recipient)
    first_id = world.ledger()[0].msg_id
    # The provider stamped both answers with one second (two requests inside it): nothing tells them apart.
    world.conn.execute("UPDATE msg.outbound_message SET provider_created_at = %s WHERE id = %s",
                       (world.row(first)["provider_created_at"], second[0]))
    assert push(world, first_id, "000", received_ago_s=HOLD_S + 60)
    result = run_pass(world)
    assert (result.correlation.by_reconstruction, result.correlation.ambiguous) == (0, 1)
    assert [world.row(k)["state"] for k in (first, second)] == ["submitted", "submitted"]
    assert [r["correlation_result"] for r in world.receipts(first_id)] == ["ambiguous"]


def test_a_push_nothing_matches_after_the_hold_becomes_an_orphan_the_daily_run_retries(codes):
    world = codes
    recipient = numbers(1, start=710)[0]
    key = world.send_then_crash(recipient)
    msg_id = world.msg_id_of(recipient)
    assert push(world, msg_id, "000", received_ago_s=HOLD_S + 60)
    result = run_pass(world)
    assert (result.held, result.reconciled, result.orphans.opened) == (0, 1, 1)
    (receipt,) = world.receipts(msg_id)
    assert (receipt["correlation_result"], receipt["message_id"]) == ("not_found", None)
    (entry,) = [e for e in world.ledger() if e.msg_id == msg_id]
    world.answer_written(key, entry.transaction_id)
    assert run_pass(world) is None  # reconciled: the push pass does not look again
    with psycopg.connect(world.db_url, autocommit=True) as conn:
        day = reconcile_day(conn, world.day, world.clock, provider_timezone=world.tz,
                            correlation_window_s=world.settings.correlation_window_s,
                            campaign_send_spread_s=world.settings.campaign_send_spread_s, non_submission_grace_h=24,
                            partition_start=world.day - timedelta(days=10), resend_after_proof_classes=(),
                            resend_max_age_h=72, max_send_delay_h=24,
                            work_mem_mb=world.settings.reconcile_work_mem_mb)
    assert day.orphans.resolved == 1
    assert world.row(key)["state"] == "delivered"


def test_a_pass_stages_only_the_pushes_never_the_day(codes):
    world = codes
    one_sent(world, 30)
    # A receipt nobody sent: after the day's run it waits as an orphan, tried again by every day's run.
    world.inject_getdlr(world.day, "8999999999", "DELIVRD", recipient=numbers(1, start=990)[0],
                        submit_at=world.clock.now())
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)  # the day report's 30 rows and the orphan are stored
    assert world.receipts("8999999999")[0]["correlation_result"] == "not_found"
    ((new_key, new_id),) = one_sent(world, start=600)  # sent the next day
    assert push(world, new_id, "000")
    result = run_pass(world)
    # What the pass read and tried: the one push, neither the day's rows nor the waiting orphan.
    assert (result.receipts.source_rows, result.receipts.new_receipts, result.correlation.tried) == (1, 1, 1)
    assert world.row(new_key)["state"] == "delivered"


def test_pushes_and_the_day_report_make_one_receipt_per_event_and_the_states_of_a_push_free_run(
        codes, second_db_url, tmp_path):
    world = codes
    states_with = _traffic(world, pushes=True)
    for msg_id in (r["provider_message_id"] for r in states_with.values()):
        words = [r["status_word"] for r in world.receipts(msg_id)]
        assert len(words) == len(set(words))
    assert world.conn.execute("SELECT count(*) FROM dlr.delivery_receipts WHERE source = 'push'").fetchone()[0] > 0
    making = world_for(second_db_url, tmp_path / "reference")
    try:
        states_without = _traffic(next(making), pushes=False)
    finally:
        making.close()
    assert states_with == states_without


def _traffic(world: World, *, pushes: bool) -> dict[str, dict[str, Any]]:
    """40 messages; (pushes) each final receipt pushed and reconciled within the day; the day report and its
    reconciliation the next morning. The rows' end states by recipient."""
    sent = one_sent(world, 40, start=800)
    keys = [key for key, _ in sent]
    evening = world.at(world.day, 23)
    if pushes:
        for _, msg_id in sent:
            line = world.timeline(msg_id)
            if line.final and world.submitted_at(msg_id) + timedelta(milliseconds=line.final_ms) <= evening:
                final_push(world, msg_id)
        moved = run_pass(world).applied.moves  # the pushes settle rows within the day
        assert moved.get("submitted->delivered") and moved.get("submitted->failed")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    if pushes:
        assert all(r["reconciled_at"] is not None for r in inbox(world))
    columns = ("provider_message_id", "state", "state_reason", "final_status", "provider_cause", "delivered_at",
               "correlation_result", "correlation_evidence", "conflicting_final_status", "billable_units", "cost")
    return {row["recipient"]: {c: row[c] for c in columns} for row in map(world.row, keys)}


def test_a_pass_waits_for_a_running_day_and_both_end_consistent(codes):
    world = codes
    sent = one_sent(world, 5)
    for _, msg_id in sent:
        push(world, msg_id, "000")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day, reconcile=False)  # the day report is loaded, not reconciled
    day_conn = psycopg.connect(world.db_url, autocommit=True)
    try:
        # Hold the reconciliation's lock as a running day does, then start a pass beside it.
        day_conn.execute("BEGIN")
        day_conn.execute("SELECT pg_advisory_xact_lock(%s)", (RECONCILE_LOCK,))
        results: list[PushPass | None] = []
        passing = threading.Thread(target=lambda: results.append(run_pass(world)))
        passing.start()
        passing.join(timeout=3)
        assert passing.is_alive() and not results  # waiting for the lock
        assert world.conn.execute("SELECT count(*) FROM dlr.delivery_receipts").fetchone() == (0,)
        assert all(r["reconciled_at"] is None for r in inbox(world))
        day_conn.execute("COMMIT")
        passing.join(timeout=60)
        assert results and results[0].reconciled == 5
    finally:
        day_conn.close()
    world.run_daily(world.day, ingest=False)  # the day's run after the pass: no second event of any push
    for key, msg_id in sent:
        words = [r["status_word"] for r in world.receipts(msg_id)]
        assert len(words) == len(set(words)) and "DELIVRD" in words
        assert world.row(key)["state"] == "delivered"  # the pushes' finals came first; a later one is a conflict


class _Answer:
    """The provider's code table as given (for the refusals: the simulator's is always well-formed)."""

    def __init__(self, rows: list[DeliveryCode]) -> None:
        self.rows = rows

    def delivery_codes(self) -> list[DeliveryCode]:
        return self.rows


def _codes(db) -> dict[str, str]:
    return dict(db.execute("SELECT error_code, status_word FROM dlr.delivery_codes").fetchall())


def test_the_code_table_refresh_refuses_an_empty_or_malformed_answer_and_keeps_unlisted_codes(db):
    clock = FrozenClock(datetime.fromisoformat("2026-03-01T10:00:00+00:00"))
    first = refresh_delivery_codes(db, _Answer([DeliveryCode("000", "DELIVRD", "Delivered"),
                                                DeliveryCode("001", "UNDELIV", "Absent Subscriber")]), clock)
    assert (first.listed, first.added, first.changed, first.kept_unlisted) == (2, 2, 0, 0)
    for bad in ([], [DeliveryCode("00 1", "UNDELIV", None)], [DeliveryCode("002", " ", None)],
                [DeliveryCode("002", "UNDELIV", None), DeliveryCode("002", "EXPIRED", None)]):
        with pytest.raises(DeliveryCodesRefused):
            refresh_delivery_codes(db, _Answer(bad), clock)
        assert _codes(db) == {"000": "DELIVRD", "001": "UNDELIV"}
    later = refresh_delivery_codes(db, _Answer([DeliveryCode("000", "DELIVRD", "Delivered"),
                                                DeliveryCode("004", "EXPIRED", "Expired")]), clock)
    assert (later.listed, later.added, later.changed, later.kept_unlisted) == (2, 1, 0, 1)
    assert _codes(db) == {"000": "DELIVRD", "001": "UNDELIV", "004": "EXPIRED"}


def test_the_code_table_comes_from_the_provider(world):
    codes_from_provider(world)
    assert _codes(world.conn)["000"] == "DELIVRD"
    assert _codes(world.conn)["001"] == "UNDELIV"
    assert "099" not in _codes(world.conn)


def test_the_upkeep_purges_reconciled_pushes_after_the_horizon_only(codes):
    world = codes
    ((_, msg_id),) = one_sent(world)
    push(world, msg_id, "000")
    run_pass(world)
    recipient = numbers(1, start=720)[0]
    world.send_then_crash(recipient)
    waiting = world.msg_id_of(recipient)
    push(world, waiting, "000")  # held: never reconciled, so never purged
    run_pass(world)
    # The inbox's times are the database's clock: the upkeep runs 49 h after it (horizon 48 h).
    later = world.conn.execute("SELECT clock_timestamp() + interval '49 hours'").fetchone()[0]
    with psycopg.connect(world.db_url, autocommit=True) as conn:
        purged = [run_upkeep(conn, FrozenClock(later), claim_lease_s=world.settings.claim_lease_s,
                             validity_h=world.settings.validity_h, provider_timezone=world.tz,
                             push_inbox_keep_h=keep_h).push_inbox_purged
                  for keep_h in (50, 48)]
    assert purged == [0, 1]
    assert [r["provider_message_id"] for r in inbox(world)] == [waiting]
    assert len(world.receipts(msg_id)) == 1  # the receipt event stays


def test_without_a_code_table_pushes_wait_and_the_daily_run_reads_none(world):
    # Read without the table, every code would become an unmapped event for good: the pass refuses,
    # and the daily run reads no pushes at all (the day report carries the same receipts).
    ((key, msg_id),) = one_sent(world)
    assert final_push(world, msg_id)
    with pytest.raises(NoCodeTable, match="wait in the inbox"):
        run_pass(world)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    assert {r["source"] for r in world.receipts(msg_id)} == {"day_report"}
    assert [row["reconciled_at"] for row in inbox(world)] == [None]
    codes_from_provider(world)
    assert run_pass(world).reconciled == 1
    assert not [r for r in world.receipts(msg_id) if r["status_word"].startswith("CODE_")]


def _lost_answers_pushed_first(world: World, *, pushes: bool) -> dict[str, tuple]:
    """Three rows whose send answer was lost (unknown); with ``pushes``, their final receipts are pushed and
    stored first, held no longer (older than the hold); then the day closes and the daily run reads the day
    report."""
    recipients = numbers(3, start=900)
    keys = world.send_ambiguous(recipients, "accept_then_drop")
    if pushes:
        codes_from_provider(world)
        for recipient in recipients:
            msg_id = world.msg_id_of(recipient)
            line = world.timeline(msg_id)
            shown = generation.shown_final(generation.STATUSES[line.final], line.noise, 0.0)
            done_at = world.submitted_at(msg_id) + timedelta(milliseconds=line.final_ms)
            assert push(world, msg_id, shown.error_code, done_at=done_at, recipient=recipient,
                        received_ago_s=HOLD_S + 60)
        assert run_pass(world).correlation.not_found == 3  # no row has the msgId or the transaction
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    return {r: (world.row(k)["state"], world.row(k)["provider_message_id"], world.row(k)["correlation_evidence"])
            for r, k in zip(recipients, keys, strict=True)}


def test_a_pushed_receipt_stored_first_never_makes_a_lost_answer_harder_to_match(db_url, second_db_url, tmp_path):
    """A push has no sender and no text; the day report's row for the same event lends them to correlation,
    so the row ends as in a push-free run (matched by reconstruction), not left unknown."""
    for world in world_for(db_url, tmp_path / "pushed"):
        pushed = _lost_answers_pushed_first(world, pushes=True)
    for world in world_for(second_db_url, tmp_path / "push_free"):
        push_free = _lost_answers_pushed_first(world, pushes=False)
    assert pushed == push_free
    assert {state for state, _, _ in push_free.values()} <= {"delivered", "failed", "expired"}
