"""``sms-pipeline dev`` starts its simulator and receiver on port 0 and reads the port each one bound from
what it prints once it accepts connections: no port is picked first and bound later, so no other process
can take it in between (real child processes, real sockets; the real simulator for its own line)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sms_pipeline.cli import dev_cmd

# A child that binds port 0, listens, and announces the port as the receiver does.
RECEIVER_LIKE = ("import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                 "print(f'receiver: POST http://127.0.0.1:{s.getsockname()[1]}/dlr/*** (counts: ...)', flush=True); "
                 "time.sleep(60)")


@pytest.fixture
def children():
    started: list[subprocess.Popen] = []
    yield started
    for child in started:
        child.kill()
        child.wait()


def _start(children: list[subprocess.Popen], command: list[str], pattern) -> tuple[subprocess.Popen, dev_cmd.Announcement]:
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    children.append(child)
    announcement = dev_cmd.Announcement(pattern)
    dev_cmd._start_forwarder(child, Path("/dev/null"), announcement)
    return child, announcement


def _accepts(url: str) -> bool:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2):
        return True


def test_the_port_a_child_bound_is_read_from_its_announcement(children):
    child, announcement = _start(children, [sys.executable, "-c", RECEIVER_LIKE], dev_cmd.RECEIVER_UP)
    url = announcement.wait(child, "receiver", timeout_s=20)
    assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
    assert _accepts(url)


def test_the_real_simulator_announces_the_port_it_bound(children, tmp_path):
    command = [sys.executable, "-m", "sms_pipeline.cli", "simulator", "--host", "127.0.0.1", "--port", "0"]
    child, announcement = _start(children, command, dev_cmd.SIMULATOR_UP)
    url = announcement.wait(child, "provider simulator", timeout_s=60)
    assert url.endswith("/SMSApi") and _accepts(url)


def test_a_child_that_exits_first_is_one_error(children):
    child, announcement = _start(children, [sys.executable, "-c", "raise SystemExit(3)"], dev_cmd.RECEIVER_UP)
    with pytest.raises(dev_cmd.UserError, match="the receiver exited with code 3"):
        announcement.wait(child, "receiver", timeout_s=20)


def test_a_child_that_never_announces_times_out(children):
    child, announcement = _start(children, [sys.executable, "-c", "import time; print('starting', flush=True); time.sleep(60)"],
                                 dev_cmd.RECEIVER_UP)
    with pytest.raises(dev_cmd.UserError, match="did not start within 1 s"):
        announcement.wait(child, "receiver", timeout_s=1)
