"""``sms-pipeline dev`` after the demo: a quiet terminal, and everything in ``logs/dagster-dev.log``.

A person starts the UI and launches the daily job for a demo day (here
through the webserver's GraphQL API, as the UI does). The terminal shows
where the UI is and how to stop it, and nothing of the run: no INFO or DEBUG
records, no dbt output. The log file has the services' INFO lines, the run's
DEBUG events and dbt's output.

Beside the UI, dev runs the receipt-push receiver, registered at its own
simulator, and the ``reconcile recent`` loop: messages a worker sends now
are delivered within a minute, and the push URL's secret is in no log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.support.environment import TEXT_HMAC_KEY
from tests.support.ports import free_port
from tests.support.worker import request
from sms_pipeline.db import connection
from sms_pipeline.ingest.day_report import REPORT_KIND as DAY_REPORT_KIND

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LAUNCH = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}"""
STATUS = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"


@pytest.fixture
def env(db_url: str, pg_admin_url: str, tmp_path: Path):
    dagster_db = f"dagster_{uuid.uuid4().hex[:10]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_", "DAGSTER_"))}
    env.update(SMS_PIPELINE_HOME=str(tmp_path / "home"), SMS_PIPELINE_DATABASE_URL=db_url,
               SMS_PIPELINE_TEXT_HMAC_KEY=TEXT_HMAC_KEY,
               SMS_PIPELINE_DAGSTER_DATABASE=dagster_db)
    try:
        yield env
    finally:
        with connection.connect_url(pg_admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dagster_db}" WITH (FORCE)')


def test_sigterm_stops_every_process_even_started_with_sigint_ignored(env, tmp_path) -> None:
    """`sms-pipeline dev &` in a script starts it with SIGINT ignored; a service manager's SIGTERM to it
    alone must still stop the UI, the daemon and the rest, and free the port."""
    port = free_port()
    console_path = tmp_path / "console.txt"
    process = _start_dev(env, port, console_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        _wait_until_up(process, console_path)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        deadline = time.monotonic() + 30
        while _group_alive(process.pid):  # the webserver and the daemon exit after their parent
            assert time.monotonic() < deadline, "processes of `sms-pipeline dev` outlived it"
            time.sleep(0.5)
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    assert console_path.read_text(encoding="utf-8").splitlines()[-1] == "stopped"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=5)


def _start_dev(env: dict, port: int, console_path: Path, **popen) -> subprocess.Popen:
    """`sms-pipeline dev` in a session of its own (its processes are one group), its console in a file."""
    with console_path.open("w") as console:
        return subprocess.Popen([sys.executable, "-m", "sms_pipeline.cli", "dev", "--port", str(port)],
                                env=env, stdout=console, stderr=subprocess.STDOUT, start_new_session=True, **popen)


def _wait_until_up(process: subprocess.Popen, console_path: Path) -> None:
    deadline = time.monotonic() + 240
    while "the UI is up" not in console_path.read_text(encoding="utf-8"):
        assert process.poll() is None, console_path.read_text(encoding="utf-8")
        assert time.monotonic() < deadline, console_path.read_text(encoding="utf-8")
        time.sleep(1)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _graphql(base: str, query: str, variables: dict) -> dict:
    response = httpx.post(f"{base}/graphql", json={"query": query, "variables": variables}, timeout=30)
    response.raise_for_status()
    return response.json()["data"]


def test_the_terminal_shows_where_the_ui_is_and_the_log_file_gets_the_runs(env, db_url, tmp_path) -> None:
    demo = subprocess.run([sys.executable, "-m", "sms_pipeline.cli", "demo", "--days", "1", "--messages-per-day",
                           "20"], env=env, capture_output=True, text=True, timeout=900)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    with psycopg.connect(db_url) as conn:
        (day,) = conn.execute("SELECT max(report_date) FROM dlr.report_checkpoints WHERE report_kind = %s",
                              (DAY_REPORT_KIND,)).fetchone()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    console_path = tmp_path / "console.txt"
    process = _start_dev(env, port, console_path)
    try:
        _wait_until_up(process, console_path)
        assert httpx.get(f"{base}/server_info", timeout=10).status_code == 200

        launched = _graphql(base, LAUNCH, {"params": {
            "selector": {"repositoryLocationName": "sms_pipeline", "repositoryName": "__repository__",
                         "jobName": "daily_reports_job"},
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": day.isoformat()}]},
        }})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        deadline = time.monotonic() + 600
        status = None
        while time.monotonic() < deadline:
            status = _graphql(base, STATUS, {"id": run_id})["runOrError"].get("status")
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                break
            time.sleep(3)
        assert status == "SUCCESS"

        # Sent now, through dev's simulator: the receipts come back as pushes, reconciled as they come.
        simulator_url = console_path.read_text(encoding="utf-8").splitlines()[0].split(": ", 1)[1]
        provider = dict(SMS_PROVIDER_BASE_URL=simulator_url, SMS_PROVIDER_USERID="demo", SMS_PROVIDER_PASSWORD="demo")
        (tmp_path / "now.jsonl").write_text("".join(json.dumps(request(n, body=f"Order {n} is out")) + "\n"
                                                    for n in range(20)), encoding="utf-8")
        with psycopg.connect(db_url) as conn:
            (before_send,) = conn.execute("SELECT clock_timestamp()").fetchone()
        for command in (["enqueue", str(tmp_path / "now.jsonl")], ["worker", "--once"]):
            done = subprocess.run([sys.executable, "-m", "sms_pipeline.cli", *command], env={**env, **provider},
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
        # About three in four of the simulator's messages are delivered within 30 s (88% are delivered, 85%
        # of deliveries come within 30 s), and dev's push pass runs every 10 s: fewer than 5 of 20 by then
        # is a chance of about 1 in 2 million. The wait leaves room for one push retried after 30 s on a
        # loaded machine (asking 10 of 20 within 60 s would fail about once in 240 runs on the draw alone).
        sent_at = time.monotonic()
        with psycopg.connect(db_url, autocommit=True) as conn:
            while time.monotonic() - sent_at < 120 and min(_delivered(conn), _pushed(conn, before_send)) < 5:
                time.sleep(1)
            delivered, pushed = _delivered(conn), _pushed(conn, before_send)
        assert delivered >= 5 and pushed >= 5, (delivered, pushed, round(time.monotonic() - sent_at))
        registered = httpx.get(f"{simulator_url}/webhook/read", params={"userid": "demo", "password": "demo"},
                               timeout=10).json()["response"]["smswebhook"]
        secret = registered.rsplit("/", 1)[1]
        assert registered.startswith("http://127.0.0.1:") and len(secret) >= 16
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise

    console_lines = console_path.read_text(encoding="utf-8").splitlines()
    assert console_lines[0].startswith("provider simulator: http://127.0.0.1:")
    assert console_lines[1].startswith("receipt pushes: http://127.0.0.1:") and "/dlr/***" in console_lines[1]
    assert console_lines[2].startswith(f"Dagster UI: {base}")
    assert "the UI is up; Ctrl-C stops it" in console_lines
    assert console_lines[-1] == "stopped"
    assert len(console_lines) <= 9, console_lines  # a clean start and run: nothing else
    console = "\n".join(console_lines)
    assert "Warning" not in console  # no Beta/Supersession notes
    assert not any(word in console for word in (" - INFO - ", " - DEBUG - ", "STEP_START", "Running dbt",
                                                    "dbt=", "START sql"))

    home = Path(env["SMS_PIPELINE_HOME"])
    logged = (home / "logs" / "dagster-dev.log").read_text(encoding="utf-8")
    assert "\x1b[" not in logged  # colour codes stripped
    assert "dagster-webserver - INFO - Serving dagster-webserver" in logged
    assert "dagster.daemon - INFO - " in logged
    assert f" - DEBUG - daily_reports_job - {run_id} - " in logged and "STEP_START" in logged
    assert "RUN_SUCCESS" in logged
    assert "Running with dbt=" in logged and " START sql " in logged
    assert "provider API: http://127.0.0.1:" in (home / "logs" / "simulator.log").read_text(encoding="utf-8")
    assert "reconciled=" in (home / "logs" / "reconcile-recent.log").read_text(encoding="utf-8")
    for log_file in (home / "logs").iterdir():
        assert secret not in log_file.read_text(encoding="utf-8"), log_file.name
    assert secret not in "\n".join(console_lines)


def _delivered(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM msg.outbound_message WHERE state = 'delivered' "
                        "AND tenant_id = %s", (request(0)["tenant_id"],)).fetchone()[0]


def _pushed(conn: psycopg.Connection, since: datetime) -> int:
    """The test's messages with a receipt push received after ``since`` and reconciled."""
    return conn.execute("SELECT count(DISTINCT m.id) FROM dlr.receipt_push_inbox p "
                        "JOIN msg.outbound_message m ON m.provider_message_id = p.provider_message_id "
                        "WHERE p.reconciled_at IS NOT NULL AND p.received_at > %s AND m.tenant_id = %s",
                        (since, request(0)["tenant_id"])).fetchone()[0]
