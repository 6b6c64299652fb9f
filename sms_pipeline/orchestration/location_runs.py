"""Runs of the code location's jobs, executed in this process (the demo).

``job.execute_in_process`` records a run with no code-location origin: the UI
lists it, but its "Re-execute" fails (a ``CheckError``), because Dagster's
GraphQL ``launchPipelineReexecution`` finds the job to run again through the
parent run's ``remote_job_origin`` (code location and repository name), and
such a run has none; the run page cannot tie it to a location either.

:func:`run_in_process` creates the run as the webserver does for the code location
that ``sms-pipeline dev`` loads (the origin of its workspace's location and
the job's Python origin, so the run carries the location's tag and shows
under it), then executes it here, with the in-process executor, waiting for
its end. The job may carry resources of the caller's settings (the demo's
simulator): a re-execution from the UI runs the location's job, with the
location's resources and the parent run's config.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import dagster as dg
from dagster._core.code_pointer import ModuleCodePointer
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
from dagster._core.execution.api import execute_run
from dagster._core.execution.execution_result import ExecutionResult
from dagster._core.origin import JobPythonOrigin
from dagster._core.remote_origin import ManagedGrpcPythonEnvCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.workspace.load import location_origins_from_config

from sms_pipeline.orchestration.processes import ProcessIdentity

# The workspace `sms-pipeline dev` serves (``cli/dev_cmd.WORKSPACE``, ``workspace.yaml``): one code location,
# the module holding the Definitions. The CLI sits above this layer; tests hold the two equal.
WORKSPACE = {"load_from": [{"python_module": {"module_name": "sms_pipeline.definitions",
                                              "location_name": "sms_pipeline"}}]}
# The Definitions object in that module (the workspace names the module only; its code server finds it).
DEFINITIONS_ATTRIBUTE = "defs"


def location_origin() -> ManagedGrpcPythonEnvCodeLocationOrigin:
    """The origin of the workspace's code location, as Dagster reads it from the workspace file."""
    # The path only anchors relative paths of python_file entries; the workspace has none.
    [origin] = location_origins_from_config(WORKSPACE, "workspace.yaml").values()
    if not isinstance(origin, ManagedGrpcPythonEnvCodeLocationOrigin):
        raise TypeError(f"the workspace's location is not a python_module one: {origin}")
    return origin


def job_origins(job_name: str, origin: ManagedGrpcPythonEnvCodeLocationOrigin | None = None
                ) -> tuple[RemoteJobOrigin, JobPythonOrigin]:
    """(remote origin, Python origin) of ``job_name`` in the code location, as its code server reports them."""
    origin = origin or location_origin()
    target = origin.loadable_target_origin
    remote = RemoteRepositoryOrigin(origin, SINGLETON_REPOSITORY_NAME).get_job_origin(job_name)
    # The code server points at the module's Definitions from its working directory (the one it started in).
    pointer = ModuleCodePointer(target.module_name, target.attribute or DEFINITIONS_ATTRIBUTE,
                                target.working_directory or os.getcwd())
    repository = ReconstructableRepository(pointer, executable_path=target.executable_path or sys.executable,
                                           container_context={})
    return remote, repository.get_reconstructable_job(job_name).get_python_origin()


def in_process(defs: dg.Definitions) -> dg.Definitions:
    """``defs`` whose jobs run their steps in this process (the location's own run them in subprocesses)."""
    return dg.Definitions.merge(defs, dg.Definitions(executor=dg.in_process_executor))


def run_in_process(job: dg.JobDefinition, instance: dg.DagsterInstance, *, run_config: Mapping[str, Any],
                   tags: Mapping[str, str], run_id: str | None = None) -> ExecutionResult:
    """Run ``job`` here, recorded as a run of the code location's job of that name.

    ``job`` is one of the location's jobs (``sms_pipeline.definitions.JOBS``), from Definitions made with
    :func:`in_process`: a job the location does not have could not be re-executed from the UI.

    Returns when the run has ended; a failed run is returned, not raised.
    """
    if job.executor_def is not dg.in_process_executor:
        raise ValueError(f"{job.name!r} runs its steps in other processes; make it with in_process(defs)")
    remote_origin, python_origin = job_origins(job.name)
    run = instance.create_run_for_job(
        # This process runs it: if it dies, a later materialize or run monitoring can tell.
        job_def=job, run_config=run_config, tags={**job.run_tags, **tags, **ProcessIdentity.current().tags()},
        run_id=run_id,
        remote_job_origin=remote_origin, job_code_origin=python_origin,
    )
    return execute_run(InMemoryJob(job), run, instance, raise_on_error=False)
