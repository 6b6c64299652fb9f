"""The simulator's state file: a versioned JSON-lines file, replaced atomically.

One JSON object per line, told apart by ``kind``::

    {"kind": "header", "format": "sms-pipeline-simulator-state", "version": 1,
     "seed": 7, "timezone": "Asia/Kolkata", "saved_at_ms": ..., "credits": null,
     "report_faults": {"duplicate_rows": 0.002, ..., "summary_units_offset": 0}}
    {"kind": "request", "transaction_id": ..., "rows": [[msgId, mobile, final, ...], ...], ...}
    {"kind": "arrivals", "counts": {fingerprint: n, ...}}
    {"kind": "otp", ...}  {"kind": "schedule", ...}  {"kind": "campaign", ...}
    {"kind": "end", "requests": N, "rows": M}

What a report shows follows from the billed requests (with each recipient's
msgId and receipt timeline, stored rather than recomputed, so a later change
of the generator never rewrites history), the seed, the time zone, the
row-level fault rates and the clock. The arrival counts make the ids of a
request sent again after a restart new ones. The file holds what the
provider would hold (numbers, texts with their codes): it is created 0600,
and nothing of its content goes into an error message.

This module only reads and writes lines; ``SimulatorState.save`` and
``restore`` turn them into a ledger and back.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

FORMAT = "sms-pipeline-simulator-state"
VERSION = 1


class StateFileError(ValueError):
    """A state file this simulator cannot use (one line, naming the file, never its content)."""


class Header(NamedTuple):
    """The first line: who saved the file and how its reports are shaped."""

    seed: int
    timezone: str
    saved_at_ms: int
    credits: int | None
    report_faults: dict[str, float | int]  # row-level fault rates and summary_units_offset


def write(path: Path, header: Header, records: Iterable[dict[str, Any]]) -> None:
    """Write ``header``, ``records`` and the end line to a temporary file, then replace ``path`` with it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(_line({"kind": "header", "format": FORMAT, "version": VERSION, **header._asdict()}))
            counts = {"requests": 0, "rows": 0}
            for record in records:
                if record["kind"] == "request":
                    counts["requests"] += 1
                    counts["rows"] += len(record["rows"])
                out.write(_line(record))
            out.write(_line({"kind": "end", **counts}))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash once the folder is synced
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_header(path: Path) -> Header:
    """The header of the file at ``path`` (``FileNotFoundError`` when there is none)."""
    for _, record in _lines(Path(path)):
        return _header(Path(path), record)
    raise StateFileError(f"simulator state {path}: empty file")


def read(path: Path) -> tuple[Header, Iterator[tuple[int, dict[str, Any]]]]:
    """The header and the (line number, record) pairs after it; the end line is checked, not yielded."""
    path = Path(path)
    lines = _lines(path)
    first = next(lines, None)
    if first is None:
        raise StateFileError(f"simulator state {path}: empty file")
    header = _header(path, first[1])

    def records() -> Iterator[tuple[int, dict[str, Any]]]:
        counts = {"requests": 0, "rows": 0}
        for number, record in lines:
            kind = record.get("kind")
            if kind == "end":
                if (record.get("requests"), record.get("rows")) != (counts["requests"], counts["rows"]):
                    raise malformed(path, number, "end (counts disagree with the requests before it)")
                return
            if kind == "request":
                counts["requests"] += 1
                rows = record.get("rows")
                counts["rows"] += len(rows) if isinstance(rows, list) else 0
            yield number, record
        raise StateFileError(f"simulator state {path}: truncated (no end line)")

    return header, records()


def malformed(path: Path, number: int, kind: object) -> StateFileError:
    return StateFileError(f"simulator state {path}: line {number}: malformed {kind} record")


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise StateFileError(f"simulator state {path}: line {number} is not UTF-8 text") from None
            except json.JSONDecodeError:  # the message could quote the line: say where, not what
                raise StateFileError(f"simulator state {path}: line {number} is not JSON") from None
            if not isinstance(record, dict):
                raise malformed(path, number, "a non-object")
            yield number, record


def _header(path: Path, record: dict[str, Any]) -> Header:
    if record.get("kind") != "header" or record.get("format") != FORMAT:
        raise StateFileError(f"simulator state {path}: not a simulator state file")
    version = record.get("version")
    if version != VERSION:
        raise StateFileError(f"simulator state {path}: format version {version!r}; this simulator reads {VERSION}")
    try:
        header = Header(**{name: record[name] for name in Header._fields})
    except KeyError:
        raise malformed(path, 1, "header") from None
    faults = header.report_faults
    if (not _is_int(header.seed) or not isinstance(header.timezone, str) or not _is_int(header.saved_at_ms)
            or not (header.credits is None or _is_int(header.credits)) or not isinstance(faults, dict)
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in faults.values())):
        raise malformed(path, 1, "header")
    return header


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)

