"""Whether the process that ran a run is gone: by its host, pid and the process's start (run_guard)."""

from __future__ import annotations

import subprocess

from sms_pipeline.orchestration.processes import HOST_TAG, PID_TAG, ProcessIdentity, _stat, process_gone
from tests.support.dagster_instance import ended_process, identity_of, live_process, wait_until


def test_this_process_is_there_and_its_tags_say_so() -> None:
    me = ProcessIdentity.current()
    assert ProcessIdentity.from_tags(me.tags()) == me
    assert process_gone(me, me) is False
    boot, namespace, start = me._parts()
    assert boot and namespace and start.isdigit()  # Linux: /proc gives all three


def test_a_live_process_is_there_and_an_ended_one_is_gone() -> None:
    me = ProcessIdentity.current()
    with live_process() as alive:
        assert process_gone(alive, me) is False
    assert process_gone(alive, me) is True
    assert process_gone(ended_process(), me) is True


def test_a_pid_now_used_by_another_process_is_gone() -> None:
    me = ProcessIdentity.current()
    with live_process() as alive:
        boot, namespace, start = alive._parts()
        earlier = ProcessIdentity(alive.host, alive.pid, f"{boot}/{namespace}/{int(start) - 1000}")
        assert process_gone(earlier, me) is True


def test_a_killed_process_not_yet_waited_for_is_gone() -> None:
    child = subprocess.Popen(["sleep", "600"])
    try:
        identity = identity_of(child.pid)
        child.kill()
        wait_until(lambda: (_stat(child.pid) or ("?",))[0] == "Z", 10, "the child to become a zombie")
        assert process_gone(identity, ProcessIdentity.current()) is True
    finally:
        child.wait()


def test_processes_of_other_hosts_or_containers_are_not_judged_but_a_restart_is_seen() -> None:
    me = ProcessIdentity.current()
    boot, namespace, start = me._parts()
    assert process_gone(ProcessIdentity("another-host", me.pid, me.process), me) is None
    assert process_gone(ProcessIdentity(me.host, me.pid, f"{boot}/4026531999/{start}"), me) is None
    assert process_gone(ProcessIdentity(me.host, me.pid, f"another-boot/{namespace}/{start}"), me) is True


def test_runs_without_both_tags_are_not_ours() -> None:
    assert ProcessIdentity.from_tags({}) is None
    assert ProcessIdentity.from_tags({HOST_TAG: "h"}) is None
    assert ProcessIdentity.from_tags({HOST_TAG: "h", PID_TAG: "x1"}) is None
    assert ProcessIdentity.from_tags({HOST_TAG: "h", PID_TAG: "12"}) == ProcessIdentity("h", 12, "")
