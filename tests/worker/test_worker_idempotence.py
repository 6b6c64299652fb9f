"""Answers applied twice, answers arriving after the lease ran out, and a graceful stop."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from tests.support.provider import PROVIDER_ZONE
from tests.support.worker import FOREIGN_NUMBER, enqueue, ledger, make_worker, price, request, rows

from sms_pipeline.provider.results import SendAmbiguous
from sms_pipeline.send import upkeep
from sms_pipeline.send.batching import plan_requests
from sms_pipeline.send.claim import claim
from sms_pipeline.send.outcomes import apply_outcome

SNAPSHOT = "SELECT to_jsonb(m) FROM msg.outbound_message m ORDER BY id"


def claimed_request(db, clock):
    [batch] = plan_requests(claim(db, channel="sms", message_class="transactional", now=clock.now(), limit=10), 500)
    return batch


def test_replaying_the_same_provider_answer_changes_nothing_the_second_time(db, sim, client, clock):
    price(db)
    enqueue(db, [request(1), request(2, recipient=FOREIGN_NUMBER), request(3)], clock)
    batch = claimed_request(db, clock)
    answer = client.send(batch.recipients, batch.body, batch.sender_id, batch.msg_type)

    first = apply_outcome(db, batch, answer, now=clock.now(), price_time_zone=PROVIDER_ZONE)
    after_first = db.execute(SNAPSHOT).fetchall()
    clock.advance(timedelta(seconds=30))
    again = apply_outcome(db, batch, answer, now=clock.now(), price_time_zone=PROVIDER_ZONE)
    contradicting = apply_outcome(db, batch, SendAmbiguous("late time-out"), now=clock.now(),
                                  price_time_zone=PROVIDER_ZONE)

    assert (first.submitted, first.rejected) == (2, 1)
    assert again.moved == 0 and contradicting.moved == 0
    assert db.execute(SNAPSHOT).fetchall() == after_first  # updated_at included
    assert len(ledger(sim)) == 2


def test_an_answer_after_the_lease_ran_out_leaves_the_unknown_row_alone(db, sim, client, clock):
    enqueue(db, [request(1)], clock)
    batch = claimed_request(db, clock)
    clock.advance(timedelta(minutes=6))
    assert upkeep.run_upkeep(db, now=clock.now(), lease=timedelta(minutes=5)).claims_expired == 1

    answer = client.send(batch.recipients, batch.body, batch.sender_id, batch.msg_type)
    late = apply_outcome(db, batch, answer, now=clock.now(), price_time_zone=PROVIDER_ZONE)

    assert late.moved == 0
    [row] = rows(db)
    assert (row["state"], row["state_reason"], row["billable_units"]) == ("unknown", "lease_expired", None)


def test_stopping_finishes_the_request_in_flight_and_releases_the_rest(db, db_url, sim, client, clock):
    # Three bodies: three requests from one claim; each answer takes a second.
    enqueue(db, [request(n, body=f"Your order {n} has shipped") for n in range(3)], clock)
    sim.faults.update({"slow": 1.0, "slow_delay_s": 1.0})
    worker = make_worker(db_url, client, clock)
    running = threading.Thread(target=worker.run)
    running.start()
    deadline = time.monotonic() + 10
    while not ledger(sim) and time.monotonic() < deadline:
        time.sleep(0.02)  # the first request has been billed; its answer is on its way

    worker.stop()
    running.join(timeout=10)

    assert not running.is_alive()
    first, *rest = rows(db)
    assert first["state"] == "submitted"  # its outcome was written
    assert [(r["state"], r["state_reason"]) for r in rest] == [("pending", "released_unsent")] * 2
    assert len(ledger(sim)) == 1
