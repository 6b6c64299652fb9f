"""Dead runs reaped, pool waits said and bounded, on a real Dagster instance (Postgres, the project's dagster.yaml).

The runs that hold pools here are made directly in the instance, tagged as
made by a process the test controls (alive, ended) or by nobody we can
judge (another host, the daemon). The runs the guard watches are real
in-process runs of a two-step job in one pool.
"""

from __future__ import annotations

import threading
import time

import dagster as dg
import pytest

from sms_pipeline.orchestration import run_guard
from sms_pipeline.orchestration.processes import ProcessIdentity
from sms_pipeline.orchestration.run_guard import PoolWaitExpired, RunGuard
from tests.support.dagster_instance import (
    add_run,
    ended_process,
    live_process,
    pool_rows,
    queue_for_pool,
    wait_until,
)

POOL = "test_pool"
OTHER_POOL = "test_other_pool"

pytestmark = pytest.mark.usefixtures("pg_admin_url")


def test_reap_fails_dead_runs_and_frees_their_slots_and_queue_places(dagster_instance):
    instance = dagster_instance
    me = ProcessIdentity.current()
    with live_process() as alive:
        dead_holder = add_run(instance, ended_process())
        dead_waiter = add_run(instance, ended_process(), status=dg.DagsterRunStatus.NOT_STARTED)
        live_waiter = add_run(instance, alive)
        elsewhere = add_run(instance, ProcessIdentity("another-host", 4242, ""), status=dg.DagsterRunStatus.STARTED)
        daemons = add_run(instance, None)  # launched by the daemon: not ours to judge
        ended = add_run(instance, ended_process(), status=dg.DagsterRunStatus.SUCCESS)
        assert queue_for_pool(instance, POOL, dead_holder)
        assert not queue_for_pool(instance, POOL, dead_waiter)  # first in the queue...
        assert not queue_for_pool(instance, POOL, live_waiter)  # ...this one behind it
        assert queue_for_pool(instance, OTHER_POOL, ended)  # ended, its slot never freed
        unpooled_dead = add_run(instance, ended_process())

        lines = run_guard.reap(instance, me)

        status = {run_id: instance.get_run_by_id(run_id).status
                  for run_id in (dead_holder, dead_waiter, live_waiter, elsewhere, daemons, ended, unpooled_dead)}
        assert status == {
            dead_holder: dg.DagsterRunStatus.FAILURE, dead_waiter: dg.DagsterRunStatus.FAILURE,
            live_waiter: dg.DagsterRunStatus.STARTED, elsewhere: dg.DagsterRunStatus.STARTED,
            daemons: dg.DagsterRunStatus.STARTED, ended: dg.DagsterRunStatus.SUCCESS,
            unpooled_dead: dg.DagsterRunStatus.FAILURE,
        }
        # The slot went past the dead waiter to the live run queued behind it.
        assert pool_rows(instance, POOL) == (set(), {live_waiter: True})
        assert pool_rows(instance, OTHER_POOL) == (set(), {})
        assert len(lines) == 4 and all(" was STARTED but its process is gone" in line
                                       for line in lines if dead_holder in line)
        assert any(ended in line and "still held after it ended" in line for line in lines)
        failure = instance.get_records_for_run(dead_holder, of_type=dg.DagsterEventType.RUN_FAILURE).records
        assert "is gone" in failure[0].event_log_entry.dagster_event.message
        assert run_guard.reap(instance, me) == []  # nothing left to do


def test_waiting_for_a_live_holder_names_it_and_gives_up_after_the_bound(dagster_instance):
    said: list[str] = []
    with live_process() as alive:
        holder = add_run(dagster_instance, alive, tags={"dagster/asset_partition_range_start": "2026-03-01",
                                                         "dagster/asset_partition_range_end": "2026-03-31"})
        assert queue_for_pool(dagster_instance, POOL, holder)
        guard = RunGuard(dagster_instance, [POOL], wait_s=1.5, say=said.append, poll_s=0.2)
        started = time.monotonic()
        with pytest.raises(PoolWaitExpired) as expired:
            guard.wait_for_pools()
        assert 1.5 <= time.monotonic() - started < 5
    assert said == [f"waiting for pool {POOL} held by run {holder} (holder_job, 2026-03-01..2026-03-31, {alive}); "
                    "at most 1.5 s (SMS_PIPELINE_POOL_WAIT_S)"]
    assert f"pool {POOL} still held by run {holder}" in str(expired.value)
    assert "SMS_PIPELINE_POOL_WAIT_S" in str(expired.value)


def test_a_holder_that_dies_while_waited_for_is_reaped_and_the_wait_ends(dagster_instance):
    said: list[str] = []
    with live_process() as alive:
        holder = add_run(dagster_instance, alive)
        assert queue_for_pool(dagster_instance, POOL, holder)
        guard = RunGuard(dagster_instance, [POOL], wait_s=60, say=said.append, poll_s=0.2)
        waiter = threading.Thread(target=guard.wait_for_pools)
        waiter.start()
        wait_until(lambda: said, 10, "the wait to be said")
    waiter.join(timeout=10)  # the holder's process ended with the block
    assert not waiter.is_alive()
    assert dagster_instance.get_run_by_id(holder).status == dg.DagsterRunStatus.FAILURE
    assert any(holder in line and "its process is gone" in line for line in said)


def _two_step_job(on_first_step):
    @dg.op(pool=POOL)
    def first() -> int:
        on_first_step()
        return 1

    @dg.op(pool=POOL)
    def second(value: int) -> int:
        return value + 1

    @dg.job
    def two_steps():
        second(first())

    return two_steps


@pytest.mark.parametrize("holder_dies", [False, True])
def test_a_wait_inside_a_run_is_said_and_bounded_or_ends_when_the_holder_dies(dagster_instance, holder_dies):
    """The slot goes to another run between the run's two steps: Dagster's own wait inside the run."""
    said: list[str] = []
    with live_process() as alive:
        holder = add_run(dagster_instance, alive)
        job = _two_step_job(lambda: queue_for_pool(dagster_instance, POOL, holder))
        if holder_dies:  # the holder's process goes while the run waits for it
            threading.Thread(target=lambda: (wait_until(lambda: said, 30, "the wait"), _kill(alive))).start()
        run_id = run_guard.new_run_id()
        started = time.monotonic()
        with RunGuard(dagster_instance, run_guard.job_pools(job), wait_s=3, say=said.append, poll_s=0.2) as guard:
            launch = lambda: job.execute_in_process(instance=dagster_instance, run_id=run_id,  # noqa: E731
                                                    tags=guard.tags(), raise_on_error=False)
            if holder_dies:
                assert guard.watch(run_id, launch).success
            else:
                with pytest.raises(PoolWaitExpired) as expired:
                    guard.watch(run_id, launch)
        elapsed = time.monotonic() - started

    run = dagster_instance.get_run_by_id(run_id)
    assert said[0].startswith(f"waiting for pool {POOL} held by run {holder} (holder_job, pid ")
    assert pool_rows(dagster_instance, POOL)[0] <= {holder}  # the run holds nothing, whatever happened
    assert run_id not in pool_rows(dagster_instance, POOL)[1]
    if holder_dies:
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert any(holder in line and "its process is gone" in line for line in said)
    else:
        assert run.status == dg.DagsterRunStatus.FAILURE and elapsed < 20
        assert f"pool {POOL} still held by run {holder}" in str(expired.value)
        assert dagster_instance.get_run_by_id(holder).status == dg.DagsterRunStatus.STARTED  # alive: left alone


def _kill(process: ProcessIdentity) -> None:
    import os
    import signal

    os.kill(process.pid, signal.SIGKILL)
