"""The day-report archive: one CSV member, written by streaming, plus its faults.

Lines go straight into the deflate stream of the member, so memory stays
flat whatever the size of the day; the archive lands in a temporary file that
the response then streams.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable
from datetime import date, datetime
from typing import BinaryIO

BOM = "\ufeff".encode()
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # fixed part of a zip local file header
# Fast deflate: the archive is produced per download, and a day holds up to
# millions of rows; the ratio on CSV text is still ~8:1.
COMPRESS_LEVEL = 1


def member_name(day: date) -> str:
    return f"dlr_report_{day.isoformat()}.csv"


def write_day_zip(target: BinaryIO, day: date, csv_chunks: Iterable[str], created: datetime) -> None:
    """Write the archive for ``day``: UTF-8 with BOM, the CSV text as given.

    ``created`` (provider-local) becomes the member's timestamp, so the same
    content at the same virtual time gives the same bytes.
    """
    info = zipfile.ZipInfo(member_name(day), date_time=created.timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL) as archive:
        # ZipFile.open(ZipInfo) ignores the archive's compresslevel unless the
        # ZipInfo carries one (Python 3.11 has no public attribute for it).
        info._compresslevel = COMPRESS_LEVEL  # type: ignore[attr-defined]
        with archive.open(info, "w", force_zip64=True) as member:
            member.write(BOM)
            for chunk in csv_chunks:
                member.write(chunk.encode("utf-8"))


def _member_data_span(target: BinaryIO) -> tuple[int, int]:
    """(offset, length) of the compressed bytes of the archive's only member."""
    target.seek(0)
    with zipfile.ZipFile(target) as archive:
        info = archive.infolist()[0]
    target.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(target.read(_LOCAL_HEADER.size))
    name_length, extra_length = fields[-2], fields[-1]
    return info.header_offset + _LOCAL_HEADER.size + name_length + extra_length, info.compress_size


def corrupt(target: BinaryIO) -> None:
    """Damage the compressed data in the middle; the directory stays readable."""
    offset, length = _member_data_span(target)
    start = offset + length // 2
    count = max(1, min(16, length // 4))
    target.seek(start)
    damaged = bytes(b ^ 0xA5 for b in target.read(count))
    target.seek(start)
    target.write(damaged)
    target.seek(0)


def truncate(target: BinaryIO) -> None:
    """Cut the archive at 60%: the central directory is gone."""
    size = target.seek(0, 2)
    target.truncate(max(1, size * 6 // 10))
    target.seek(0)
