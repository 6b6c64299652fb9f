"""Which process ran a run, and is it still there?

A run executed in a process of ours (``sms-pipeline materialize``, the demo)
records that process in its tags; a run launched by the daemon names its
worker's pid in its first engine event. Either way, another process on the
same host can tell from ``/proc`` whether that process is gone, or whether its
pid now belongs to a later process (docs/design.md#runs-that-die).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

HOST_TAG = "sms_pipeline/host"
PID_TAG = "sms_pipeline/pid"
# "<boot id>/<pid namespace>/<start time in clock ticks since boot>" (parts empty where unknown)
PROCESS_TAG = "sms_pipeline/process"


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of ``pid`` from /proc, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return (fields[0], fields[19]) if len(fields) > 19 else None  # fields 3 and 22 of proc(5)


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    process: str = ""  # "<boot id>/<pid namespace>/<start ticks>"

    @classmethod
    def current(cls) -> ProcessIdentity:
        stat = _stat(os.getpid())
        return cls(socket.gethostname(), os.getpid(), f"{_boot_id()}/{_pid_namespace()}/{stat[1] if stat else ''}")

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> ProcessIdentity | None:
        host, pid = tags.get(HOST_TAG), tags.get(PID_TAG, "")
        if not host or not pid.isdigit():
            return None
        return cls(host, int(pid), tags.get(PROCESS_TAG, ""))

    def tags(self) -> dict[str, str]:
        return {HOST_TAG: self.host, PID_TAG: str(self.pid), PROCESS_TAG: self.process}

    def _parts(self) -> tuple[str, str, str]:
        boot, namespace, start = ([*self.process.split("/"), "", "", ""])[:3]
        return boot, namespace, start

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}"


def process_gone(other: ProcessIdentity, me: ProcessIdentity) -> bool | None:
    """Whether ``other``'s process has ended: True, False, or None when this process cannot tell
    (another host, or another pid namespace on it)."""
    if other.host != me.host:
        return None
    boot, namespace, start = other._parts()
    my_boot, my_namespace, _ = me._parts()
    if boot and my_boot and boot != my_boot:
        return True  # the machine has restarted since
    if namespace and my_namespace and namespace != my_namespace:
        return None  # another container's processes are out of sight
    try:
        os.kill(other.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, as another user's process
    stat = _stat(other.pid)
    if stat is None:
        return False  # no /proc: the pid exists, take it as the run's
    state, now_start = stat
    return state in ("Z", "X") or bool(start and now_start != start)


def process_started_at(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if there is none (or a zombie)."""
    stat = _stat(pid)
    try:
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration):
        return None
    if stat is None or stat[0] in ("Z", "X"):
        return None
    return boot + int(stat[1]) / os.sysconf("SC_CLK_TCK")
