"""The run launcher of ``sms-pipeline dev``: Dagster's default one, whose runs run monitoring can check.

The default launcher starts each run in a subprocess of the code server and
cannot tell whether that process is still alive, so a run whose worker was
killed (kill -9, OOM) stays STARTED for ever and keeps its pool slots. This
one answers run monitoring's health check from the worker's own record: the
run's first engine event names the worker's pid ("Started process for run"),
and the machine's process table says whether that process is still the one
that wrote it. A run executed in a process of ours (``sms-pipeline
materialize``, the demo) has no such event; its tags name that process
instead. Monitoring then fails a dead run and frees its slots
(``run_monitoring`` in dagster.yaml; docs/design.md#runs-that-die).

It reads this machine's processes: the daemon and the code server must share
a host and a pid namespace, as they do under ``dagster dev``. When it cannot
tell, it says RUNNING: a wrong FAILED would fail a live run.
"""

from __future__ import annotations

import dagster as dg
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus

from sms_pipeline.orchestration.processes import ProcessIdentity, process_gone, process_started_at

# A worker writes its first event right after it starts; a process with its pid
# that started later than this after the event is another process.
PID_REUSE_SLACK_S = 5.0
WORKER_STARTED = "Started process for run"


class WatchedRunLauncher(DefaultRunLauncher):
    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        started = worker_started(self._instance, run.run_id)
        if started is None:
            # A run executed in a process of ours (materialize, the demo) names that process in its tags.
            ran_in = ProcessIdentity.from_tags(run.tags)
            if ran_in is not None and process_gone(ran_in, ProcessIdentity.current()):
                return CheckRunHealthResult(WorkerStatus.FAILED, f"the process that ran it ({ran_in}) is gone")
            return CheckRunHealthResult(WorkerStatus.RUNNING, "no worker has reported its pid yet")
        pid, at = started
        began = process_started_at(pid)
        if began is None or began > at + PID_REUSE_SLACK_S:
            return CheckRunHealthResult(WorkerStatus.FAILED, f"the run's worker (pid {pid}) is gone")
        return CheckRunHealthResult(WorkerStatus.RUNNING)


def worker_started(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """(pid, timestamp) of the run worker's "Started process" event, the latest if resumed."""
    found = None
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        pid = record.dagster_event.engine_event_data.metadata.get("pid") if record.dagster_event else None
        if pid is not None and record.message.startswith(WORKER_STARTED):
            found = (int(pid.value), record.timestamp)
    return found

