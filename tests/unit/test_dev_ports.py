"""``sms-pipeline dev`` starts its simulator and receiver on ports it picks: another process may take a
picked port before the child binds it, and dev then picks again (real processes, real sockets)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from sms_pipeline.cli import dev_cmd

HOST = "127.0.0.1"
# A child that listens on the port it is given, or exits like a server whose port was taken.
LISTENER = "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(60)"


@pytest.fixture
def taken_port():
    """A port bound and not listening, as the local end of an outgoing connection holds one."""
    with socket.socket() as holder:
        holder.bind((HOST, 0))
        yield holder.getsockname()[1]


@pytest.fixture
def children():
    started: list[subprocess.Popen] = []
    yield started
    for child in started:
        child.kill()
        child.wait()


def _starter(children: list[subprocess.Popen], tried: list[int]):
    def start_child(port: int) -> None:
        tried.append(port)
        child = subprocess.Popen([sys.executable, "-c", LISTENER, str(port)], stderr=subprocess.DEVNULL)
        children.append(child)
        dev_cmd._wait_for_port(HOST, port, child, "listener", timeout_s=20)
    return start_child


def test_a_picked_port_taken_before_the_child_binds_it_is_picked_again(monkeypatch, taken_port, children):
    picks = iter([taken_port])
    real_free_port = dev_cmd._free_port
    monkeypatch.setattr(dev_cmd, "_free_port", lambda host: next(picks, None) or real_free_port(host))
    tried: list[int] = []
    port = dev_cmd.start_listening(HOST, 0, _starter(children, tried))
    assert tried == [taken_port, port] and port != taken_port
    assert children[0].poll() not in (None, 0) and children[1].poll() is None  # the first exited, the second runs
    with socket.create_connection((HOST, port), timeout=2):
        pass


def test_a_port_the_user_gave_is_never_swapped_for_another(taken_port, children):
    tried: list[int] = []
    with pytest.raises(dev_cmd.ChildExited, match="listener exited"):
        dev_cmd.start_listening(HOST, taken_port, _starter(children, tried))
    assert tried == [taken_port]


def test_it_gives_up_after_its_tries(monkeypatch, taken_port, children):
    monkeypatch.setattr(dev_cmd, "_free_port", lambda host: taken_port)
    tried: list[int] = []
    with pytest.raises(dev_cmd.ChildExited):
        dev_cmd.start_listening(HOST, 0, _starter(children, tried), tries=2)
    assert tried == [taken_port, taken_port]
