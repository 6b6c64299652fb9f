"""Sends and OTP through the client against the simulator: outcome class and ledger."""

from __future__ import annotations

from datetime import timedelta

from pydantic import SecretStr
import pytest

from sms_pipeline.core.segments import count_segments
from sms_pipeline.provider import SendAccepted, SendRefused

A, B, C = "919876543210", "918765432109", "917654321098"


def test_accepted_send_is_billed_per_accepted_recipient(client, sim):
    outcome = client.send([A, B, "917", C], "Your order has shipped, track it online.", "SGCSMS")

    assert isinstance(outcome, SendAccepted)
    assert outcome.accepted == (A, B, C)
    assert outcome.invalid == ("917",)
    assert outcome.transaction_id is not None and len(outcome.transaction_id) == 19
    assert outcome.request_time == sim.clock.now().replace(microsecond=0)
    ledger = list(sim.state.ledger_entries())
    assert [e.mobile for e in ledger] == [A, B, C]
    assert {e.transaction_id for e in ledger} == {outcome.transaction_id}
    assert len({e.msg_id for e in ledger}) == 3
    assert all(e.units == 1 and e.sender == "SGCSMS" for e in ledger)


def test_units_follow_segments_of_the_text(client, sim):
    text = "Namaste 🙏 " * 10  # UCS-2, surrogate pairs count twice
    outcome = client.send([A, B], text, "SGCSMS", msg_type="unicode")

    assert isinstance(outcome, SendAccepted)
    expected = count_segments(text).segments
    assert expected > 1
    assert [e.units for e in sim.state.ledger_entries()] == [expected, expected]
    assert sim.state.billed_units() == 2 * expected


def test_duplicatecheck_removes_repeats_within_one_request_only(client, sim):
    deduped = client.send([A, A, B], "hello", "SGCSMS", duplicate_check=True)
    kept = client.send([A, A], "hello", "SGCSMS", duplicate_check=False)

    assert isinstance(deduped, SendAccepted) and deduped.accepted == (A, B)
    assert isinstance(kept, SendAccepted) and kept.accepted == (A, A)
    entries = list(sim.state.ledger_entries())
    assert [e.mobile for e in entries] == [A, B, A, A]
    assert len({e.msg_id for e in entries}) == 4  # a repeated number still gets its own msgId


def test_identical_requests_are_separate_billed_sends(client, sim):
    first = client.send([A], "same text", "SGCSMS")
    second = client.send([A], "same text", "SGCSMS")

    assert isinstance(first, SendAccepted) and isinstance(second, SendAccepted)
    assert first.transaction_id != second.transaction_id
    assert sim.state.ledger_size() == 2


@pytest.mark.parametrize(
    ("mobiles", "text", "sender", "code"),
    [
        ([A], "Dear {#var#}, your OTP is ready", "SGCSMS", "230"),  # unfilled DLT variable
        ([A], "hello", "S!", "231"),
        (["917", "12345"], "hello", "SGCSMS", "235"),
    ],
)
def test_message_errors_are_refused_and_not_billed(client, sim, mobiles, text, sender, code):
    outcome = client.send(mobiles, text, sender)

    assert outcome == SendRefused(code, outcome.reason)
    assert outcome.is_message_error and not outcome.is_configuration_error
    assert sim.state.ledger_size() == 0


def test_wrong_password_is_refused_with_216(make_client, sim):
    outcome = make_client(password=SecretStr("wrong")).send([A], "hello", "SGCSMS")

    assert isinstance(outcome, SendRefused) and outcome.code == "216"
    assert outcome.is_configuration_error
    assert sim.state.ledger_size() == 0


def test_missing_userid_is_refused_with_213(make_client, sim):
    outcome = make_client(userid="").send([A], "hello", "SGCSMS")

    assert isinstance(outcome, SendRefused) and outcome.code == "213"
    assert outcome.is_configuration_error


def test_api_key_header_authenticates(make_client, sim, account):
    good = make_client(password=None, api_key=SecretStr(account.api_key)).send([A], "hello", "SGCSMS")
    bad = make_client(password=None, api_key=SecretStr("nope")).send([A], "hello", "SGCSMS")

    assert isinstance(good, SendAccepted)
    assert isinstance(bad, SendRefused) and bad.code == "216"
    assert sim.state.ledger_size() == 1


def test_insufficient_credits_is_a_configuration_error(client, sim):
    sim.state.credits = 1
    outcome = client.send([A, B], "hello", "SGCSMS")

    assert isinstance(outcome, SendRefused) and outcome.code == "301"
    assert outcome.is_configuration_error
    assert sim.state.ledger_size() == 0


def test_scheduled_send_is_billed_when_due_and_splits_into_campaign(client, sim):
    due = sim.clock.now() + timedelta(minutes=30)
    outcome = client.send([A, B], "later", "SGCSMS", schedule_time=due)

    assert isinstance(outcome, SendAccepted) and outcome.campaign_id is not None
    assert sim.state.ledger_size() == 0
    [pending] = client.schedule_read()
    assert (pending.transaction_id, pending.campaign_id, pending.total) == (outcome.transaction_id,
                                                                             outcome.campaign_id, 2)
    assert pending.schedule_time == due
    [txn] = client.campaign_read(outcome.campaign_id)
    assert (txn.transaction_id, txn.status, txn.last_updated) == (outcome.transaction_id, "scheduled", None)

    sim.clock.advance(timedelta(minutes=31))
    assert client.schedule_read() == []
    assert [e.transaction_id for e in sim.state.ledger_entries()] == [outcome.transaction_id] * 2
    [txn] = client.campaign_read(outcome.campaign_id)
    assert txn.status == "completed"


def test_schedule_update_and_delete(client, sim):
    now = sim.clock.now()
    moved = client.send([A], "move me", "SGCSMS", schedule_time=now + timedelta(hours=1))
    dropped = client.send([B], "drop me", "SGCSMS", schedule_time=now + timedelta(hours=1))
    assert isinstance(moved, SendAccepted) and isinstance(dropped, SendAccepted)

    client.schedule_update(moved.transaction_id, now + timedelta(minutes=5))
    client.schedule_delete(dropped.transaction_id)
    sim.clock.advance(timedelta(minutes=6))

    assert [e.mobile for e in sim.state.ledger_entries()] == [A]
    [cancelled] = client.campaign_read(dropped.campaign_id)
    assert cancelled.status == "cancelled" and cancelled.last_updated is not None


def test_otp_generate_bills_one_message_without_transaction_id(client, sim):
    outcome = client.otp_generate(A, "Your code is $otp$. Do not share it.", "SGCSMS", "482913",
                                  code_expiry_s=300, code_length=6, code_type="num")

    assert isinstance(outcome, SendAccepted)
    assert outcome.transaction_id is None  # "0" on the wire
    assert outcome.accepted == (A,)
    assert outcome.retry_after_s == 30
    assert outcome.create_time == sim.clock.now()
    [entry] = sim.state.ledger_entries()
    assert entry.transaction_id == "0" and entry.mobile == A and entry.msg_id
    assert entry.units == count_segments("Your code is 482913. Do not share it.").segments


def test_second_otp_inside_retry_after_is_rate_limited_then_allowed(client, sim):
    first = client.otp_generate(A, "Code $otp$", "SGCSMS", "111111")
    too_soon = client.otp_generate(A, "Code $otp$", "SGCSMS", "222222")
    sim.clock.advance(timedelta(seconds=31))
    later = client.otp_generate(A, "Code $otp$", "SGCSMS", "333333")

    assert isinstance(first, SendAccepted) and isinstance(later, SendAccepted)
    assert isinstance(too_soon, SendRefused) and too_soon.is_rate_limited
    assert sim.state.ledger_size() == 2


def test_otp_verify(client, sim):
    client.otp_generate(A, "Code $otp$", "SGCSMS", "654321")

    wrong = client.otp_verify(A, "000000")
    right = client.otp_verify(A, "654321")
    again = client.otp_verify(A, "654321")

    assert not wrong.verified and wrong.code is not None
    assert right.verified
    assert not again.verified  # a code is good once


def test_otp_template_without_placeholder_is_refused(client, sim):
    outcome = client.otp_generate(A, "Your code", "SGCSMS", "123456")

    assert isinstance(outcome, SendRefused) and outcome.code == "230"
    assert sim.state.ledger_size() == 0
