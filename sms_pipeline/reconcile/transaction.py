"""The reconciliation's own transaction: one at a time, enough memory, work tables, fresh statistics.

The statements themselves are named files of ``sql/queries`` run through
:mod:`sms_pipeline.db.queries`; these are the settings around them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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

# The planner's price of handing a row from a parallel worker to the leader
# (Postgres's default: 0.1). At 0.1 a statement that writes a million rows
# into a work table never runs in parallel, however much each row costs to
# make; at this price the day's statements use the second core and take
# seconds less (docs/design.md "Work tables and the second core").
PARALLEL_TUPLE_COST = "0.001"

# The planner's price of a page read out of order (Postgres's default: 4.0). At 4.0 the day's joins with a
# month's partition of messages read the whole month instead of looking the day's rows up through its
# indexes, once the month holds many more rows than the day (docs/design.md "Index probes late in the month").
RANDOM_PAGE_COST = "1.1"

# default_statistics_target while the run analyzes its work tables (the server's: 100). Their joins need
# a row count and whether a key repeats, which a sample of 3,000 rows gives as well as one of 30,000 does,
# at a tenth of the time (docs/design.md "Statistics of the work tables").
WORK_TABLE_STATISTICS_TARGET = "10"

# The schema of the work tables (sql/V86__reconcile_work_schema.sql).
WORK_SCHEMA = "reconcile_work"


def require_no_open_transaction(conn: psycopg.Connection) -> None:
    """Refuse a connection inside a transaction: these steps commit their own.

    The work tables live until the run commits, so running a second day
    inside the caller's transaction would meet the first day's tables.
    """
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ValueError("reconciliation needs a connection outside any transaction (it commits its own)")


@contextmanager
def reconciliation(conn: psycopg.Connection, work_mem_mb: int) -> Iterator[None]:
    """The reconciliation's transaction: locked, with ``work_mem_mb`` of ``work_mem``, parallel plans
    priced for its size and a small sample for the statistics of its work tables (``reconcile_work``),
    which are dropped before it commits. On an error it rolls back, and the tables it made go with it."""
    with conn.transaction():
        lock(conn)
        # Under the lock no other run has tables there: anything found was left by hand, and would
        # otherwise stop every run at its first CREATE.
        queries.run(conn, "reconcile_work_drop")
        use_memory(conn, work_mem_mb)
        queries.run(conn, "set_local_parallel_tuple_cost", cost=PARALLEL_TUPLE_COST)
        queries.run(conn, "set_local_random_page_cost", cost=RANDOM_PAGE_COST)
        queries.run(conn, "set_local_statistics_target", target=WORK_TABLE_STATISTICS_TARGET)
        yield
        queries.run(conn, "reconcile_work_drop")


def lock(conn: psycopg.Connection) -> None:
    """Serialise with every other reconciliation until this transaction ends."""
    queries.run(conn, "advisory_xact_lock", key=RECONCILE_LOCK)


def use_memory(conn: psycopg.Connection, megabytes: int) -> None:
    """``work_mem`` of ``megabytes`` until this transaction ends (``SET LOCAL``)."""
    queries.run(conn, "set_local_work_mem", work_mem=f"{megabytes}MB")


def analyze(conn: psycopg.Connection, work_table: str) -> None:
    """Statistics for a work table just filled (autovacuum never sees it before the run commits, and then it
    is gone): the next join's plan depends on them."""
    queries.run(conn, "analyze_table", identifiers={"table": sql.Identifier(WORK_SCHEMA, work_table)})
