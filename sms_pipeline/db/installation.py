"""Where the day partitions start when ``SMS_PIPELINE_PARTITION_START`` is unset.

The first ``db upgrade`` records the first of its month (UTC) in
``public.installation`` (``sql/V69__installation.sql``), once: partitions
then begin at the installation's first real days instead of at a fixed date
months before them. The recorded day may be lowered (a backfill of older
days), never raised nor removed (``sql/R__installation.sql``). See
docs/design.md#first-partition-day.
"""

from __future__ import annotations

from datetime import date

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.errors import MigrationError

TABLE = "public.installation"


def _require_table(conn: psycopg.Connection) -> None:
    if not queries.scalar(conn, "migrations_table_exists", relation=TABLE):
        raise MigrationError(
            "the database does not record where the day partitions start yet (no public.installation); "
            "run `sms-pipeline db upgrade`, or set SMS_PIPELINE_PARTITION_START")


def partition_start(conn: psycopg.Connection) -> date:
    """The first day partition recorded in the database (the first of a month)."""
    _require_table(conn)
    return queries.scalar(conn, "installation_partition_start")


def lower_partition_start(conn: psycopg.Connection, day: date) -> date:
    """Lower the recorded start to the first of ``day``'s month, if that is earlier; the recorded start after.

    Runs in the connection's transaction (committed by the caller, or at once
    on an autocommit connection).
    """
    _require_table(conn)
    return queries.scalar(conn, "installation_lower_partition_start", day=day)
