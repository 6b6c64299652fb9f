"""A real Dagster instance on the test server (the project's dagster.yaml), and runs that hold its pools.

``dagster_database`` is a Dagster database of the test's own (a run of one
test never waits for another test's pool slot), dropped afterwards; a CLI
subprocess gets it as ``SMS_PIPELINE_DAGSTER_DATABASE``. ``dagster_instance``
is an instance on it, configured from the project's template (one slot per
pool). The holders are runs made directly in the instance, recorded as made
by a given process, with a slot or a place in a pool's queue.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from sms_pipeline.db import connection
from sms_pipeline.orchestration import instance as instance_module
from sms_pipeline.orchestration.processes import ProcessIdentity, _stat
from sms_pipeline.settings import Settings


@pytest.fixture
def dagster_database(pg_admin_url: str) -> Iterator[str]:
    """The name of a Dagster database for this test alone (created on first use, dropped after)."""
    name = f"dagster_test_{uuid.uuid4().hex[:10]}"
    yield name
    with connection.connect_url(pg_admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def dagster_instance(dagster_database: str, pg_admin_url: str, tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """An instance on ``dagster_database`` with the project's dagster.yaml."""
    connection.ensure_database(pg_admin_url, dagster_database)
    home = tmp_path / "dagster-instance"
    home.mkdir()
    url = connection.sqlalchemy_psycopg2_url(connection.with_database(pg_admin_url, dagster_database))
    (home / "dagster.yaml").write_text(instance_module.render(url), encoding="utf-8")
    instance = dg.DagsterInstance.from_config(str(home))
    yield instance
    instance.dispose()


def instance_for(settings: Settings) -> dg.DagsterInstance:
    """The instance a CLI run with ``settings`` (and no DAGSTER_HOME) records its runs in."""
    return dg.DagsterInstance.from_config(str(instance_module.prepare_dagster_home(settings)))


@contextmanager
def live_process() -> Iterator[ProcessIdentity]:
    """A process that stays alive until the block ends, as it would record itself in a run's tags."""
    child = subprocess.Popen(["sleep", "600"])
    try:
        yield identity_of(child.pid)
    finally:
        child.kill()
        child.wait()


def ended_process() -> ProcessIdentity:
    """A process that has come and gone."""
    child = subprocess.Popen(["sleep", "30"])
    identity = identity_of(child.pid)
    child.kill()
    child.wait()
    return identity


def identity_of(pid: int) -> ProcessIdentity:
    me = ProcessIdentity.current()
    boot, namespace, _ = me._parts()
    stat = _stat(pid)
    return ProcessIdentity(me.host, pid, f"{boot}/{namespace}/{stat[1] if stat else ''}")


def add_run(instance: dg.DagsterInstance, process: ProcessIdentity | None, *,
            status: dg.DagsterRunStatus = dg.DagsterRunStatus.STARTED, job_name: str = "holder_job",
            tags: dict[str, str] | None = None) -> str:
    """A run record, recorded as made by ``process`` (None: by the daemon, untagged); returns its id."""
    run_id = str(uuid.uuid4())
    instance.add_run(dg.DagsterRun(job_name=job_name, run_id=run_id, status=status,
                                   tags={**(process.tags() if process else {}), **(tags or {})}))
    return run_id


def queue_for_pool(instance: dg.DagsterInstance, pool: str, run_id: str, step_key: str = "holder_step") -> bool:
    """Ask for a slot of ``pool`` for ``run_id``'s step as Dagster does; True when it got one
    (else it has its place in the pool's queue)."""
    storage = instance.event_log_storage
    if pool not in {limit.name for limit in storage.get_pool_limits()}:
        storage.initialize_concurrency_limit_to_default(pool)
    return storage.claim_concurrency_slot(pool, run_id, step_key).is_claimed


def pool_rows(instance: dg.DagsterInstance, pool: str) -> tuple[set[str], dict[str, bool]]:
    """(runs holding a slot, run -> whether its queued step was given a slot) of ``pool``."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    return ({slot.run_id for slot in info.claimed_slots},
            {step.run_id: step.assigned_timestamp is not None for step in info.pending_steps})


def wait_until(condition, timeout_s: float, what: str, *, every_s: float = 0.1):
    """Poll ``condition()`` until it returns something true; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(every_s)
