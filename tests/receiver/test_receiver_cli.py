"""``sms-pipeline receiver`` as a user starts it: refuses without a secret, never shows the secret."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from sms_pipeline.cli import dev_cmd
from tests.receiver.receiver_support import PATH, SECRET, form, inbox
from tests.support.environment import app_environ


def test_without_a_secret_it_refuses_to_start_with_one_line(run):
    code, out, err = run("receiver", "--port", "0")

    assert code == 2 and out == ""
    assert err == ("sms-pipeline: error: SMS_PIPELINE_WEBHOOK_SECRET is not set: the receiver accepts pushes only "
                   "on /dlr/<secret> and will not start without one\n")


def test_a_guessable_secret_is_refused_without_showing_it(run):
    code, _, err = run("receiver", SMS_PIPELINE_WEBHOOK_SECRET="hunter2")

    assert code == 2 and err.count("\n") == 1
    assert "SMS_PIPELINE_WEBHOOK_SECRET" in err and "hunter2" not in err


def test_a_port_in_use_is_one_line(run):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run("receiver", "--port", str(port), SMS_PIPELINE_WEBHOOK_SECRET=SECRET)

    assert (code, out) == (2, "")
    assert err.startswith(f"sms-pipeline: error: cannot listen on 127.0.0.1:{port}: ") and err.count("\n") == 1


@pytest.mark.slow
def test_the_secret_is_in_no_output_and_no_log(db_url, db, tmp_path: Path):
    """At DEBUG with --verbose, through valid, refused and forbidden pushes and a stop: the secret shows nowhere."""
    home = tmp_path / "home"
    env = app_environ(SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_HOME=str(home),
                      SMS_PIPELINE_WEBHOOK_SECRET=SECRET, SMS_PIPELINE_LOG_LEVEL="DEBUG")
    process = subprocess.Popen([sys.executable, "-m", "sms_pipeline.cli", "--verbose", "receiver", "--port", "0"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("receiver: POST http://127.0.0.1:") and "/dlr/*** " in line, line
        base = line.split()[2].removesuffix("/dlr/***")
        assert dev_cmd.RECEIVER_UP.match(line.rstrip("\n")).group(1) == base  # what `dev` reads
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.post(PATH, data=form()).text == "stored"
            assert http.post(PATH, params=form(msg_id="x")).status_code == 400
            assert http.post(PATH.replace(SECRET, "wrong-" + SECRET)).status_code == 403
            assert http.get(PATH).status_code == 405
            assert http.get("/healthz").json()["counts"]["stored"] == 1
    finally:
        process.send_signal(signal.SIGTERM)
        rest, err = process.communicate(timeout=30)

    assert process.returncode == 0, err
    assert len(inbox(db)) == 1
    logs = "".join(path.read_text(encoding="utf-8") for path in (home / "logs").glob("*.log"))
    assert "receipt push refused: msg_id is not a message id" in logs  # the log does say what happened
    for text in (line, rest, err, logs):
        assert SECRET not in text
