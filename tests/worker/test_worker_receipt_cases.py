"""Cases 12, 13, 14, 24 and 25 of docs/receipt-cases.md, through simulator -> client -> worker -> database.

Cases 22 and 23 (money) are in test_worker_money.py.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

import psycopg
import pytest
from tests.support.provider import client_for
from tests.support.numbers import digits
from tests.support.worker import (
    FOREIGN_NUMBER,
    enqueue,
    ledger,
    make_worker,
    price,
    request,
    rows,
    states,
)

from sms_pipeline.send.breaker import CircuitBreaker


def test_case_12_invalid_mobile_in_a_success_is_rejected_unbilled_the_rest_submitted(
        db, db_url, sim, client, clock, caplog):
    caplog.set_level(logging.DEBUG, logger="sms_pipeline.send")
    price(db)
    enqueue(db, [request(1), request(2, recipient=FOREIGN_NUMBER), request(3)], clock)

    summary = make_worker(db_url, client, clock).run(once=True)

    by_recipient = {r["recipient"]: r for r in rows(db)}
    refused = by_recipient["16502530000"]
    assert (refused["state"], refused["state_reason"]) == ("rejected", "invalid_mobile")
    assert (refused["submitted_at"], refused["billable_units"], refused["cost"]) == (None, None, None)
    accepted = [by_recipient[digits(1)], by_recipient[digits(3)]]
    txn = accepted[0]["provider_txn_id"]
    assert txn and refused["provider_txn_id"] == txn
    for row in accepted:
        assert (row["state"], row["provider_txn_id"], row["submitted_at"]) == ("submitted", txn, clock.now())
        assert (row["billable_units"], row["cost"], row["cost_currency"]) == (1, Decimal("0.0079"), "INR")
    entries = ledger(sim)
    assert sorted(e.mobile for e in entries) == [digits(1), digits(3)]
    assert {e.transaction_id for e in entries} == {txn}
    assert (summary.requests, summary.submitted, summary.rejected) == (1, 2, 1)
    # Logs carry attempt keys and counts, never a number or a body.
    assert "attempt_key=" in caplog.text
    assert all(d not in caplog.text for d in (digits(1), digits(3), "16502530000", "Your order has shipped"))


def test_case_13_accepted_then_dropped_is_unknown_billed_once_and_never_sent_again(
        db, db_url, sim, clock):
    enqueue(db, [request(1)], clock)
    sim.faults.update({"accept_then_drop": 1.0})
    with client_for(sim) as client:
        make_worker(db_url, client, clock).run(once=True)
    [row] = rows(db)
    assert (row["state"], row["state_reason"], row["provider_txn_id"]) == ("unknown", "send_ambiguous", None)

    sim.faults.clear()
    clock.advance(timedelta(minutes=10))  # past the lease: upkeep runs, nothing is re-claimed
    with client_for(sim) as client:
        summary = make_worker(db_url, client, clock).run(once=True)

    assert summary.claimed == 0 and states(db) == {"unknown": 1}
    [billed] = ledger(sim)
    # What reconciliation will match on (recipient, sender, attempt time) is all there.
    assert billed.mobile == row["recipient"] and billed.sender == "SGCSMS"
    assert abs(billed.submitted_at - row["claimed_at"]) < timedelta(seconds=1)


def test_case_14_a_5xx_may_have_left_so_unknown_a_refused_connection_did_not_so_retried(
        db, db_url, sim, client, clock):
    enqueue(db, [request(1)], clock)
    sim.faults.update({"http_5xx": 1.0})
    make_worker(db_url, client, clock).run(once=True)
    assert states(db) == {"unknown": 1} and ledger(sim) == []

    enqueue(db, [request(2)], clock)
    sim.faults.update({"http_5xx": 0.0, "refuse_connection": 1.0})
    with client_for(sim) as refused_client:  # the proxy refuses every connection
        make_worker(db_url, refused_client, clock, breaker=CircuitBreaker(1, 30.0)).run(once=True)
    assert states(db) == {"unknown": 1, "pending": 1} and ledger(sim) == []

    sim.faults.clear()
    with client_for(sim) as client_again:
        make_worker(db_url, client_again, clock).run(once=True)
    second = rows(db)[1]
    assert (second["state"], second["attempt_count"]) == ("submitted", 2)
    assert [e.mobile for e in ledger(sim)] == [digits(2)]  # sent exactly once


def test_case_24_editing_or_redacting_the_body_moves_no_stored_segment_unit_or_cost(
        db, db_url, sim, client, clock):
    price(db)
    long_body = "Your order has shipped. " * 10  # 240 GSM-7 characters: 2 segments
    enqueue(db, [request(1, body=long_body)], clock)
    make_worker(db_url, client, clock).run(once=True)
    before = rows(db)[0]
    assert (before["segments"], before["billable_units"], before["cost"]) == (2, 2, Decimal("0.0158"))

    # The text of a sent message is never edited; a final one's body is redacted (the daily upkeep's way).
    with pytest.raises(psycopg.errors.CheckViolation, match="a body only goes"):
        db.execute("UPDATE msg.outbound_message SET body = 'edited'")
    db.execute("UPDATE msg.outbound_message SET state = 'expired', state_reason = 'no_final_receipt'")
    db.execute("UPDATE msg.outbound_message SET body = NULL, body_length = char_length(body), "
               "body_redacted_at = now()")

    after = rows(db)[0]
    assert (after["segments"], after["billable_units"], after["cost"]) == (2, 2, Decimal("0.0158"))
    with pytest.raises(psycopg.errors.CheckViolation, match="immutable"):
        db.execute("UPDATE msg.outbound_message SET segments = 1, billable_units = 1, cost = 0.0079")


def test_case_25_a_scheduled_send_whose_window_passed_while_down_is_expired_and_counted(
        db, db_url, sim, client, clock):
    now = clock.now()
    enqueue(db, [request(1, scheduled_for=(now - timedelta(hours=3)).isoformat(),
                         expires_at=(now - timedelta(hours=1)).isoformat()),
                 request(2, scheduled_for=(now - timedelta(hours=3)).isoformat(),
                         expires_at=(now + timedelta(hours=1)).isoformat())], clock)

    summary = make_worker(db_url, client, clock).run(once=True)

    late, due = rows(db)
    assert (late["state"], late["state_reason"], late["claimed_at"]) == ("expired", "expired_unsent", None)
    assert due["state"] == "submitted"
    assert summary.pending_expired == 1
    assert [e.mobile for e in ledger(sim)] == [digits(2)]
