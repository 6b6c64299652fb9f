"""Send throughput: recipient rows per second through the worker, and the database floor.

    python bench/send_throughput.py [--rows 200000] [--rounds 4] [--batch-size 500] [--workers 2] [--concurrency 1]

Two phases of ``--rows`` pending transactional rows each (one body per round,
distinct numbers), run in ``--rounds`` alternating rounds so that the load
other jobs put on a shared machine falls on both alike:

1. **End to end**: ``--workers`` ``sms-pipeline worker --once`` processes
   claim the rows in batches of ``--batch-size`` and send them through the
   real client over loopback HTTP and the fault proxy to the simulator (in
   this process, no faults), writing each answer back.
2. **Database floor**: the same worker loop in as many processes, the same
   claim (``claim_queue.sql``) and fan-out (``worker_submit.sql``; no
   ``invalidMobile``) statements, but each answer is made in the process (a
   success for every recipient) instead of over HTTP.

Before each round the new rows are vacuumed and analysed and a checkpoint is
taken, so no round pays for another's upkeep. Rows/s is measured on the
database's clock, from the first claim to the last submission (process
start-up excluded); CPU seconds per party say where the time went.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import count
from pathlib import Path

import psycopg

from sms_pipeline.core.clock import RealClock
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.settings import PREFIXES
from sms_pipeline.simulator.server import RunningSimulator, run_simulator
from sms_pipeline.send.batching import SendBatch, plan_requests
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.send.loop import Sent, Worker
from sms_pipeline.send.outcomes import AppliedOutcome, apply_outcome

sys.path.insert(0, str(Path(__file__).resolve().parent))
from send_support import ZONE, CpuMeter, enqueue, load_prices, machine_line, scratch_database, sms_records  # noqa: E402

BODY = "Your order has shipped and will arrive tomorrow. Track it in the app."
WORKER = str(Path(sys.executable).with_name("sms-pipeline"))


@dataclass
class Phase:
    label: str
    own_label: str
    children_label: str
    rows: int = 0
    window_s: float = 0.0  # first claim .. last submission, database clock, summed over rounds
    cpu_s: dict[str, float] = field(default_factory=lambda: {"own": 0.0, "children": 0.0, "database": 0.0})

    def add(self, rows: int, window_s: float, meter: CpuMeter) -> None:
        self.rows += rows
        self.window_s += window_s
        self.cpu_s["own"] += meter.own
        self.cpu_s["children"] += meter.children
        self.cpu_s["database"] += meter.database or 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.window_s

    def cpu_line(self) -> str:
        per_row = {name: seconds / self.rows * 1e6 for name, seconds in self.cpu_s.items()}
        return (f"{self.own_label} {self.cpu_s['own']:.1f} s ({per_row['own']:.0f} µs/row), "
                f"{self.children_label} {self.cpu_s['children']:.1f} s ({per_row['children']:.0f} µs/row), "
                f"Postgres {self.cpu_s['database']:.1f} s ({per_row['database']:.0f} µs/row)")

    @property
    def cpu_per_row_us(self) -> float:
        return sum(self.cpu_s.values()) / self.rows * 1e6


def _prepare(url: str, rows: int, first: int, body: str) -> None:
    """Queue a round's rows, then leave the database as autovacuum and a checkpoint would."""
    enqueue(url, sms_records(first, rows, body, f"from{first}"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) msg.outbound_message")
        conn.execute("CHECKPOINT")


def _round(url: str, rows: int, body: str, phase: Phase, run: Callable[[], None]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        meter = CpuMeter(conn).start()
        run()
        meter.stop()
        submitted, window = conn.execute(
            """SELECT count(*), extract(epoch FROM max(submitted_at) - min(claimed_at))
                 FROM msg.outbound_message WHERE body = %s AND state = 'submitted'""", (body,)).fetchone()
    assert submitted == rows, (body, submitted)
    phase.add(rows, float(window), meter)


def _end_to_end(url: str, sim: RunningSimulator, args: argparse.Namespace, home: str) -> Callable[[], None]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    env.update({"SMS_PIPELINE_DATABASE_URL": url, "SMS_PIPELINE_HOME": home, "SMS_PROVIDER_BASE_URL": sim.base_url,
                "SMS_PROVIDER_USERID": "demo", "SMS_PROVIDER_PASSWORD": "demo", "SMS_PROVIDER_TIMEZONE": ZONE,
                "SMS_PIPELINE_LOG_LEVEL": "WARNING"})

    def run() -> None:
        processes = [subprocess.Popen([WORKER, "worker", "--once", "--batch-size", str(args.batch_size),
                                       "--concurrency", str(args.concurrency)],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                     for _ in range(args.workers)]
        for process in processes:
            _, errors = process.communicate()
            assert process.returncode == 0, f"worker exited with {process.returncode}: {errors}"

    return run


@dataclass(frozen=True)
class InProcessAnswers:
    """The bulk strategy's grouping and write-back, with the provider's success made here (no HTTP)."""

    price_time_zone: str
    claim_limit: int | None = None

    def plan(self, messages: list[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return plan_requests(messages, batch_size)

    def send(self, batch: SendBatch) -> Sent:
        transaction_id = f"{os.getpid()}{next(_TRANSACTIONS):012d}"
        return Sent(batch, SendAccepted(transaction_id, tuple(batch.recipients), ()))

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        return apply_outcome(conn, sent.batch, sent.outcome, now=now, price_time_zone=self.price_time_zone)


_TRANSACTIONS = count(1)


def _floor_worker(url: str, batch_size: int, concurrency: int) -> None:
    worker = Worker(lambda: psycopg.connect(url, autocommit=True), {("sms", "transactional"): InProcessAnswers(ZONE)},
                    clock=RealClock(), batch_size=batch_size, lease=timedelta(minutes=5),
                    breaker=CircuitBreaker(5, 30.0), concurrency=concurrency)
    worker.run(once=True)


def _floor(url: str, args: argparse.Namespace) -> Callable[[], None]:
    context = multiprocessing.get_context("spawn")

    def run() -> None:
        processes = [context.Process(target=_floor_worker, args=(url, args.batch_size, args.concurrency)) for _ in range(args.workers)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        assert [p.exitcode for p in processes] == [0] * args.workers

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="recipient rows per phase")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds the rows are split into")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=1, help="send loops (threads) per worker process")
    args = parser.parse_args()
    per_round = args.rows // args.rounds

    print(f"machine before: {machine_line()}", flush=True)
    e2e = Phase(f"end to end: {args.workers} worker processes, HTTP to the simulator",
                "bench process (simulator)", "workers")
    floor = Phase(f"database floor: same claim + fan-out SQL, {args.workers} processes, answers made in-process",
                  "bench process", "worker processes")
    with scratch_database("send") as url, run_simulator(seed=1, timezone=ZONE) as sim, \
            tempfile.TemporaryDirectory() as home:  # the workers' logs and key file
        with psycopg.connect(url, autocommit=True) as conn:
            load_prices(conn)
        runs = ((e2e, _end_to_end(url, sim, args, home)), (floor, _floor(url, args)))
        for number in range(args.rounds):
            for index, (phase, run) in enumerate(runs):
                body = f"{BODY} ({number}-{index})"
                _prepare(url, per_round, (2 * number + index) * per_round, body)
                _round(url, per_round, body, phase, run)
        assert sim.state.ledger_size() == e2e.rows
    print(f"machine after: {machine_line()}")
    print(f"{e2e.rows:,} recipients per phase in {args.rounds} alternating rounds, batches of {args.batch_size}, "
          f"{args.workers} worker processes x {args.concurrency} send loop(s)")
    print("| phase | rows/s (first claim .. last submission) | CPU per row, all parties | CPU |")
    print("|---|---|---|---|")
    for phase in (e2e, floor):
        print(f"| {phase.label} | {phase.rows_per_s:,.0f} | {phase.cpu_per_row_us:.0f} µs | {phase.cpu_line()} |")
    print(f"floor / end to end: {floor.rows_per_s / e2e.rows_per_s:.2f} (rows/s), "
          f"{e2e.cpu_per_row_us / floor.cpu_per_row_us:.2f} (CPU per row, end to end over floor)")


if __name__ == "__main__":
    main()
