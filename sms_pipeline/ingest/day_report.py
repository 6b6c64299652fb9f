"""Load one provider day report (the zip of ``/report/day?date=D``) into Postgres.

The client checks the archive (zip, CRC, member, header) without parsing a
row. The load is one transaction that reads the CSV once: its bytes go as
they are into a temporary staging table (``COPY ... FORMAT csv``: Postgres
parses it) while their checksum is taken; then, unless the checksum says
the stored load is this one, the day's partition of ``dlr.day_report_rows``
is emptied and filled by one INSERT ... SELECT that maps, defaults and
converts in SQL, the times and the message fingerprints looked up from what
Python computed once per distinct text; then the checkpoint. A file Postgres'
CSV parser refuses for its shape (a row longer than the header, a blank line,
mixed line ends) is staged again through Python's csv, which the provider's
files were always read with and which tolerates them; the same INSERT
follows. So is a file the two parsers would read differently (a quote inside
an unquoted field or text after a closing one, a blank line before the
header, a ``\\.`` line, which ends the data for Postgres before 18), found
while its bytes stream. A bad file (a member failing its CRC,
bytes that are not UTF-8, a row shorter than the header) raises
``DayReportError``, a row the database refuses ``DayLoadError``, each naming
the date and the first bad line it knows (never the row's content), and
nothing is written.

A download whose content checksum equals the loaded one, fingerprinted under
the same key (``core.fingerprint.key_id``), writes nothing at all: a day
loaded before fingerprints, or under another key, is loaded again once. A
download with fewer rows than the stored load is refused and writes nothing
(a day report only grows; docs/design.md#report-guards), unless the caller
passes ``allow_shrink``.

The checksum is taken over the CSV inside the archive, not the archive, so
the same report zipped again (new member timestamp) is still recognised.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
import tempfile
import time
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import BinaryIO, Protocol
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
from sms_pipeline.ingest.times import LocalTimeParser
from sms_pipeline.provider.dayfile import DayReport
from sms_pipeline.provider.results import DayReportError

REPORT_KIND = "day"
log = logging.getLogger(__name__)

# pg_advisory_xact_lock(class, day): one load of a given day at a time.
_LOCK_CLASS = 0x5A5_0701
_CHUNK = 1 << 20
_COPY_LINE = re.compile(r"^COPY day_report_staging, line (\d+)")
_MISSING_DATA = "missing data for column"
_BOM = b"\xef\xbb\xbf"
_QUOTE = ord('"')
_FIELD_ENDS = b",\r\n"
_END_OF_DATA = b"\\."
# Unquoted bytes and whole quoted fields opening after a field end, holding only doubled quotes and
# closing before one: what both parsers read alike, skipped in C (the per-quote loop was 2x slower).
_AGREED = re.compile(rb'[^"]*(?:(?<=[,\r\n])"[^"]*(?:""[^"]*)*"(?=[,\r\n])[^"]*)*')


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
    # Why the file went through Python's csv rather than the copy of its own bytes (None: it did not).
    slower_path_reason: str | None = None
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
        try:
            partition = _ensure_partition(conn, day)
            with conn.transaction():
                queries.run(conn, "advisory_xact_lock_pair", lock_class=_LOCK_CLASS, key=day.toordinal())
                previous = checkpoints.read(conn, REPORT_KIND, day)
                checksum, slower_path_reason = _stage(conn, report)
                key_id = fingerprint.key_id(text_key)
                if previous is not None and previous.unchanged(checksum, key_id):
                    # Nothing to rewrite, but the content is confirmed as of
                    # this download (evidence for the proof of non-submission).
                    queries.run(conn, "ingest_report_confirm", report_kind=REPORT_KIND, report_date=day,
                                fetched_at=fetched_at)
                    return _summarise(conn, report, partition, checksum, skipped=True,
                                      loaded_at=previous.loaded_at, started=started,
                                      slower_path_reason=slower_path_reason)
                if allow_shrink:
                    report_guards.allow_shrink(conn)  # the database's guard too, for this transaction
                rows = _replace_rows(conn, partition, day, tz, text_key)
                if not allow_shrink and previous is not None and rows < previous.rows:
                    raise _shrink_refused(day, rows, previous.rows)  # the rows just written roll back with it
                # Statistics now, not when autovacuum comes by: the erasure mask below and the
                # reconciliation minutes from now plan their reads of the day on them (docs/design.md
                # "Day report load"). After the shrink guard: a refused load skips the sampling.
                queries.run(conn, "analyze_table", identifiers={"table": partition})
                # Erased numbers stay erased (docs/design.md#redaction-and-erasure).
                queries.run(conn, "erasure_mask_landed", kind="day", scope_date=day, transaction_id=None)
                loaded_at = clock.now()
                queries.run(conn, "ingest_report_checkpoint_save", report_kind=REPORT_KIND, report_date=day,
                            checksum=checksum, rows=rows, bytes=report.size_bytes, fetched_at=fetched_at,
                            loaded_at=loaded_at, fingerprint_key_id=key_id)
                return _summarise(conn, report, partition, checksum, skipped=False, loaded_at=loaded_at,
                                  started=started, slower_path_reason=slower_path_reason)
        except psycopg.Error as exc:
            # Only the primary message and the line: DETAIL and CONTEXT may quote a row (a recipient number).
            reason = exc.diag.message_primary or type(exc).__name__
            where = f", {_line_of(exc)} of the file" if _COPY_LINE.match(exc.diag.context or "") else ""
            raise DayLoadError(
                f"day report {day.isoformat()}: load failed and was rolled back, nothing written "
                f"(SQLSTATE {exc.sqlstate}: {reason}{where})"
            ) from None


def _shrink_refused(day: date, rows: int, stored: int) -> report_guards.ReportShrinkRefused:
    return report_guards.refused(f"day report {day.isoformat()}", report_guards.amount(rows, "row"),
                                 report_guards.are_stored(stored), "a day report only grows")


def _ensure_partition(conn: psycopg.Connection, day: date) -> sql.Identifier:
    """The day's partition, created (and committed) before the load transaction.

    Creating it inside the load would hold the parent's partition-creation
    lock for the whole COPY and serialise loads of different days.
    """
    with conn.transaction():
        schema_and_name = queries.scalar(conn, "ingest_day_report_partition", report_date=day)
    return sql.Identifier(*schema_and_name)


def _stage(conn: psycopg.Connection, report: DayReport) -> tuple[str, str | None]:
    """The CSV member into ``day_report_staging``; the SHA-256 of the member's bytes, and why it took
    the slower path (``None``: it did not).

    Its bytes as they are, checksummed in the same pass. A file whose shape
    Postgres' CSV parser refuses but Python's csv accepts, or that the two
    would read differently (see the module docstring), is staged again,
    re-encoded row by row by Python's csv.
    """
    try:
        with conn.transaction():  # a savepoint: the lenient pass starts from no staging table
            return _copy_member(conn, report, lenient=False), None
    except _ReadDifferently as exc:
        reason = str(exc)
    except psycopg.errors.BadCopyFileFormat as exc:
        # A short row is bad for Python's csv too; anything else about the shape (a longer row, a
        # blank line: "missing data" of an empty row, mixed line ends) is for it to judge.
        if exc.diag.message_primary.startswith(_MISSING_DATA) and _quotes_a_row(exc):
            raise _bad_file(report.day, f"the row on {_line_of(exc)} has fewer fields than the header") from None
        reason = f"Postgres' CSV parser refused its shape ({exc.diag.message_primary})"
    except psycopg.errors.CharacterNotInRepertoire as exc:
        if not exc.diag.message_primary.endswith("0x00"):  # a NUL byte is UTF-8 no Postgres text can hold
            raise _bad_file(report.day, f"{_line_of(exc)} is not valid UTF-8 text") from None
        raise
    with conn.transaction():
        checksum = _copy_member(conn, report, lenient=True)
    # The answer to "why was this day's load slow" (also in the asset's metadata): a shape, never a value.
    log.info("day report %s staged through Python's csv, the slower path: %s", report.day.isoformat(), reason)
    return checksum, reason


def _copy_member(conn: psycopg.Connection, report: DayReport, *, lenient: bool) -> str:
    columns = [field or f"ignored_{index}" for index, field in enumerate(report.fields, start=1)]
    definitions = sql.SQL(", ").join(sql.SQL("{} text").format(sql.Identifier(c)) for c in columns)
    queries.run(conn, "ingest_day_report_staging", identifiers={"columns": definitions})
    with report.open_csv() as raw, queries.copy(conn, "ingest_day_report_staging_copy",
                                                identifiers={"columns": queries.column_list(columns)}) as sink:
        source = _Checksummed(raw)
        if lenient:
            writer = csv.writer(sink, lineterminator="\n", quoting=csv.QUOTE_ALL)  # a lone \r quoted too
            writer.writerow(report.header)  # what HEADER skips
            writer.writerows(report.data_rows(source))
            while chunk := source.read(_CHUNK):  # what csv left, for checksum and CRC
                sink.write(chunk)
        else:
            _copy_as_python_reads(source, sink)
    return source.digest.hexdigest()


class _ReadDifferently(Exception):
    """Postgres' CSV parser would read the member otherwise than Python's csv: staged through the latter."""


def _copy_as_python_reads(source: BinaryIO, sink: psycopg.Copy) -> None:
    """All of ``source`` into ``sink``; ``_ReadDifferently`` as soon as Postgres would read it otherwise.

    Besides the quotes, a line holding only ``\\.`` ends the data for
    Postgres before 18, which drops the rest of the file without an error.
    Any ``\\.`` (rare in a day report) sends the file to Python's csv, which
    reads it as a value.
    """
    chunk = source.read(max(_CHUNK, len(_BOM) + 1))  # the first read sees past a BOM, whatever the chunk size
    text = chunk[len(_BOM):] if chunk.startswith(_BOM) else chunk
    if text[:1] in (b"\r", b"\n"):  # HEADER would skip this line, not the header; Python's csv skips it
        raise _ReadDifferently("a blank line before the header")
    quotes = _QuoteCheck()
    last = b""
    while chunk:
        if _END_OF_DATA in text or (last == b"\\" and text[:1] == b"."):
            raise _ReadDifferently("an end-of-data marker for Postgres before 18")
        if not quotes.agree(text):
            raise _ReadDifferently("a quote Python's csv keeps as text or refuses")
        sink.write(chunk)
        last = chunk[-1:]
        chunk = text = source.read(_CHUNK)


class _QuoteCheck:
    """Whether Postgres' CSV parser takes the member's quotes as Python's csv does, fed chunk by chunk.

    Postgres opens a quoted section at any quote and appends what follows a
    closing quote to the value; Python's csv opens one only at a field's start,
    keeps any other quote as text and refuses text after a closing quote. They
    read the same values when every quote opens a field, is half of a doubled
    quote inside one, or closes one before a comma, a line end or the end. Only
    the stretches ``_AGREED`` cannot skip (a chunk's edges, a suspect quote) are
    followed quote by quote.
    """

    def __init__(self) -> None:
        self._quoted = False  # inside a quoted field
        self._pending = False  # the last chunk ended on a quote in a quoted field: closing, or half of ""
        self._previous = ord("\n")  # the byte before the chunk: the member's text starts a field

    def agree(self, chunk: bytes) -> bool:
        """Whether the quotes of ``chunk``, the text following the chunks fed before, are read alike."""
        if not chunk:
            return True
        quoted, position = self._quoted, 0
        if self._pending:
            self._pending = False
            if chunk[0] == _QUOTE:
                position = 1
            elif chunk[0] in _FIELD_ENDS:
                quoted = False
            else:
                return False
        end = len(chunk)
        while True:
            if not quoted:
                position = _AGREED.match(chunk, position).end()
            quote = chunk.find(b'"', position)
            if quote < 0:
                break
            position = quote + 1
            if not quoted:
                if (chunk[quote - 1] if quote else self._previous) not in _FIELD_ENDS:
                    return False
                quoted = True
            elif position == end:
                self._pending = True
            elif chunk[position] == _QUOTE:
                position += 1
            elif chunk[position] in _FIELD_ENDS:
                quoted = False
            else:
                return False
        self._quoted, self._previous = quoted, chunk[-1]
        return True


class _Checksummed(io.BufferedIOBase):
    """A binary stream's bytes, hashed as they are read (closing it leaves the stream open)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._raw.read(size)
        self.digest.update(data)
        return data

    def read1(self, size: int = -1) -> bytes:  # what io.TextIOWrapper reads with
        return self.read(size)


# A COPY error's CONTEXT: "COPY day_report_staging, line 3: "<the row>"". The row is only looked at
# for being empty, never kept: it may hold a recipient number.
def _line_of(exc: psycopg.Error) -> str:
    match = _COPY_LINE.match(exc.diag.context or "")
    return f"line {match.group(1)}" if match else "a line"


def _quotes_a_row(exc: psycopg.Error) -> bool:
    match = _COPY_LINE.match(exc.diag.context or "")
    return match is not None and exc.diag.context[match.end():] not in ("", ': ""')


def _bad_file(day: date, problem: str) -> DayReportError:
    return DayReportError(f"day report {day.isoformat()}: {problem}")


def _replace_rows(conn: psycopg.Connection, partition: sql.Identifier, day: date, tz: ZoneInfo,
                  text_key: bytes) -> int:
    """The day's partition emptied and filled from the staging table, in one INSERT ... SELECT; its rows.

    The time texts and the message texts repeat (one submit time and one text
    per request), so each distinct one is read or fingerprinted once here.
    """
    parser = LocalTimeParser(tz)
    queries.run(conn, "ingest_day_report_times")
    texts = [text for (text,) in queries.run(conn, "ingest_day_report_staged_times")]
    with queries.copy(conn, "ingest_day_report_times_copy") as sink:
        for text in texts:
            stripped = text.strip()
            if stripped in SENTINELS:
                continue
            try:
                sink.write_row((text, *parser.readings(stripped)))
            except InvalidLocalTime:
                continue  # kept as text only, counted as unparsed by the stats query
    queries.run(conn, "ingest_day_report_fingerprints")
    texts = [text for (text,) in queries.run(conn, "ingest_day_report_staged_texts")]
    with queries.copy(conn, "ingest_day_report_fingerprints_copy") as sink:
        for text in texts:
            digest = fingerprint.text_fingerprint(text_key, text)
            if digest is not None:
                sink.write_row((text, digest))
    queries.run(conn, "analyze_table", identifiers={"table": sql.Identifier("day_report_fingerprints")})
    queries.run(conn, "ingest_day_report_truncate", identifiers={"partition": partition})
    return queries.run(conn, "ingest_day_report_insert", identifiers={"partition": partition},
                       report_date=day).rowcount


def _summarise(
    conn: psycopg.Connection,
    report: DayReport,
    partition: sql.Identifier,
    checksum: str,
    *,
    skipped: bool,
    loaded_at: datetime,
    started: float,
    slower_path_reason: str | None,
) -> DayReportLoad:
    loaded = {"partition": partition}
    rows, duplicates, unparsed = queries.run(conn, "ingest_day_report_stats", identifiers=loaded).fetchone()
    statuses = StatusCounts.fold(queries.run(conn, "ingest_day_report_status_counts", identifiers=loaded))
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
        slower_path_reason=slower_path_reason,
        duration_s=time.perf_counter() - started,
        loaded_at=loaded_at,
    )
