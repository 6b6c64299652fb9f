"""Run one named statement of ``sql/queries`` with named parameters."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

from sms_pipeline.db import queries

# pg_advisory_xact_lock key: one reconciliation (or receipt load) at a time,
# whichever process starts it (Dagster run, CLI, benchmark).
RECONCILE_LOCK = 0x5A5_0801


def run(conn: psycopg.Connection, name: str, **params: Any) -> psycopg.Cursor:
    return conn.execute(queries.load(name), params)


def scalar(conn: psycopg.Connection, name: str, **params: Any) -> Any:
    row = run(conn, name, **params).fetchone()
    return None if row is None else row[0]


def record(conn: psycopg.Connection, name: str, **params: Any) -> dict[str, Any]:
    """The one row of a statement, by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(queries.load(name), params).fetchone()
    if row is None:
        raise LookupError(f"statement {name} returned no row")
    return row


def counts(conn: psycopg.Connection, name: str, **params: Any) -> dict[str, int]:
    """A ``(key, count)`` result as a dict (keys as text)."""
    return {str(key): int(n) for key, n in run(conn, name, **params).fetchall()}


def analyze(conn: psycopg.Connection, temporary_table: str) -> None:
    """Statistics for a temporary table (autovacuum never sees them): the next join's plan depends on them."""
    conn.execute(f"ANALYZE {temporary_table}")


def lock(conn: psycopg.Connection) -> None:
    """Serialise with every other reconciliation until this transaction ends."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (RECONCILE_LOCK,))


# Memory for one transaction's sorts and hash joins. A day's set-based
# statements join hundreds of thousands of events and rows (the msgId
# registry trigger joins the UPDATE's before and after images); at the
# server's default 4 MB they spill to temporary files.
SET_BASED_WORK_MEM = "64MB"


def use_set_based_memory(conn: psycopg.Connection) -> None:
    """Raise ``work_mem`` until this transaction ends (``SET LOCAL``)."""
    conn.execute(f"SET LOCAL work_mem = '{SET_BASED_WORK_MEM}'")


def require_no_open_transaction(conn: psycopg.Connection) -> None:
    """Refuse a connection inside a transaction: these steps commit their own.

    Temporary tables live until commit, so running a second day inside the
    caller's transaction would meet the first day's tables.
    """
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("reconciliation needs a connection outside any transaction (it commits its own)")
