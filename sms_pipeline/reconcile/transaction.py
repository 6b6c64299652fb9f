"""The reconciliation's own transaction: one at a time, enough memory, fresh statistics.

The statements themselves are named files of ``sql/queries`` run through
:mod:`sms_pipeline.db.queries`; these are the settings around them.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from sms_pipeline.db import queries

# pg_advisory_xact_lock key: one reconciliation (or receipt load) at a time,
# whichever process starts it (Dagster run, CLI, benchmark).
RECONCILE_LOCK = 0x5A5_0801

# Memory for one transaction's sorts and hash joins. A day's set-based
# statements join hundreds of thousands of events and rows (the msgId
# registry trigger joins the UPDATE's before and after images); at the
# server's default 4 MB they spill to temporary files.
SET_BASED_WORK_MEM = "64MB"


def require_no_open_transaction(conn: psycopg.Connection) -> None:
    """Refuse a connection inside a transaction: these steps commit their own.

    Temporary tables live until commit, so running a second day inside the
    caller's transaction would meet the first day's tables.
    """
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("reconciliation needs a connection outside any transaction (it commits its own)")


def lock(conn: psycopg.Connection) -> None:
    """Serialise with every other reconciliation until this transaction ends."""
    queries.run(conn, "advisory_xact_lock", key=RECONCILE_LOCK)


def use_set_based_memory(conn: psycopg.Connection) -> None:
    """Raise ``work_mem`` until this transaction ends (``SET LOCAL``)."""
    queries.run(conn, "set_local_work_mem", work_mem=SET_BASED_WORK_MEM)


def analyze(conn: psycopg.Connection, temporary_table: str) -> None:
    """Statistics for a temporary table (autovacuum never sees them): the next join's plan depends on them."""
    queries.run(conn, "analyze_table", identifiers={"table": sql.Identifier(temporary_table)})
