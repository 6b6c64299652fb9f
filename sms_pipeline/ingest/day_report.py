"""Load one provider day report (the zip of ``/report/day?date=D``) into Postgres.

The client downloads and verifies the archive completely before a row is
read, so a corrupt, truncated or non-zip answer raises a ``DayReportError``
naming the date while nothing has been written. The load itself is one
transaction: TRUNCATE the day's partition of ``dlr.day_report_rows``, COPY
the rows, write the checkpoint. A download whose content checksum equals the
loaded one writes nothing at all.

The checksum is taken over the CSV inside the archive, not the archive, so
the same report zipped again (new member timestamp) is still recognised.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo

import psycopg
from psycopg import sql

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.core.provider_time import InvalidLocalTime
from sms_pipeline.db import queries
from sms_pipeline.ingest.status_counts import StatusCounts
from sms_pipeline.ingest.times import LocalTimeParser, consistent_done_time
from sms_pipeline.provider.dayfile import DayReport
from sms_pipeline.provider.results import DayReportError

REPORT_KIND = "day"
# pg_advisory_xact_lock(class, day): one load of a given day at a time.
_LOCK_CLASS = 0x5A5_0701
_CHUNK = 1 << 20

_COLUMNS = (
    "report_date", "line_no", "msg_id", "transaction_id", "mobile", "sender_name", "message_sha256",
    "msg_type", "submit_time_local", "delivery_time_local", "provider_submit_at", "provider_done_at",
    "status", "cause", "error_code", "units",
)  # fmt: skip


class DayReportSource(Protocol):
    """What the loader needs from the provider client."""

    def day_report(self, day: date, dest_dir: Path | str) -> DayReport: ...


@dataclass(frozen=True)
class DayReportLoad:
    """What one load of day ``day`` did (or found already done)."""

    day: date
    rows: int
    checksum: str  # SHA-256 of the CSV member
    download_bytes: int  # size of the zip as downloaded
    duplicates: int  # rows repeating an earlier row's (msgId, status)
    unparsed_times: int  # time fields present but not in the expected format (kept as text)
    statuses: StatusCounts  # rows per canonical status word; unmapped ones apart
    ignored_columns: tuple[str, ...] = ()  # header names the client's column map does not know
    skipped_same_checksum: bool = False  # the loaded report had this checksum: nothing written
    duration_s: float = 0.0
    loaded_at: datetime | None = None  # when the rows now in the table were loaded


def load_day_report(
    conn: psycopg.Connection,
    client: DayReportSource,
    day: date,
    tz: ZoneInfo,
    clock: Clock,
) -> DayReportLoad:
    """Download day ``day`` and make ``dlr.day_report_rows`` hold exactly it.

    ``conn`` must not be inside a transaction; this function commits its own.
    Raises ``DayReportError`` (naming the date) for an unusable download, and
    for a load that fails, after rolling back: the previous load and its
    checkpoint stay as they were.
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"day-report-{day.isoformat()}-") as tmp:
        report = client.day_report(day, tmp)
        fetched_at = clock.now()
        checksum = content_checksum(report)
        try:
            partition = _ensure_partition(conn, day)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_CLASS, day.toordinal()))
                previous = conn.execute(
                    queries.load("ingest_report_checkpoint"), {"report_kind": REPORT_KIND, "report_date": day}
                ).fetchone()
                if previous is not None and previous[0] == checksum and previous[4] is not None:
                    return _summarise(conn, report, checksum, skipped=True, loaded_at=previous[4], started=started)
                rows = _replace_rows(conn, partition, report, tz)
                loaded_at = clock.now()
                conn.execute(queries.load("ingest_report_checkpoint_save"), {
                    "report_kind": REPORT_KIND, "report_date": day, "checksum": checksum, "rows": rows,
                    "bytes": report.size_bytes, "fetched_at": fetched_at, "loaded_at": loaded_at,
                })
                return _summarise(conn, report, checksum, skipped=False, loaded_at=loaded_at, started=started)
        except psycopg.Error as exc:
            raise DayReportError(
                f"day report {day.isoformat()}: load failed, nothing written ({type(exc).__name__}: {exc})"
            ) from exc


def content_checksum(report: DayReport) -> str:
    """SHA-256 of the CSV member's bytes (the report's content, whatever the zip around it)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(report.path) as archive:
        (member,) = [info for info in archive.infolist() if not info.is_dir()]  # verified: exactly one
        with archive.open(member) as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def _ensure_partition(conn: psycopg.Connection, day: date) -> str:
    """The day's partition, created (and committed) before the load transaction.

    Creating it inside the load would hold the parent's partition-creation
    lock for the whole COPY and serialise loads of different days.
    """
    with conn.transaction():
        (name,) = conn.execute("SELECT dlr.ensure_day_report_partition(%s)", (day,)).fetchone()
    return name


def _replace_rows(conn: psycopg.Connection, partition: str, report: DayReport, tz: ZoneInfo) -> int:
    target = sql.SQL(partition)  # schema-qualified and quoted by dlr.ensure_day_report_partition
    conn.execute(sql.SQL("TRUNCATE {}").format(target))
    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(target, sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)))
    count = 0
    with conn.cursor() as cur, cur.copy(copy) as sink:
        for record in _records(report, tz):
            sink.write_row(record)
            count += 1
    return count


def _records(report: DayReport, tz: ZoneInfo) -> Iterator[tuple]:
    """COPY tuples in ``_COLUMNS`` order; the message only as its SHA-256."""
    times = LocalTimeParser(tz)
    day = report.day
    for line_no, row in enumerate(report.rows(), start=1):
        submit_text, delivery_text = row["submit_time"], row["delivery_time"]
        submit_at = _instant(times, submit_text)
        done_at = consistent_done_time(submit_at, _instant(times, delivery_text), tz)
        yield (
            day, line_no, row["msg_id"], row["transaction_id"], row["mobile"], row["sender"],
            hashlib.sha256(row["message"].encode("utf-8")).hexdigest(), row["msg_type"],
            submit_text, delivery_text, submit_at, done_at,
            row["status"], row["cause"], row["error_code"], row["units"],
        )  # fmt: skip


def _instant(times: LocalTimeParser, text: str) -> datetime | None:
    """A provider-local time, or None when absent or unreadable (the text is kept either way)."""
    stripped = text.strip()
    if stripped in SENTINELS:
        return None
    try:
        return times.parse(stripped)
    except InvalidLocalTime:
        return None  # counted as unparsed by the stats query


def _summarise(
    conn: psycopg.Connection,
    report: DayReport,
    checksum: str,
    *,
    skipped: bool,
    loaded_at: datetime,
    started: float,
) -> DayReportLoad:
    params = {"report_date": report.day}
    rows, duplicates, unparsed = conn.execute(queries.load("ingest_day_report_stats"), params).fetchone()
    statuses = StatusCounts.fold(conn.execute(queries.load("ingest_day_report_status_counts"), params))
    return DayReportLoad(
        day=report.day,
        rows=rows,
        checksum=checksum,
        download_bytes=report.size_bytes,
        duplicates=duplicates,
        unparsed_times=unparsed,
        statuses=statuses,
        ignored_columns=report.ignored_columns,
        skipped_same_checksum=skipped,
        duration_s=time.perf_counter() - started,
        loaded_at=loaded_at,
    )
