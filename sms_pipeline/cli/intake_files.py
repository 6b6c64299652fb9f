"""What ``enqueue`` and ``campaigns create`` share: the options, the database, the progress bar, the bad lines.

Kept apart from both command modules so that ``campaigns`` does not import
the worker's modules (the CLI imports only the named command's module).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

from sms_pipeline.db import connection, migrate
from sms_pipeline.errors import UserError
from sms_pipeline.settings import Settings

# How many bad lines are printed one by one before the rest are only counted.
_BAD_LINES_SHOWN = 50


def positive(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_intake_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-size", type=positive, default=10_000, help="requests per transaction")
    parser.add_argument("--workers", type=positive, default=min(4, os.cpu_count() or 1),
                        help="validation processes for large files (default: CPUs, at most 4)")


def database_url(settings: Settings) -> str:
    """The application database, migrated to the current schema."""
    url = connection.app_url(settings)
    with connection.connect_url(url) as conn:
        migrate.upgrade(conn)
    return url


def readable(path: Path) -> Path:
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    return path


@contextmanager
def reading_progress(label: str, path: Path) -> Iterator[Callable[[int], None]]:
    """A progress bar over ``path``'s bytes (on a terminal only); yields the callback that advances it."""
    progress = Progress(TextColumn(label), BarColumn(), DownloadColumn(), TimeElapsedColumn(),
                        transient=True, disable=not sys.stderr.isatty(), console=None)
    with progress:
        task = progress.add_task(label, total=path.stat().st_size)
        yield lambda n: progress.advance(task, n)


def print_bad_lines(path: Path, bad_lines: list) -> None:
    """The first bad lines one by one on stderr, then how many more."""
    for bad in bad_lines[:_BAD_LINES_SHOWN]:
        print(f"{path.name}: {bad}", file=sys.stderr)
    if len(bad_lines) > _BAD_LINES_SHOWN:
        print(f"{path.name}: ... and {len(bad_lines) - _BAD_LINES_SHOWN} more bad lines", file=sys.stderr)
