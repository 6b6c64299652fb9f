"""Chaos tests: worker processes started, SIGKILLed and restarted; the simulator's ledger read back.

Shared by the tests in ``tests/chaos``. Only processes a :class:`Workers`
started are ever signalled, by their own handle.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from sms_pipeline.simulator.server import RunningSimulator

WORKER_EXECUTABLE = str(Path(sys.executable).with_name("sms-pipeline"))


def worker_command(batch_size: int) -> list[str]:
    """``sms-pipeline worker`` of this virtualenv with ``batch_size`` rows per request."""
    return [WORKER_EXECUTABLE, "worker", "--batch-size", str(batch_size)]


@dataclass
class Workers:
    """The worker processes a test started (and only those are ever signalled).

    ``size`` slots hold the long-running workers; :meth:`start` with slot
    None starts an extra one (e.g. a ``--once`` drain).
    """

    env: dict[str, str]
    log_dir: Path
    command: list[str]
    size: int
    slots: list[subprocess.Popen | None] = field(init=False)
    every: list[subprocess.Popen] = field(default_factory=list)
    kills: int = 0

    def __post_init__(self) -> None:
        self.slots = [None] * self.size

    def start(self, slot: int | None, *extra: str) -> subprocess.Popen:
        """A worker in ``slot`` (None: an extra one, e.g. for the drain), its output in a file of its own."""
        out = (self.log_dir / f"worker-{slot}-{len(self.every)}.out").open("w")
        process = subprocess.Popen([*self.command, *extra], env=self.env, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        self.every.append(process)
        if slot is not None:
            self.slots[slot] = process
        return process

    def kill_and_restart(self, slot: int) -> bool:
        """SIGKILL the worker in ``slot`` (if it still runs) and start another there; True when one was killed."""
        process = self.slots[slot]
        assert process is not None
        killed = process.poll() is None
        if killed:
            process.send_signal(signal.SIGKILL)
            self.kills += 1
        process.wait(timeout=30)
        self.start(slot)
        return killed

    def stop_all(self, sig: signal.Signals) -> None:
        """Signal every worker still running, wait for it (SIGKILL after a minute)."""
        running = [process for process in self.every if process.poll() is None]
        for process in running:
            process.send_signal(sig)
        for process in running:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=30)


def count_states(conn: psycopg.Connection, states: tuple[str, ...]) -> int:
    """Rows of ``msg.outbound_message`` in any of ``states``."""
    return conn.execute("SELECT count(*) FROM msg.outbound_message WHERE state::text = ANY(%s)",
                        (list(states),)).fetchone()[0]


def billed_recipients(sim: RunningSimulator) -> list[tuple[str, str, str, int]]:
    """(transaction id, text as billed, mobile, units) for every recipient the simulator billed."""
    view = sim.state.view()
    ledger = view.ledger
    return [(r.transaction_id, r.text, ledger.mobiles[row], r.units)
            for r in ledger.requests[: view.request_count]
            for row in range(r.first_row, r.first_row + r.count)]
