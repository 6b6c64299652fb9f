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

# Memory for each sort, hash and trigger transition table of a pass over new
# pushes, which reads a few events at a time. The day's run takes its own from
# the settings (SMS_PIPELINE_RECONCILE_WORK_MEM_MB, docs/design.md#reconciliation-memory).
PUSH_PASS_WORK_MEM_MB = 64


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


def use_memory(conn: psycopg.Connection, megabytes: int) -> None:
    """``work_mem`` of ``megabytes`` until this transaction ends (``SET LOCAL``)."""
    queries.run(conn, "set_local_work_mem", work_mem=f"{megabytes}MB")


def analyze(conn: psycopg.Connection, temporary_table: str) -> None:
    """Statistics for a temporary table (autovacuum never sees them): the next join's plan depends on them."""
    queries.run(conn, "analyze_table", identifiers={"table": sql.Identifier(temporary_table)})
