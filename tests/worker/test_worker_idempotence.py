"""Answers applied twice, answers arriving after the lease ran out, a graceful stop, and the `sending` step."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
from tests.support.provider import PROVIDER_ZONE
from tests.support.worker import FOREIGN_NUMBER, enqueue, ledger, make_worker, price, request, rows, states

from sms_pipeline.provider.results import SendAmbiguous
from sms_pipeline.send import upkeep
from sms_pipeline.send.batching import plan_requests
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.claim import claim
from sms_pipeline.send.loop import Worker, bulk_strategies
from sms_pipeline.send.outcomes import apply_outcome, release_unsent, start_request

SNAPSHOT = "SELECT to_jsonb(m) FROM msg.outbound_message m ORDER BY id"


def claimed_request(db, clock):
    """One request claimed and started (``sending``), as the worker leaves it just before the call."""
    [batch] = plan_requests(claim(db, channel="sms", message_class="transactional", now=clock.now(), limit=10), 500)
    assert start_request(db, batch, now=clock.now()).sending == frozenset(batch.ids)
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


def test_stopping_finishes_the_request_in_flight_and_claims_nothing_more(db, db_url, sim, client, clock):
    # Three bodies: three requests; a claim takes only the next one's rows; each answer takes a second.
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
    # Never claimed: the worker held only the request it was making.
    assert [(r["state"], r["state_reason"], r["attempt_count"]) for r in rest] == [("pending", None, 0)] * 2
    assert len(ledger(sim)) == 1


# ----- the `sending` step (issue 18, deliverable 1) ----------------------------------------------


def test_a_claim_takes_only_the_rows_of_the_next_request(db, db_url, sim, client, clock):
    # Five bodies (five requests) and two rows sharing the first one's body (same request).
    enqueue(db, [request(0), request(1)] + [request(n, body=f"Parcel {n} is out") for n in range(2, 7)], clock)
    claimed: list[list[int]] = []
    worker = make_worker(db_url, client, clock)
    original = worker._send_all

    def watch(conn, strategy, batches, once):
        claimed.append(db.execute("SELECT count(*) FROM msg.outbound_message "
                                  "WHERE state IN ('claimed', 'sending')").fetchone()[0])
        return original(conn, strategy, batches, once)

    worker._send_all = watch
    summary = worker.run(once=True)

    assert claimed == [2, 1, 1, 1, 1, 1]  # each claim held one request's rows, never the queue
    assert (summary.claimed, summary.requests, summary.submitted, summary.released) == (7, 6, 7, 0)


def test_rows_move_to_sending_in_a_committed_statement_before_the_request(db, db_url, sim, client, clock):
    enqueue(db, [request(1), request(2)], clock)
    seen: list[dict[str, int]] = []
    strategy = bulk_strategies(client, PROVIDER_ZONE)[("sms", "transactional")]

    class Watching:
        claim_limit = None

        def plan(self, messages, batch_size):
            return strategy.plan(messages, batch_size)

        def send(self, batch):
            # Another connection sees the request's rows as `sending` while the request is made.
            seen.append(states(db))
            return strategy.send(batch)

        def record(self, conn, sent, *, now):
            return strategy.record(conn, sent, now=now)

    Worker(lambda: psycopg.connect(db_url, autocommit=True), {("sms", "transactional"): Watching()}, clock=clock,
           batch_size=500, lease=timedelta(minutes=5), breaker=CircuitBreaker(5, 30.0)).run(once=True)

    assert seen == [{"sending": 2}]
    assert states(db) == {"submitted": 2}


def test_a_worker_killed_in_flight_leaves_sending_which_the_lease_makes_unknown_and_unstarted_claims_are_sent(
        db, db_url, sim, client, clock):
    enqueue(db, [request(1), request(2, body="Parcel 2 is out"), request(3, body="Parcel 3 is out")], clock)
    def next_request():  # as the worker claims: only the rows of the next request
        taken = claim(db, channel="sms", message_class="transactional", now=clock.now(), limit=10,
                      take=lambda due: plan_requests(due, 500)[0].messages)
        [batch] = plan_requests(taken, 500)
        return batch

    # Worker A: its first request started and went out, then A died before writing the answer.
    in_flight = next_request()
    assert start_request(db, in_flight, now=clock.now()).sending == frozenset(in_flight.ids)
    client.send(in_flight.recipients, in_flight.body, in_flight.sender_id, in_flight.msg_type)
    # Worker B: claimed the next request's rows and died before starting it.
    never_started = next_request()
    assert states(db) == {"sending": 1, "claimed": 1, "pending": 1}

    clock.advance(timedelta(minutes=6))
    counts = upkeep.run_upkeep(db, now=clock.now(), lease=timedelta(minutes=5))

    assert (counts.claims_expired, counts.claims_released) == (1, 1)
    by_id = {row[0]: row[1:] for row in db.execute(
        "SELECT id, state::text, state_reason FROM msg.outbound_message").fetchall()}
    assert by_id[in_flight.ids[0]] == ("unknown", "lease_expired")  # may have left: never re-sent blind
    assert by_id[never_started.ids[0]] == ("pending", "lease_expired_unsent")  # provably never left

    # The next worker sends the never-started row and the untouched one; the unknown one stays unknown.
    summary = make_worker(db_url, client, clock).run(once=True)
    assert summary.submitted == 2
    assert states(db) == {"unknown": 1, "submitted": 2}
    billed = [entry.mobile for entry in ledger(sim)]
    assert sorted(billed) == sorted(set(billed))  # nobody billed twice
    assert len(billed) == 3


def test_rows_claimed_but_not_started_are_released_and_a_late_answer_for_them_writes_nothing(db, sim, client,
                                                                                              clock):
    enqueue(db, [request(1)], clock)
    [batch] = plan_requests(claim(db, channel="sms", message_class="transactional", now=clock.now(), limit=10), 500)
    # An outcome needs a started request: a `claimed` row is never written submitted.
    answer = client.send(batch.recipients, batch.body, batch.sender_id, batch.msg_type)
    assert apply_outcome(db, batch, answer, now=clock.now(), price_time_zone=PROVIDER_ZONE).moved == 0

    assert release_unsent(db, batch, now=clock.now(), reason="released_unsent") == 1
    assert release_unsent(db, batch, now=clock.now(), reason="released_unsent") == 0
    [row] = rows(db)
    assert (row["state"], row["state_reason"]) == ("pending", "released_unsent")


class _Stepping:
    """A clock that moves ``step`` forward each time it is read: the claim and the start see different times."""

    def __init__(self, clock, step: timedelta) -> None:
        self._clock, self._step = clock, step

    def now(self):
        now = self._clock.now()
        self._clock.advance(self._step)
        return now


def test_a_row_whose_expiry_passes_between_claim_and_start_expires_unsent(db, db_url, sim, client, clock):
    enqueue(db, [request(1, expires_at=(clock.now() + timedelta(seconds=30)).isoformat())], clock)
    worker = make_worker(db_url, client, _Stepping(clock, timedelta(seconds=20)), upkeep_interval_s=3600)

    summary = worker.run(once=True)

    assert (summary.claimed, summary.expired_unsent, summary.requests) == (1, 1, 0)
    [row] = rows(db)
    assert (row["state"], row["state_reason"], row["billable_units"]) == ("expired", "expired_unsent", None)
    assert ledger(sim) == []
