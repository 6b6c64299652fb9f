"""Intake throughput: a JSONL file of N send requests into msg.outbound_message.

Runs against a scratch database (created from the migrations on the active
server: embedded by default, or SMS_PIPELINE_DATABASE_URL's server) and drops
it afterwards. Measures, on one generated file:

1. validation alone (JSON, number normalisation, segments, business key);
2. the first load: validation + COPY into staging + the registry-aware insert;
3. the same file again: every request already present (the idempotent path).

Besides wall time it records CPU seconds (this process and its validation
processes, and the Postgres backend when the server is local), because on a
shared machine the wall time mostly measures the neighbours.

    python bench/intake.py [--lines 100000] [--chunk-size 10000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection
from sms_pipeline import intake

sys.path.insert(0, str(Path(__file__).resolve().parent))
from send_support import scratch_database  # noqa: E402

BODIES = (
    "Your order has shipped and will arrive tomorrow.",
    "Your OTP-free login link expires in 10 minutes.",
    "Sale! 20% off everything this weekend only. Reply STOP to opt out.",
    "आपका ऑर्डर भेज दिया गया है।",  # UCS-2
)


def write_requests(path: Path, lines: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for n in range(lines):
            f.write(json.dumps({
                "tenant_id": f"tenant-{n % 3}", "event_type": "order_update", "event_id": f"bench-{n}",
                "recipient": f"+91 9{n % 9 + 1}{n:08d}", "body": BODIES[n % len(BODIES)],
                "message_class": "promotional" if n % 4 == 2 else "transactional", "channel": "sms",
                "sender_id": "SGCSMS", "dlt_template_id": "1107160000000000000",
            }) + "\n")


def python_cpu_s() -> float:
    """User + system CPU of this process and its finished children (the validation processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def backend_cpu_s(pid: int) -> float | None:
    """CPU of a local Postgres backend from /proc (None when the server is elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    label: str
    wall_s: float
    python_cpu_s: float
    database_cpu_s: float | None = None
    note: str = ""


def timed(label: str, action) -> Run:
    cpu, start = python_cpu_s(), time.perf_counter()
    database_cpu, note = action()
    return Run(label, time.perf_counter() - start, python_cpu_s() - cpu, database_cpu, note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2, help="validation processes")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    with scratch_database("intake") as url:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "requests.jsonl"
            write_requests(path, args.lines)
            size_mb = path.stat().st_size / 1e6

            def validate_only() -> tuple[None, str]:
                with path.open("rb") as f:
                    return None, f"{sum(1 for _ in intake.validate_lines(f, workers=args.workers)):,} validated"

            def load() -> tuple[float | None, str]:
                with connection.connect_url(url, autocommit=True) as conn, path.open("rb") as f:
                    before = backend_cpu_s(conn.info.backend_pid)
                    result = intake.enqueue_lines(conn, f, clock=RealClock(), chunk_size=args.chunk_size,
                                                  workers=args.workers)
                    after = backend_cpu_s(conn.info.backend_pid)
                database_cpu = after - before if before is not None and after is not None else None
                return database_cpu, (f"{result.created:,} new, {result.existing:,} existing, "
                                      f"{len(result.bad_lines)} bad")

            runs = [timed("validation only (no database)", validate_only),
                    timed("first load (validate + COPY + insert)", load),
                    timed("same file again (all already enqueued)", load)]
        with connection.connect_url(url) as conn:
            rows = conn.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0]

    print(f"{args.lines:,} lines ({size_mb:.1f} MB), chunks of {args.chunk_size:,}, {args.workers} validation "
          f"process(es); rows afterwards: {rows:,}")
    print(f"load average before/after: {load_before:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("| measurement | wall time | lines/s | CPU: Python (incl. validation processes) | CPU: Postgres backend |")
    print("|---|---|---|---|---|")
    for run in runs:
        database = f"{run.database_cpu_s:.1f} s" if run.database_cpu_s is not None else "-"
        print(f"| {run.label} ({run.note}) | {run.wall_s:.1f} s | {args.lines / run.wall_s:,.0f} "
              f"| {run.python_cpu_s:.1f} s | {database} |")


if __name__ == "__main__":
    main()
