"""``sms-pipeline dev`` starts its simulator and receiver on port 0 and reads the port each one bound from
what it prints once it accepts connections: no port is picked first and bound later, so no other process
can take it in between (real child processes, real sockets; the real simulator for its own line, and
tests/receiver/test_receiver_cli.py for the receiver's)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sms_pipeline.cli import dev_cmd
from sms_pipeline.errors import UserError
from tests.support.environment import app_environ

HOST = "127.0.0.1"
# A child that binds port 0, listens, and announces the port as the receiver does.
RECEIVER_LIKE = ("import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                 "print(f'receiver: POST http://127.0.0.1:{s.getsockname()[1]}/dlr/*** (counts: ...)', "
                 "flush=True); time.sleep(60)")
SLEEPER = "import time; print('starting', flush=True); time.sleep(60)"


class Children:
    """The tests' child processes and their forwarders, all stopped and closed afterwards."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[tuple[subprocess.Popen, dev_cmd.Forwarder]] = []

    def start(self, command: list[str], pattern: re.Pattern[str], env: dict[str, str] | None = None):
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        announcement = dev_cmd.Announcement(pattern)
        forwarder = dev_cmd._start_forwarder(child, self.folder / f"child-{len(self.started)}.log", announcement)
        self.started.append((child, forwarder))
        return child, announcement

    def stop(self) -> None:
        for child, forwarder in self.started:
            child.kill()
            child.wait()
            forwarder.join(5)
            child.stdout.close()


@pytest.fixture
def children(tmp_path):
    started = Children(tmp_path)
    yield started
    started.stop()


def _accepts(url: str) -> bool:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2):
        return True


def test_the_port_a_child_bound_is_read_from_its_announcement(children, tmp_path):
    child, announcement = children.start([sys.executable, "-c", RECEIVER_LIKE], dev_cmd.RECEIVER_UP)
    url = announcement.wait(child, "receiver", timeout_s=20)
    assert url.startswith("http://127.0.0.1:") and _accepts(url)
    assert "receiver: POST " + url in (tmp_path / "child-0.log").read_text()  # and the line reached its log


def test_the_real_simulator_announces_the_port_it_bound(children, tmp_path):
    env = app_environ(SMS_PIPELINE_HOME=str(tmp_path / "home"))
    command = [sys.executable, "-m", "sms_pipeline.cli", "simulator", "--host", HOST, "--port", "0"]
    child, announcement = children.start(command, dev_cmd.SIMULATOR_UP, env)
    url = announcement.wait(child, "provider simulator", timeout_s=60)
    assert url.endswith("/SMSApi") and _accepts(url)


def test_a_child_that_exits_first_is_one_error(children):
    child, announcement = children.start([sys.executable, "-c", "raise SystemExit(3)"], dev_cmd.RECEIVER_UP)
    with pytest.raises(UserError, match="the receiver exited with code 3"):
        announcement.wait(child, "receiver", timeout_s=20)


def test_a_child_that_never_announces_times_out(children):
    child, announcement = children.start([sys.executable, "-c", SLEEPER], dev_cmd.RECEIVER_UP)
    with pytest.raises(UserError, match="did not announce its URL within 1 s"):
        announcement.wait(child, "receiver", timeout_s=1)


def test_a_simulator_port_in_use_is_named_by_its_option():
    with socket.socket() as holder:
        holder.bind((HOST, 0))
        holder.listen()
        with pytest.raises(UserError, match="choose another with --simulator-port"):
            dev_cmd._require_free(HOST, holder.getsockname()[1], "provider simulator", "--simulator-port")
