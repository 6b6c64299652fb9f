"""Receiver throughput: receipt pushes per second stored by ``sms-pipeline receiver``, each committed before its 2xx.

    python bench/receiver_throughput.py [--pushes 20000] [--connections 16] [--duplicates 0.05] [--pool-size 10]

A scratch database with the migrations (on the active server: embedded in
``SMS_PIPELINE_HOME`` by default), a real ``sms-pipeline receiver`` process
on it (any free loopback port, ``SMS_PIPELINE_RECEIVER_POOL_SIZE`` =
``--pool-size``), and a separate load-generator process posting ``--pushes``
valid form-encoded pushes over ``--connections`` concurrent keep-alive
connections, as fast as the answers come: distinct msgIds, mostly code 000,
one in ten another code, and a ``--duplicates`` share repeating an earlier
push (the provider delivers at least once).

Measured, from the first request to the last answer (the load generator's
clock; the receiver's pool is full before it starts):

- pushes per second, and the latency of the answers (p50 / p95 / p99, from
  sending a request to reading its answer);
- how long the pushes waited for a database connection: the receiver's own
  measurement (``GET /healthz``: mean, p95, max, total);
- CPU seconds of the receiver, the load generator and the Postgres server
  (run on a server of its own, e.g. ``SMS_PIPELINE_HOME=/tmp/sms-bench``, or
  its figure counts every other database's work).

Afterwards every acknowledged (2xx) push is looked up in the inbox: a
missing one makes the run fail (acknowledged must equal committed). The
target of issue 20, >= 200 pushes/s, is printed with PASS or MISS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import urlencode, urlsplit
from zoneinfo import ZoneInfo

import httpx
import psycopg

from sms_pipeline.core.provider_time import format_local
from sms_pipeline.settings import PREFIXES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from send_support import ZONE, machine_line, number, postgres_cpu_s, scratch_database  # noqa: E402

TARGET_PUSHES_PER_S = 200
_FIRST_MSG_ID = 9_223_372_036_854_775_000  # around 2**63: ids travel as text


@dataclass(frozen=True)
class Load:
    """What the load generator did: the keys it got a 2xx for, each answer's latency, its window and CPU."""

    acknowledged: list[tuple[str, str]]
    refused: dict[int, int]  # HTTP status -> count, for answers other than 2xx
    latencies_s: list[float]
    window_s: float
    cpu_s: float


def pushes(count: int, duplicates: float) -> list[dict[str, str]]:
    """``count`` pushes; every ``1 / duplicates``-th repeats the push made half-way before it."""
    zone = ZoneInfo(ZONE)
    now = datetime.now(zone)
    made: list[dict[str, str]] = []
    every = round(1 / duplicates) if duplicates > 0 else 0
    for n in range(count):
        if every and n % every == every - 1:
            made.append(made[n // 2])
            continue
        received = now - timedelta(minutes=5, seconds=n % 3600)
        made.append({"txn_id": str(4_000_000_000 + n // 10), "msg_id": str(_FIRST_MSG_ID + n), "mobile": number(n),
                     "error_code": "000" if n % 10 else "001", "received_time": format_local(received, zone),
                     "delivered_time": format_local(received + timedelta(seconds=7), zone)})
    return made


def generate(push_url: str, count: int, connections: int, duplicates: float) -> Load:
    """The load generator (its own process): post the pushes over ``connections`` connections."""
    return asyncio.run(_generate(push_url, pushes(count, duplicates), connections))


async def _generate(push_url: str, todo: list[dict[str, str]], connections: int) -> Load:
    # HTTP/1.1 written and read by hand over asyncio streams: an HTTP client library costs more CPU per
    # request than the receiver, and on a small machine it would measure itself.
    url = urlsplit(push_url)
    head = (f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n")
    requests = [(push, (head.format(len(body)) + body).encode()) for push in todo for body in [urlencode(push)]]
    acknowledged: list[tuple[str, str]] = []
    refused: dict[int, int] = {}
    latencies: list[float] = []
    queue = iter(requests)

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        for push, request in queue:  # one shared iterator: each push is taken once
            started = time.perf_counter()
            writer.write(request)
            status = int((await reader.readline()).split()[1])
            length = 0
            while (line := await reader.readline()) != b"\r\n":
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            if 200 <= status < 300:
                acknowledged.append((push["msg_id"], push["error_code"]))
            else:
                refused[status] = refused.get(status, 0) + 1
        writer.close()

    cpu_before = _own_cpu_s()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    window = time.perf_counter() - started
    return Load(acknowledged, refused, latencies, window, _own_cpu_s() - cpu_before)


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_receiver(url: str, secret: str, pool_size: int, home: Path) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    env.update(SMS_PIPELINE_DATABASE_URL=url, SMS_PIPELINE_HOME=str(home), SMS_PIPELINE_WEBHOOK_SECRET=secret,
               SMS_PIPELINE_RECEIVER_POOL_SIZE=str(pool_size), SMS_PIPELINE_TEXT_HMAC_KEY=secrets.token_hex(16),
               SMS_PROVIDER_TIMEZONE=ZONE)
    process = subprocess.Popen([sys.executable, "-m", "sms_pipeline.cli", "receiver", "--port", "0"], env=env,
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()  # "receiver: POST http://127.0.0.1:PORT/dlr/*** ..."
    if not line.startswith("receiver: POST "):
        process.kill()
        raise SystemExit(f"the receiver did not start: {line!r}")
    return process, line.split()[2].removesuffix("/dlr/***")


def _wait_for_pool(base: str, size: int) -> None:
    deadline = time.monotonic() + 30
    while httpx.get(f"{base}/healthz").json()["pool"]["size"] < size:
        if time.monotonic() > deadline:
            raise SystemExit("the receiver's pool did not fill in 30 s")
        time.sleep(0.1)


def _missing(url: str, acknowledged: list[tuple[str, str]]) -> tuple[int, int]:
    """(acknowledged keys not in the inbox, rows in the inbox)."""
    with psycopg.connect(url, autocommit=True) as conn:
        stored = set(conn.execute("SELECT provider_message_id, error_code FROM dlr.receipt_push_inbox").fetchall())
    return len(set(acknowledged) - stored), len(stored)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pushes", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=16, help="concurrent connections of the load generator")
    parser.add_argument("--duplicates", type=float, default=0.05, help="share of pushes repeating an earlier one")
    parser.add_argument("--pool-size", type=int, default=10, help="the receiver's database connections")
    args = parser.parse_args()

    print(machine_line())
    secret = secrets.token_urlsafe(32)
    with scratch_database("receiver") as url, tempfile.TemporaryDirectory(prefix="sms-bench-receiver-") as home:
        receiver, base = _start_receiver(url, secret, args.pool_size, Path(home))
        try:
            _wait_for_pool(base, args.pool_size)
            with psycopg.connect(url, autocommit=True) as conn:
                database_before = postgres_cpu_s(conn)
                receiver_before = _process_cpu_s(receiver.pid)
                with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as generator:
                    load = generator.submit(generate, f"{base}/dlr/{secret}", args.pushes, args.connections,
                                            args.duplicates).result()
                receiver_cpu = _process_cpu_s(receiver.pid) - receiver_before
                database_after = postgres_cpu_s(conn)
            health = httpx.get(f"{base}/healthz").json()
        finally:
            receiver.terminate()
            receiver.wait(timeout=30)
        missing, rows = _missing(url, load.acknowledged)

    rate = len(load.latencies_s) / load.window_s
    q = statistics.quantiles(load.latencies_s, n=100)
    wait, counts = health["pool_wait"], health["counts"]
    database = ("n/a" if database_before is None or database_after is None
                else f"{database_after - database_before:.1f} s")
    print(f"{len(load.latencies_s)} pushes over {args.connections} connections in {load.window_s:.1f} s: "
          f"{rate:.0f} pushes/s")
    print(f"answers: {counts['stored']} stored, {counts['duplicate']} duplicate, "
          f"other: {load.refused or 'none'}")
    print(f"latency: p50 {_ms(q[49])}, p95 {_ms(q[94])}, p99 {_ms(q[98])}, max {_ms(max(load.latencies_s))}")
    print(f"waiting for a database connection (pool of {args.pool_size}): mean {wait['mean_ms']:.2f} ms, "
          f"p95 {wait['p95_ms']:.2f} ms, max {wait['max_ms']:.2f} ms, total {wait['total_ms'] / 1000:.2f} s "
          f"over {wait['count']} pushes")
    print(f"CPU: receiver {receiver_cpu:.1f} s, load generator {load.cpu_s:.1f} s, Postgres {database}")
    print(f"acknowledged {len(load.acknowledged)}, distinct {len(set(load.acknowledged))}, "
          f"rows in the inbox {rows}, acknowledged but not stored {missing}")
    verdict = "PASS" if rate >= TARGET_PUSHES_PER_S else "MISS"
    print(f"target >= {TARGET_PUSHES_PER_S} pushes/s: {verdict}")
    if missing or load.refused:
        raise SystemExit("FAILED: every push must be acknowledged and every acknowledged push committed")


if __name__ == "__main__":
    main()
