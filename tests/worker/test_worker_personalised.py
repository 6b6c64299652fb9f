"""Personalised traffic: planning (pure, property-style) and the strategy against the simulator and a database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg
from hypothesis import given
from hypothesis import strategies as st
from tests.support.worker import enqueue, ledger, request, rows

from sms_pipeline.send.batching import plan_personalised_requests, plan_requests
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.send.loop import BulkSmsStrategy, Worker
from sms_pipeline.send.personalised import PersonalisedSmsStrategy, sms_strategies

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def claimed(n: int, recipient: str, body: str = "hello", *, sender: str = "SGCSMS", tenant: str = "t",
            encoding: str = "GSM7", entity: str | None = None, template: str | None = None) -> ClaimedMessage:
    return ClaimedMessage(
        id=n, created_at=NOW, attempt_key=uuid.uuid4(), tenant_id=tenant, channel="sms",
        message_class="transactional", recipient=recipient, sender_id=sender, body=body, encoding=encoding,
        segments=1, template_id=None, dlt_entity_id=entity, dlt_template_id=template, scheduled_for=None,
        expires_at=None, claimed_at=NOW, attempt_count=1)


def _personalised_key(m: ClaimedMessage) -> tuple:
    return (m.tenant_id, m.channel, m.message_class, m.sender_id, m.encoding, m.dlt_entity_id)


@given(rows_=st.lists(st.tuples(st.sampled_from([f"91980000000{d}" for d in range(5)]),
                                st.sampled_from(["a", "b", "c", "d", "e", "f", "€", "nul\x00"]),
                                st.sampled_from(["t", "u"]), st.sampled_from(["GSM7", "UCS2"]),
                                st.sampled_from([None, "1101"]), st.sampled_from([None, "1107"])),
                      max_size=80),
       batch_size=st.integers(1, 9))
def test_plan_covers_every_row_once_never_repeats_a_number_and_keeps_what_a_request_shares(rows_, batch_size):
    messages = [claimed(i, r, body, tenant=t, encoding=enc, entity=entity, template=tpl)
                for i, (r, body, t, enc, entity, tpl) in enumerate(rows_)]

    batches = plan_personalised_requests(messages, batch_size)

    assert sorted(m.id for b in batches for m in b.messages) == list(range(len(messages)))
    for batch in batches:
        assert 1 <= len(batch) <= batch_size
        assert len(set(batch.recipients)) == len(batch)
        if batch.personalised:
            assert len(batch) >= 2
            assert len({_personalised_key(m) for m in batch.messages}) == 1
            assert all("\x00" not in m.body for m in batch.messages)
        else:
            assert {(m.body, m.dlt_template_id) for m in batch.messages} == {(batch.body, batch.dlt_template_id)}
            assert len({_personalised_key(m) for m in batch.messages}) == 1


@given(bodies=st.lists(st.text(max_size=5), max_size=60), batch_size=st.integers(1, 7))
def test_requests_never_outnumber_those_of_one_request_per_body(bodies, batch_size):
    messages = [claimed(i, f"9198{i:08d}", body) for i, body in enumerate(bodies)]

    assert len(plan_personalised_requests(messages, batch_size)) <= len(plan_requests(messages, batch_size))


def test_different_bodies_share_a_request_a_shared_body_stays_a_quick_send():
    messages = [claimed(1, "1", "order 1"), claimed(2, "2", "order 2"), claimed(3, "3", "same"),
                claimed(4, "4", "same"), claimed(5, "5", "order 5", template="1107"),
                claimed(6, "6", "order 6", entity="other"), claimed(7, "7", "order 7", entity="other"),
                claimed(8, "8", "alone", tenant="u")]

    batches = plan_personalised_requests(messages, 500)

    assert [(b.ids, b.personalised) for b in batches] == [
        ([3, 4], False), ([1, 2, 5], True), ([6, 7], True), ([8], False)]
    quick = batches[-1]
    assert (quick.body, quick.msg_type) == ("alone", "text")


def test_a_number_twice_goes_to_two_requests_and_requests_hold_at_most_1000():
    repeated = [claimed(1, "1", "first"), claimed(2, "1", "second"), claimed(3, "2", "third")]
    assert [b.ids for b in plan_personalised_requests(repeated, 500)] == [[1, 3], [2]]

    many = [claimed(i, f"9170{i:08d}", f"code {i}") for i in range(2500)]
    assert [len(b) for b in plan_personalised_requests(many, 5000)] == [1000, 1000, 500]
    assert [len(b) for b in plan_personalised_requests(many, 700)] == [700, 700, 700, 400]


def test_the_setting_chooses_the_strategy(client):
    on = sms_strategies(client, "Asia/Kolkata", xml_send=True, campaign_request_size=10_000)
    off = sms_strategies(client, "Asia/Kolkata", xml_send=False, campaign_request_size=10_000)

    assert set(on) == set(off) == {("sms", "transactional"), ("sms", "promotional")}
    assert all(isinstance(s, PersonalisedSmsStrategy) for s in on.values())
    assert all(isinstance(s, BulkSmsStrategy) for s in off.values())


def _worker(db_url: str, client, clock) -> Worker:
    strategies = sms_strategies(client, "Asia/Kolkata", xml_send=True, campaign_request_size=10_000)
    return Worker(lambda: psycopg.connect(db_url, autocommit=True), strategies, clock=clock, batch_size=500,
                  lease=timedelta(minutes=5), breaker=CircuitBreaker(5, 30.0), poll_interval_s=0.05,
                  backoff_initial_s=0.01, backoff_max_s=0.05)


def test_personalised_rows_go_out_in_one_request_each_billed_by_its_body(db, db_url, sim, client, clock):
    bodies = [f"Your order {4400 + n} has shipped" for n in range(5)] + ["आपका ऑर्डर भेज दिया गया 🙏"]
    enqueue(db, [request(n, body=body) for n, body in enumerate(bodies)], clock)

    summary = _worker(db_url, client, clock).run(once=True)

    assert (summary.requests, summary.submitted) == (2, 6)  # the unicode row: another message type
    assert {r["state"] for r in rows(db)} == {"submitted"}
    assert len({r["provider_txn_id"] for r in rows(db)}) == 2
    assert [r["billable_units"] for r in rows(db)] == [r["segments"] for r in rows(db)]
    assert len(ledger(sim)) == 6


def test_an_answer_that_names_a_recipient_in_neither_list_leaves_its_row_unknown(db, db_url, sim, client, clock):
    enqueue(db, [request(n, body=f"Your order {n} has shipped") for n in range(4)], clock)
    sim.state.faults.update({"answer_omits_recipient": 1.0})

    summary = _worker(db_url, client, clock).run(once=True)

    assert (summary.requests, summary.submitted, summary.unknown) == (1, 0, 4)
    assert {(r["state"], r["state_reason"], r["billable_units"]) for r in rows(db)} == {
        ("unknown", "not_in_answer", None)}
    # the request's transaction and status are kept: the reports correlate by transaction + recipient
    assert len({r["provider_txn_id"] for r in rows(db)}) == 1 and {r["provider_status_code"] for r in rows(db)} == {"200"}
    assert len(ledger(sim)) == 4  # billed at the provider: unknown until a report says more


def test_numbers_written_differently_still_reject_exactly_the_invalid_rows(db, db_url, sim, client, clock):
    from tests.support.worker import FOREIGN_NUMBER

    enqueue(db, [request(0, body="first"), request(1, body="second", recipient=FOREIGN_NUMBER),
                 request(2, body="third")], clock)
    sim.state.faults.update({"answer_plus_prefix": 1.0, "answer_spaces": 1.0})

    summary = _worker(db_url, client, clock).run(once=True)

    assert (summary.requests, summary.submitted, summary.rejected, summary.unknown) == (1, 2, 1, 0)
    states = [(r["state"], r["state_reason"]) for r in rows(db)]
    assert states == [("submitted", None), ("rejected", "invalid_mobile"), ("submitted", None)]
