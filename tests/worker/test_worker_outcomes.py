"""Every row of docs/design.md#send-outcomes, driven by the simulator, checked in the rows and the ledger.

The success row (fan-out with ``invalidMobile``) is docs/receipt-cases.md#case-12, in test_worker_receipt_cases.py.
"""

from __future__ import annotations

import pytest
from tests.support.provider import client_for
from tests.support.numbers import digits
from tests.support.worker import FOREIGN_NUMBER, enqueue, ledger, make_worker, request, rows, states

from sms_pipeline.provider.results import SendAccepted, SendAmbiguous, SendNeverConnected, SendRefused
from sms_pipeline.send.breaker import BreakerState, CircuitBreaker
from sms_pipeline.send.loop import ProviderRefusedConfiguration
from sms_pipeline.send.outcomes import Action, decide

@pytest.mark.parametrize(("overrides", "code", "reason"), [
    ({"body": "Your order {#var#} has shipped"}, "230", "template_mismatch"),
    ({"sender_id": "ZZZZZZ"}, "231", "invalid_sender"),  # made invalid below, as intake would refuse it
    ({"recipient": FOREIGN_NUMBER}, "235", "no_valid_number"),
])
def test_message_level_refusal_rejects_the_request_unbilled(db, db_url, sim, client, clock,
                                                             overrides, code, reason):
    enqueue(db, [request(1, **overrides)], clock)
    if code == "231":  # a row written before intake checked sender ids (intake now refuses "X")
        db.execute("UPDATE msg.outbound_message SET sender_id = 'X'")

    summary = make_worker(db_url, client, clock).run(once=True)

    [row] = rows(db)
    assert (row["state"], row["state_reason"], row["provider_status_code"]) == ("rejected", reason, code)
    assert row["billable_units"] is None and row["cost"] is None
    assert ledger(sim) == []
    assert summary.rejected == 1


@pytest.mark.parametrize("refusal", ["216", "213", "301"])
def test_configuration_refusal_releases_the_rows_and_stops_the_worker(db, db_url, sim, clock, refusal):
    enqueue(db, [request(n) for n in range(3)], clock)
    if refusal == "301":
        sim.state.credits = 0
    client = client_for(sim, userid="" if refusal == "213" else "demo",
                         password="wrong" if refusal == "216" else "demo")

    with client, pytest.raises(ProviderRefusedConfiguration, match=f"code {refusal}"):
        make_worker(db_url, client, clock).run(once=True)

    assert states(db) == {"pending": 3}
    assert {r["state_reason"] for r in rows(db)} == {"configuration_refused"}
    assert ledger(sim) == []


def test_rate_limit_releases_the_rows_and_backs_off(db, db_url, sim, client, clock):
    enqueue(db, [request(n) for n in range(2)], clock)
    sim.faults.update({"rate_limit_send": 1.0})

    summary = make_worker(db_url, client, clock, max_rate_limited_in_once=3).run(once=True)

    assert summary.stopped_by == "rate_limited" and summary.requests == 3 and summary.released == 6
    assert states(db) == {"pending": 2}
    assert ledger(sim) == []

    sim.faults.clear()
    make_worker(db_url, client, clock).run(once=True)
    assert states(db) == {"submitted": 2}
    assert len(ledger(sim)) == 2


@pytest.mark.parametrize("fault", ["accept_then_drop", "stall"])
def test_billed_but_unanswered_request_leaves_the_rows_unknown(db, db_url, sim, clock, fault):
    enqueue(db, [request(n) for n in range(2)], clock)
    sim.faults.update({fault: 1.0, "stall_s": 2.0})

    with client_for(sim, read_timeout=0.5) as client:
        summary = make_worker(db_url, client, clock).run(once=True)

    assert states(db) == {"unknown": 2}
    assert {r["state_reason"] for r in rows(db)} == {"send_ambiguous"}
    assert sorted(e.mobile for e in ledger(sim)) == [digits(0), digits(1)]  # billed all the same
    assert summary.unknown == 2


def test_http_5xx_leaves_the_rows_unknown_and_nothing_billed(db, db_url, sim, client, clock):
    enqueue(db, [request(1)], clock)
    sim.faults.update({"http_5xx": 1.0})

    make_worker(db_url, client, clock).run(once=True)

    assert states(db) == {"unknown": 1}
    assert ledger(sim) == []


def test_no_connection_releases_the_rows_and_trips_the_breaker(db, db_url, sim, client, clock):
    enqueue(db, [request(1)], clock)
    sim.faults.update({"refuse_connection": 1.0})
    breaker = CircuitBreaker(3, 30.0)

    summary = make_worker(db_url, client, clock, breaker=breaker).run(once=True)

    assert summary.stopped_by == "breaker_open" and summary.requests == 3
    assert breaker.state is BreakerState.open
    assert states(db) == {"pending": 1}
    assert rows(db)[0]["state_reason"] == "never_connected"
    assert ledger(sim) == []


def test_decision_table_for_codes_the_simulator_cannot_produce():
    # 147 (a malformed boolean): the real client always writes "true"/"false".
    assert decide(SendRefused("147", "Invalid boolean"), "transactional").stop_worker
    # A 429 on an OTP: a late code is useless, so it is rejected, not retried.
    otp = decide(SendRefused("429", "Too many requests"), "otp")
    assert (otp.action, otp.back_off) == (Action.reject, False)
    # A code nobody classified: nothing was taken, so release and let a person look.
    too_many = decide(SendRefused("414", "Too many messages"), "transactional")  # our planning's bug
    assert (too_many.action, too_many.reason, too_many.stop_worker) == (Action.release, "too_many_messages", True)
    unclassified = decide(SendRefused("999", "Something new"), "promotional")
    assert (unclassified.action, unclassified.stop_worker) == (Action.release, True)
    assert decide(SendAccepted("1", ("919800000001",), ()), "transactional").action is Action.fan_out
    assert decide(SendAmbiguous("unparseable answer"), "transactional").action is Action.mark_unknown
    assert decide(SendNeverConnected("refused"), "transactional").breaker_failure
