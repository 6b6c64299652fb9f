"""``sms-pipeline reconcile recent``: one pass, or a loop that stops cleanly on SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

import pytest

from sms_pipeline.cli.reconcile_cmds import interval
from tests.support.pushes import inbox, one_sent, push
from tests.support.environment import app_environ, provider_variables


def test_intervals():
    assert [interval(raw) for raw in ("10s", "1m", "30", "2.5", " 5S ")] == [10, 60, 30, 2.5, 5]
    for bad in ("0", "-1", "10h", "s", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            interval(bad)


def test_one_pass_fetches_the_empty_code_table_and_prints_counts_only(world, run):
    ((key, msg_id),) = one_sent(world)
    assert push(world, msg_id, "000")
    code, out, err = run("reconcile", "recent", **provider_variables(world.sim.base_url, world.tz.key))
    assert (code, err) == (0, "")
    (line,) = out.splitlines()
    assert "pushes=1 events=1 matched=1 not_found=0 ambiguous=0 waiting=0 moved=1 reconciled=1" in line
    assert "lag_p50=" in line and "lag_p95=" in line
    assert msg_id not in line and world.row(key)["recipient"] not in line
    assert world.row(key)["state"] == "delivered"
    assert world.conn.execute("SELECT count(*) FROM dlr.delivery_codes").fetchone()[0] > 0
    assert run("reconcile", "recent", **provider_variables(world.sim.base_url, world.tz.key))[:2] == (0, "")


def test_without_a_code_table_or_a_provider_pushes_wait(world, run):
    ((_, msg_id),) = one_sent(world)
    assert push(world, msg_id, "000")
    code, out, err = run("reconcile", "recent", **provider_variables("http://127.0.0.1:9", world.tz.key),
                         SMS_PROVIDER_CONNECT_TIMEOUT_S="0.5", SMS_PIPELINE_REPORT_MAX_RETRIES="0")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "code table" in err
    assert [r["reconciled_at"] for r in inbox(world)] == [None]
    assert world.receipts(msg_id) == []


def test_the_loop_reconciles_each_pass_and_stops_cleanly_on_sigterm(world, tmp_path):
    ((key, msg_id),) = one_sent(world)
    env = app_environ(SMS_PIPELINE_DATABASE_URL=world.db_url, SMS_PIPELINE_HOME=str(tmp_path / "home"),
                      **provider_variables(world.sim.base_url, world.tz.key))
    loop = subprocess.Popen([sys.executable, "-m", "sms_pipeline.cli", "reconcile", "recent", "--every", "0.2s"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert push(world, msg_id, "000")
        deadline = time.monotonic() + 60
        while world.row(key)["state"] != "delivered" and time.monotonic() < deadline:
            assert loop.poll() is None
            time.sleep(0.1)
        assert world.row(key)["state"] == "delivered"
        loop.send_signal(signal.SIGTERM)
        out, err = loop.communicate(timeout=30)
    finally:
        if loop.poll() is None:
            os.kill(loop.pid, signal.SIGKILL)
            loop.wait()
    assert loop.returncode == 0
    assert len(out.splitlines()) == 1 and "reconciled=1" in out  # a line per pass that did something
    assert "SIGTERM" in err
