"""The OTP send strategy against the simulator: one recipient per /otp request, our code, its HMAC only."""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from decimal import Decimal

import psycopg
import pytest
from tests.support.provider import PROVIDER_ZONE, client_for
from tests.support.numbers import digits
from tests.support.otp import TEMPLATE, TEST_KEY, database_text, otp_request, sent_codes, verification_rows
from tests.support.worker import TEXT_KEY, enqueue, make_worker, price

from sms_pipeline.core.fingerprint import text_fingerprint
from sms_pipeline.otp import codes
from sms_pipeline.send.otp import OTP_CLAIM_LIMIT, OtpSent, OtpStrategy
from sms_pipeline.otp.verify import VerifyResult, verify_otp
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.claim import claim
from sms_pipeline.send.loop import ProviderRefusedConfiguration
from sms_pipeline.send.outcomes import start_request


def _rows(db) -> list[dict]:
    cursor = db.execute("""SELECT recipient, state::text, state_reason, provider_txn_id, provider_status_code,
                                  body, segments, billable_units, cost, submitted_at, attempt_count,
                                  message_fingerprint, provider_created_at
                             FROM msg.outbound_message ORDER BY id""")
    names = [c.name for c in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _verify(db, clock, recipient: str, code: str, **options) -> VerifyResult:
    return verify_otp(db, "tenant-a", recipient, options.pop("purpose", "login"), code, hmac_key=TEST_KEY,
                      clock=clock, **options)


def _appears(code: str, text: str) -> bool:
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(code)}(?![0-9A-Za-z])", text) is not None


def test_each_otp_goes_out_alone_with_our_code_and_only_its_hmac_is_kept(db, db_url, sim, client, clock,
                                                                          policy):
    price(db, "0.1500", "otp")
    long_template = "Your login code is $otp$. " + "Never share it with anyone, not even us. " * 4
    enqueue(db, [otp_request(1, session_binding="session-1"), otp_request(2), otp_request(3, body=long_template)],
            clock)

    summary = make_worker(db_url, client, clock, policy).run(once=True)

    assert (summary.requests, summary.submitted) == (3, 3)
    view = sim.state.view()
    billed = view.ledger.requests[: view.request_count]
    assert [(r.transaction_id, r.count) for r in billed] == [("0", 1)] * 3  # one recipient per request
    sent = dict(sent_codes(sim)) | dict(sent_codes(sim, long_template))
    assert sorted(sent) == [digits(1), digits(2), digits(3)]
    assert all(re.fullmatch(r"\d{6}", code) for code in sent.values())
    rows = _rows(db)
    for row, request in zip(rows, billed, strict=True):
        assert row["provider_txn_id"] is None  # "0" is absence, never stored
        assert row["body"] in (TEMPLATE, long_template)  # the template, never the code
        assert row["billable_units"] == row["segments"] == request.units  # counted on the rendered text
        assert row["cost"] == Decimal("0.1500") * request.units
        # The text sent, fingerprinted in memory with its code; the answer's createTime kept beside it.
        assert row["message_fingerprint"] == text_fingerprint(TEXT_KEY, row["body"].replace("$otp$",
                                                                                            sent[row["recipient"]]))
        assert abs(row["provider_created_at"] - row["submitted_at"]) < timedelta(seconds=1)
    assert [row["segments"] for row in rows] == [1, 1, 2]
    verifications = verification_rows(db)
    for v in verifications:
        submitted_at = v["submitted_at"]
        assert v["message_state"] == "submitted"
        assert bytes(v["code_hmac"]) == codes.code_hmac(TEST_KEY, "tenant-a", v["recipient"], sent[v["recipient"]])
        assert (v["created_at"], v["expires_at"]) == (submitted_at, submitted_at + timedelta(seconds=300))
        assert (v["retry_after_s"], v["retry_after_at"]) == (30, submitted_at + timedelta(seconds=30))
        assert (v["attempts"], v["max_attempts"], v["consumed_at"], v["purpose"]) == (0, 3, None, "login")
    assert [v["session_binding"] for v in verifications] == ["session-1", None, None]
    text = database_text(db)
    assert not [code for code in sent.values() if _appears(code, text)]


def test_otps_are_claimed_one_request_at_a_time_whatever_the_batch_size(db, db_url, client, clock, policy,
                                                                        caplog):
    price(db, "0.1500", "otp")
    enqueue(db, [otp_request(n) for n in range(1, 6)], clock)

    with caplog.at_level(logging.INFO, logger="sms_pipeline.send.loop"):
        summary = make_worker(db_url, client, clock, policy, batch_size=500).run(once=True)

    assert summary.submitted == 5
    claims = [int(m.group(1)) for r in caplog.records
              if (m := re.search(r"class=otp rows=(\d+)", r.getMessage()))]
    assert OTP_CLAIM_LIMIT == 1 and claims == [1] * 5  # a claim takes only what the worker sends next


def test_the_code_that_went_out_verifies_once(db, db_url, sim, client, clock, policy):
    enqueue(db, [otp_request(1, session_binding="session-1")], clock)
    make_worker(db_url, client, clock, policy).run(once=True)
    [(mobile, code)] = sent_codes(sim)

    assert _verify(db, clock, mobile, code, session_binding="session-1") is VerifyResult.ok
    assert _verify(db, clock, mobile, code, session_binding="session-1") is VerifyResult.used


def test_a_resend_inside_the_retry_window_is_rejected_and_a_later_one_supersedes_the_first_code(
        db, db_url, sim, client, clock, policy):
    enqueue(db, [otp_request(1), otp_request(1, event_id="login-1-resend")], clock)

    summary = make_worker(db_url, client, clock, policy).run(once=True)

    assert summary.stopped_by is None  # an OTP refusal is the message's fate, not a reason to pause
    first, too_soon = _rows(db)
    assert (first["state"], too_soon["state"]) == ("submitted", "rejected")
    assert (too_soon["state_reason"], too_soon["provider_status_code"]) == ("rate_limited", "429")
    assert too_soon["billable_units"] is None and too_soon["cost"] is None
    assert len(verification_rows(db)) == 1 and len(sent_codes(sim)) == 1

    clock.advance(timedelta(seconds=31))
    enqueue(db, [otp_request(1, event_id="login-1-second-resend")], clock)
    make_worker(db_url, client, clock, policy).run(once=True)
    (_, old_code), (_, new_code) = sent_codes(sim)

    assert _rows(db)[2]["state"] == "submitted"
    assert _verify(db, clock, digits(1), old_code) is VerifyResult.wrong
    assert _verify(db, clock, digits(1), new_code) is VerifyResult.ok


@pytest.mark.parametrize("fault", ["accept_then_drop", "http_5xx"])
def test_an_ambiguous_send_leaves_the_row_unknown_and_its_code_verifiable(db, db_url, sim, clock, policy,
                                                                          fault):
    enqueue(db, [otp_request(1)], clock)
    sim.faults.update({fault: 1.0})

    with client_for(sim, read_timeout=1.0) as client:
        summary = make_worker(db_url, client, clock, policy).run(once=True)

    [row] = _rows(db)
    assert (row["state"], row["state_reason"], summary.unknown) == ("unknown", "send_ambiguous", 1)
    assert [v["message_state"] for v in verification_rows(db)] == ["unknown"]
    billed = sent_codes(sim)
    assert len(billed) == (1 if fault == "accept_then_drop" else 0)
    if billed:  # the code reached the phone although we never heard back: it must work
        assert _verify(db, clock, digits(1), billed[0][1]) is VerifyResult.ok
        # and its text's fingerprint is kept: reconstruction may be all that ever resolves the row
        assert row["message_fingerprint"] == text_fingerprint(TEXT_KEY, TEMPLATE.replace("$otp$", billed[0][1]))
    assert row["message_fingerprint"] is not None and row["provider_created_at"] is None


def test_no_connection_releases_the_otp_and_the_next_attempt_makes_a_new_code(db, db_url, sim, client,
                                                                               clock, policy):
    enqueue(db, [otp_request(1)], clock)
    sim.faults.update({"refuse_connection": 1.0})

    summary = make_worker(db_url, client, clock, policy, breaker=CircuitBreaker(2, 30.0)).run(once=True)

    assert (summary.stopped_by, summary.released) == ("breaker_open", 2)
    assert [(r["state"], r["state_reason"]) for r in _rows(db)] == [("pending", "never_connected")]
    assert verification_rows(db) == []

    sim.faults.clear()
    make_worker(db_url, client, clock, policy).run(once=True)

    [row] = _rows(db)
    assert (row["state"], row["attempt_count"]) == ("submitted", 3)
    assert len(verification_rows(db)) == 1
    [(mobile, code)] = sent_codes(sim)
    assert _verify(db, clock, mobile, code) is VerifyResult.ok


def test_a_configuration_refusal_never_costs_an_otp(db, db_url, sim, clock, policy):
    # Deliverable 7 of issue 18: with a wrong password each worker start used to
    # turn one OTP into rejected / configuration_refused.
    price(db, "0.1500", "otp")
    enqueue(db, [otp_request(1), otp_request(2)], clock)

    for _start in range(3):  # an operator restarting the worker before fixing the password
        with client_for(sim, password="wrong") as client, \
                pytest.raises(ProviderRefusedConfiguration, match="code 216.*back in pending"):
            make_worker(db_url, client, clock, policy).run(once=True)
        # The refused OTP went back to pending with its reason (which of the two: rows of one
        # intake tie on due time); nothing was sent, no code is kept.
        assert {r["state"] for r in _rows(db)} == {"pending"}
        assert "configuration_refused" in {r["state_reason"] for r in _rows(db)}
        assert verification_rows(db) == [] and sent_codes(sim) == []

    # Password fixed: both go out, once each, and their codes verify.
    with client_for(sim) as client:
        summary = make_worker(db_url, client, clock, policy).run(once=True)
    assert summary.submitted == 2
    assert [r["state"] for r in _rows(db)] == ["submitted", "submitted"]
    assert sum(r["attempt_count"] for r in _rows(db)) == 3 + 2  # each refused start claimed one OTP only
    assert len(verification_rows(db)) == 2
    for mobile, code in sent_codes(sim):
        assert _verify(db, clock, mobile, code) is VerifyResult.ok


def test_an_unclassified_refusal_releases_the_otp_and_a_message_refusal_rejects_it():
    from sms_pipeline.provider.results import SendRefused
    from sms_pipeline.send.outcomes import Action, decide

    unclassified = decide(SendRefused("999", "something new"), "otp")
    configuration = decide(SendRefused("301", "no credit"), "otp")
    template = decide(SendRefused("230", "template mismatch"), "otp")
    assert (unclassified.action, unclassified.stop_worker) == (Action.release, True)
    assert (configuration.action, configuration.reason, configuration.stop_worker) == (
        Action.release, "configuration_refused", True)
    assert (template.action, template.reason) == (Action.reject, "template_mismatch")


def _claimed_otp(db, clock, policy, client):
    """One OTP claimed and its request started (``sending``), as the worker leaves it just before the call."""
    strategy = OtpStrategy(client, PROVIDER_ZONE, policy)
    [batch] = strategy.plan(claim(db, channel="sms", message_class="otp", now=clock.now(), limit=10), 500)
    assert start_request(db, batch, now=clock.now()).sending == frozenset(batch.ids)
    return strategy, batch


def test_an_answer_recorded_twice_writes_one_outcome_and_one_verification(db, sim, client, clock, policy):
    enqueue(db, [otp_request(1)], clock)
    strategy, batch = _claimed_otp(db, clock, policy, client)
    sent = strategy.send(batch)

    first = strategy.record(db, sent, now=clock.now())
    clock.advance(timedelta(seconds=5))
    again = strategy.record(db, sent, now=clock.now())

    assert (first.submitted, again.moved) == (1, 0)
    assert len(verification_rows(db)) == 1


def test_outcome_and_verification_are_one_transaction(db, sim, client, clock, policy):
    enqueue(db, [otp_request(1)], clock)
    strategy, batch = _claimed_otp(db, clock, policy, client)
    sent = strategy.send(batch)
    broken = OtpSent(sent.batch, sent.outcome, b"not 32 bytes")  # the verification insert must fail

    with pytest.raises(psycopg.errors.CheckViolation):
        strategy.record(db, broken, now=clock.now())

    assert [r["state"] for r in _rows(db)] == ["sending"]  # the outcome went back with it
    assert verification_rows(db) == []
    assert strategy.record(db, sent, now=clock.now()).submitted == 1
    assert len(verification_rows(db)) == 1
