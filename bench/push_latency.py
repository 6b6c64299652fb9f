"""Push-to-reconciled latency: how long a pushed receipt waits in the inbox before ``reconcile recent`` settles it.

    python bench/push_latency.py [--duration 120] [--rate 100] [--push-rate 500] [--every 10s] [--tail 30]
                                 [--workers 1] [--duplicates 0.05] [--reorder 0.05] [--pool-size 10]

Every party is a real process on one scratch database with the migrations
(on the active server: embedded in ``SMS_PIPELINE_HOME`` by default):

- ``sms-pipeline simulator`` on the real clock (``push_duplicate`` and
  ``push_reorder`` faults at ``--duplicates`` / ``--reorder``), with a
  webhook registered by ``sms-pipeline webhook register --rate --push-rate``
  pointing at
- ``sms-pipeline receiver`` (``SMS_PIPELINE_RECEIVER_POOL_SIZE`` = ``--pool-size``);
- ``sms-pipeline reconcile recent --every`` (``--every``, 10 s by default);
- ``--workers`` ``sms-pipeline worker`` processes running throughout, sending
  what this process queues through the real intake: a wave of ``--rate``
  messages every second for ``--duration`` seconds.

The simulator makes about 85% of receipts final within 30 s of the send and
pushes each one as it becomes final. Once the sends are done and ``--tail``
more seconds (30 by default) have passed, so that the last waves' quick
receipts come too, the run waits (at most ``--drain-timeout`` s) until the
simulator has pushed every receipt due so far (``/_sim/pushes``: caught up,
nothing retrying), then points the webhook at a closed port so that no more
arrive (receipts due later are not part of the run), and waits until the
inbox has no unreconciled row.

Measured, from ``dlr.receipt_push_inbox`` (both times on the database clock):

- push-to-reconciled (``reconciled_at - received_at``): p50 / p95 / p99 / max,
  with PASS or MISS against issue 20's target, p95 <= 60 s;
- provider-final-to-reconciled (``reconciled_at`` - the push's delivered
  time) p50 / p95, and final-to-received, the provider's share of it (the
  delivered time travels in whole seconds: both read up to 1 s long);
- how long pushes waited for a receiver's database connection (``GET /healthz``);
- the duration of the reconcile passes (from the loop's output lines).

Checked, the run fails otherwise: every acknowledged push is one inbox row
(rows == distinct receipts the simulator had acknowledged == the receiver's
``stored``), every inbox row is reconciled into a receipt event matched to
its message, and no message moved backwards: each delivered / failed /
expired row has the applied receipt event of that outcome and status, and no
pushed receipt left its message short of a final state.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import httpx
import psycopg

from sms_pipeline.cli.reconcile_cmds import interval
from sms_pipeline.settings import PREFIXES, Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from receiver_throughput import _start_receiver, _wait_for_pool  # noqa: E402
from send_support import ZONE, enqueue, load_prices, machine_line, scratch_database, sms_records  # noqa: E402
from send_throughput import BODY, WORKER, _worker_env  # noqa: E402

TARGET_P95_S = 60.0
_PASS_LINE = re.compile(r"\bpushes=(\d+) .*\breconciled=(\d+) .*\bduration=([0-9.]+)s")


class Simulator(NamedTuple):
    """A ``sms-pipeline simulator`` process and its addresses (``_worker_env`` reads ``base_url``)."""

    process: subprocess.Popen
    base_url: str  # .../SMSApi
    admin_url: str  # .../_sim


def _start_simulator(env: dict[str, str], duplicates: float, reorder: float) -> Simulator:
    process = subprocess.Popen([WORKER, "simulator", "--port", "0", "--admin-port", "0", "--seed", "20",
                                "--timezone", ZONE, "--fault", f"push_duplicate={duplicates}",
                                "--fault", f"push_reorder={reorder}"],
                               env=env, stdout=subprocess.PIPE, text=True)
    urls = {}
    for line in process.stdout:  # "provider API: URL", "admin:        URL  (...)", ..., "Ctrl-C stops it."
        name, _, rest = line.partition(":")
        if rest.strip():
            urls[name] = rest.split()[0]
        if line.startswith("Ctrl-C"):
            break
    if "provider API" not in urls or "admin" not in urls:
        process.kill()
        raise SystemExit(f"the simulator did not start: {urls}")
    # Nothing more is printed; the stream is left unread.
    return Simulator(process, urls["provider API"], urls["admin"])


def _register(env: dict[str, str], url: str, rate: int) -> None:
    subprocess.run([WORKER, "webhook", "register", "--url", url, "--rate", str(rate)], env=env, check=True,
                   stdout=subprocess.DEVNULL)


class Stderr:
    """A child's error output, kept in a file (no pipe to fill) and read once the child has stopped."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("w")
        self._path = path
        self.text = ""

    def close(self) -> None:
        self.file.close()
        self.text = self._path.read_text()


class ReconcileLoop:
    """``sms-pipeline reconcile recent --every``, its output lines collected as they come."""

    def __init__(self, env: dict[str, str], every: str, errors: Path) -> None:
        self.errors = Stderr(errors)
        self.process = subprocess.Popen([WORKER, "reconcile", "recent", "--every", every], env=env,
                                        stdout=subprocess.PIPE, stderr=self.errors.file, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True)
        self._reader.start()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)  # the pass in progress finishes
        self.process.wait(timeout=120)
        self._reader.join(timeout=10)
        self.errors.close()

    def passes(self) -> list[tuple[int, int, float]]:
        """(pushes read, pushes reconciled, seconds) of each pass that reconciled something."""
        return [(int(m[1]), int(m[2]), float(m[3])) for line in self.lines if (m := _PASS_LINE.search(line))]


class Workers:
    """``count`` ``sms-pipeline worker`` processes sending whatever is queued until stopped."""

    def __init__(self, env: dict[str, str], count: int, errors: Path) -> None:
        self.errors = Stderr(errors)
        self._processes = [subprocess.Popen([WORKER, "worker"], env=env, stdout=subprocess.DEVNULL,
                                            stderr=self.errors.file) for _ in range(count)]

    def stop(self) -> None:
        for process in self._processes:
            process.send_signal(signal.SIGTERM)  # the request in flight is answered and written
        for process in self._processes:
            process.wait(timeout=60)
        self.errors.close()


def _caught_up(pushes_url: str) -> bool:
    """Every receipt the simulator's clock has passed was pushed and acknowledged (no retry waiting)."""
    snapshot = httpx.get(pushes_url).json()
    return snapshot["caught_up"] and not snapshot["retrying"]


def _wait(what: str, done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            print(f"gave up waiting after {timeout_s:.0f} s: {what}", flush=True)
            return False
        time.sleep(0.5)
    return True


def _scalar(conn: psycopg.Connection, sql: str) -> int:
    return conn.execute(sql).fetchone()[0]


def _send(url: str, duration_s: int, rate: int) -> int:
    """A wave of ``rate`` messages queued every second for ``duration_s`` seconds; the number queued."""
    started = time.monotonic()
    for wave in range(duration_s):
        time.sleep(max(0.0, started + wave - time.monotonic()))
        enqueue(url, sms_records(wave * rate, rate, BODY, f"push-{wave}"))
    return duration_s * rate


def _closed_port() -> socket.socket:
    """A loopback port bound but not listening: connections to it are refused while the socket is held."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


_LATENCY = """
SELECT count(*), count(reconciled_at),
       percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY pushed_s), max(pushed_s),
       percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY final_s),
       percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY arrival_s)
  FROM (SELECT extract(epoch FROM reconciled_at - received_at)::float8 AS pushed_s,
               extract(epoch FROM reconciled_at - provider_done_at)::float8 AS final_s,
               extract(epoch FROM received_at - provider_done_at)::float8 AS arrival_s,
               reconciled_at
          FROM dlr.receipt_push_inbox) lags"""

# Inbox rows with no receipt event matched to a message.
_UNMATCHED = """
SELECT count(*) FROM dlr.receipt_push_inbox i
 WHERE NOT EXISTS (SELECT 1 FROM dlr.delivery_receipts r
                    WHERE r.provider_message_id = i.provider_message_id AND r.error_code = i.error_code
                      AND r.message_id IS NOT NULL)"""

# Final rows without the applied event of their outcome and status: a state not earned by a receipt.
_UNEARNED = """
SELECT count(*) FROM msg.outbound_message m
 WHERE m.state IN ('delivered', 'failed', 'expired')
   AND NOT EXISTS (SELECT 1 FROM dlr.delivery_receipts r
                    WHERE r.message_id = m.id AND r.message_created_at = m.created_at AND r.disposition = 'applied'
                      AND r.outcome = m.state::text AND r.status_word = m.final_status)"""

# Messages whose final receipt was pushed and reconciled but which are not in a final state.
_NOT_MOVED = """
SELECT count(*) FROM dlr.receipt_push_inbox i
  JOIN dlr.delivery_receipts r ON r.provider_message_id = i.provider_message_id AND r.error_code = i.error_code
  JOIN msg.outbound_message m ON m.id = r.message_id AND m.created_at = r.message_created_at
 WHERE m.state NOT IN ('delivered', 'failed', 'expired')"""


def _s(values: list[float | None]) -> str:
    return " / ".join("-" if v is None else f"{v:.1f} s" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=120, help="seconds of sending")
    parser.add_argument("--rate", type=int, default=100, help="messages queued per second")
    parser.add_argument("--push-rate", type=int, default=500, help="the webhook's registered pushes per second")
    parser.add_argument("--every", type=str, default="10s", help="the reconcile loop's interval")
    parser.add_argument("--workers", type=int, default=1, help="sms-pipeline worker processes")
    parser.add_argument("--duplicates", type=float, default=0.05, help="share of pushes the simulator sends twice")
    parser.add_argument("--reorder", type=float, default=0.05, help="share of pushes the simulator holds back")
    parser.add_argument("--pool-size", type=int, default=Settings.model_fields["receiver_pool_size"].default,
                        help="the receiver's database connections")
    parser.add_argument("--tail", type=float, default=30.0,
                        help="seconds the pushes keep flowing after the last send (the last waves' receipts)")
    parser.add_argument("--drain-timeout", type=float, default=300.0,
                        help="seconds to wait for the sends, the pushes and the reconciliation to finish")
    args = parser.parse_args()
    interval(args.every)  # refused here rather than by the loop after the setup

    print(f"machine before: {machine_line()}", flush=True)
    secret = secrets.token_urlsafe(32)
    failures: list[str] = []
    with scratch_database("push") as url, tempfile.TemporaryDirectory(prefix="sms-bench-push-") as home:
        with psycopg.connect(url, autocommit=True) as conn:
            load_prices(conn)
        started: list[Callable[[], None]] = []  # stop actions, run in reverse
        try:
            sim = _start_simulator({k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
                                   | {"SMS_PIPELINE_HOME": home}, args.duplicates, args.reorder)
            started.append(lambda: (sim.process.terminate(), sim.process.wait(timeout=30)))
            env = _worker_env(url, sim, home) | {"SMS_PIPELINE_WEBHOOK_SECRET": secret}
            receiver, receiver_base = _start_receiver(url, secret, args.pool_size, Path(home))
            started.append(lambda: (receiver.terminate(), receiver.wait(timeout=30)))
            _wait_for_pool(receiver_base, args.pool_size)
            _register(env, f"{receiver_base}/dlr/{secret}", args.push_rate)
            loop = ReconcileLoop(env, args.every, Path(home) / "reconcile-recent.err")
            started.append(loop.stop)
            workers = Workers(env, args.workers, Path(home) / "workers.err")
            started.append(workers.stop)

            with psycopg.connect(url, autocommit=True) as conn:
                sent_from = time.monotonic()
                queued = _send(url, args.duration, args.rate)
                print(f"queued {queued} messages in {time.monotonic() - sent_from:.1f} s", flush=True)
                if not _wait("the workers to send every message", lambda: _scalar(
                        conn, "SELECT count(*) FROM msg.outbound_message "
                              "WHERE state IN ('pending', 'claimed', 'sending')") == 0, args.drain_timeout):
                    failures.append("messages left unsent")
                time.sleep(args.tail)
                pushes_url = f"{sim.admin_url}/pushes"
                if not _wait("the simulator to push every receipt due", lambda: _caught_up(pushes_url),
                             args.drain_timeout):
                    failures.append("pushes not caught up")
                during = httpx.get(pushes_url).json()
                # No push after this one: acknowledged, stored and the inbox can be compared exactly.
                closed = _closed_port()
                _register(env, f"http://127.0.0.1:{closed.getsockname()[1]}/dlr/{secret}", args.push_rate)
                time.sleep(2.0)  # a push on its way when the URL changed is answered
                pushed = httpx.get(pushes_url).json()
                health = httpx.get(f"{receiver_base}/healthz").json()
                if not _wait("the reconcile loop to reconcile the inbox", lambda: _scalar(
                        conn, "SELECT count(*) FROM dlr.receipt_push_inbox WHERE reconciled_at IS NULL") == 0,
                        args.drain_timeout):
                    failures.append("inbox rows left unreconciled")
                closed.close()
                rows, reconciled, push_q, push_max, final_q, arrival_q = conn.execute(_LATENCY).fetchone()
                unmatched, unearned, not_moved = (_scalar(conn, sql) for sql in (_UNMATCHED, _UNEARNED, _NOT_MOVED))
                conflicting = _scalar(conn, "SELECT count(*) FROM dlr.delivery_receipts "
                                            "WHERE disposition = 'conflicting_final'")
                states = dict(conn.execute("SELECT state::text, count(*) FROM msg.outbound_message "
                                           "GROUP BY 1 ORDER BY 1").fetchall())
        finally:
            for stop in reversed(started):
                stop()
        passes = loop.passes()
        for name, errors in (("reconcile recent", loop.errors), ("worker", workers.errors)):
            trouble = [line for line in errors.text.splitlines() if ": SIGTERM: " not in line]  # not the stop
            for line in trouble[-5:]:
                print(f"{name} said: {line}")

    print(f"machine after: {machine_line()}")
    print(f"{queued} messages over {args.duration} s ({args.rate}/s) by {args.workers} worker(s); webhook at "
          f"{args.push_rate}/s; reconcile every {args.every}; push faults: duplicates {args.duplicates}, "
          f"reorder {args.reorder}")
    print("messages: " + ", ".join(f"{state} {n}" for state, n in states.items()))
    print(f"simulator: {pushed['acknowledged']} receipts pushed and acknowledged, {pushed['duplicates_sent']} "
          f"duplicates sent, {during['failed_attempts']} failed attempts before the webhook moved away, "
          f"{pushed['dropped']} dropped (receipts not final yet stay queued: {pushed['queued']})")
    counts, wait = health["counts"], health["pool_wait"]
    print(f"receiver: {counts['stored']} stored, {counts['duplicate']} duplicate, {counts['malformed']} malformed, "
          f"{counts['unavailable']} unavailable")
    print(f"waiting for a database connection (pool of {args.pool_size}): mean {wait['mean_ms']:.2f} ms, "
          f"p95 {wait['p95_ms']:.2f} ms, max {wait['max_ms']:.2f} ms, total {wait['total_ms'] / 1000:.2f} s "
          f"over {wait['count']} pushes")
    print(f"inbox: {rows} pushes received, {reconciled} reconciled")
    print(f"push -> reconciled: p50 / p95 / p99 / max {_s([*push_q, push_max])}")
    print(f"provider final -> reconciled: p50 / p95 {_s(final_q)} (final -> received: p50 / p95 {_s(arrival_q)})")
    durations = [seconds for _, _, seconds in passes]
    if durations:
        print(f"reconcile passes that reconciled pushes: {len(passes)}, {sum(n for _, n, _ in passes)} pushes; "
              f"duration p50 {statistics.median(durations):.2f} s, max {max(durations):.2f} s, "
              f"total {sum(durations):.1f} s")
    else:
        print("reconcile passes: none reconciled anything")
    print(f"exactly once: inbox rows {rows}, receipts acknowledged {pushed['acknowledged']}, stored "
          f"{counts['stored']}; rows without a matched receipt event {unmatched}; final rows without their "
          f"applied event {unearned}; pushed messages not final {not_moved}; conflicting finals {conflicting}")
    p95 = push_q[1] if push_q else None
    verdict = "PASS" if p95 is not None and p95 <= TARGET_P95_S else "MISS"
    print(f"target push -> reconciled p95 <= {TARGET_P95_S:.0f} s: {verdict}")
    if not rows == reconciled == pushed["acknowledged"] == counts["stored"]:
        failures.append("acknowledged, stored and reconciled pushes differ")
    if unmatched or unearned or not_moved or conflicting:
        failures.append("a pushed receipt not reconciled into its message's state")
    if failures:
        raise SystemExit("FAILED: " + "; ".join(failures))


if __name__ == "__main__":
    main()
