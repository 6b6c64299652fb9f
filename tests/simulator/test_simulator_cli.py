"""``sms-pipeline simulator``: started as a real process, spoken to over HTTP."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from sms_pipeline.cli import main

_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_"))}


def test_unknown_fault_is_a_one_line_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SMS_PIPELINE_HOME", str(tmp_path))

    assert main(["simulator", "--fault", "teleport=0.5"]) == 2
    err = capsys.readouterr().err
    assert "unknown fault 'teleport'" in err and err.count("\n") == 1


def test_serves_until_interrupted(tmp_path, start_time):
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sms-pipeline")), "simulator", "--port", "0", "--seed", "3",
         "--start", start_time.isoformat(), "--fault", "duplicate_rows=0.5", "--password", "s3cret"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**_ENV, "SMS_PIPELINE_HOME": str(tmp_path)},
    )
    try:
        base_url = process.stdout.readline().split()[-1]
        admin_url = process.stdout.readline().split()[1]
        answer = httpx.post(f"{base_url}/send", data={"userid": "demo", "password": "s3cret", "senderid": "SGCSMS",
                                                      "msg": "hello", "mobile": "919876543210"}).json()
        clock = httpx.get(f"{admin_url}/clock").json()
        faults = httpx.get(f"{admin_url}/faults").json()
    finally:
        process.send_signal(signal.SIGINT)
        returncode = process.wait(timeout=15)
    assert answer["status"] == "success"
    assert clock["now"] == start_time.isoformat() and clock["virtual"]
    assert faults["rates"]["duplicate_rows"] == 0.5
    assert returncode == 0


def test_a_stop_signal_taken_by_a_server_thread_still_stops_it(tmp_path):
    """A stop signal that reaches a server thread instead of the main one: Python raises it in the main
    thread only, when that thread next runs, so a main thread waiting without end never stopped. The
    signal is sent to a server thread here, every time."""
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sms-pipeline")), "simulator", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**_ENV, "SMS_PIPELINE_HOME": str(tmp_path)},
    )
    try:
        process.stdout.readline()  # the provider API's URL: the server threads are up
        threads = [int(tid) for tid in os.listdir(f"/proc/{process.pid}/task") if int(tid) != process.pid]
        assert threads
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.tgkill(process.pid, threads[0], signal.SIGINT) == 0, os.strerror(ctypes.get_errno())
        returncode = process.wait(timeout=15)
    finally:
        process.kill()
    assert returncode == 0
