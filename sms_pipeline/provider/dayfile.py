"""Checking and reading a downloaded day-report archive.

The archive is verified completely before anyone reads a row: zip structure,
CRC of the member, UTF-8, the header against the column map, and the field
count of every row. So a load either gets a sound file or a
:class:`DayReportError` naming the date, never half a day.
"""

from __future__ import annotations

import csv
import io
import operator
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

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
    row_count: int
    ignored_columns: tuple[str, ...]  # header names not in the column map
    rows_with_extra_fields: int  # rows longer than the header (extra values ignored)
    _positions: tuple[tuple[str, int], ...]  # (field, column index)

    def rows(self) -> Iterator[dict[str, str]]:
        """Each data row as {field: text}, fields named as in ``DAY_REPORT_COLUMNS``."""
        rows = _data_rows(self.path, self.day)
        next(rows, None)  # the header
        for _, values in rows:
            yield {field: values[index] for field, index in self._positions}

    def columns(self, fields: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        """Each data row as a tuple of ``fields``' texts, in that order (no dict per row: for bulk loads)."""
        where = dict(self._positions)
        pick = operator.itemgetter(*(where[field] for field in fields))
        rows = _data_rows(self.path, self.day)
        next(rows, None)  # the header
        for _, values in rows:
            yield pick(values)


def _fail(day: date, problem: str) -> DayReportError:
    return DayReportError(f"day report {day.isoformat()}: {problem}")


def _member(archive: zipfile.ZipFile, day: date) -> zipfile.ZipInfo:
    expected = DAY_REPORT_MEMBER.format(date=day.isoformat())
    members = [info for info in archive.infolist() if not info.is_dir()]
    if len(members) != 1 or members[0].filename != expected:
        names = ", ".join(info.filename for info in members) or "none"
        raise _fail(day, f"expected one member {expected}, found: {names}")
    return members[0]


def _data_rows(path: Path, day: date) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every row, the header first; blank lines skipped."""
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_LIMIT))
    try:
        with zipfile.ZipFile(path) as archive, archive.open(_member(archive, day)) as raw:
            reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), strict=True)
            for values in reader:
                if values:
                    yield reader.line_num, values
    except DayReportError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise _fail(day, f"corrupt or truncated archive ({type(exc).__name__}: {exc})") from None
    except UnicodeDecodeError:
        raise _fail(day, "member is not valid UTF-8") from None
    except csv.Error as exc:
        raise _fail(day, f"malformed CSV ({exc})") from None


def verify(path: Path, day: date, sha256: str) -> DayReport:
    """Check the archive end to end and return a :class:`DayReport` for it."""
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

    rows = _data_rows(path, day)
    first = next(rows, None)
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

    width = len(header)
    row_count = extra = 0
    for line, values in rows:
        if len(values) < width:
            raise _fail(day, f"row ending on line {line} has {len(values)} fields, the header has {width}")
        extra += len(values) > width
        row_count += 1
    return DayReport(
        day=day,
        path=path,
        sha256=sha256,
        size_bytes=path.stat().st_size,
        row_count=row_count,
        ignored_columns=tuple(ignored),
        rows_with_extra_fields=extra,
        _positions=tuple(positions.items()),
    )
