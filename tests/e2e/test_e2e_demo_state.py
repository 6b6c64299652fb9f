"""After the demo, the simulator `sms-pipeline dev` starts serves the demo's provider days (issue 17)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from datetime import date
from pathlib import Path

import psycopg
import pytest
from pydantic import SecretStr

from tests.support.environment import TEXT_HMAC_KEY
from sms_pipeline.cli.dev_cmd import simulator_command
from sms_pipeline.db import connection
from sms_pipeline.demo.run import simulator_state_file
from sms_pipeline.provider.client import ProviderClient

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def demo_env(db_url: str, pg_admin_url: str, tmp_path: Path):
    dagster_db = f"dagster_{uuid.uuid4().hex[:10]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_", "DAGSTER_"))}
    env.update(SMS_PIPELINE_HOME=str(tmp_path / "home"), SMS_PIPELINE_DATABASE_URL=db_url,
               SMS_PIPELINE_TEXT_HMAC_KEY=TEXT_HMAC_KEY,
               SMS_PIPELINE_DAGSTER_DATABASE=dagster_db)
    yield env
    with connection.connect_url(pg_admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{dagster_db}" WITH (FORCE)')


def test_dev_simulator_serves_the_demo_days(demo_env, db_url, settings, tmp_path):
    demo = subprocess.run(
        [sys.executable, "-m", "sms_pipeline.cli", "demo", "--days", "1", "--messages-per-day", "60",
         "--summary-json", str(tmp_path / "demo.json")],
        env=demo_env, capture_output=True, text=True, timeout=900,
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    (day,) = [date.fromisoformat(d["day"]) for d in json.loads((tmp_path / "demo.json").read_text())["days"]]
    assert settings.home == tmp_path / "home" and simulator_state_file(settings).exists()
    with psycopg.connect(db_url) as conn:
        stored_rows = conn.execute("SELECT rows FROM dlr.report_checkpoints WHERE report_kind = 'day' "
                                   "AND report_date = %s", (day,)).fetchone()[0]
        stored_ids = Counter(r[0] for r in conn.execute(
            "SELECT msg_id FROM dlr.day_report_rows WHERE report_date = %s", (day,)))
        stored_units = conn.execute("SELECT sum(units) FROM dlr.provider_summary WHERE day = %s", (day,)).fetchone()[0]
    assert stored_rows > 0

    # The simulator exactly as `sms-pipeline dev` starts it (on real time, later than the demo's clock).
    simulator = subprocess.Popen(simulator_command(settings, "127.0.0.1", 0), env=demo_env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base_url = simulator.stdout.readline().split()[-1]
        with ProviderClient.from_settings(settings, base_url=base_url, userid="demo",
                                          password=SecretStr("demo"), api_key=None) as client:
            report = client.day_report(day, tmp_path)
            served_ids = Counter(row["msg_id"] for row in report.rows())
            served_units = sum(row.units for row in client.summary(day, day))
    finally:
        simulator.send_signal(signal.SIGINT)
        assert simulator.wait(timeout=30) == 0, simulator.stderr.read()[-2000:]

    assert report.row_count == stored_rows
    assert served_ids == stored_ids  # the same rows, duplicated ones included (statuses may have moved on)
    assert served_units == stored_units
