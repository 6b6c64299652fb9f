"""``sms-pipeline materialize`` as an operator runs it: killed, stopped, waiting, and failing checks.

Each command is a child process on the project's own Dagster instance (the
rendered dagster.yaml on Postgres: one slot per pool), in a Dagster database
of the test's own. A run killed with SIGKILL must not keep its pool for
ever; SIGTERM must end a command that waits for a pool within seconds; an
asset check of ERROR severity that fails must fail the command (WARN ones
are listed and do not).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from sms_pipeline import settings as settings_module
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.orchestration.partitions import DATABASE_POOL
from tests.support.dagster_instance import add_run, instance_for, live_process, pool_rows, queue_for_pool, wait_until
from tests.support.ingest import DAY_REPORT, materialize, mobiles, send
from tests.support.rows import ensure_partitions, insert_messages

JOB = "sms_pipeline_cli_materialize"
DAY_ROWS = "SELECT * FROM dlr.day_report_rows"
CHECKPOINTS = "SELECT report_kind, report_date, checksum, rows, bytes FROM dlr.report_checkpoints"


class Materialize:
    """One ``sms-pipeline materialize`` child process; its output collected line by line as it comes."""

    def __init__(self, env: dict[str, str], cwd: Path, first, last, select: str) -> None:
        command = [str(Path(sys.executable).with_name("sms-pipeline")), "materialize", "--from", first.isoformat(),
                   "--to", last.isoformat(), "--select", select]
        self.process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, bufsize=1)
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, lines: list[str]) -> None:
        with stream:
            for line in stream:
                lines.append(line.rstrip("\n"))

    def wait_for_line(self, start: str, timeout_s: float) -> str:
        def seen() -> str | None:
            assert self.process.poll() is None or any(line.startswith(start) for line in self.out), self.output()
            return next((line for line in self.out if line.startswith(start)), None)
        return wait_until(seen, timeout_s, f"a line starting {start!r}")

    def finish(self, timeout_s: float) -> int:
        code = self.process.wait(timeout=timeout_s)
        for reader in self._readers:
            reader.join(timeout=10)
        return code

    def output(self) -> str:
        errors = [line for line in self.err if "DEBUG" not in line][-30:]
        return "\n".join(["--- stdout", *self.out, "--- stderr (no DEBUG)", *errors])


@pytest.fixture
def env(app_env: dict[str, str], dagster_database: str) -> dict[str, str]:
    """The application's environment with a Dagster database of this test's own (and no DAGSTER_HOME)."""
    return {**app_env, "SMS_PIPELINE_DAGSTER_DATABASE": dagster_database}


@pytest.fixture
def cli(env: dict[str, str], tmp_path: Path):
    """Start ``materialize FIRST LAST SELECT`` children; any still running when the test ends is killed."""
    started: list[Materialize] = []

    def start(first, last, select: str) -> Materialize:
        started.append(Materialize(env, tmp_path, first, last, select))
        return started[-1]

    yield start
    for child in started:
        if child.process.poll() is None:
            child.process.kill()
        child.finish(30)


@pytest.fixture
def instance(env: dict[str, str]):
    instance = instance_for(settings_module.load(env))
    yield instance
    instance.dispose()


def _checksum(conn: psycopg.Connection, query: str) -> str:
    return conn.execute(f"SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM ({query}) t").fetchone()[0]


@pytest.mark.slow
def test_a_run_killed_mid_range_holds_nothing_and_the_next_one_ends_like_an_uninterrupted_run(
    app_env, env, cli, instance, clock, sim, client, db, second_db_url
):
    tz = settings_module.load(env).provider_timezone
    days = []
    for n in (4, 6, 3, 5):
        days.append(local_date(clock.now(), tz))
        send(client, mobiles(n))
        clock.advance(timedelta(days=1))
    first, last = days[0], days[-1]
    # The reference: the range in one uninterrupted run, into another database.
    materialize(settings_module.load({**app_env, "SMS_PIPELINE_DATABASE_URL": second_db_url}),
                clock, [DAY_REPORT], first, last)

    sim.faults.update({"slow": 1.0, "slow_delay_s": 1.5})
    killed = cli(first, last, 'key:"dlr/day_report"')
    wait_until(lambda: db.execute("SELECT count(*) FROM dlr.report_checkpoints").fetchone()[0] >= 2
               or killed.process.poll() is not None, 120, "two days loaded")
    killed.process.send_signal(signal.SIGKILL)
    assert killed.finish(30) == -signal.SIGKILL, killed.output()
    [dead] = instance.get_runs()
    assert dead.status == dg.DagsterRunStatus.STARTED  # what kill -9 leaves behind...
    assert pool_rows(instance, DATABASE_POOL)[0] == {dead.run_id}  # ...holding the pool

    sim.faults.update({"slow": 0.0})
    started = time.monotonic()
    again = cli(first, last, 'key:"dlr/day_report"')
    assert again.finish(180) == 0, again.output()
    assert time.monotonic() - started < 120
    assert (f"run {dead.run_id} ({JOB}, {first}..{last}, pid {killed.process.pid} on " in "\n".join(again.out))
    assert any(dead.run_id in line and "was STARTED but its process is gone: marked failed, its pool slots freed"
               in line for line in again.out), again.output()
    assert f"{days[0]}: rows=4, unchanged=True" in "\n".join(again.out)  # finished days stayed finished
    assert instance.get_run_by_id(dead.run_id).status == dg.DagsterRunStatus.FAILURE
    assert {run.status for run in instance.get_runs()} == {dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.SUCCESS}
    assert pool_rows(instance, DATABASE_POOL) == (set(), {})

    with psycopg.connect(second_db_url, autocommit=True) as reference:
        for query in (DAY_ROWS, CHECKPOINTS):
            assert _checksum(db, query) == _checksum(reference, query), query
    assert db.execute("SELECT count(*) FROM dlr.day_report_rows").fetchone()[0] == 18


@pytest.mark.slow
@pytest.mark.parametrize(("where", "stop"), [
    pytest.param("waiting_before_its_run", signal.SIGTERM, id="sigterm-waiting-before-its-run"),
    pytest.param("waiting_inside_its_run", signal.SIGTERM, id="sigterm-waiting-inside-its-run"),
    pytest.param("during_a_step", signal.SIGINT, id="sigint-during-a-step"),
])
def test_a_stop_signal_ends_materialize_within_seconds_and_leaves_nothing_held(env, cli, instance, clock, sim, client,
                                                                              where, stop):
    day = local_date(clock.now(), settings_module.load(env).provider_timezone)
    send(client, mobiles(3))
    clock.advance(timedelta(days=1))
    both = 'key:"dlr/day_report" or key:"dlr/transaction_reports"'
    with live_process() as alive:
        holder = add_run(instance, alive)
        if where == "waiting_before_its_run":
            assert queue_for_pool(instance, DATABASE_POOL, holder)
            child = cli(day, day, both)
        else:
            # The run's first step holds the pool (the provider answers late) ...
            sim.faults.update({"slow": 1.0, "slow_delay_s": 6.0 if where == "waiting_inside_its_run" else 60.0})
            child = cli(day, day, both)
            wait_until(lambda: pool_rows(instance, DATABASE_POOL)[0] or child.process.poll() is not None, 90,
                       "the run to take the pool")
        if where == "waiting_inside_its_run":
            # ... the holder queues for the pool meanwhile, so the slot goes to the holder next and
            # the run's second step waits inside the run (Dagster's own wait).
            assert not queue_for_pool(instance, DATABASE_POOL, holder), child.output()
        if where == "during_a_step":
            time.sleep(1)  # well inside the day report's request
        else:
            child.wait_for_line(f"waiting for pool {DATABASE_POOL} held by run {holder} (holder_job, {alive});", 90)

        sent = time.monotonic()
        child.process.send_signal(stop)
        code = child.finish(30)
        elapsed = time.monotonic() - sent

        assert elapsed < 10, child.output()
        assert code == 128 + stop, child.output()
        assert any(line.startswith(f"sms-pipeline: error: stopped by {stop.name}") for line in child.err), \
            child.output()
        runs = instance.get_runs(filters=dg.RunsFilter(job_name=JOB))
        if where == "waiting_before_its_run":
            assert runs == []
        else:
            [run] = runs
            assert run.status == dg.DagsterRunStatus.CANCELED
        held, queued = pool_rows(instance, DATABASE_POOL)
        assert held <= {holder} and set(queued) <= {holder}  # the stopped run holds and waits for nothing
        assert instance.get_run_by_id(holder).status == dg.DagsterRunStatus.STARTED  # alive: left alone


@pytest.mark.slow
def test_a_failed_error_check_fails_the_command_and_warn_ones_are_only_listed(cli, db):
    """The health checks on crafted rows: a pending row 20 minutes old (WARN on the observed send
    queue), then submitted rows 3 hours old with no receipt at all (ERROR: receipts stopped on
    dlr/receipts, still pending on the queue)."""
    now = datetime.now(UTC)
    day = now.date() - timedelta(days=2)
    ensure_partitions(db, now - timedelta(days=1))
    insert_messages(db, 1, state="pending", created_at=now - timedelta(minutes=20))

    warned = cli(day, day, 'key:"msg/outbound_queue"')
    assert warned.finish(120) == 0, warned.output()
    assert any(line.startswith("check failed (WARN): msg/outbound_queue oldest_pending_age: "
                               "oldest pending/claimed work is ") for line in warned.out), warned.output()
    assert not any("(ERROR)" in line for line in warned.out)
    assert warned.out[-1].startswith("run ") and warned.out[-1].endswith(f"{day}..{day} done")

    at = now - timedelta(hours=3)
    insert_messages(db, 4, state="submitted", created_at=at - timedelta(seconds=2),
                    claimed_at=at - timedelta(seconds=1), submitted_at=at, billable_units=1)
    failed = cli(day, day, 'key:"msg/outbound_queue" or key:"dlr/receipts" or key:"msg/reconciliation"')
    assert failed.finish(120) == 2, failed.output()
    lines = [line for line in failed.out if line.startswith("check failed")]
    assert lines[0].startswith("check failed (ERROR): dlr/receipts receipts_flowing: ")
    assert lines[1].startswith("check failed (ERROR): msg/outbound_queue still_pending_ratio: ")
    assert any(line.startswith("check failed (WARN): msg/outbound_queue oldest_pending_age: ") for line in lines)
    assert not any(line.startswith("run ") and line.endswith(" done") for line in failed.out)
    final = [line for line in failed.err if line.startswith("sms-pipeline: error:")]
    assert len(final) == 1 and final[0].endswith(
        "2 ERROR check(s) failed: dlr/receipts receipts_flowing, msg/outbound_queue still_pending_ratio"
    ), failed.output()
    recipients = [r for (r,) in db.execute("SELECT recipient FROM msg.outbound_message").fetchall()]
    assert not any(recipient in "\n".join(failed.out + failed.err) for recipient in recipients)
