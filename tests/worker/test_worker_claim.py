"""Claiming: SKIP LOCKED across processes, due times, classes nobody sends, threads of one worker."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import datetime, timedelta

import psycopg
from tests.support.worker import enqueue, make_worker, request, states

from sms_pipeline import intake
from sms_pipeline.send.claim import claim

CLAIMERS = 4
ROWS = 10_000


def claim_until_empty(db_url: str, now: datetime, start: multiprocessing.Event, out: multiprocessing.Queue) -> None:
    """One claiming process: the real claim code, small batches, until the queue is empty."""
    claimed: list[int] = []
    with psycopg.connect(db_url, autocommit=True) as conn:
        start.wait()
        while rows := claim(conn, channel="sms", message_class="transactional", now=now, limit=97):
            claimed.extend(m.id for m in rows)
    out.put(claimed)


def test_four_processes_claim_each_of_ten_thousand_rows_exactly_once(db, db_url, clock):
    intake.enqueue(db, [intake.new_message(request(n)) for n in range(ROWS)], clock=clock)
    context = multiprocessing.get_context("spawn")
    start, out = context.Event(), context.Queue()
    processes = [context.Process(target=claim_until_empty, args=(db_url, clock.now(), start, out))
                 for _ in range(CLAIMERS)]
    for p in processes:
        p.start()
    start.set()
    per_process = [out.get(timeout=120) for _ in processes]
    for p in processes:
        p.join(timeout=30)
        assert p.exitcode == 0

    counts = Counter(i for ids in per_process for i in ids)
    assert len(counts) == ROWS and set(counts.values()) == {1}
    assert sum(1 for ids in per_process if ids) >= 2  # they really competed
    assert db.execute("SELECT count(*), min(attempt_count), max(attempt_count) FROM msg.outbound_message "
                      "WHERE state = 'claimed'").fetchone() == (ROWS, 1, 1)


def test_claim_takes_only_due_unexpired_rows_of_the_asked_queue(db, clock):
    now = clock.now()
    enqueue(db, [
        request(1),
        request(2, scheduled_for=(now + timedelta(minutes=5)).isoformat()),
        request(3, scheduled_for=(now - timedelta(minutes=5)).isoformat()),
        request(4, expires_at=now.isoformat()),
        request(5, message_class="promotional"),
    ], clock)

    claimed = claim(db, channel="sms", message_class="transactional", now=now, limit=10)

    recipients = [m.recipient for m in claimed]
    assert recipients == ["919800000003", "919800000001"]  # oldest due first
    assert claimed[0].claimed_at == now and claimed[0].attempt_count == 1
    later = claim(db, channel="sms", message_class="transactional", now=now + timedelta(minutes=5), limit=10)
    assert [m.recipient for m in later] == ["919800000002"]


def test_worker_leaves_otp_rows_alone_without_an_otp_strategy(db, db_url, sim, client, clock):
    enqueue(db, [request(1), request(2, message_class="otp", body="Your code is $otp$", purpose="login")], clock)

    summary = make_worker(db_url, client, clock).run(once=True)

    assert summary.claimed == 1
    assert dict(db.execute("SELECT message_class, state::text FROM msg.outbound_message").fetchall()) == {
        "transactional": "submitted", "otp": "pending"}


def test_threads_of_one_worker_send_every_row_once(db, db_url, sim, client, clock):
    enqueue(db, [request(n) for n in range(2_000)], clock)

    summary = make_worker(db_url, client, clock, batch_size=100, concurrency=3).run(once=True)

    assert states(db) == {"submitted": 2_000}
    assert (summary.claimed, summary.submitted) == (2_000, 2_000)
    # Full batches, except where the threads' claims meet at the end of the queue: SKIP LOCKED leaves each
    # the rows the others have not locked, so the last 100 can go out in up to three requests.
    assert 20 <= summary.requests <= 22
    mobiles = Counter(e.mobile for e in sim.state.ledger_entries())
    assert len(mobiles) == 2_000 and set(mobiles.values()) == {1}
