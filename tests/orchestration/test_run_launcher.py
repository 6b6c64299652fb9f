"""The project's run launcher lets run monitoring fail a daemon-launched run whose worker died."""

from __future__ import annotations

import logging
import subprocess
import time

import dagster as dg
from dagster._core.events import EngineEventData
from dagster._core.launcher import WorkerStatus
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from sms_pipeline.orchestration import run_launcher
from sms_pipeline.orchestration.run_launcher import WatchedRunLauncher
from tests.support.dagster_instance import add_run, ended_process, live_process


def _worker_started(instance: dg.DagsterInstance, run_id: str, pid: int) -> None:
    """What a run worker writes first (dagster api execute_run)."""
    instance.report_engine_event(f"Started process for run (pid: {pid}).", instance.get_run_by_id(run_id),
                                 EngineEventData.in_process(pid))


def _health(instance: dg.DagsterInstance, run_id: str) -> WorkerStatus:
    return instance.run_launcher.check_run_worker_health(instance.get_run_by_id(run_id)).status


def test_the_projects_instance_uses_the_watched_launcher(dagster_instance):
    assert isinstance(dagster_instance.run_launcher, WatchedRunLauncher)
    assert dagster_instance.run_launcher.supports_check_run_worker_health
    assert dagster_instance.run_monitoring_enabled and dagster_instance.run_monitoring_max_resume_run_attempts == 0


def test_a_live_worker_is_running_and_a_killed_one_failed(dagster_instance):
    worker = subprocess.Popen(["sleep", "600"])
    run_id = add_run(dagster_instance, None)
    assert _health(dagster_instance, run_id) == WorkerStatus.RUNNING  # no worker has reported yet
    _worker_started(dagster_instance, run_id, worker.pid)
    assert _health(dagster_instance, run_id) == WorkerStatus.RUNNING
    worker.kill()
    worker.wait()
    assert _health(dagster_instance, run_id) == WorkerStatus.FAILED


def test_a_pid_taken_by_a_later_process_is_a_dead_worker(dagster_instance, monkeypatch):
    later = subprocess.Popen(["sleep", "600"])
    try:
        run_id = add_run(dagster_instance, None)
        # The run's worker reported this pid an hour before the process now holding it started.
        monkeypatch.setattr(run_launcher, "worker_started", lambda instance, rid: (later.pid, time.time() - 3600))
        assert _health(dagster_instance, run_id) == WorkerStatus.FAILED
    finally:
        later.kill()
        later.wait()


def test_a_run_of_a_dead_process_of_ours_is_failed_too(dagster_instance):
    """materialize's and the demo's runs execute in their own process, named in their tags."""
    with live_process() as alive:
        running = add_run(dagster_instance, alive)
        assert _health(dagster_instance, running) == WorkerStatus.RUNNING
    gone = add_run(dagster_instance, ended_process())
    assert _health(dagster_instance, gone) == WorkerStatus.FAILED


def test_run_monitoring_fails_the_run_of_a_dead_worker(dagster_instance):
    worker = subprocess.Popen(["sleep", "600"])
    run_id = add_run(dagster_instance, None)
    _worker_started(dagster_instance, run_id, worker.pid)
    worker.kill()
    worker.wait()

    (record,) = dagster_instance.get_run_records(dg.RunsFilter(run_ids=[run_id]))
    monitor_started_run(dagster_instance, None, record, logging.getLogger("test"))  # one monitoring pass

    run = dagster_instance.get_run_by_id(run_id)
    assert run.status == dg.DagsterRunStatus.FAILURE
    failure = [e for e in dagster_instance.all_logs(run_id) if e.dagster_event and e.dagster_event.is_run_failure]
    assert failure and "is gone" in failure[0].message
