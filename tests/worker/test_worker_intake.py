"""Intake under a race: two transactions enqueue overlapping events at once."""

from __future__ import annotations

import logging
import threading

import psycopg
from tests.support.worker import request

from sms_pipeline import intake


def test_a_concurrent_intake_of_the_same_events_yields_one_row_per_event(db, db_url, clock, caplog):
    caplog.set_level(logging.INFO, logger="sms_pipeline.intake.messages")
    first = [intake.new_message(request(n)) for n in range(0, 300)]
    second = [intake.new_message(request(n)) for n in range(200, 500)]
    results: dict[str, list[intake.Enqueued]] = {}

    def enqueue_second() -> None:
        with psycopg.connect(db_url) as conn:
            results["second"] = intake.enqueue(conn, second, clock=clock)

    with psycopg.connect(db_url) as holder:
        holder.execute("SELECT 1")  # an open transaction: intake runs in a savepoint and commits nothing
        results["first"] = intake.enqueue(holder, first, clock=clock)
        racer = threading.Thread(target=enqueue_second)
        racer.start()
        racer.join(timeout=1.0)
        assert racer.is_alive()  # blocked on the 100 keys the first transaction holds
        holder.commit()
        racer.join(timeout=30)

    assert db.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0] == 500
    by_event = {m.event_id: r.message_id for m, r in zip(first, results["first"])}
    shared = [(m.event_id, r) for m, r in zip(second, results["second"]) if m.event_id in by_event]
    assert len(shared) == 100
    assert all(r.message_id == by_event[event] and not r.created for event, r in shared)
    assert sum(r.created for r in results["second"]) == 200
    assert "key race with a concurrent insert; retrying" in caplog.text  # the path under test ran
