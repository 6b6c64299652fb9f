"""Load one provider day report (the zip of ``/report/day?date=D``) into Postgres.

The client downloads and verifies the archive completely before a row is
read, so a corrupt, truncated or non-zip answer raises a ``DayReportError``
naming the date while nothing has been written. The load itself is one
transaction: TRUNCATE the day's partition of ``dlr.day_report_rows``, COPY
the rows, write the checkpoint. A download whose content checksum equals the
loaded one, fingerprinted under the same key (``core.fingerprint.key_id``),
writes nothing at all: a day loaded before fingerprints, or under another
key, is loaded again once. A download with fewer rows than the stored
load is refused and writes nothing (a day report only grows;
docs/design.md#report-guards), unless the caller passes ``allow_shrink``.

The checksum is taken over the CSV inside the archive, not the archive, so
the same report zipped again (new member timestamp) is still recognised.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Protocol, TypeVar
from zoneinfo import ZoneInfo

import psycopg
from psycopg import sql

from sms_pipeline.core import fingerprint
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.ids import SENTINELS
from sms_pipeline.core.provider_time import InvalidLocalTime
from sms_pipeline.db import queries, report_guards
from sms_pipeline.errors import UserError
from sms_pipeline.ingest import checkpoints
from sms_pipeline.ingest.status_counts import StatusCounts
from sms_pipeline.ingest.times import LocalTimeParser, consistent_done_time
from sms_pipeline.provider.dayfile import DayReport

REPORT_KIND = "day"
# pg_advisory_xact_lock(class, day): one load of a given day at a time.
_LOCK_CLASS = 0x5A5_0701
_CHUNK = 1 << 20
_COPY_BATCH = 2000  # lines per write into the COPY stream
_MEMO_LIMIT = 100_000
_NULL = "\\N"
# COPY text format: backslash, tab and line breaks inside a value are escaped.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
V = TypeVar("V")

# The provider's text fields first (escaped together), then the values computed here.
_TEXT_FIELDS = ("msg_id", "transaction_id", "mobile", "sender", "msg_type", "submit_time", "delivery_time",
                "status", "cause", "error_code", "units")
_COLUMNS = (
    "msg_id", "transaction_id", "mobile", "sender_name", "msg_type", "submit_time_local", "delivery_time_local",
    "status", "cause", "error_code", "units",
    "report_date", "line_no", "message_fingerprint", "provider_submit_at", "provider_done_at",
)  # fmt: skip


class DayLoadError(UserError):
    """The database refused a day's load; it was rolled back (the text names the date)."""


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
    *,
    text_key: bytes,
    allow_shrink: bool = False,
) -> DayReportLoad:
    """Download day ``day`` and make ``dlr.day_report_rows`` hold exactly it.

    ``conn`` must not be inside a transaction; this function commits its own.
    Raises ``DayReportError`` (naming the date) for an unusable download,
    ``ReportShrinkRefused`` for a download with fewer rows than the stored
    load (unless ``allow_shrink``: a person checked) and ``DayLoadError`` for
    a load the database refused, after rolling back: the previous load and its
    checkpoint stay as they were. ``text_key``: the message texts' HMAC key
    (``SMS_PIPELINE_TEXT_HMAC_KEY``); the texts are stored only as its fingerprints.
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"day-report-{day.isoformat()}-") as tmp:
        report = client.day_report(day, tmp)
        fetched_at = clock.now()
        checksum = content_checksum(report)
        try:
            partition = _ensure_partition(conn, day)
            with conn.transaction():
                queries.run(conn, "advisory_xact_lock_pair", lock_class=_LOCK_CLASS, key=day.toordinal())
                previous = checkpoints.read(conn, REPORT_KIND, day)
                key_id = fingerprint.key_id(text_key)
                if previous is not None and previous.unchanged(checksum, key_id):
                    # Nothing to rewrite, but the content is confirmed as of
                    # this download (evidence for the proof of non-submission).
                    queries.run(conn, "ingest_report_confirm", report_kind=REPORT_KIND, report_date=day,
                                fetched_at=fetched_at)
                    return _summarise(conn, report, checksum, skipped=True, loaded_at=previous.loaded_at,
                                      started=started)
                if allow_shrink:
                    report_guards.allow_shrink(conn)  # the database's guard too, for this transaction
                elif previous is not None and report.row_count < previous.rows:
                    raise _shrink_refused(day, report.row_count, previous.rows)
                rows = _replace_rows(conn, partition, report, tz, text_key)
                # Erased numbers stay erased (docs/design.md#redaction-and-erasure).
                queries.run(conn, "erasure_mask_landed", kind="day", scope_date=day, transaction_id=None)
                loaded_at = clock.now()
                queries.run(conn, "ingest_report_checkpoint_save", report_kind=REPORT_KIND, report_date=day,
                            checksum=checksum, rows=rows, bytes=report.size_bytes, fetched_at=fetched_at,
                            loaded_at=loaded_at, fingerprint_key_id=key_id)
                return _summarise(conn, report, checksum, skipped=False, loaded_at=loaded_at, started=started)
        except psycopg.Error as exc:
            # Only the primary message: DETAIL and CONTEXT may quote a row (a recipient number).
            reason = exc.diag.message_primary or type(exc).__name__
            raise DayLoadError(
                f"day report {day.isoformat()}: load failed and was rolled back, nothing written "
                f"(SQLSTATE {exc.sqlstate}: {reason})"
            ) from None


def _shrink_refused(day: date, rows: int, stored: int) -> report_guards.ReportShrinkRefused:
    return report_guards.refused(f"day report {day.isoformat()}", report_guards.amount(rows, "row"),
                                 report_guards.are_stored(stored), "a day report only grows")


def content_checksum(report: DayReport) -> str:
    """SHA-256 of the CSV member's bytes (the report's content, whatever the zip around it)."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(report.path) as archive:
        (member,) = [info for info in archive.infolist() if not info.is_dir()]  # verified: exactly one
        with archive.open(member) as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def _ensure_partition(conn: psycopg.Connection, day: date) -> sql.Identifier:
    """The day's partition, created (and committed) before the load transaction.

    Creating it inside the load would hold the parent's partition-creation
    lock for the whole COPY and serialise loads of different days.
    """
    with conn.transaction():
        schema_and_name = queries.scalar(conn, "ingest_day_report_partition", report_date=day)
    return sql.Identifier(*schema_and_name)


def _replace_rows(conn: psycopg.Connection, partition: sql.Identifier, report: DayReport, tz: ZoneInfo,
                  text_key: bytes) -> int:
    queries.run(conn, "ingest_day_report_truncate", identifiers={"partition": partition})
    count = 0
    batch: list[str] = []
    with queries.copy(conn, "ingest_day_report_copy",
                      identifiers={"partition": partition, "columns": queries.column_list(_COLUMNS)}) as sink:
        for line in _copy_lines(report, tz, text_key):
            batch.append(line)
            if len(batch) == _COPY_BATCH:
                sink.write("".join(batch))
                count += len(batch)
                batch.clear()
        sink.write("".join(batch))
        count += len(batch)
    return count


def _copy_lines(report: DayReport, tz: ZoneInfo, text_key: bytes) -> Iterator[str]:
    """COPY text-format lines in ``_COLUMNS`` order; the message only as its keyed fingerprint.

    Formatted here rather than by ``write_row``: a day holds up to millions of
    rows, and their times and texts repeat (one submit time and one text per
    request), so each distinct value is converted once.
    """
    parser = LocalTimeParser(tz)
    instant = _memoised(lambda text: _with_text(_instant(parser, text)), _MEMO_LIMIT)
    digest = _memoised(lambda text: _bytea_copy_text(fingerprint.text_fingerprint(text_key, text)), _MEMO_LIMIT)
    day = report.day.isoformat()
    submit_i, delivery_i = _TEXT_FIELDS.index("submit_time"), _TEXT_FIELDS.index("delivery_time")
    width = len(_TEXT_FIELDS)
    # Tuples (the text fields in _COLUMNS order, then the message), not a dict per row.
    for line_no, row in enumerate(report.columns((*_TEXT_FIELDS, "message")), start=1):
        submit_at, submit_copy = instant(row[submit_i])
        done_at, done_copy = instant(row[delivery_i])
        if submit_at is not None and done_at is not None and done_at < submit_at:
            done_copy = _with_text(consistent_done_time(submit_at, done_at, tz))[1]
        texts = _escaped(row[:width])
        yield f"{texts}\t{day}\t{line_no}\t{digest(row[width])}\t{submit_copy}\t{done_copy}\n"


def _instant(parser: LocalTimeParser, text: str) -> datetime | None:
    """A provider-local time, or None when absent or unreadable (the text is kept either way)."""
    stripped = text.strip()
    if stripped in SENTINELS:
        return None
    try:
        return parser.parse(stripped)
    except InvalidLocalTime:
        return None  # counted as unparsed by the stats query


def _bytea_copy_text(value: bytes | None) -> str:
    """A bytea in COPY text format: \\x and hex, its backslash escaped."""
    return _NULL if value is None else "\\\\x" + value.hex()


def _with_text(value: datetime | None) -> tuple[datetime | None, str]:
    """An instant and its COPY text."""
    return value, (_NULL if value is None else value.isoformat())


def _escaped(values: tuple[str, ...]) -> str:
    """Tab-joined COPY text values; one scan shows that nearly every row needs no escaping."""
    joined = "\t".join(values)
    if joined.count("\t") == len(values) - 1 and "\\" not in joined and "\n" not in joined and "\r" not in joined:
        return joined
    return "\t".join(value.translate(_COPY_ESCAPES) for value in values)


def _memoised(compute: Callable[[str], V], limit: int) -> Callable[[str], V]:
    """``compute`` with a memo of at most ``limit`` entries (emptied when full: values repeat locally)."""
    memo: dict[str, V] = {}

    def lookup(key: str) -> V:
        try:
            return memo[key]
        except KeyError:
            if len(memo) >= limit:
                memo.clear()
            value = memo[key] = compute(key)
            return value

    return lookup


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
    rows, duplicates, unparsed = queries.run(conn, "ingest_day_report_stats", **params).fetchone()
    statuses = StatusCounts.fold(queries.run(conn, "ingest_day_report_status_counts", **params))
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
