"""The one way the application runs SQL: named statements of ``sql/queries``.

Every statement lives in ``sql/queries/<name>.sql`` (none inline in Python),
so that the text the code runs is the text the index tests EXPLAIN, and a
reader finds each statement by its name. Each file starts with a comment
header saying what it does, its parameters and the identifiers it takes.

* Parameters are psycopg named placeholders (``%(now)s``). Statements always
  run with a (possibly empty) parameter mapping, so a literal ``%`` in a
  file is written ``%%``.
* Identifiers known only at run time (a work table to ANALYZE, a day's
  partition, the column list of a COPY) are ``{name}`` fields of the file,
  filled with :mod:`psycopg.sql` objects (``sql.Identifier``) through
  ``identifiers=``, never by string formatting. A file that takes none is
  run as plain text (braces in it mean nothing).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from sms_pipeline import package_files

QUERIES_DIR = package_files.queries_dir()
_NAME = re.compile(r"^[a-z0-9_]+$")


class UnknownQuery(LookupError):
    """No ``sql/queries/<name>.sql`` (or a name that is not a plain file stem)."""


@functools.cache
def load(name: str) -> str:
    """The text of ``sql/queries/<name>.sql`` (read once, then cached)."""
    if not _NAME.match(name):
        raise UnknownQuery(f"query name must be lower-case letters, digits and underscores: {name!r}")
    path = QUERIES_DIR / f"{name}.sql"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnknownQuery(f"no query named {name!r} in {QUERIES_DIR}") from None


Identifiers = Mapping[str, sql.Composable]
# A connection, or a cursor (e.g. one with its own row factory).
Target = psycopg.Connection | psycopg.Cursor


def statement(name: str, identifiers: Identifiers | None = None) -> str | sql.Composed:
    """The statement ``name``, its ``{fields}`` filled with ``identifiers`` when given."""
    text = load(name)
    if not identifiers:
        return text
    return sql.SQL(text).format(**identifiers)


def run(target: Target, name: str, /, *, identifiers: Identifiers | None = None, prepare: bool | None = None,
        **params: Any) -> psycopg.Cursor:
    """Execute the statement ``name`` with named parameters; the cursor, to fetch from.

    ``identifiers`` and ``prepare`` (psycopg's) are the runner's own keywords,
    so no statement has parameters by those names.
    """
    return target.execute(statement(name, identifiers), params, prepare=prepare)


def run_script(conn: psycopg.Connection, text: str, /) -> None:
    """Execute a migration file's text as it is: several statements, no parameters (a ``%`` is literal).

    The one SQL run here that is not a named statement: the ``V``/``R``
    files of ``sql/`` themselves, read by :mod:`sms_pipeline.db.migrate`.
    """
    conn.execute(text)


def run_many(target: Target, name: str, /, rows: Iterable[Mapping[str, Any]], *,
             identifiers: Identifiers | None = None) -> None:
    """Execute the statement ``name`` once per parameter mapping of ``rows``."""
    text = statement(name, identifiers)
    if isinstance(target, psycopg.Cursor):
        target.executemany(text, rows)
        return
    with target.cursor() as cur:
        cur.executemany(text, rows)


def scalar(target: Target, name: str, /, **params: Any) -> Any:
    """The first column of the first row (``None`` when there is no row)."""
    row = run(target, name, **params).fetchone()
    return None if row is None else row[0]


def record(conn: psycopg.Connection, name: str, /, **params: Any) -> dict[str, Any]:
    """The one row of a statement, by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = run(cur, name, **params).fetchone()
    if row is None:
        raise LookupError(f"statement {name} returned no row")
    return row


def counts(target: Target, name: str, /, **params: Any) -> dict[str, int]:
    """A ``(key, count)`` result as a dict (keys as text)."""
    return {str(key): int(n) for key, n in run(target, name, **params).fetchall()}


@contextmanager
def copy(conn: psycopg.Connection, name: str, /, *, identifiers: Identifiers | None = None,
         **params: Any) -> Iterator[psycopg.Copy]:
    """The COPY statement ``name`` as psycopg's copy object (``write_row``/``write``), on a cursor of its own."""
    with conn.cursor() as cur, cur.copy(statement(name, identifiers), params) as sink:
        yield sink


def column_list(columns: Iterable[str]) -> sql.Composed:
    """``a, b, c`` as quoted identifiers, for a ``{columns}`` field (e.g. of a COPY)."""
    return sql.SQL(", ").join(map(sql.Identifier, columns))
