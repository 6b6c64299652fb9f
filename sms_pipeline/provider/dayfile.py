"""Checking and reading a downloaded day-report archive.

At download the archive is verified without parsing a row: zip structure,
CRC of the member (``testzip``: a C pass), the member's name and the header
against the column map. The rows are read once, by whoever needs them: the
load streams the member into Postgres' COPY, which checks UTF-8 and field
counts (``open_csv``, with ``data_rows`` as its lenient fallback);
:meth:`DayReport.rows` and ``row_count`` parse it here. A bad row raises a
:class:`DayReportError` naming the date and its line, never its content.
"""

from __future__ import annotations

import csv
import io
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from sms_pipeline.provider.normalise import DAY_REPORT_COLUMNS, DAY_REPORT_MEMBER, DAY_REPORT_REQUIRED
from sms_pipeline.provider.results import DayReportError

ZIP_MAGIC = b"PK\x03\x04"
# csv's default field limit (128 KiB) is below what a long concatenated message may need.
_FIELD_LIMIT = 16 * 1024 * 1024
_NORMALISED_COLUMNS = {" ".join(name.split()).casefold(): field for name, field in DAY_REPORT_COLUMNS.items()}


def _column_key(name: str) -> str:
    return " ".join(name.replace("\ufeff", "").split()).casefold()


@dataclass(frozen=True)
class DayReport:
    """A verified day-report archive on disk."""

    day: date
    path: Path
    sha256: str
    size_bytes: int
    header: tuple[str, ...]  # the header's names, as in the file
    ignored_columns: tuple[str, ...]  # header names not in the column map
    _positions: tuple[tuple[str, int], ...]  # (field, column index)

    @property
    def fields(self) -> tuple[str | None, ...]:
        """The field of each header column, in order; None for an ignored column."""
        by_index = {index: field for field, index in self._positions}
        return tuple(by_index.get(index) for index in range(len(self.header)))

    def open_csv(self) -> AbstractContextManager[BinaryIO]:
        """The CSV member's bytes as a stream; a zip failure while reading it (its CRC is checked at its
        end) raises ``DayReportError``, also when it happens in the caller's block."""
        return _open_member(self.path, self.day)

    def data_rows(self, raw: BinaryIO) -> Iterator[list[str]]:
        """The data rows of the member stream ``raw`` as Python's csv reads them: blank lines skipped,
        values beyond the header's width dropped; a shorter row raises ``DayReportError`` naming its line."""
        width = len(self.header)
        for values in self._full_rows(raw):
            yield values[:width]

    def rows(self) -> Iterator[dict[str, str]]:
        """Each data row as {field: text}, fields named as in ``DAY_REPORT_COLUMNS``."""
        with self.open_csv() as raw:
            for values in self.data_rows(raw):
                yield {field: values[index] for field, index in self._positions}

    @property
    def row_count(self) -> int:
        """Data rows in the file (parsed on first use: the load counts them in its COPY instead)."""
        return self._shape[0]

    @property
    def rows_with_extra_fields(self) -> int:
        """Rows longer than the header (their extra values are ignored); parsed on first use."""
        return self._shape[1]

    @cached_property
    def _shape(self) -> tuple[int, int]:
        """(rows, rows longer than the header)."""
        width = len(self.header)
        count = extra = 0
        with self.open_csv() as raw:
            for values in self._full_rows(raw):
                count += 1
                extra += len(values) > width
        return count, extra

    def _full_rows(self, raw: BinaryIO) -> Iterator[list[str]]:
        width = len(self.header)
        rows = _parsed(raw, self.day)
        next(rows, None)  # the header
        for line, values in rows:
            if len(values) < width:
                raise _fail(self.day, f"row ending on line {line} has {len(values)} fields, the header has {width}")
            yield values


def _fail(day: date, problem: str) -> DayReportError:
    return DayReportError(f"day report {day.isoformat()}: {problem}")


def _member(archive: zipfile.ZipFile, day: date) -> zipfile.ZipInfo:
    expected = DAY_REPORT_MEMBER.format(date=day.isoformat())
    members = [info for info in archive.infolist() if not info.is_dir()]
    if len(members) != 1 or members[0].filename != expected:
        names = ", ".join(info.filename for info in members) or "none"
        raise _fail(day, f"expected one member {expected}, found: {names}")
    return members[0]


@contextmanager
def _open_member(path: Path, day: date) -> Iterator[BinaryIO]:
    try:
        with zipfile.ZipFile(path) as archive, archive.open(_member(archive, day)) as raw:
            yield raw
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise _fail(day, f"corrupt or truncated archive ({type(exc).__name__}: {exc})") from None


def _parsed(raw: BinaryIO, day: date) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every row of the member stream ``raw``, the header first; blank lines skipped."""
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_LIMIT))
    reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), strict=True)
    try:
        for values in reader:
            if values:
                yield reader.line_num, values
    except UnicodeDecodeError:
        raise _fail(day, "member is not valid UTF-8") from None
    except csv.Error as exc:
        raise _fail(day, f"malformed CSV on line {reader.line_num} ({exc})") from None


def verify(path: Path, day: date, sha256: str) -> DayReport:
    """Check the archive (zip, CRC, member name, header; no row is parsed) and return a :class:`DayReport`."""
    with path.open("rb") as handle:
        head = handle.read(len(ZIP_MAGIC))
    if head != ZIP_MAGIC:
        raise _fail(day, "the answer is not a zip archive")
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()  # reads every member, checks its CRC
            _member(archive, day)
    except DayReportError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise _fail(day, f"corrupt or truncated archive ({type(exc).__name__}: {exc})") from None
    if bad is not None:
        raise _fail(day, f"CRC check failed for {bad}")

    with _open_member(path, day) as raw:
        first = next(_parsed(raw, day), None)
    if first is None:
        raise _fail(day, "no header row")
    header = first[1]
    positions = {}
    ignored = []
    for index, name in enumerate(header):
        field = _NORMALISED_COLUMNS.get(_column_key(name))
        if field is None or field in positions:
            ignored.append(name)
        else:
            positions[field] = index
    missing = [name for name, field in DAY_REPORT_COLUMNS.items()
               if name in DAY_REPORT_REQUIRED and field not in positions]
    if missing:
        raise _fail(day, f"missing required column(s): {', '.join(missing)}")
    return DayReport(
        day=day,
        path=path,
        sha256=sha256,
        size_bytes=path.stat().st_size,
        header=tuple(header),
        ignored_columns=tuple(ignored),
        _positions=tuple(positions.items()),
    )
