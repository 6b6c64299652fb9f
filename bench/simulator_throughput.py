"""Simulator throughput: accepted recipients/s in batches of 500, and day-zip rows/s.

    python bench/simulator_throughput.py [--requests 200] [--threads 1 4] [--day-messages 1000000]

1. Sends: ``--requests`` requests of 500 recipients through the real client,
   over loopback HTTP and the fault proxy (no faults set), with 1 and with N
   client threads.
2. A day of ``--day-messages`` messages billed in-process (the same
   ``SimulatorState.submit`` the endpoint calls, without HTTP), spread over one
   provider-local day; then its day zip built alone (rows/s), and downloaded,
   CRC-checked and parsed through the client (``ProviderClient.day_report``).
   Resident memory is read before and after billing the day.

Prints a Markdown table; the figures in bench/RESULTS.md come from it.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, time as clock_time, timedelta
from pathlib import Path

from pydantic import SecretStr

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.core.provider_time import localise
from sms_pipeline.provider import ProviderClient, SendAccepted
from sms_pipeline.simulator import faults, run_simulator
from sms_pipeline.simulator.dayzip import write_day_zip
from sms_pipeline.simulator.reports import day_report_chunks
from sms_pipeline.simulator.state import SendRequest

from reconcile_day import proc_status_kb

BATCH = 500
TEXT = "Your order {n} has shipped and will arrive tomorrow. Track it in the app."


def _rss_mb() -> float:
    return proc_status_kb("VmRSS") / 1024


def _numbers(start: int, count: int = BATCH) -> list[str]:
    return [f"91{6 + (start + n) // 10**9 % 4}{(start + n) % 10**9:09d}" for n in range(count)]


def bench_sends(client: ProviderClient, requests: int, threads: int, offset: int) -> float:
    """Accepted recipients per second."""
    def one(i: int) -> int:
        outcome = client.send(_numbers(offset + i * BATCH), TEXT.format(n=offset + i), "SGCSMS")
        assert isinstance(outcome, SendAccepted), outcome
        return len(outcome.accepted)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        accepted = sum(pool.map(one, range(requests)))
    return accepted / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="send requests of 500 per measurement")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--day-messages", type=int, default=1_000_000)
    args = parser.parse_args()

    results: list[tuple[str, str]] = []
    # The day under test starts three local days ago, so the whole day and
    # its late receipts lie in the past (a virtual clock never passes real time).
    tz_name = "Asia/Kolkata"
    with run_simulator(clock=VirtualClock(datetime.now(UTC) - timedelta(days=4)), seed=1, timezone=tz_name) as sim:
        tz = sim.state.timezone
        day = (datetime.now(tz) - timedelta(days=3)).date()
        client = ProviderClient(sim.base_url, "demo", SecretStr("demo"), None, tz, read_timeout=120,
                                requests_per_s=1000)
        offset = 0
        for threads in args.threads:
            rate = bench_sends(client, args.requests, threads, offset)
            offset += args.requests * BATCH
            results.append((f"send, batches of {BATCH}, {threads} client thread(s), over HTTP",
                            f"{rate:,.0f} accepted recipients/s"))

        sim.state.reset()
        sim.clock.set(localise(datetime.combine(day, clock_time(0, 0)), tz))
        requests = args.day_messages // BATCH
        step = timedelta(seconds=80_000 / requests)  # spread over ~22 h of the local day
        rss_before = _rss_mb()
        started = time.perf_counter()
        for i in range(requests):
            request = SendRequest("SGCSMS", "text", TEXT.format(n=i), _numbers(i * BATCH), False, None, False)
            fingerprint = f"bench-{i}"
            sim.state.submit(request, fingerprint, sim.state.arrival(fingerprint))
            sim.clock.advance(step)
        billing = time.perf_counter() - started
        rows = sim.state.ledger_size()
        rss_after = _rss_mb()
        results.append((f"bill {rows:,} recipients in-process (no HTTP)", f"{rows / billing:,.0f} recipients/s"))
        results.append(("resident memory for that day", f"{rss_after - rss_before:,.0f} MB "
                        f"({(rss_after - rss_before) * 2**20 / rows:,.0f} bytes/message)"))

        sim.clock.set(localise(datetime.combine(day + timedelta(days=2), clock_time(12, 0)), tz))
        rates = {name: 0.0 for name in faults.ROW_FAULTS}
        with tempfile.TemporaryFile() as target:
            started = time.perf_counter()
            write_day_zip(target, day, day_report_chunks(sim.state.view(), day, tz, rates), datetime.now(tz))
            build = time.perf_counter() - started
            size = target.tell()
        results.append((f"build the day zip ({rows:,} rows, {size / 2**20:,.0f} MB)",
                        f"{build:.1f} s = {rows / build:,.0f} rows/s"))

        with tempfile.TemporaryDirectory() as dest:
            started = time.perf_counter()
            report = client.day_report(day, Path(dest))
            download = time.perf_counter() - started
            started = time.perf_counter()
            parsed = sum(1 for _ in report.rows())
            parse = time.perf_counter() - started
        assert report.row_count == parsed == rows, (report.row_count, parsed, rows)
        results.append(("day zip over HTTP: build + download + CRC + header/row check (client)",
                        f"{download:.1f} s = {rows / download:,.0f} rows/s"))
        results.append(("client reads the rows back (dicts through the header map)",
                        f"{parse:.1f} s = {rows / parse:,.0f} rows/s"))
        client.close()

    print(f"Python {platform.python_version()}, {platform.machine()}, "
          f"{sys.platform}; {datetime.now(UTC):%Y-%m-%d}")
    print()
    print("| measurement | result |")
    print("|---|---|")
    for name, value in results:
        print(f"| {name} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
