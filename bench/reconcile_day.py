"""One provider day reconciled end to end, against the database floor and a naive peer.

    python bench/reconcile_day.py [--sizes 100000 300000 1000000] [--naive-rows 50000] [--keep-database]
                                  [--explain STATEMENT]

For each size, in one process run, on a scratch database (dropped afterwards
unless ``--keep-database``: then the last one stays, for EXPLAIN):

1. setup (not timed): a simulator process bills a provider day of that many
   messages (the mix is described in ``bench/day_traffic.py``); the matching
   outbound rows go into ``msg.outbound_message`` through its triggers; two
   copies of them (same columns and indexes) are made for the baselines, one
   without triggers and one with the table's UPDATE triggers;
2. the pipeline, timed per stage, through the functions the Dagster assets
   call: ``load_day_report`` (download over HTTP, verify, COPY of the CSV into
   staging with its checksum, INSERT ... SELECT into the partition, stats),
   ``reconcile_day`` (receipt events staged, correlation, state moves, the
   events stored linked, orphans, proof of non-submission); each named
   statement and COPY of both timed, the load's printed apart;
3. the naive peer on the same file: pandas reads the first ``--naive-rows``
   rows, then one UPDATE per row of the message copy, rolled back;
4. the floor on the same file: COPY of the CSV into an unlogged table, one
   INSERT ... SELECT of the receipts into a table keyed (msgId, status),
   one set-based UPDATE ... FROM of the message copy, with the pipeline's
   work_mem (SMS_PIPELINE_RECONCILE_WORK_MEM_MB). Before it (not timed)
   a VACUUM ANALYZE of the whole database and a CHECKPOINT, as the pipeline
   starts with a CHECKPOINT: otherwise autovacuum cleans up after the
   pipeline while the floor runs. The floor's UPDATE still varies from run
   to run (17-36 s at 1M on the 2-core machine of bench/RESULTS.md), so
   compare ratios over several runs;
5. the guarded floor: the floor's UPDATE again, from the receipts the floor
   stored, on the copy that carries the message table's UPDATE triggers (the
   state and immutability guard, the msgId registry's), with the two stamps
   the guard wants set. It runs in a transaction that empties the registry
   first (as it was before the pipeline's day) and is rolled back after the
   UPDATE is timed, so a kept database keeps the pipeline's registry. Its time
   less the floor's UPDATE is what the guards cost together: the issue's
   target becomes 1.25x this floor only when that is more than 2x the floor.
   It reads receipts whose hint bits the floor's UPDATE has set, and starts
   right after a CHECKPOINT: both favour it, so the guards' cost is if
   anything understated. Each trigger's own time is in the plan of
   ``python bench/reconcile_lab.py trial --explain reconcile_apply_messages``;
6. the durable floor: the floor's COPY and INSERT again, into what a
   reconciliation keeps. The CSV into a logged table keyed by line (the raw
   copy; the message text, 50-80 characters here, stands in for the 32-byte
   fingerprint the pipeline keeps there and on each event, which the copy
   below leaves empty: the two roughly offset), then the day's events from
   it, each once (DISTINCT ON the event key, in its byte order, as the
   pipeline dedupes; the status word only trimmed and upper-cased, which the
   simulator's words need, where the pipeline also resolves aliases),
   into an unpartitioned copy of ``dlr.delivery_receipts`` with the table's
   indexes, checks and identity: the status word's outcome looked up, the
   times parsed, each event stored unlinked (its entry goes to the
   uncorrelated index, where a linked event's goes to the message index: the
   same number of entries, and cheaper, as a day's events share one
   first_seen_at). With the guarded floor's UPDATE, that is the durable
   guarded floor: the writes of a pipeline that keeps the raw rows, the
   receipts and the guards, made by hand and with no correlation. Under the
   2x target the rest of the work has what is left of twice the floor.

Server work, for the pipeline, the floor, the guarded floor's UPDATE and the durable floor's writes:
WAL written by the server meanwhile and its full-page images (``pg_stat_wal``), CPU seconds of the
connection's server process (``/proc``, when the server runs on this machine) and the host's steal
time meanwhile. They tell where a run's time went: busy on the server's CPU (at 1M, 103-107 s of a
110-113 s pipeline), writing WAL, or waiting for a host that other guests were using (steal).

The download stage includes the simulator building the day's zip on request
(a provider serves a file it has already made): the simulator process's CPU
seconds meanwhile (the build, and serving the bytes) are printed beside it.
They are the provider's work, counted in the pipeline's time all the same.

Memory: the kernel's peak resident set size of the process (``VmHWM``, reset
before the pipeline), so C allocations (psycopg, zip, Postgres client buffers)
count; growth is that peak over the RSS measured right after imports.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, time as clock_time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas
import psutil
import psycopg
from psycopg import sql
from pydantic import SecretStr

from sms_pipeline import hmac_keys
from sms_pipeline import settings as settings_module
from sms_pipeline.core.clock import FrozenClock
from sms_pipeline.core.statuses import normalise_status
from sms_pipeline.db import connection, queries
from sms_pipeline.ingest import day_report as day_report_module
from sms_pipeline.ingest.day_report import load_day_report
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.reconcile.run import reconcile_day

from day_traffic import (TZ_NAME, TrafficDay, load_outbound_rows, local_instant, prepare_database,
                         settings_environ, simulated_traffic, utc_now)
from send_support import scratch_database

# Named statements -> the stage they belong to.
_STAGE_OF_PREFIX = (
    ("reconcile_receipts_", "receipts"),
    ("reconcile_correlate_", "correlation"),
    ("reconcile_apply_", "state moves"),
    ("reconcile_orphans_", "orphans"),
    ("reconcile_non_submission", "proof of non-submission"),
    ("reconcile_loaded_day_reports", "proof of non-submission"),
)
_FLOOR_CSV_COLUMNS = ("msg_id", "transaction_id", "mobile", "sender", "message", "msg_type", "submit_time",
                      "delivery_time", "status", "cause", "error_code", "units")


class PeakRss:
    """Peak resident set size of this process, as the kernel keeps it (``VmHWM``; Linux 4.0 or later). No
    sampling thread: one that woke every 20 ms to read the RSS showed in 5.7% of a profile's samples of
    the process it measured (a steady month's tick), and could still miss a peak between two readings."""

    def __init__(self) -> None:
        self.baseline = proc_status_kb("VmRSS")
        self.reset_peak()  # a kernel that cannot reset the peak says so now, not after the setup

    def reset_peak(self) -> None:
        """Start the peak again from the current RSS (``/proc/self/clear_refs``, value 5)."""
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError as exc:
            raise RuntimeError(f"cannot reset the peak RSS ({exc}): the memory figures need Linux 4.0 or "
                               "later") from None

    def peak_growth_mb(self) -> float:
        return (proc_status_kb("VmHWM") - self.baseline) / 2**10


def proc_status_kb(field: str) -> int:
    """A ``/proc/self/status`` figure of this process, in kB."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError as exc:
        raise RuntimeError(f"cannot read /proc/self/status ({exc}): the memory figures need Linux") from None
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0])
    raise RuntimeError(f"/proc/self/status has no {field}: the memory figures need Linux")


@dataclass
class ServerWork:
    """What a measured part cost the server: WAL written by the whole server meanwhile (autovacuum
    included) and its full-page images (a count times the block size: an upper bound, an image leaves
    out its page's free space), CPU seconds of the connection's own server process (parallel workers
    not counted), and the host's steal time (CPU taken by other guests) meanwhile."""
    wal_gib: float = 0.0
    fpi_gib: float = 0.0
    server_cpu_s: float | None = None  # None: the connection's server process is not readable here
    steal_s: float = 0.0

    @staticmethod
    def _server_cpu_s(conn: psycopg.Connection) -> float | None:
        proc = Path(f"/proc/{conn.info.backend_pid}")
        try:
            if proc.joinpath("comm").read_text().strip() != "postgres":
                return None  # a server elsewhere (another host, a container) whose pid means nothing here
            fields = proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    @classmethod
    def _reading(cls, conn: psycopg.Connection) -> tuple[int, float, float | None, float]:
        # A backend flushes its statistics when it goes idle, at most once a second unless forced: forced
        # here, so the image count read next includes this connection's work.
        conn.execute("SELECT pg_stat_force_next_flush()")
        lsn, fpi_bytes = conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn, "
                                      "wal_fpi * current_setting('block_size')::bigint FROM pg_stat_wal").fetchone()
        steal = int(Path("/proc/stat").read_text().split("\n", 1)[0].split()[8]) / os.sysconf("SC_CLK_TCK")
        return int(lsn), float(fpi_bytes), cls._server_cpu_s(conn), steal

    @classmethod
    @contextmanager
    def measure(cls, conn: psycopg.Connection) -> Iterator["ServerWork"]:
        """Measure the block's work on ``conn`` (an autocommit connection)."""
        work = cls()
        before = cls._reading(conn)
        yield work
        after = cls._reading(conn)
        work.wal_gib = (after[0] - before[0]) / 2**30
        work.fpi_gib = (after[1] - before[1]) / 2**30
        work.server_cpu_s = None if before[2] is None or after[2] is None else after[2] - before[2]
        work.steal_s = after[3] - before[3]


@dataclass
class Stage:
    name: str
    seconds: float
    rows: int  # what the stage's rows/s is counted over
    detail: str = ""


@dataclass
class ScaleResult:
    messages: int
    file_rows: int
    outbound_rows: int
    stages: list[Stage]
    statement_s: dict[str, float]
    floor: list[Stage]
    naive_rows: int
    naive_s: float
    memory_growth_mb: float
    setup_s: float
    guarded_update: Stage  # the floor's UPDATE on the copy with the table's UPDATE triggers
    summary: dict[str, Any] = field(default_factory=dict)
    pipeline_work: ServerWork = field(default_factory=ServerWork)
    floor_work: ServerWork = field(default_factory=ServerWork)
    guarded_work: ServerWork = field(default_factory=ServerWork)
    durable: list[Stage] = field(default_factory=list)  # the durable floor's raw copy and receipts INSERT
    durable_work: ServerWork = field(default_factory=ServerWork)

    @property
    def pipeline_s(self) -> float:
        return sum(s.seconds for s in self.stages)

    @property
    def floor_s(self) -> float:
        return sum(s.seconds for s in self.floor)

    @property
    def guarded_floor_s(self) -> float:
        """The floor with its UPDATE on the guarded copy (its COPY and INSERT are the floor's)."""
        return self.floor_s - self.floor[-1].seconds + self.guarded_update.seconds

    @property
    def guards_s(self) -> float:
        """What the guards cost together: the guarded floor's UPDATE less the floor's (noise can make it < 0)."""
        return self.guarded_floor_s - self.floor_s

    @property
    def durable_guarded_floor_s(self) -> float:
        """The durable floor's raw copy and receipts INSERT with the guarded floor's UPDATE."""
        return sum(s.seconds for s in self.durable) + self.guarded_update.seconds

    @property
    def guards_target(self) -> str:
        """The issue's rule: 1.25x a guarded floor only if the guards alone cost more than 2x the floor."""
        return "<= 1.25x the guarded floor" if self.guards_s > 2 * self.floor_s else "<= 2x the floor"

    @property
    def pipeline_us_per_row(self) -> float:
        return self.pipeline_s / self.file_rows * 1e6

    @property
    def naive_us_per_row(self) -> float:
        return self.naive_s / self.naive_rows * 1e6


@contextmanager
def timed_statements() -> Iterator[dict[str, float]]:
    """Seconds per named statement of ``queries.run`` and ``queries.copy`` while the block runs (the code
    itself unchanged). A COPY's seconds are its block's: the caller's work on the rows it streams included."""
    spent: dict[str, float] = defaultdict(float)
    original_run, original_copy = queries.run, queries.copy

    def run(target: Any, name: str, /, **kwargs: Any) -> psycopg.Cursor:
        started = time.perf_counter()
        try:
            return original_run(target, name, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    @contextmanager
    def copy(conn: psycopg.Connection, name: str, /, **kwargs: Any) -> Iterator[psycopg.Copy]:
        started = time.perf_counter()
        try:
            with original_copy(conn, name, **kwargs) as sink:
                yield sink
        finally:
            spent[name] += time.perf_counter() - started

    queries.run, queries.copy = run, copy
    try:
        yield spent
    finally:
        queries.run, queries.copy = original_run, original_copy


@contextmanager
def explaining(statement: str | None, stop: Exception | None = None) -> Iterator[None]:
    """``queries.run`` runs ``statement`` under ``EXPLAIN (ANALYZE, BUFFERS)`` and prints its plan (trigger
    times included); the block fails if the statement never ran.

    ANALYZE executes it, so a ``CREATE TABLE ... AS`` leaves its table and the run goes on. Any other
    statement would hand its caller the plan's cursor instead of its rows or row count, so it is refused
    unless ``stop`` is given: that exception is raised right after the plan, and the caller rolls back.
    """
    if statement is None:
        yield
        return
    if stop is None and not _creates_a_table(queries.load(statement)):
        raise SystemExit(f"--explain {statement}: only a CREATE TABLE ... AS statement can be explained in "
                         "a run that goes on (bench/reconcile_lab.py trial --explain takes any)")
    original = queries.run
    ran = False

    def run(target: Any, name: str, /, *, identifiers: Any = None, **params: Any) -> psycopg.Cursor:
        nonlocal ran
        if name != statement:
            return original(target, name, identifiers=identifiers, **params)
        ran = True
        text = queries.statement(name, identifiers)
        explained = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) ") + (sql.SQL(text) if isinstance(text, str) else text)
        cursor = target.execute(explained, params)
        print("\n".join(line for (line,) in cursor.fetchall()))
        if stop is not None:
            raise stop
        return cursor

    queries.run = run
    try:
        yield
    finally:
        queries.run = original
    if not ran:
        raise SystemExit(f"--explain {statement}: the run never ran that statement")


def _creates_a_table(text: str) -> bool:
    code = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("--")]
    return bool(code) and code[0].lstrip().upper().startswith("CREATE")


class TimedClient:
    """The provider client with the download (and its verification) timed, and the CPU the simulator spent
    meanwhile: it builds the day's zip when asked (a provider serves a file it has), inside the timed
    download."""

    def __init__(self, client: ProviderClient, simulator_pid: int) -> None:
        self._client = client
        self._simulator = psutil.Process(simulator_pid)
        self.download_s = 0.0
        self.simulator_cpu_s = 0.0

    def _simulator_cpu(self) -> float:
        try:
            times = self._simulator.cpu_times()
        except psutil.Error:  # a simulator gone: the download's own error tells why
            return 0.0
        return times.user + times.system

    def day_report(self, day, dest_dir):
        started, cpu = time.perf_counter(), self._simulator_cpu()
        try:
            return self._client.day_report(day, dest_dir)
        finally:
            self.download_s += time.perf_counter() - started
            self.simulator_cpu_s += self._simulator_cpu() - cpu


@contextmanager
def timed_stats() -> Iterator[list[float]]:
    """Seconds of the day load's closing statistics (``_summarise``)."""
    spent = [0.0]
    original = day_report_module._summarise

    def summarise(*args: Any, **kwargs: Any):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    day_report_module._summarise = summarise
    try:
        yield spent
    finally:
        day_report_module._summarise = original


_INGEST = "ingest/"  # the day load's statements among the statement seconds


def stage_of(name: str) -> str:
    return next((stage for prefix, stage in _STAGE_OF_PREFIX if name.startswith(prefix)), "other")


def reconcile_with(conn: psycopg.Connection, day, settings, clock):
    """``reconcile_day`` with the values the settings give it (as the Dagster asset passes them)."""
    return reconcile_day(
        conn, day, clock, provider_timezone=settings.provider_timezone,
        correlation_window_s=settings.correlation_window_s, campaign_send_spread_s=settings.campaign_send_spread_s,
        non_submission_grace_h=settings.non_submission_grace_h, partition_start=settings.partition_start,
        resend_after_proof_classes=settings.resend_classes, resend_max_age_h=settings.resend_max_age_h,
        max_send_delay_h=settings.max_send_delay_h, work_mem_mb=settings.reconcile_work_mem_mb,
    )


def run_pipeline(url: str, client: ProviderClient, simulator_pid: int, day, settings, clock,
                 memory: PeakRss):
    """The measured part: what the day_report asset and the receipts + reconciliation multi-asset run."""
    timed_client = TimedClient(client, simulator_pid)
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        memory.reset_peak()
        with ServerWork.measure(conn) as work:
            with timed_stats() as stats, timed_statements() as ingest_spent:
                started = time.perf_counter()
                load = load_day_report(conn, timed_client, day, settings.provider_timezone, clock,
                                       text_key=hmac_keys.text_key(settings))
                ingest_s = time.perf_counter() - started
            with timed_statements() as spent:
                started = time.perf_counter()
                result = reconcile_with(conn, day, settings, clock)
                reconcile_s = time.perf_counter() - started
        growth = memory.peak_growth_mb()
    rows, receipts = load.rows, result.receipts
    by_stage: dict[str, float] = defaultdict(float)
    for name, seconds in spent.items():
        by_stage[stage_of(name)] += seconds
    by_stage["other"] += reconcile_s - sum(spent.values())  # ANALYZE of the work tables, settings, lock, their drop, commit
    copy_s = ingest_s - timed_client.download_s - stats[0]
    stages = [
        Stage("ingest: download + verify (HTTP, zip CRC, header)", timed_client.download_s, rows,
              f"simulator process (zip build + serving): {timed_client.simulator_cpu_s:.2f} CPU s"),
        Stage("ingest: COPY of the CSV + checksum, INSERT ... SELECT into dlr.day_report_rows", copy_s, rows),
        Stage("ingest: load statistics", stats[0], rows),
        Stage("receipts (normalise and stage; INSERT of the events, linked)", by_stage["receipts"],
              receipts.source_rows, f"{receipts.new_receipts:,} new events"),
        Stage("correlation (3 passes, decisions, ambiguous/not-found marks)", by_stage["correlation"],
              result.correlation.tried, f"{result.correlation.matched:,} matched"),
        Stage("state moves (decide, confirm, UPDATE messages, dispositions)", by_stage["state moves"],
              result.applied.rows_updated, f"{result.applied.rows_updated:,} rows updated"),
        Stage("orphans", by_stage["orphans"], result.orphans.opened, f"{result.orphans.opened:,} opened"),
        Stage("proof of non-submission", by_stage["proof of non-submission"], result.non_submission.proved,
              f"{result.non_submission.proved:,} proved"),
        Stage("other (ANALYZE of work tables, settings, lock, drop, commit)", by_stage["other"], rows),
    ]
    summary = result.summary()
    summary["ingest_duplicates"] = load.duplicates
    statements = dict(spent) | {f"{_INGEST}{name}": seconds for name, seconds in ingest_spent.items()}
    return rows, stages, statements, growth, summary, work


def prepare_baseline_tables(conn: psycopg.Connection) -> None:
    """Two copies of the outbound rows, same columns and indexes (not timed). Generated columns stay
    generated: the indexes read queue_state, which follows state, so a closed row leaves the open rows'
    indexes in the copy as it does in the table. ``message`` has no triggers (the floor's);
    ``guarded_message`` has the table's UPDATE triggers, taken from the catalogue as they are live: the
    state and immutability guard and the msgId registry's (the guarded floor's)."""
    conn.execute("CREATE SCHEMA bench_floor")
    (columns,) = conn.execute(
        """SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
            WHERE attrelid = 'msg.outbound_message'::regclass AND attnum > 0 AND NOT attisdropped
              AND attgenerated = ''""").fetchone()
    for table in ("message", "guarded_message"):
        conn.execute(f"CREATE TABLE bench_floor.{table} (LIKE msg.outbound_message INCLUDING DEFAULTS "
                     "INCLUDING CONSTRAINTS INCLUDING INDEXES INCLUDING GENERATED)")
        conn.execute(f"INSERT INTO bench_floor.{table} ({columns}) SELECT {columns} FROM msg.outbound_message")
        conn.execute(f"VACUUM ANALYZE bench_floor.{table}")
    triggers = conn.execute(
        """SELECT pg_get_triggerdef(oid) FROM pg_trigger
            WHERE tgrelid = 'msg.outbound_message'::regclass AND NOT tgisinternal
              AND tgtype & 16 <> 0""").fetchall()  # 16: TRIGGER_TYPE_UPDATE
    for (definition,) in triggers:
        conn.execute(definition.replace(" ON msg.outbound_message ", " ON bench_floor.guarded_message "))


def extract_csv(client: ProviderClient, day, workdir: Path) -> Path:
    report = client.day_report(day, workdir)
    with zipfile.ZipFile(report.path) as archive:
        (member,) = [info for info in archive.infolist() if not info.is_dir()]
        return Path(archive.extract(member, workdir))


def run_naive(url: str, csv_path: Path, rows: int) -> float:
    """pandas read + one UPDATE per row of the message copy (one transaction, rolled back: the floor then
    updates the copy as the pipeline found its table, not with the peer's rows already closed)."""
    started = time.perf_counter()
    frame = pandas.read_csv(csv_path, nrows=rows, dtype=str, keep_default_na=False)
    frame.columns = _FLOOR_CSV_COLUMNS
    with connection.connect_url(url) as conn, conn.cursor() as cur:
        for row in frame.itertuples(index=False):
            status = normalise_status(row.status)
            cur.execute(
                """UPDATE bench_floor.message
                      SET provider_message_id = %s, final_status = %s,
                          state = COALESCE(%s::msg.message_state, state),
                          delivered_at = NULLIF(%s, '')::timestamp AT TIME ZONE %s
                    WHERE provider_txn_id = %s AND recipient = %s
                      AND queue_state IN ('submitted', 'unknown')""",  # pass 2's rows (V87 indexes them)
                (row.msg_id, status.word if status.is_final else None,
                 status.final_state.value if status.final_state else None,
                 row.delivery_time, TZ_NAME, row.transaction_id, row.mobile),
            )
        conn.rollback()
    return time.perf_counter() - started


_FINAL_STATE = """CASE r.status_word WHEN 'DELIVRD' THEN 'delivered' WHEN 'UNDELIV' THEN 'failed'
                                     WHEN 'REJECTD' THEN 'failed' WHEN 'EXPIRED' THEN 'expired' ELSE m.state END"""


def floor_update(table: str, *, guarded: bool) -> str:
    """The floor's one UPDATE ... FROM. On the guarded copy the row's stamps move too: the guard's WHEN
    clause skips its function for a legal move whose updated_at moves with its state or reconciled_at, and
    calls it for any other row. (Only `submitted` rows have a transaction id here, so every move is legal.)"""
    stamps = ", reconciled_at = now(), updated_at = now()" if guarded else ""
    return f"""UPDATE bench_floor.{table} m
                  SET provider_message_id = r.provider_message_id, final_status = r.status_word,
                      state = {_FINAL_STATE}, delivered_at = r.done_at{stamps}
                 FROM bench_floor.receipts r
                WHERE m.provider_txn_id = r.transaction_id AND m.recipient = r.recipient"""


def copy_csv(conn: psycopg.Connection, table: str, csv_path: Path) -> float:
    """COPY the day's CSV, its own bytes, into the table's columns named after the file's; returns the seconds."""
    started = time.perf_counter()
    with conn.cursor() as cur, \
            cur.copy(f"COPY {table} ({', '.join(_FLOOR_CSV_COLUMNS)}) "
                     "FROM STDIN (FORMAT csv, HEADER true)") as sink, \
            csv_path.open("rb") as source:
        while chunk := source.read(1 << 20):
            sink.write(chunk)
    return time.perf_counter() - started


def run_floor(url: str, csv_path: Path, work_mem_mb: int) -> tuple[list[Stage], ServerWork, int]:
    """The minimal writes by hand: COPY, one INSERT ... SELECT, one UPDATE ... FROM, with the pipeline's
    work_mem (at the server's 4 MB the UPDATE's hash join would spill, and a slower floor flatters the ratio)."""
    columns = ", ".join(f"{c} text" for c in _FLOOR_CSV_COLUMNS)
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('work_mem', %s, false)", (f"{work_mem_mb}MB",))
        conn.execute(f"CREATE UNLOGGED TABLE bench_floor.csv_rows ({columns})")
        conn.execute("""CREATE TABLE bench_floor.receipts (
                            provider_message_id text, status_word text, transaction_id text, recipient text,
                            done_at timestamptz, PRIMARY KEY (provider_message_id, status_word))""")
        conn.execute("CHECKPOINT")
        with ServerWork.measure(conn) as work:
            copy_s = copy_csv(conn, "bench_floor.csv_rows", csv_path)
            started = time.perf_counter()
            inserted = conn.execute(
                """INSERT INTO bench_floor.receipts
                   SELECT msg_id, upper(btrim(status)), transaction_id, mobile,
                          NULLIF(delivery_time, '')::timestamp AT TIME ZONE %s
                     FROM bench_floor.csv_rows
                   ON CONFLICT DO NOTHING""", (TZ_NAME,)).rowcount
            insert_s = time.perf_counter() - started
            started = time.perf_counter()
            updated = conn.execute(floor_update("message", guarded=False)).rowcount
            update_s = time.perf_counter() - started
        rows = conn.execute("SELECT count(*) FROM bench_floor.csv_rows").fetchone()[0]
    return [Stage("COPY of the CSV into an unlogged table", copy_s, rows),
            Stage("INSERT ... SELECT into a table keyed (msgId, status)", insert_s, rows, f"{inserted:,} rows"),
            Stage("UPDATE ... FROM of the message table (copy, same indexes)", update_s, rows,
                  f"{updated:,} rows")], work, updated


def run_guarded_update(url: str, work_mem_mb: int, floor_updated: int, rows: int) -> tuple[Stage, ServerWork]:
    """The floor's UPDATE again, on the copy that carries the table's UPDATE triggers (module docstring, 5).
    Refuses a run that updated other rows than the floor's, or registered fewer msgIds than it updated."""
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("VACUUM bench_floor.message")  # the floor's dead rows, or autovacuum takes them meanwhile
        conn.execute("SELECT set_config('work_mem', %s, false)", (f"{work_mem_mb}MB",))
        conn.execute("CHECKPOINT")
        with ServerWork.measure(conn) as work, conn.transaction(force_rollback=True):
            conn.execute("TRUNCATE msg.provider_message_id_registry")  # its trigger registers there
            started = time.perf_counter()
            updated = conn.execute(floor_update("guarded_message", guarded=True)).rowcount
            update_s = time.perf_counter() - started
            registered = conn.execute("SELECT count(*) FROM msg.provider_message_id_registry").fetchone()[0]
    if not updated == registered == floor_updated:
        raise RuntimeError(f"guarded floor: {updated:,} rows updated and {registered:,} msgIds registered, "
                           f"where the floor updated {floor_updated:,} rows")
    return Stage("UPDATE ... FROM of the copy with the table's UPDATE triggers", update_s, rows,
                 f"{updated:,} rows, {registered:,} msgIds registered"), work


def durable_insert(condition: str = "") -> str:
    """The durable floor's INSERT of the day's events (module docstring, 6); ``condition``: a further one on
    the raw rows, starting with AND (``bench/two_connections.py`` splits the day's msgIds with it)."""
    return f"""INSERT INTO bench_floor.durable_receipts
                          (provider_message_id, status_word, raw_status, outcome, provider_txn_id, recipient,
                           sender_name, cause, error_code, units, provider_submit_at, submit_month,
                           provider_done_at, source, first_seen_at)
                   SELECT DISTINCT ON (msg_id COLLATE "C", x.word COLLATE "C", x.submit_month)
                          msg_id, x.word, status, COALESCE(o.outcome, 'unmapped'),
                          CASE WHEN msg.is_clean_provider_id(transaction_id) THEN transaction_id END,
                          mobile, sender, NULLIF(cause, ''), NULLIF(error_code, ''),
                          NULLIF(units, '')::smallint, x.submit_at, x.submit_month,
                          NULLIF(delivery_time, '')::timestamp AT TIME ZONE %(tz)s, 'day_report', now()
                     FROM bench_floor.raw_rows
                    CROSS JOIN LATERAL (SELECT upper(btrim(status)) AS word,
                                               submit_time::timestamp AT TIME ZONE %(tz)s AS submit_at) t
                    CROSS JOIN LATERAL (SELECT t.word, t.submit_at, dlr.submit_month(t.submit_at) AS submit_month) x
                     LEFT JOIN dlr.status_outcomes o ON o.status_word = x.word
                    WHERE msg_id IS NOT NULL AND submit_time IS NOT NULL AND btrim(status) <> ''
                      AND msg.is_clean_provider_id(msg_id){condition}
                    ORDER BY msg_id COLLATE "C", x.word COLLATE "C", x.submit_month, line_no"""


def run_durable_floor(url: str, csv_path: Path, work_mem_mb: int, rows: int) -> tuple[list[Stage], ServerWork]:
    """The floor's COPY and INSERT again, into what a reconciliation keeps (module docstring, 6). Refuses a
    copy of the receipts table whose index definitions are not the table's."""
    columns = ", ".join(f"{c} text" for c in _FLOOR_CSV_COLUMNS)
    with connection.connect_url(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('work_mem', %s, false)", (f"{work_mem_mb}MB",))
        conn.execute("CREATE TABLE bench_floor.raw_rows "
                     f"(line_no bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, {columns})")
        conn.execute("CREATE TABLE bench_floor.durable_receipts (LIKE dlr.delivery_receipts INCLUDING ALL)")
        definitions = [conn.execute(
            """SELECT array_agg(regexp_replace(pg_get_indexdef(indexrelid), ' INDEX \\S+ ON (ONLY )?\\S+ ',
                                              ' INDEX ON ') ORDER BY 1)
                 FROM pg_index WHERE indrelid = %s::regclass""", (table,)).fetchone()[0]
            for table in ("dlr.delivery_receipts", "bench_floor.durable_receipts")]
        if definitions[0] != definitions[1]:
            raise RuntimeError(f"durable floor: the receipts copy's indexes {definitions[1]} are not the table's "
                               f"{definitions[0]}")
        # The guarded floor's rolled-back UPDATE left a million dead rows, which autovacuum would take meanwhile;
        # the floor's two tables are vacuumed too, as nothing reads them again.
        conn.execute("VACUUM bench_floor.guarded_message, bench_floor.receipts, bench_floor.csv_rows")
        conn.execute("CHECKPOINT")
        with ServerWork.measure(conn) as work:
            copy_s = copy_csv(conn, "bench_floor.raw_rows", csv_path)
            started = time.perf_counter()
            inserted = conn.execute(durable_insert(), {"tz": TZ_NAME}).rowcount
            insert_s = time.perf_counter() - started
    return [Stage("COPY of the CSV into a logged table keyed by line", copy_s, rows),
            Stage("INSERT ... SELECT into an unpartitioned copy of dlr.delivery_receipts", insert_s, rows,
                  f"{inserted:,} rows")], work


def run_scale(messages: int, naive_rows: int, memory: PeakRss, keep: bool) -> ScaleResult:
    setup_started = time.perf_counter()
    tz = ZoneInfo(TZ_NAME)
    day = datetime.now(tz).date() - timedelta(days=3)
    download_at = local_instant(day + timedelta(days=1), clock_time(2, 0))  # the daily job's tick
    assert download_at < utc_now()
    with scratch_database(f"reconcile_{messages}", keep=keep, partitions=False) as url:
        with connection.connect_url(url, autocommit=True) as conn:
            prepare_database(conn, day)
        with tempfile.TemporaryDirectory(prefix="bench-reconcile-") as tmp, \
                simulated_traffic([TrafficDay(day, messages)], download_at, Path(tmp)) as traffic:
            environ = {**os.environ, **settings_environ(url, traffic.base_url, day - timedelta(days=10))}
            settings = settings_module.load(environ)
            with connection.connect_url(url, autocommit=True) as conn:
                outbound = load_outbound_rows(conn, traffic, hmac_keys.text_key(settings))
                conn.execute("VACUUM ANALYZE msg.outbound_message")
                prepare_baseline_tables(conn)
            setup_s = time.perf_counter() - setup_started
            client = ProviderClient(traffic.base_url, "demo", SecretStr("demo"), None, settings.provider_timezone,
                                    read_timeout=600, requests_per_s=1000)
            with client:
                rows, stages, spent, growth, summary, pipeline_work = run_pipeline(
                    url, client, traffic.simulator_pid, day, settings, FrozenClock(download_at), memory)
                csv_path = extract_csv(client, day, Path(tmp))
            naive_n = min(naive_rows, rows)
            naive_s = run_naive(url, csv_path, naive_n)
            with connection.connect_url(url, autocommit=True) as conn:
                # The whole database, not only the copy: the pipeline left a million dead message rows and
                # new receipt and report rows, and autovacuum would clean them up while the floor runs.
                conn.execute("VACUUM ANALYZE")
            floor, floor_work, floor_updated = run_floor(url, csv_path, settings.reconcile_work_mem_mb)
            guarded_update, guarded_work = run_guarded_update(url, settings.reconcile_work_mem_mb, floor_updated,
                                                              rows)
            durable, durable_work = run_durable_floor(url, csv_path, settings.reconcile_work_mem_mb, rows)
    return ScaleResult(messages=messages, file_rows=rows, outbound_rows=outbound, stages=stages, statement_s=spent,
                       floor=floor, naive_rows=naive_n, naive_s=naive_s, memory_growth_mb=growth, setup_s=setup_s,
                       guarded_update=guarded_update, summary=summary, pipeline_work=pipeline_work,
                       floor_work=floor_work, guarded_work=guarded_work, durable=durable, durable_work=durable_work)


def print_scale(r: ScaleResult) -> None:
    print(f"\n### {r.messages:,} messages: {r.file_rows:,} day-file rows, {r.outbound_rows:,} outbound rows "
          f"(setup {r.setup_s:.0f} s, not timed)\n")
    print("| stage | seconds | rows/s | |")
    print("|---|---|---|---|")
    for s in r.stages:
        rate = f"{s.rows / s.seconds:,.0f}" if s.seconds > 0 and s.rows else "-"
        print(f"| {s.name} | {s.seconds:.2f} | {rate} | {s.detail} |")
    print(f"| **pipeline total** | **{r.pipeline_s:.2f}** | **{r.file_rows / r.pipeline_s:,.0f}** | "
          f"{r.pipeline_us_per_row:.1f} µs/row |")
    for s in r.floor:
        print(f"| floor: {s.name} | {s.seconds:.2f} | {s.rows / s.seconds:,.0f} | {s.detail} |")
    print(f"| **floor total** | **{r.floor_s:.2f}** | **{r.file_rows / r.floor_s:,.0f}** | |")
    g = r.guarded_update
    print(f"| guarded floor: {g.name} | {g.seconds:.2f} | {g.rows / g.seconds:,.0f} | {g.detail} |")
    print(f"| **guarded floor total** (with the floor's COPY and INSERT) | **{r.guarded_floor_s:.2f}** | "
          f"**{r.file_rows / r.guarded_floor_s:,.0f}** | |")
    for s in r.durable:
        print(f"| durable floor: {s.name} | {s.seconds:.2f} | {s.rows / s.seconds:,.0f} | {s.detail} |")
    print(f"| **durable guarded floor total** (with the guarded floor's UPDATE) | "
          f"**{r.durable_guarded_floor_s:.2f}** | **{r.file_rows / r.durable_guarded_floor_s:,.0f}** | |")
    print(f"| naive peer: pandas + one UPDATE per row, {r.naive_rows:,} rows | {r.naive_s:.2f} | "
          f"{r.naive_rows / r.naive_s:,.0f} | {r.naive_us_per_row:.0f} µs/row |")
    print(f"\nratio to the floor: **{r.pipeline_s / r.floor_s:.2f}x** (target <= 2x); "
          f"faster per row than the naive peer: **{r.naive_us_per_row / r.pipeline_us_per_row:.1f}x** "
          f"(target >= 8x); peak memory growth: **{r.memory_growth_mb:.0f} MB** (target <= 200 MB)")
    print(f"the guards cost {r.guards_s:.2f} s together, {r.guards_s / r.floor_s:.2f}x the floor, so the target "
          f"is {r.guards_target}; ratio to the guarded floor: **{r.pipeline_s / r.guarded_floor_s:.2f}x**")
    left = 2 * r.floor_s - r.durable_guarded_floor_s
    print(f"what a reconciliation keeps, written by hand (the durable guarded floor), costs "
          f"{r.durable_guarded_floor_s / r.floor_s:.2f}x the floor: under the 2x target the rest of the work "
          "(download, correlation, decisions, dispositions, the statistics) "
          + (f"has {left:.2f} s" if left > 0 else f"has nothing: those writes alone take {-left:.2f} s more")
          + f"; the pipeline spent {r.pipeline_s - r.durable_guarded_floor_s:.2f} s above that floor")
    print("\n| server work | pipeline | floor | guarded floor's UPDATE | durable floor's COPY and INSERT |"
          "\n|---|---|---|---|---|")
    works = (r.pipeline_work, r.floor_work, r.guarded_work, r.durable_work)
    print("| WAL written by the server, GiB (full-page images, at most) | "
          + " | ".join(f"{w.wal_gib:.2f} ({w.fpi_gib:.2f})" for w in works) + " |")
    print("| CPU of the server process, s | "
          + " | ".join("-" if w.server_cpu_s is None else f"{w.server_cpu_s:.1f}" for w in works) + " |")
    print("| host steal time meanwhile, CPU s | " + " | ".join(f"{w.steal_s:.1f}" for w in works) + " |")
    if r.pipeline_work.server_cpu_s and r.floor_work.server_cpu_s:
        print(f"server CPU ratio: "
              f"{r.pipeline_work.server_cpu_s / r.floor_work.server_cpu_s:.2f}x")
    ingest = sorted(((name, s) for name, s in r.statement_s.items() if name.startswith(_INGEST)),
                    key=lambda kv: -kv[1])
    slowest = sorted(((name, s) for name, s in r.statement_s.items() if not name.startswith(_INGEST)),
                     key=lambda kv: -kv[1])[:6]
    print("slowest statements: " + ", ".join(f"{name} {s:.2f} s" for name, s in slowest))
    print("ingest statements (a COPY with its streaming): "
          + ", ".join(f"{name.removeprefix(_INGEST)} {s:.2f} s" for name, s in ingest[:8]))
    print("summary: " + json.dumps({k: v for k, v in r.summary.items()
                                      if k in ("matched_by_msgid", "matched_by_transaction",
                                               "matched_by_reconstruction", "ambiguous", "not_found",
                                               "rows_updated", "state_moves", "orphans_opened",
                                               "receipt_dispositions", "ingest_duplicates", "receipts",
                                               "non_submission_evidence_missing")}), flush=True)


def print_curve(results: list[ScaleResult], started: datetime, loads: tuple[float, float]) -> None:
    print(f"\nrun of {started:%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average before/after {loads[0]:.1f} / {os.getloadavg()[0]:.1f}")
    print("\n### Curve\n")
    print("| messages | day-file rows | pipeline s | µs/row | floor s | ratio to floor | guarded floor s "
          "| ratio to guarded floor | durable guarded floor s (x floor) | memory growth MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r.messages:,} | {r.file_rows:,} | {r.pipeline_s:.1f} | {r.pipeline_us_per_row:.1f} | "
              f"{r.floor_s:.1f} | {r.pipeline_s / r.floor_s:.2f} | {r.guarded_floor_s:.1f} | "
              f"{r.pipeline_s / r.guarded_floor_s:.2f} | "
              f"{r.durable_guarded_floor_s:.1f} ({r.durable_guarded_floor_s / r.floor_s:.2f}) | "
              f"{r.memory_growth_mb:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--naive-rows", type=int, default=50_000)
    parser.add_argument("--keep-database", action="store_true", help="keep the last scale's database")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--explain", metavar="STATEMENT",
                        help="print the plan of this named statement (a CREATE TABLE ... AS) as the pipeline "
                             "runs it; its EXPLAIN's overhead is in the figures")
    args = parser.parse_args()
    memory = PeakRss()  # baseline: after imports
    started, load_before = utc_now(), os.getloadavg()[0]
    results = []
    for i, size in enumerate(args.sizes):
        with explaining(args.explain):
            results.append(run_scale(size, args.naive_rows, memory, args.keep_database and i == len(args.sizes) - 1))
        print_scale(results[-1])
    print_curve(results, started, (load_before, os.getloadavg()[0]))
    if args.json:
        args.json.write_text(json.dumps([{
            "messages": r.messages, "file_rows": r.file_rows, "pipeline_s": r.pipeline_s, "floor_s": r.floor_s,
            "naive_us_per_row": r.naive_us_per_row, "pipeline_us_per_row": r.pipeline_us_per_row,
            "memory_growth_mb": r.memory_growth_mb, "stages": [vars(s) for s in r.stages],
            "floor": [vars(s) for s in r.floor], "statements": r.statement_s, "summary": r.summary,
            "pipeline_work": vars(r.pipeline_work), "floor_work": vars(r.floor_work),
            "guarded_floor_s": r.guarded_floor_s, "guarded_update": vars(r.guarded_update),
            "guards_s": r.guards_s, "target": r.guards_target,
            "guarded_work": vars(r.guarded_work), "durable": [vars(s) for s in r.durable],
            "durable_guarded_floor_s": r.durable_guarded_floor_s, "durable_work": vars(r.durable_work),
        } for r in results], indent=1, default=str))


if __name__ == "__main__":
    main()
