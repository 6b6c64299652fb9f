"""Send throughput: recipient rows per second through the worker, and the database floor.

    python bench/send_throughput.py [--rows 200000] [--rounds 4] [--batch-size 500] [--workers 2]
                                    [--concurrency 2] [--latency-ms 150]

Seven phases of ``--rows`` pending transactional rows each (distinct numbers),
run in ``--rounds`` alternating rounds (each round runs every phase once, the
order rotated by one phase per round) so that the load other jobs put on a
shared machine falls on all phases alike:

1. **Bulk, end to end**: one body per round. ``--workers`` ``sms-pipeline
   worker --once`` processes (default settings: ``SMS_PROVIDER_XML_SEND`` on)
   claim the rows in batches of ``--batch-size`` and send them through the
   real client over loopback HTTP and the fault proxy to a simulator in this
   process (no faults), writing each answer back.
2. **Bulk, end to end, without the ``sending`` step**: as many spawned
   processes that build what ``run_worker`` builds (settings, client,
   connection, queues with OTP polled first) and run the product's loop
   minus the start-request statement (``worker_start_request.sql``): each
   request goes out straight from ``claimed`` and its answer is written by
   ``worker_submit.sql`` with ``state = 'claimed'`` in place of ``state =
   'sending'`` (read at run time). The rule forbids ``claimed -> submitted``,
   so this scratch database's ``msg.is_legal_transition`` also allows it (the
   same function for every phase; one more list element).
3. **Personalised, end to end**: as 1, but a distinct body per row
   ("your order 4411 has shipped"), so the rows go out in XML multi-message
   requests (``PersonalisedSmsStrategy``).
4. **Database floor**: the product's worker loop (``Worker``) in as many
   processes, the same claim (``claim_candidates.sql`` + ``claim_take.sql``),
   start (``worker_start_request.sql``) and fan-out (``worker_submit.sql``;
   no ``invalidMobile``) statements, but each answer is made in the process
   (a success for every recipient) instead of over HTTP.
5. **Database floor without the ``sending`` step**: 4 minus the start
   statement, the fan-out from ``claimed`` as in 2.
6. and 7. **Bulk and personalised, end to end, at provider latency**: as 1
   and 3, against a second simulator whose ``slow`` fault fires on every
   request (``slow=1.0``, ``slow_delay_s`` = ``--latency-ms``): each answer
   comes that long after the simulator has done the request's work.
   ``--latency-ms 0`` leaves these phases out.

Before each round's phase its rows are queued, vacuumed and analysed and a
checkpoint is taken, so no phase pays for another's upkeep. Rows/s is
measured from the first claim to the last submission (the rows' own
``claimed_at`` / ``submitted_at``; process start-up excluded); CPU seconds
per party say where the time went. The ratios at the end are those issue 18
sets targets for, each printed with its target and PASS or MISS.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import secrets
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
from sms_pipeline.db import queries
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.settings import PREFIXES, Settings
from sms_pipeline.simulator.server import RunningSimulator, run_simulator
from sms_pipeline.send.batching import SendBatch, plan_requests
from sms_pipeline.send.breaker import CircuitBreaker
from sms_pipeline.send.claim import ClaimedMessage
from sms_pipeline.send.loop import SendStrategy, Sent, Worker
from sms_pipeline.send.outcomes import AppliedOutcome, apply_outcome, decide

sys.path.insert(0, str(Path(__file__).resolve().parent))
from send_support import ZONE, CpuMeter, enqueue, load_prices, machine_line, scratch_database, sms_records  # noqa: E402

BODY = "Your order has shipped and will arrive tomorrow. Track it in the app."
# A body of its own per row, as long as BODY (one GSM-7 segment either way).
PERSONAL_BODY = "Your order {n:07d} has shipped, arriving tomorrow. Track it in the app."
WORKER = str(Path(sys.executable).with_name("sms-pipeline"))


@dataclass
class Phase:
    label: str
    own_label: str
    children_label: str
    rows: int = 0
    window_s: float = 0.0  # first claim .. last submission, database clock, summed over rounds
    cpu_s: dict[str, float] = field(default_factory=lambda: {"own": 0.0, "children": 0.0, "database": 0.0})
    last_window_s: float = 0.0  # the latest round's window

    def add(self, rows: int, window_s: float, meter: CpuMeter) -> None:
        self.rows += rows
        self.window_s += window_s
        self.last_window_s = window_s
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




def _last_id(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT coalesce(max(id), 0) FROM msg.outbound_message").fetchone()[0]


def _prepare(url: str, records: list[dict]) -> int:
    """Queue a phase's rows, then leave the database as autovacuum and a checkpoint would; the id before them."""
    before = _last_id(url)
    enqueue(url, records)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) msg.outbound_message")
        conn.execute("CHECKPOINT")
    return before


def _records(first: int, rows: int, personalised: bool, tag: str) -> list[dict]:
    records = sms_records(first, rows, f"{BODY} ({tag})", f"from{first}")
    if personalised:
        for n, record in enumerate(records, first):
            record["body"] = PERSONAL_BODY.format(n=n)
    return records


def _round(url: str, rows: int, after_id: int, phase: Phase, run: Callable[[], None]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        meter = CpuMeter(conn).start()
        run()
        meter.stop()
        submitted, window = conn.execute(
            """SELECT count(*), extract(epoch FROM max(submitted_at) - min(claimed_at))
                 FROM msg.outbound_message WHERE id > %s AND state = 'submitted'""", (after_id,)).fetchone()
    assert submitted == rows, (phase.label, submitted, rows)
    phase.add(rows, float(window), meter)


def _worker_env(url: str, sim: RunningSimulator, home: str) -> dict[str, str]:
    """The workers' environment: the defaults but for the database, the simulator and the log level."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    env.update({"SMS_PIPELINE_DATABASE_URL": url, "SMS_PIPELINE_HOME": home, "SMS_PROVIDER_BASE_URL": sim.base_url,
                "SMS_PIPELINE_TEXT_HMAC_KEY": secrets.token_hex(32),
                "SMS_PROVIDER_USERID": "demo", "SMS_PROVIDER_PASSWORD": "demo", "SMS_PROVIDER_TIMEZONE": ZONE,
                "SMS_PROVIDER_XML_SEND": "true", "SMS_PIPELINE_LOG_LEVEL": "WARNING"})
    return env


def _end_to_end(url: str, sim: RunningSimulator, args: argparse.Namespace, home: str) -> Callable[[], None]:
    env = _worker_env(url, sim, home)

    def run() -> None:
        processes = [subprocess.Popen([WORKER, "worker", "--once", "--batch-size", str(args.batch_size),
                                       "--concurrency", str(args.concurrency)],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                     for _ in range(args.workers)]
        for process in processes:
            _, errors = process.communicate()
            assert process.returncode == 0, f"worker exited with {process.returncode}: {errors}"

    return run


# The fan-out from `claimed`, for the floor without the `sending` step: the
# product's statement with its one state condition changed, read at run time.
_SENDING_CONDITION = "AND m.state = 'sending'"


def _submit_from_claimed() -> str:
    text = queries.load("worker_submit")
    assert text.count(_SENDING_CONDITION) == 1, "worker_submit.sql changed: update the bench's floor"
    return text.replace(_SENDING_CONDITION, "AND m.state = 'claimed'")


def allow_claimed_to_submitted(url: str) -> None:
    """In this scratch database only: let the floor without the start step move `claimed -> submitted`."""
    with psycopg.connect(url, autocommit=True) as conn:
        definition = conn.execute(
            "SELECT pg_get_functiondef('msg.is_legal_transition(msg.message_state, msg.message_state)'"
            "::regprocedure)").fetchone()[0]
        widened, n = re.subn(r"(WHEN 'claimed'::msg\.message_state THEN \(p_to = ANY \(ARRAY\[)",
                             r"\1'submitted'::msg.message_state, ", definition)
        assert n == 1, "msg.is_legal_transition changed: update the bench's floor"
        conn.execute(widened)


@dataclass(frozen=True)
class InProcessAnswers:
    """The bulk strategy's grouping and write-back, with the provider's success made here (no HTTP)."""

    price_time_zone: str
    claim_limit: int | None = None
    from_claimed: bool = False  # the floor without the `sending` step

    def plan(self, messages: list[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return plan_requests(messages, batch_size)

    def send(self, batch: SendBatch) -> Sent:
        transaction_id = f"{os.getpid()}{next(_TRANSACTIONS):012d}"
        return Sent(batch, SendAccepted(transaction_id, tuple(batch.recipients), (), status_code="200"))

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        if not self.from_claimed:
            return apply_outcome(conn, sent.batch, sent.outcome, now=now, price_time_zone=self.price_time_zone)
        assert isinstance(sent.outcome, SendAccepted)
        with conn.transaction():
            submitted = conn.execute(_submit_from_claimed(), {
                "ids": sent.batch.ids, "created_ats": sent.batch.created_ats, "now": now,
                "transaction_id": sent.outcome.transaction_id, "campaign_id": sent.outcome.campaign_id,
                "status_code": sent.outcome.status_code, "price_time_zone": self.price_time_zone,
                # a bulk answer: no OTP text to fingerprint, no createTime (as apply_outcome writes it)
                "fingerprint": None, "created_at": sent.outcome.create_time}).fetchall()
        return AppliedOutcome(decide(sent.outcome, sent.batch.message_class),
                              submitted=len(submitted), unpriced=sum(1 for row in submitted if row[2]))


_TRANSACTIONS = count(1)


class _WorkerWithoutStart(Worker):
    """The product's loop minus the start-request statement (bench only: the pre-`sending` path).

    Overrides the loop's private ``_send_all``: send each planned request
    straight from ``claimed`` and write its answer (no release on stop: the
    floor never stops early).
    """

    def _send_all(self, conn: psycopg.Connection, strategy: SendStrategy, batches: list[SendBatch],
                  once: bool) -> None:
        for batch in batches:
            sent = strategy.send(batch)
            self._react(sent, strategy.record(conn, sent, now=self._clock.now()), once)


@dataclass(frozen=True)
class FromClaimed:
    """A real strategy (client over HTTP) whose accepted answers are written from `claimed` (no `sending` step)."""

    strategy: SendStrategy
    price_time_zone: str
    claim_limit: int | None = None

    def plan(self, messages: list[ClaimedMessage], batch_size: int) -> list[SendBatch]:
        return self.strategy.plan(messages, batch_size)

    def send(self, batch: SendBatch) -> Sent:
        return self.strategy.send(batch)

    def record(self, conn: psycopg.Connection, sent: Sent, *, now: datetime) -> AppliedOutcome:
        outcome = sent.outcome
        assert isinstance(outcome, SendAccepted) and not outcome.invalid and not outcome.unlisted, outcome
        return InProcessAnswers(self.price_time_zone, from_claimed=True).record(conn, sent, now=now)


def _end_to_end_without_start_worker(env: dict[str, str], batch_size: int, concurrency: int) -> None:
    """What ``sms-pipeline worker --once`` builds (``run_worker``), but the loop skips the start statement.

    Same settings, client, connection and queues (OTP included, polled first
    as the CLI's worker does); each SMS strategy's accepted answers are
    written from ``claimed``.
    """
    from sms_pipeline import settings as settings_module
    from sms_pipeline.db import connection
    from sms_pipeline.provider.client import ProviderClient
    from sms_pipeline.send.loop import select_queues
    from sms_pipeline.send.otp import OtpPolicy, otp_strategies
    from sms_pipeline.send.personalised import sms_strategies

    settings = settings_module.load(env)
    url = env["SMS_PIPELINE_DATABASE_URL"]
    policy = OtpPolicy.from_settings(settings)
    with ProviderClient.from_settings(settings) as client:
        sms = {key: FromClaimed(strategy, ZONE)
               for key, strategy in sms_strategies(client, ZONE, xml_send=settings.provider_xml_send,
                                                   campaign_request_size=settings.campaign_request_size).items()}
        queues = select_queues({**sms, **otp_strategies(client, ZONE, policy)})
        worker = _WorkerWithoutStart(
            lambda: connection.connect_url(url, autocommit=True), queues, clock=RealClock(),
            batch_size=batch_size, lease=timedelta(seconds=settings.claim_lease_s),
            breaker=CircuitBreaker(settings.circuit_breaker_failures, settings.circuit_breaker_cooldown_s),
            concurrency=concurrency)
        worker.run(once=True)


def _end_to_end_without_start(url: str, sim: RunningSimulator, args: argparse.Namespace,
                              home: str) -> Callable[[], None]:
    env = _worker_env(url, sim, home)
    return _in_processes(_end_to_end_without_start_worker, (env, args.batch_size, args.concurrency), args.workers)


def _floor_worker(url: str, batch_size: int, concurrency: int, with_start: bool) -> None:
    kind = Worker if with_start else _WorkerWithoutStart
    answers = InProcessAnswers(ZONE, from_claimed=not with_start)
    worker = kind(lambda: psycopg.connect(url, autocommit=True), {("sms", "transactional"): answers},
                  clock=RealClock(), batch_size=batch_size, lease=timedelta(minutes=5),
                  breaker=CircuitBreaker(5, 30.0), concurrency=concurrency)
    worker.run(once=True)


def _floor(url: str, args: argparse.Namespace, *, with_start: bool) -> Callable[[], None]:
    return _in_processes(_floor_worker, (url, args.batch_size, args.concurrency, with_start), args.workers)


def _in_processes(target: Callable[..., None], args: tuple, workers: int) -> Callable[[], None]:
    """A phase: ``workers`` spawned processes running ``target(*args)``, all of which must succeed."""
    context = multiprocessing.get_context("spawn")

    def run() -> None:
        processes = [context.Process(target=target, args=args) for _ in range(workers)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        assert [p.exitcode for p in processes] == [0] * workers

    return run


def _verdict(name: str, value: float, target: str, ok: bool, detail: str) -> bool:
    print(f"- {name}: **{value:.2f}** (target {target}): **{'PASS' if ok else 'MISS'}**; {detail}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="recipient rows per phase")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds the rows are split into")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=Settings.model_fields["worker_concurrency"].default,
                        help="send loops (threads) per worker process (default: the worker's)")
    parser.add_argument("--latency-ms", type=float, default=150.0,
                        help="the slow simulator's delay on every answer (0: no latency phases)")
    args = parser.parse_args()
    per_round = args.rows // args.rounds
    latency = args.latency_ms > 0

    print(f"machine before: {machine_line()}", flush=True)
    n = args.workers
    bulk = Phase(f"bulk (one body), end to end: {n} worker processes, HTTP to the simulator",
                 "bench process (simulator)", "workers")
    personal = Phase(f"personalised (a body per row, XML send), end to end: {n} worker processes",
                     "bench process (simulator)", "workers")
    floor = Phase(f"database floor: claim + start + fan-out SQL, {n} processes, answers made in-process",
                  "bench process", "worker processes")
    floor_bare = Phase(f"database floor without the `sending` step: claim + fan-out from `claimed`, {n} processes",
                       "bench process", "worker processes")
    bulk_bare = Phase(f"bulk, end to end without the `sending` step: the CLI worker's loop, client and queues "
                      f"minus the start statement, {n} processes", "bench process (simulator)", "workers")
    bulk_slow = Phase(f"bulk, end to end, simulator answers after {args.latency_ms:.0f} ms",
                      "bench process (simulator)", "workers")
    personal_slow = Phase(f"personalised, end to end, simulator answers after {args.latency_ms:.0f} ms",
                          "bench process (simulator)", "workers")
    slow_faults = {"slow": 1.0, "slow_delay_s": args.latency_ms / 1000}
    with scratch_database("send") as url, run_simulator(seed=1, timezone=ZONE) as sim, \
            run_simulator(seed=2, timezone=ZONE, faults=slow_faults) as slow_sim, \
            tempfile.TemporaryDirectory() as home:  # the workers' logs and key file
        with psycopg.connect(url, autocommit=True) as conn:
            load_prices(conn)
        allow_claimed_to_submitted(url)
        # (phase, personalised bodies, run)
        runs = [(bulk, False, _end_to_end(url, sim, args, home)),
                (bulk_bare, False, _end_to_end_without_start(url, sim, args, home)),
                (personal, True, _end_to_end(url, sim, args, home)),
                (floor, False, _floor(url, args, with_start=True)),
                (floor_bare, False, _floor(url, args, with_start=False))]
        if latency:
            runs += [(bulk_slow, False, _end_to_end(url, slow_sim, args, home)),
                     (personal_slow, True, _end_to_end(url, slow_sim, args, home))]
        first = 0
        for number in range(args.rounds):
            order = runs[number % len(runs):] + runs[:number % len(runs)]
            for phase, personalised, run in order:
                after_id = _prepare(url, _records(first, per_round, personalised, f"{number}-{first}"))
                first += per_round
                _round(url, per_round, after_id, phase, run)
                print(f"  round {number + 1}/{args.rounds}: {phase.label.split(':')[0]}: "
                      f"{per_round / max(phase.last_window_s, 1e-9):,.0f} rows/s", flush=True)
        assert sim.state.ledger_size() == bulk.rows + bulk_bare.rows + personal.rows
        if latency:
            assert slow_sim.state.ledger_size() == bulk_slow.rows + personal_slow.rows
            assert slow_sim.faults.fired()["slow"] > 0
    print(f"machine after: {machine_line()}")
    print(f"{bulk.rows:,} recipients per phase in {args.rounds} alternating rounds, batches of {args.batch_size}, "
          f"{args.workers} worker processes x {args.concurrency} send loop(s)")
    print("| phase | rows/s (first claim .. last submission) | CPU per row, all parties | CPU |")
    print("|---|---|---|---|")
    phases = [bulk, bulk_bare, personal, floor, floor_bare] + ([bulk_slow, personal_slow] if latency else [])
    for phase in phases:
        print(f"| {phase.label} | {phase.rows_per_s:,.0f} | {phase.cpu_per_row_us:.0f} µs | {phase.cpu_line()} |")
    print(f"floor / end to end: {floor.rows_per_s / bulk.rows_per_s:.2f} (rows/s), "
          f"{bulk.cpu_per_row_us / floor.cpu_per_row_us:.2f} (CPU per row, end to end over floor)")

    print("\nTargets (issue 18):")
    step_cost = 1 - bulk.rows_per_s / bulk_bare.rows_per_s
    _verdict("cost of the `sending` step, bulk end to end (1 - with / without, rows/s)", step_cost, "<= 0.15",
             step_cost <= 0.15,
             f"{bulk.rows_per_s:,.0f} rows/s with it (`sms-pipeline worker`), {bulk_bare.rows_per_s:,.0f} without; "
             f"CPU per row {bulk.cpu_per_row_us:.0f} vs {bulk_bare.cpu_per_row_us:.0f} µs")
    step_cost = 1 - floor.rows_per_s / floor_bare.rows_per_s
    step_s_per_row = 1 / floor.rows_per_s - 1 / floor_bare.rows_per_s
    _verdict("cost of the `sending` step, database floor (1 - with / without, rows/s)", step_cost, "<= 0.15",
             step_cost <= 0.15,
             f"{floor.rows_per_s:,.0f} rows/s with it, {floor_bare.rows_per_s:,.0f} without; "
             f"{step_s_per_row * 1e6:.1f} µs of wall time per row; CPU per row {floor.cpu_per_row_us:.0f} vs "
             f"{floor_bare.cpu_per_row_us:.0f} µs")
    within = floor.rows_per_s / bulk.rows_per_s
    _verdict("database floor / bulk end to end (rows/s)", within, "<= 2", within <= 2.0,
             f"{bulk.rows_per_s:,.0f} rows/s end to end, {floor.rows_per_s:,.0f} floor (both with the step)")
    ratio = personal.rows_per_s / bulk.rows_per_s
    _verdict("personalised / bulk, end to end (rows/s)", ratio, ">= 0.8", ratio >= 0.8,
             f"{personal.rows_per_s:,.0f} vs {bulk.rows_per_s:,.0f} rows/s")
    if latency:
        ratio = personal_slow.rows_per_s / bulk_slow.rows_per_s
        _verdict(f"personalised / bulk at {args.latency_ms:.0f} ms per request (rows/s)", ratio, ">= 0.8",
                 ratio >= 0.8, f"{personal_slow.rows_per_s:,.0f} vs {bulk_slow.rows_per_s:,.0f} rows/s")


if __name__ == "__main__":
    main()
