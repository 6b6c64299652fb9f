"""What the send benchmarks share: a scratch database, queued rows, prices, CPU accounting.

On a shared machine wall time mostly measures the neighbours, so every
benchmark also reports CPU seconds: its own process (simulator included when
it runs in-process), its child processes (the workers), and the Postgres
server (the postmaster's own and reaped children's time plus its live
backends', read from /proc; None when the server is not local). Run them
on a server of their own (``SMS_PIPELINE_HOME=/tmp/sms-bench``), or the
server's figure includes every other database's work.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from sms_pipeline import settings as settings_module
from sms_pipeline.core.clock import RealClock
from sms_pipeline.db import connection, migrate
from sms_pipeline import intake, rates

TENANT = "bench"
ZONE = "Asia/Kolkata"
UNIT_PRICE = "0.0079"


@contextmanager
def scratch_database(prefix: str, *, keep: bool = False, partitions: bool = True) -> Iterator[str]:
    """A freshly migrated database on the active server (embedded by default), dropped afterwards unless
    ``keep``. With ``partitions``, message partitions from six months back (the send benchmarks'); the
    reconciliation benchmarks make their own around their days."""
    settings = settings_module.load()
    admin = connection.server_url(settings)
    name = f"sms_bench_{prefix}_{uuid.uuid4().hex[:8]}"
    connection.ensure_database(admin, name)
    url = connection.with_database(admin, name)
    try:
        with connection.connect_url(url) as conn:
            migrate.upgrade(conn)
            if partitions:
                conn.execute("SELECT msg.ensure_partitions(now() - interval '6 months', 8)")
            conn.commit()
        yield url
    finally:
        if keep:
            print(f"kept database {name}")
        else:
            with connection.connect_url(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def number(n: int) -> str:
    """The n-th distinct valid Indian mobile number (n < 9 * 10^8)."""
    return f"91{9 - n // 10**8 % 4}{n % 10**8:09d}"


def load_prices(conn: psycopg.Connection) -> None:
    lines = ["tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to"]
    lines += [f"{TENANT},sms,{cls},{UNIT_PRICE},INR,2020-01-01," for cls in ("transactional", "promotional", "otp")]
    parsed, bad = rates.parse_rate_card(lines)
    assert not bad, bad
    rates.load_rates(conn, parsed)


def enqueue(url: str, records: list[dict], *, chunk: int = 20_000, **options: object) -> None:
    """Queue ``records`` as pending rows through the real intake."""
    with connection.connect_url(url, autocommit=True) as conn:
        for start in range(0, len(records), chunk):
            messages = [intake.new_message(r, **options) for r in records[start:start + chunk]]
            intake.enqueue(conn, messages, clock=RealClock())


def sms_records(first: int, count: int, body: str, event_prefix: str) -> list[dict]:
    return [{"tenant_id": TENANT, "event_type": "bench", "event_id": f"{event_prefix}-{n}", "recipient": number(n),
             "body": body, "message_class": "transactional", "channel": "sms", "sender_id": "SGCSMS"}
            for n in range(first, first + count)]


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu_s() -> float:
    """CPU of this process's finished (waited-for) children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def postgres_cpu_s(conn: psycopg.Connection) -> float | None:
    """CPU used so far by the server this connection talks to (postmaster, reaped and live children)."""
    backend = _stat(conn.info.backend_pid)
    if backend is None:
        return None
    postmaster = int(backend[1])  # ppid
    own = _stat(postmaster)
    if own is None:
        return None
    ticks = sum(int(v) for v in own[11:15])  # utime, stime, cutime, cstime
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[1]) == postmaster:
                ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuMeter:
    """CPU seconds spent between start() and stop(), split by who spent them."""

    conn: psycopg.Connection
    own: float = 0.0
    children: float = 0.0
    database: float | None = None

    def start(self) -> CpuMeter:
        self._own, self._children, self._database = own_cpu_s(), children_cpu_s(), postgres_cpu_s(self.conn)
        return self

    def stop(self) -> CpuMeter:
        time.sleep(1.0)  # let the server reap the backends that just closed (their CPU moves to it)
        self.own = own_cpu_s() - self._own
        self.children = children_cpu_s() - self._children
        database = postgres_cpu_s(self.conn)
        self.database = None if database is None or self._database is None else database - self._database
        return self

    def describe(self, own_label: str, children_label: str) -> str:
        database = f"{self.database:.1f} s" if self.database is not None else "n/a"
        return f"{own_label} {self.own:.1f} s, {children_label} {self.children:.1f} s, Postgres {database}"


def median_ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


def machine_line() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)"
