"""``sms-pipeline health``: the dead man's switch outside Dagster.

Real Postgres (the application's database and a Dagster database of the
test's own), real heartbeats (written by a real ``dagster-daemon``, or by
Dagster's own storage API with a chosen age), the real command in this
process or as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._daemon.types import DaemonHeartbeat
from dagster._utils.error import SerializableErrorInfo

from sms_pipeline.db import connection, embedded
from sms_pipeline.reconcile import health, health_report
from sms_pipeline.reconcile.health import Thresholds
from sms_pipeline.reconcile.health_report import DAEMON_READING, REQUIRED_DAEMONS
from tests.support.dagster_instance import wait_until
from tests.support.environment import app_environ
from tests.support.rows import insert_message

BIN = Path(sys.executable).parent
READING_NAMES = [*health.READINGS, DAEMON_READING]


def beat(instance: dg.DagsterInstance, age: timedelta, daemons=REQUIRED_DAEMONS) -> None:
    """A heartbeat of each of ``daemons``, ``age`` old, written as the daemon writes it."""
    at = (datetime.now(UTC) - age).timestamp()
    for daemon in daemons:
        instance.add_daemon_heartbeat(DaemonHeartbeat(at, daemon, "test-daemon", errors=[]))


def lines(out: str) -> dict[str, str]:
    """Each reading's line of the human output, by name."""
    return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in READING_NAMES}


@pytest.fixture
def health_cmd(run, dagster_database: str):
    """``sms-pipeline health ARGS`` against the test's database and Dagster database."""
    return lambda *args: run("health", *args, SMS_PIPELINE_DAGSTER_DATABASE=dagster_database)


def test_the_project_instance_requires_exactly_the_daemons_checked(dagster_instance):
    assert set(dagster_instance.get_required_daemon_types()) == set(REQUIRED_DAEMONS)


def test_a_daemon_that_never_beat_is_an_error(health_cmd, dagster_instance):
    code, out, err = health_cmd()
    assert code == 2, out + err
    daemon = lines(out)[DAEMON_READING]
    assert "ERROR" in daemon
    assert "the Dagster daemon is not running: never beat: " + ", ".join(REQUIRED_DAEMONS) in daemon
    assert out.splitlines()[-1] == "health: ERROR"
    assert all(" OK " in lines(out)[name] for name in health.READINGS), out


def test_a_stale_heartbeat_is_an_error(health_cmd, dagster_instance):
    beat(dagster_instance, timedelta(seconds=10))
    beat(dagster_instance, timedelta(minutes=31), daemons=["SCHEDULER"])
    code, out, err = health_cmd()
    assert code == 2, out + err
    assert "silent for more than 30 min 30 s: SCHEDULER" in lines(out)[DAEMON_READING]


def test_a_missing_dagster_database_is_an_error(health_cmd, dagster_database):
    code, out, err = health_cmd()  # the fixture names the database; nothing created it
    assert code == 2, out + err
    daemon = lines(out)[DAEMON_READING]
    assert "ERROR" in daemon and f'database "{dagster_database}" does not exist' in daemon


def test_every_daemon_silent_for_minutes_is_a_dead_process_not_a_warning(health_cmd, dagster_instance):
    beat(dagster_instance, timedelta(minutes=4))
    code, out, err = health_cmd()
    assert code == 2, out + err
    assert "the Dagster daemon is not running: no daemon has beaten for more than 3 min" in lines(out)[DAEMON_READING]


@pytest.mark.parametrize(("daemon_age", "pending_age", "warned"), [
    (timedelta(minutes=3), None, DAEMON_READING),  # one thread missed four beats: busy or stuck, not dead yet
    (timedelta(seconds=5), timedelta(minutes=20), "oldest_pending_age"),
])
def test_a_warning_alone_exits_1(health_cmd, dagster_instance, db, daemon_age, pending_age, warned):
    beat(dagster_instance, timedelta(seconds=5))
    beat(dagster_instance, daemon_age, daemons=["SENSOR"])
    if pending_age:
        insert_message(db, created_at=datetime.now(UTC) - pending_age)
    code, out, err = health_cmd()
    assert code == 1, out + err
    assert {name: line.split()[1] for name, line in lines(out).items()} == {
        name: "WARN" if name == warned else "OK" for name in READING_NAMES}
    assert out.splitlines()[-1] == "health: WARN"


def test_errors_in_a_heartbeat_are_a_warning_without_their_text(health_cmd, dagster_instance):
    beat(dagster_instance, timedelta(seconds=5))
    failure = SerializableErrorInfo("sensor raised: token sk-live-123", [], "Exception")
    dagster_instance.add_daemon_heartbeat(
        DaemonHeartbeat(datetime.now(UTC).timestamp(), "SENSOR", "test-daemon", errors=[failure]))
    code, out, err = health_cmd()
    assert code == 1, out + err
    assert "WARN" in lines(out)[DAEMON_READING]
    assert "errors in the last heartbeat (see the daemon's log): SENSOR" in out
    assert "sk-live" not in out + err


def test_an_error_reading_of_the_application_exits_2(health_cmd, dagster_instance, db):
    beat(dagster_instance, timedelta(seconds=5))
    insert_message(db, created_at=datetime.now(UTC) - timedelta(hours=2))  # sending stopped an hour ago
    code, out, err = health_cmd()
    assert code == 2, out + err
    assert lines(out)["oldest_pending_age"].split()[1:4] == ["ERROR", "2", "h"]


def test_json_document(health_cmd, dagster_instance):
    beat(dagster_instance, timedelta(seconds=5))
    code, out, err = health_cmd("--json")
    assert code == 0, out + err
    document = json.loads(out)
    assert document["status"] == "OK" and document["exit_code"] == 0
    assert datetime.fromisoformat(document["checked_at"]) <= datetime.now(UTC)
    assert [r["name"] for r in document["readings"]] == READING_NAMES
    for reading in document["readings"]:
        assert set(reading) == {"name", "status", "value", "threshold", "description", "details"}
        assert reading["status"] == "OK" and reading["value"] and reading["threshold"] and reading["description"]
    daemon = document["readings"][-1]
    assert set(daemon["details"]["heartbeat_age"]) == set(REQUIRED_DAEMONS)


def test_an_unreachable_database_is_one_line_and_exit_2(run):
    url = "postgresql://sms:hunter2-secret@127.0.0.1:9/sms_pipeline"  # the discard port: nothing listens
    code, out, err = run("health", SMS_PIPELINE_DATABASE_URL=url)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "cannot reach the database" in err
    assert "hunter2" not in err
    code, out, err = run("health", "--json", SMS_PIPELINE_DATABASE_URL=url)
    assert code == 2 and json.loads(out)["error"].startswith("cannot reach the database")


def test_an_unmigrated_database_is_one_line_and_exit_2(run, blank_db, pg_admin_url):
    unmigrated = connection.with_database(pg_admin_url, blank_db.info.dbname)
    code, out, err = run("health", SMS_PIPELINE_DATABASE_URL=unmigrated)
    assert code == 2 and out == ""
    assert err.startswith("sms-pipeline: error: cannot read the health readings: relation ") and err.count("\n") == 1


def test_a_stopped_embedded_database_is_not_started(run, monkeypatch, tmp_path):
    home = tmp_path / "embedded-home"
    monkeypatch.delenv("SMS_PIPELINE_DATABASE_URL")
    code, out, err = run("health", SMS_PIPELINE_HOME=str(home))
    assert code == 2 and err.startswith("sms-pipeline: error: database not running")
    assert not (home / "pgdata").exists()
    assert embedded.running_uri(home) is None


def test_the_embedded_server_is_found_only_while_it_runs(tmp_path):
    home = tmp_path / "embedded"
    assert embedded.running_uri(home) is None
    started = embedded.ensure_running(home)
    try:
        assert embedded.running_uri(home) == started
        with connection.connect_url(embedded.running_uri(home)) as conn:
            assert conn.info.dbname == "postgres"
    finally:
        assert embedded.stop(home)
    assert embedded.running_uri(home) is None and not embedded.stop(home)


@pytest.fixture
def daemon(dagster_database: str, dagster_instance: dg.DagsterInstance, tmp_path: Path) -> Iterator[None]:
    """A real ``dagster-daemon`` on the test's Dagster database (the project's dagster.yaml), until the test
    ends; returns once every required daemon has beaten."""
    home = Path(dagster_instance.root_directory)
    log = (tmp_path / "daemon.log").open("w")
    process = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "--empty-workspace"], cwd=home,
                               env={**app_environ(), "DAGSTER_HOME": str(home)}, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: set(dagster_instance.get_daemon_heartbeats()) >= set(REQUIRED_DAEMONS) or
                   process.poll() is not None, 120, "every daemon's first heartbeat")
        assert process.poll() is None, (tmp_path / "daemon.log").read_text()
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_a_running_daemon_is_healthy_fast_and_without_dagster(daemon, db_url, dagster_database, tmp_path):
    env = app_environ(SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_DAGSTER_DATABASE=dagster_database,
                      SMS_PIPELINE_HOME=str(tmp_path / "home"))
    started = time.monotonic()
    done = subprocess.run([str(BIN / "sms-pipeline"), "health"], env=env, capture_output=True, text=True,
                          timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert DAEMON_READING in lines(done.stdout) and done.stdout.splitlines()[-1] == "health: OK"
    # Under 1 s on an idle machine (README), nearly all of it starting the CLI: a generous bound for a loaded
    # test machine, and a tight one on the readings themselves (two connections, eight readings).
    assert elapsed < 10, f"sms-pipeline health took {elapsed:.2f} s"
    started = time.monotonic()
    report = health_report.evaluate(db_url, connection.with_database(db_url, dagster_database), datetime.now(UTC),
                                    Thresholds(non_submission_grace_h=24))
    assert report.status == "OK" and time.monotonic() - started < 0.5
    # The whole command, as the console script runs it: not one Dagster module imported.
    probe = ("import sys\nfrom sms_pipeline.cli import main\ncode = main(['health', '--json'])\n"
             "print(sorted(m for m in sys.modules if m.startswith('dagster')), file=sys.stderr)\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "OK"
    assert done.stderr.strip().splitlines()[-1] == "[]"
