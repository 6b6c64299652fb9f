"""The legacy database, read only: its sends table in primary-key order."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime

import psycopg
from psycopg import sql

from sms_pipeline.adopt.mapping import ColumnMap, LegacyRow
from sms_pipeline.db import connection, queries
from sms_pipeline.errors import UserError

log = logging.getLogger(__name__)

# What a wrong table or column name, or a column of a type the adoption cannot read, raises.
_MAPPING_ERRORS = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn, psycopg.errors.CannotCoerce,
                   psycopg.errors.InvalidTextRepresentation, psycopg.errors.DatatypeMismatch)


def connect(dsn: str, *, read_only: bool = True) -> psycopg.Connection:
    """A session on the legacy database, autocommit; ``read_only``: every transaction in it read only (only
    the dual write's install and removal write there)."""
    try:
        conn = connection.connect_url(dsn, autocommit=True)
    except psycopg.ProgrammingError:  # a malformed DSN: psycopg's message may quote it, password and all
        log.debug("bad legacy DSN", exc_info=True)
        raise UserError(f"--from-url is not a database URL: {connection.redact(dsn)}") from None
    if read_only:
        queries.run(conn, "adopt_source_read_only")
    return conn


def table_identifier(table: str) -> sql.Identifier:
    """``table`` (``name`` or ``schema.name``) as a quoted identifier."""
    return sql.Identifier(*table.split("."))


def canonical_table(conn: psycopg.Connection, table: str) -> str:
    """The legacy table ``table`` (``name`` or ``schema.name``) names, as ``schema.name`` (raw names): the one
    spelling of its markers, event ids and checkpoint, however it was typed."""
    typed = table_identifier(table).as_string(conn)
    found = queries.scalar(conn, "adopt_source_table", table=typed)
    if found is None:
        raise UserError(f"no table {table} in the legacy database (see --table)")
    return found


def _identifiers(columns: ColumnMap) -> dict[str, sql.Composable]:
    names = {ours: sql.Identifier(theirs) for ours, theirs in columns.columns().items()}
    names.setdefault("event", sql.SQL("NULL"))
    names["table"] = table_identifier(columns.table)
    return names


def _run(conn: psycopg.Connection, columns: ColumnMap, name: str, **params: object) -> psycopg.Cursor:
    """Named query ``name`` on the mapped table; a wrong name or type in the map is one line (UserError)."""
    try:
        return queries.run(conn, name, identifiers=_identifiers(columns), **params)
    except _MAPPING_ERRORS as exc:
        raise UserError(f"legacy table {columns.table}: {exc.diag.message_primary} (see --map)") from None


def read_batch(conn: psycopg.Connection, columns: ColumnMap, *, after_id: int | None, since: datetime | None,
               limit: int) -> list[LegacyRow]:
    """The next ``limit`` rows after ``after_id`` (created at or after ``since``), by primary key."""
    found = _run(conn, columns, "adopt_source_rows", after_id=after_id, since=since, limit=limit).fetchall()
    return [LegacyRow(*row) for row in found]


def count(conn: psycopg.Connection, columns: ColumnMap, *, after_id: int | None, since: datetime | None) -> int:
    """How many rows :func:`batches` will read."""
    return _run(conn, columns, "adopt_source_count", after_id=after_id, since=since).fetchone()[0]


def months(conn: psycopg.Connection, columns: ColumnMap, *, after_id: int | None,
           since: datetime | None) -> list[tuple[datetime, datetime]]:
    """(UTC month start, earliest created_at in it) of the rows :func:`batches` will read."""
    return _run(conn, columns, "adopt_source_months", after_id=after_id, since=since).fetchall()


def batches(conn: psycopg.Connection, columns: ColumnMap, *, after_id: int | None, since: datetime | None,
            size: int) -> Iterator[list[LegacyRow]]:
    """Every row after ``after_id``, ``size`` at a time (each batch one short read)."""
    while True:
        rows = read_batch(conn, columns, after_id=after_id, since=since, limit=size)
        if not rows:
            return
        yield rows
        after_id = rows[-1].id
