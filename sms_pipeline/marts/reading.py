"""Reading a mart's rows for a range of provider-local days, as typed rows."""

from __future__ import annotations

from datetime import date
from typing import TypeVar

import psycopg
from psycopg.rows import class_row

from sms_pipeline.db import queries
from sms_pipeline.errors import UserError

Row = TypeVar("Row")


def mart_rows(conn: psycopg.Connection, mart: str, query: str, row_type: type[Row], first: date, last: date,
              **params: object) -> list[Row]:
    """The rows named query ``query`` reads from ``marts.<mart>`` for days ``first``..``last`` (inclusive).

    A mart that does not exist yet (never materialised) is a clear error, not a traceback.
    """
    if last < first:
        raise UserError(f"--to {last} is before --from {first}")
    try:
        with conn.cursor(row_factory=class_row(row_type)) as cur:
            return queries.run(cur, query, first=first, last=last, **params).fetchall()
    except psycopg.errors.UndefinedTable:
        raise UserError(f"marts.{mart} does not exist yet: materialise the marts first "
                        "(the Dagster marts assets)") from None
