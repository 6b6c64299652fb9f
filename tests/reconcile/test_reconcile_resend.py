"""Re-send after proof (docs/design.md#re-send-after-proof), and receipt-driven state reasons.

In process, on a virtual clock started four days back (so every move below, up to three days and
11 hours past the day, stays behind real time at any hour of the real day): real worker, real
simulator (its ledger is what was billed), the daily assets as the schedule
runs them.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline import settings
from sms_pipeline.core.fingerprint import text_fingerprint
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.errors import SettingsError
from sms_pipeline.ops import messages as message_tools
from sms_pipeline.orchestration.asset_keys import RECONCILIATION
from sms_pipeline.orchestration.resources import PipelineResource
from sms_pipeline.orchestration.schedules import daily_days
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.reconcile.resend import resend_after_proof
from tests.support.numbers import numbers
from tests.support.reconcile import SENDER, world_for
from tests.support.worker import TEXT_KEY, make_worker


@pytest.fixture
def world(db_url, tmp_path):
    """The reconciliation world, its day four days back: the latest move (day + 3 d 11:00) is in the past
    whatever the hour, and wall time is always more than 72 h past the day's rows, so a max-age check
    that read wall time instead of the reconciliation's clock would fail the tests below."""
    today = local_date(datetime.now(UTC), ZoneInfo("Asia/Kolkata"))
    yield from world_for(db_url, tmp_path, day=today - timedelta(days=4))


def _ambiguous(world, recipients, message_class):
    """Sent through the real worker while the provider answers 5xx: `unknown`, nothing billed."""
    world.sim.faults.update({"http_5xx": 1.0})
    try:
        keys = world.send(recipients, message_class=message_class)
    finally:
        world.sim.faults.update({"http_5xx": 0.0})
    assert {world.row(k)["state"] for k in keys} == {"unknown"}
    return keys


def _unknown_otp(world, recipient):
    """An OTP row whose request may have left (the OTP strategy writes such rows `unknown`)."""
    now = world.clock.now()
    return world._insert(recipient, "Your code is $otp$", SENDER, "otp", state="unknown",
                         state_reason="send_ambiguous", claimed_at=now)


def _taken_with_another_text(world, recipient, stored_text):
    """The provider took the message, the answer was lost (`unknown`, no transaction id), and the text it
    reports is not the one we fingerprinted (a signature added, line breaks changed, or the key rotated)."""
    outcome = world.client.send([recipient], "Your order has shipped", SENDER)
    assert isinstance(outcome, SendAccepted), outcome
    return world._insert(recipient, stored_text, SENDER, "transactional", state="unknown",
                         state_reason="send_ambiguous", claimed_at=world.clock.now(),
                         message_fingerprint=text_fingerprint(TEXT_KEY, stored_text))


def _reconcile(world):
    """What the daily schedule runs at the clock's time (yesterday + lookback); returns the summed
    `resent_after_proof` of its days' reconciliations."""
    first, last = daily_days(world.clock.now(), world.tz, world.settings.partition_start,
                             world.settings.lookback_days)
    result = world.run_daily(first, last)
    return sum(event.materialization.metadata["resent_after_proof"].value
               for event in result.get_asset_materialization_events()
               if event.materialization.asset_key == RECONCILIATION)


def _chain(world, key):
    row = world.row(key)
    (trace,) = message_tools.trace(world.conn, business_key=row["business_key"], tenant=row["tenant_id"])
    return trace.attempts


def _run_worker(world):
    return make_worker(world.db_url, world.client, world.clock, zone=world.tz.key,
                       batch_size=world.settings.batch_size,
                       lease=timedelta(seconds=world.settings.claim_lease_s)).run(once=True)


def _billed(world):
    return Counter(e.mobile for e in world.ledger())


def test_proved_unsent_transactional_rows_are_resent_once_otp_and_promotional_are_not(world):
    d = world.day
    resent = numbers(3)
    promotional = numbers(1, start=10)
    otp_number = numbers(1, start=20)[0]
    transactional_keys = _ambiguous(world, resent, "transactional")
    (promotional_key,) = _ambiguous(world, promotional, "promotional")
    otp_key = _unknown_otp(world, otp_number)
    (dropped,) = world.send_ambiguous(numbers(1, start=30), "accept_then_drop")  # billed, answer lost
    world.send(numbers(40, start=100))  # the day's other traffic
    assert not {*resent, *promotional, otp_number} & set(_billed(world))

    world.move_to(world.at(d + timedelta(days=1), 2, 30))
    assert _reconcile(world) == 0  # report in, grace not passed: nothing proved, nothing re-sent
    assert {world.row(k)["state"] for k in transactional_keys} == {"unknown"}

    world.move_to(world.at(d + timedelta(days=2), 2, 30))  # downloaded after close + 24 h: absence is proof
    assert _reconcile(world) == 3
    for key in transactional_keys:
        old, new = _chain(world, key)
        assert (old.state, old.state_reason, old.billable_units) == ("superseded", "resent_after_proof", None)
        assert (new.state, new.replaces_id, new.business_key) == ("pending", old.id, old.business_key)
        assert new.created_at == world.clock.now() and new.attempt_key != old.attempt_key
        # the old expiry has passed by proof time: the new attempt gets its own send window
        assert world.row(key)["expires_at"] is not None
        new_row = world.conn.execute("SELECT expires_at FROM msg.outbound_message WHERE id = %s", (new.id,)).fetchone()
        assert new_row[0] == world.clock.now() + timedelta(hours=world.settings.max_send_delay_h)
    for key in (promotional_key, otp_key):
        row = world.row(key)
        assert (row["state"], row["state_reason"]) == ("failed", "not_submitted")
        assert len(_chain(world, key)) == 1
    assert world.row(dropped)["state_reason"] in ("submission_confirmed", "receipt_failed", "receipt_expired")

    summary = _run_worker(world)  # the next worker run sends the new attempts at once
    assert summary.submitted == 3
    billed = _billed(world)
    assert [billed[n] for n in resent] == [1, 1, 1]  # one billed attempt per business key
    assert billed[promotional[0]] == billed[otp_number] == 0
    for key in transactional_keys:
        assert [a.state for a in _chain(world, key)] == ["superseded", "submitted"]

    # Re-running the day (the schedule's lookback) re-sends nothing again.
    world.move_to(world.at(d + timedelta(days=2), 3, 30))
    assert _reconcile(world) == 0
    assert world.conn.execute("SELECT count(*) FROM msg.outbound_message WHERE replaces_id IS NOT NULL"
                              ).fetchone() == (3,)


def test_messages_show_lists_the_automatic_resend_with_its_reason(world, run):
    (key,) = _ambiguous(world, numbers(1), "transactional")
    world.move_to(world.at(world.day + timedelta(days=2), 2, 30))
    assert _reconcile(world) == 1
    old_id = world.row(key)["id"]
    code, out, _ = run("messages", "show", "--recipient", "+" + numbers(1)[0])
    assert code == 0 and "attempts=2" in out
    assert f"id={old_id}" in out and "state=superseded reason='resent_after_proof'" in out
    assert f"state=pending replaces={old_id}" in out
    assert numbers(1)[0] not in out  # the number is masked


def test_a_row_older_than_the_max_age_is_not_resent_on_the_reconciliations_clock(world):
    d = world.day
    world.move_to(world.at(d, 10, 0))
    (old,) = _ambiguous(world, numbers(1), "transactional")
    world.move_to(world.at(d, 12, 0))
    (young,) = _ambiguous(world, numbers(1, start=1), "transactional")
    # The first proof only comes 73 h after the first row (71 h after the second): the reconciliation's
    # clock decides, not wall time (which is more than 84 h past both rows here).
    world.move_to(world.at(d + timedelta(days=3), 11, 0))
    assert _reconcile(world) == 1
    assert (world.row(old)["state"], world.row(old)["state_reason"]) == ("failed", "not_submitted")
    assert (world.row(young)["state"], world.row(young)["state_reason"]) == ("superseded", "resent_after_proof")


def test_a_shorter_max_age_and_the_classes_come_from_the_settings(world):
    world.settings = world.settings.model_copy(update={"resend_max_age_h": 24,
                                                        "resend_after_proof": "transactional,promotional"})
    (transactional,) = _ambiguous(world, numbers(1), "transactional")
    world.move_to(world.at(world.day, 20, 0))
    (promotional,) = _ambiguous(world, numbers(1, start=1), "promotional")
    world.move_to(world.at(world.day + timedelta(days=2), 2, 30))  # 40.5 h and 30.5 h after them
    assert _reconcile(world) == 0
    for key in (transactional, promotional):
        assert (world.row(key)["state"], world.row(key)["state_reason"]) == ("failed", "not_submitted")
    world.settings = world.settings.model_copy(update={"resend_max_age_h": 36})
    world.move_to(world.at(world.day + timedelta(days=2), 3, 30))
    assert _reconcile(world) == 1  # a rerun with a longer limit re-sends the younger one
    assert world.row(promotional)["state"] == "superseded"
    assert world.row(transactional)["state"] == "failed"


def test_receipt_driven_failures_get_our_reason_beside_the_providers_cause(world):
    keys = world.send(numbers(300))
    world.move_to(world.at(world.day + timedelta(days=2), 2, 30))
    _reconcile(world)
    rows = [world.row(k) for k in keys]
    by_state = Counter(r["state"] for r in rows)
    assert by_state["failed"] > 0 and by_state["delivered"] > 0
    for r in rows:
        if r["state"] in ("failed", "expired"):
            assert r["final_status"] is not None  # moved by a final receipt
            assert r["state_reason"] == f"receipt_{r['state']}", r["state"]
        else:
            assert r["state_reason"] is None, (r["state"], r["state_reason"])
    assert any(r["provider_cause"] for r in rows if r["state"] == "failed")
    before = world.snapshot()
    _reconcile(world)  # a re-run writes nothing
    assert world.snapshot()["messages"] == before["messages"]


def test_otp_is_refused_as_a_class_to_resend():
    for value in ("otp", "transactional,otp", " OTP "):
        with pytest.raises(SettingsError, match=r"SMS_PIPELINE_RESEND_AFTER_PROOF=.*otp.*a late code is useless"):
            settings.load({"SMS_PIPELINE_RESEND_AFTER_PROOF": value})
    with pytest.raises(SettingsError, match="SMS_PIPELINE_RESEND_AFTER_PROOF"):
        settings.load({"SMS_PIPELINE_RESEND_AFTER_PROOF": "transactionl"})
    s = settings.load({})
    assert (s.resend_classes, s.resend_max_age_h) == (("transactional",), 72)
    assert settings.load({"SMS_PIPELINE_RESEND_AFTER_PROOF": "none"}).resend_classes == ()
    # The Dagster resource (editable in the launchpad) and the function itself refuse it too.
    with pytest.raises(ValueError, match="late code"):
        PipelineResource(resend_after_proof="otp").resend_classes
    with pytest.raises(ValueError, match="late code"):
        resend_after_proof(None, day_start=None, day_end=None, now=None, classes=("otp",), max_age_h=72,
                           send_window=timedelta(hours=24))


def test_a_lone_candidate_with_another_text_is_matched_never_proved_nor_resent(world):
    (number,) = numbers(1)
    key = _taken_with_another_text(world, number, "Your order has shipped. Reply STOP to opt out")
    world.move_to(world.at(world.day + timedelta(days=2), 2, 30))  # late enough for a proof
    assert _reconcile(world) == 0
    row, msg_id = world.row(key), world.msg_id_of(number)
    assert (row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
        "matched", "reconstruction", msg_id)
    assert row["state"] == world.expected_state(msg_id, world.clock.now())  # the receipt's, not a proof's
    assert row["state_reason"] != "not_submitted"
    assert len(_chain(world, key)) == 1
    assert _billed(world)[number] == 1


def test_two_candidates_neither_with_the_reported_text_stay_ambiguous_and_unproved(world):
    (number,) = numbers(1)
    first = _taken_with_another_text(world, number, "Your order has shipped!")
    world.move_to(world.clock.now() + timedelta(seconds=40))  # inside the window of the first
    second = _taken_with_another_text(world, number, "Your order has shipped.")
    world.move_to(world.at(world.day + timedelta(days=2), 2, 30))
    assert _reconcile(world) == 0
    for key in (first, second):
        row = world.row(key)
        assert (row["state"], row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
            "unknown", "ambiguous", None, None)
        assert len(_chain(world, key)) == 1
    assert _billed(world)[number] == 2


def test_a_campaign_row_proved_unsent_is_never_resent_automatically(world):
    """A campaign goes out at its time; a copy days later is not what its owner asked for."""
    now = world.clock.now()
    campaign_id = world.conn.execute(
        """INSERT INTO msg.campaign (name, provider_side, local_time, time_zone, scheduled_for, created_at,
                                     updated_at)
           VALUES ('promo', false, %s, %s, %s, %s, %s) RETURNING id""",
        (now.astimezone(world.tz).replace(tzinfo=None), world.tz.key, now, now, now)).fetchone()[0]
    # Two transactional rows whose requests may have left (unknown), never billed; one is the campaign's.
    own, in_campaign = (
        world._insert(recipient, "Your order has shipped", SENDER, "transactional", state="unknown",
                      state_reason="send_ambiguous", claimed_at=now, **columns)
        for recipient, columns in zip(numbers(2), ({}, {"campaign_id": campaign_id})))

    world.move_to(world.at(world.day + timedelta(days=2), 2, 30))  # absence is proof for both
    assert _reconcile(world) == 1

    assert [a.state for a in _chain(world, own)] == ["superseded", "pending"]
    row = world.row(in_campaign)
    assert (row["state"], row["state_reason"]) == ("failed", "not_submitted")
    assert len(_chain(world, in_campaign)) == 1


def test_a_lost_answer_filed_in_the_next_days_report_is_matched_there_never_proved_nor_sent_twice(db_url, tmp_path):
    """Case 20 with a lost answer: the provider took the message (billed) and filed its line in D + 1's
    report. In the run where D's report first counts as complete, D's pass comes before D + 1's: D's
    proof waits for D + 1's pass, which finds the row; it is never proved unsent and never re-sent."""
    today = local_date(datetime.now(UTC), ZoneInfo("Asia/Kolkata"))
    for world in world_for(db_url, tmp_path, day=today - timedelta(days=4), faults={"neighbour_day": 1.0}):
        world.move_to(world.at(world.day, 15))  # an afternoon row: filed in the next day's file
        (recipient,) = numbers(1, start=70)
        (key,) = world.send_ambiguous([recipient], "accept_then_drop")
        assert world.row(key)["state"] == "unknown" and _billed(world)[recipient] == 1

        world.move_to(world.at(world.day + timedelta(days=2), 2, 30))  # D complete, D + 1 loaded for the first time
        assert _reconcile(world) == 0
        row = world.row(key)
        assert row["provider_message_id"] == world.msg_id_of(recipient)
        assert row["state"] not in ("failed", "unknown") and row["state_reason"] != "not_submitted"
        assert len(_chain(world, key)) == 1
        _run_worker(world)
        assert _billed(world)[recipient] == 1


def test_a_day_whose_neighbours_are_reconciled_later_is_proved_by_their_pass(db_url, tmp_path):
    """D's pass cannot prove while D + 1's loaded report is not reconciled; D + 1's own pass then proves D."""
    today = local_date(datetime.now(UTC), ZoneInfo("Asia/Kolkata"))
    for world in world_for(db_url, tmp_path, day=today - timedelta(days=4)):
        d = world.day
        keys = _ambiguous(world, numbers(2, start=80), "promotional")  # never billed, never re-sent
        world.move_to(world.at(d + timedelta(days=2), 2, 30))
        world.run_daily(d - timedelta(days=1), d + timedelta(days=1), reconcile=False)  # reports loaded only
        world.run_daily(d - timedelta(days=1), d - timedelta(days=1), ingest=False)
        world.run_daily(d, d, ingest=False)
        assert {world.row(k)["state"] for k in keys} == {"unknown"}  # D + 1's lines not matched yet
        result = world.run_daily(d + timedelta(days=1), d + timedelta(days=1), ingest=False)
        assert {(world.row(k)["state"], world.row(k)["state_reason"]) for k in keys} == {("failed", "not_submitted")}
        (meta,) = [e.materialization.metadata for e in result.get_asset_materialization_events()
                   if e.materialization.asset_key == RECONCILIATION]
        assert meta["not_submitted_proved_on_neighbour_days"].value == 2
