"""The demo's runs are runs of the code location: the UI's "Re-execute" works on them.

A day's close runs the demo's way (``_Pipeline``: in this process, on the
virtual clock, on the project's Postgres-backed instance). Then the workspace
``sms-pipeline dev`` serves is loaded for real (a code server for the
location) and the run is re-executed through Dagster's GraphQL layer with
the mutation and variables the UI's "Re-execute all" sends. The new run is
dequeued as the daemon does it (the instance's queued coordinator), launched
by the instance's run launcher in the location's code server, and must
succeed as a run of the same job in the same location.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster_graphql.test.utils import execute_dagster_graphql


from sms_pipeline import settings as settings_module
from sms_pipeline.cli.dev_cmd import WORKSPACE
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.db import connection
from sms_pipeline.demo.run import _Pipeline
from sms_pipeline.marts.project import dbt_project, prepare_manifest
from sms_pipeline.orchestration import location_runs
from sms_pipeline.orchestration.instance import prepare_dagster_home
from sms_pipeline.orchestration.schedules import DAY_CLOSE_JOB, PARTITION_RANGE_END_TAG, PARTITION_RANGE_START_TAG
from tests.support.dagster_instance import wait_until
from tests.support.environment import app_environ, provider_variables

pytestmark = pytest.mark.slow

LOCATION = "sms_pipeline"
REPOSITORY = "__repository__"
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# What the run page asks about a run to enable "Re-execute" (useJobAvailabilityErrorForRun, RunActionButtons).
RUN_QUERY = """
query Run($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run {
      pipelineName
      pipelineSnapshotId
      hasReExecutePermission
      repositoryOrigin { repositoryLocationName repositoryName }
      executionPlan { artifactsPersisted }
    }
  }
}
"""

# The UI's LAUNCH_PIPELINE_REEXECUTION_MUTATION (ui-core/src/runs/RunUtils.tsx), as "Re-execute all" sends it.
REEXECUTE = """
mutation LaunchPipelineReexecution($executionParams: ExecutionParams, $reexecutionParams: ReexecutionParams) {
  launchPipelineReexecution(executionParams: $executionParams, reexecutionParams: $reexecutionParams) {
    __typename
    ... on LaunchRunSuccess { run { id runId pipelineName parentRunId rootRunId status } }
    ... on PipelineNotFoundError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on PythonError { message stack }
  }
}
"""


def test_the_runs_name_the_workspace_that_sms_pipeline_dev_serves():
    # location_runs cannot import the CLI (a higher layer): the workspace is written down twice.
    assert yaml.safe_load(WORKSPACE) == location_runs.WORKSPACE
    assert yaml.safe_load((PROJECT_ROOT / "workspace.yaml").read_text(encoding="utf-8")) == location_runs.WORKSPACE


@pytest.fixture
def location_env(monkeypatch, tmp_path: Path, db_url: str, dagster_database: str, pg_admin_url: str, sim):
    """This process's environment as `sms-pipeline dev` and the demo have it: the code server and the
    runs it launches inherit it (the test's database, a home of its own, the simulator as provider).

    Afterwards, waits until no process (the code server, a run's) uses the test's Dagster database any
    more, before it is dropped."""
    env = app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home"), SMS_PIPELINE_DATABASE_URL=db_url,
                      SMS_PIPELINE_DAGSTER_DATABASE=dagster_database, **provider_variables(sim.base_url))
    for name in [k for k in list(os.environ) if k.startswith(settings_module.PREFIXES)]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = settings_module.load()
    monkeypatch.setenv("DAGSTER_HOME", str(prepare_dagster_home(settings)))
    prepare_manifest(dbt_project(settings.home))  # as `sms-pipeline dev` does before it loads the location
    yield settings

    def unused() -> bool:
        with connection.connect_url(pg_admin_url, autocommit=True) as admin:
            return not admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                     (dagster_database,)).fetchone()[0]

    wait_until(unused, 60, "the code server and the runs to let go of the Dagster database", every_s=0.5)


def test_a_demo_run_is_a_run_of_the_code_location_and_the_ui_re_executes_it(location_env, clock, tmp_path):
    settings = location_env
    day = local_date(clock.now(), settings.provider_timezone) - timedelta(days=1)

    pipeline = _Pipeline(settings, clock, tmp_path / "demo-runs.log")
    instance = pipeline._instance
    try:
        _close_day_and_re_execute_it(pipeline, instance, day, tmp_path)
    finally:
        instance.dispose()  # before the test's Dagster database is dropped


def _close_day_and_re_execute_it(pipeline: _Pipeline, instance: dg.DagsterInstance, day, tmp_path: Path) -> None:
    pipeline.close_day(day, day)
    [record] = instance.get_run_records(dg.RunsFilter(job_name=DAY_CLOSE_JOB))
    parent = record.dagster_run
    assert parent.status == dg.DagsterRunStatus.SUCCESS
    assert parent.remote_job_origin.location_name == LOCATION
    assert parent.remote_job_origin.repository_origin.repository_name == REPOSITORY
    assert parent.tags["dagster/code_location"] == LOCATION

    workspace = tmp_path / "workspace.yaml"
    workspace.write_text(WORKSPACE, encoding="utf-8")  # what `sms-pipeline dev` serves
    with WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(workspace)])) as process_context:
        context = process_context.create_request_context()
        remote_job = context.get_code_location(LOCATION).get_repository(REPOSITORY).get_full_job(DAY_CLOSE_JOB)
        # The run carries the origins a run launched from the UI for this location carries.
        assert (parent.remote_job_origin, parent.job_code_origin) == (
            remote_job.get_remote_origin(), remote_job.get_python_origin())
        assert location_runs.job_origins(DAY_CLOSE_JOB) == (
            remote_job.get_remote_origin(), remote_job.get_python_origin())

        # The run page: the job found in its origin's repository, every re-execution option offered.
        shown = execute_dagster_graphql(context, RUN_QUERY, {"runId": parent.run_id})
        assert not shown.errors, shown.errors
        run = shown.data["runOrError"]
        assert run["__typename"] == "Run", run
        assert run["repositoryOrigin"] == {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}
        assert run["pipelineSnapshotId"] and run["hasReExecutePermission"]
        assert run["executionPlan"]["artifactsPersisted"]

        launched = execute_dagster_graphql(context, REEXECUTE, {"reexecutionParams": {
            "parentRunId": parent.run_id, "strategy": "ALL_STEPS",
            "extraTags": [{"key": "dagster/from_ui", "value": "true"}]}})
        assert not launched.errors, launched.errors
        outcome = launched.data["launchPipelineReexecution"]
        assert outcome["__typename"] == "LaunchRunSuccess", outcome
        child_id = outcome["run"]["runId"]
        assert outcome["run"]["pipelineName"] == DAY_CLOSE_JOB
        assert outcome["run"]["parentRunId"] == outcome["run"]["rootRunId"] == parent.run_id

        child = instance.get_run_by_id(child_id)
        assert child.status == dg.DagsterRunStatus.QUEUED  # the instance's coordinator queues it for the daemon
        assert child.remote_job_origin == parent.remote_job_origin
        assert child.job_code_origin == parent.job_code_origin
        assert child.run_config == parent.run_config  # the demo's virtual instant, again
        assert {k: child.tags[k] for k in (PARTITION_RANGE_START_TAG, PARTITION_RANGE_END_TAG)} == {
            PARTITION_RANGE_START_TAG: day.isoformat(), PARTITION_RANGE_END_TAG: day.isoformat()}

        # Dequeued as the daemon does it: the instance's run launcher, in the location's code server.
        instance.launch_run(child_id, context)
        finished = wait_until(lambda: (r := instance.get_run_by_id(child_id)).is_finished and r, 300,
                              "the re-executed run to finish", every_s=1)
        failures = [e.message for e in instance.all_logs(child_id) if e.level >= logging.ERROR]
        # The code server lets go of the run once its process has exited (it reads the run then): before
        # the code server stops and the Dagster database is dropped.
        client = context.get_code_location(LOCATION).client
        wait_until(lambda: child_id not in dg.deserialize_value(client.get_current_runs()).current_runs, 60,
                   "the code server to let go of the run", every_s=0.5)
        assert finished.status == dg.DagsterRunStatus.SUCCESS, failures
        done_steps = {e.step_key for e in instance.all_logs(child_id, of_type=dg.DagsterEventType.STEP_SUCCESS)}
        assert done_steps and done_steps == {
            e.step_key for e in instance.all_logs(parent.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS)}
