"""Dagster's standard table metadata for the Python assets that write a table, and typed values.

``dagster/table_name``, ``dagster/row_count`` (the table's rows of the day) and
``dagster/column_schema`` (the table's columns as the database has them, so the
UI's schema never drifts from the DDL). Counts by name (statuses, state moves)
become small tables rather than JSON blobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg
from psycopg import sql

from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.db import queries

DAY_REPORT_ROWS = "dlr.day_report_rows"
TXN_REPORT_ROWS = "dlr.txn_report_rows"
GETDLR_ROWS = "dlr.getdlr_rows"
DELIVERY_RECEIPTS = "dlr.delivery_receipts"
OUTBOUND_MESSAGE = "msg.outbound_message"
PROVIDER_SUMMARY = "dlr.provider_summary"
DELIVERY_CODES = "dlr.delivery_codes"

_COUNT_SCHEMA = dg.TableSchema(columns=[dg.TableColumn("name", "string"), dg.TableColumn("count", "int")])


def named(name: str) -> dict[str, Any]:
    """The table an asset writes, for its definition: the catalog names it before the first run."""
    return {"dagster/table_name": name}


def table(conn: psycopg.Connection, name: str, row_count: int) -> dict[str, Any]:
    """The table's name, its rows of the day and its columns.

    The raw keys: Dagster 1.13 keeps ``TableMetadataSet`` out of its public API.
    """
    return {"dagster/table_name": name, "dagster/row_count": int(row_count),
            "dagster/column_schema": column_schema(conn, name)}


def column_schema(conn: psycopg.Connection, name: str) -> dg.TableSchema:
    schema, relation = name.split(".")
    columns = queries.run(conn, "metadata_table_columns", table_schema=schema, table_name=relation).fetchall()
    return dg.TableSchema(columns=[
        dg.TableColumn(column, kind, constraints=dg.TableColumnConstraints(nullable=nullable))
        for column, kind, nullable in columns
    ])


def counts(by_name: Mapping[str, int]) -> dg.MetadataValue:
    """Counts by name (status words, state moves) as a table, largest first."""
    rows = sorted(by_name.items(), key=lambda item: (-item[1], item[0]))
    return dg.MetadataValue.table(records=[dg.TableRecord({"name": str(k), "count": int(v)}) for k, v in rows],
                                  schema=_COUNT_SCHEMA)


def mart_rows_by_day(conn: psycopg.Connection, mart: str, first: date, last: date) -> dict[date, int]:
    """Rows of ``marts.<mart>`` per day of ``first..last`` (0 for a day without rows)."""
    found = dict(queries.run(conn, "metadata_mart_rows_by_day", identifiers={"mart": sql.Identifier(mart)},
                             first=first, last=last).fetchall())
    return {first + timedelta(days=n): found.get(first + timedelta(days=n), 0)
            for n in range((last - first).days + 1)}


def txn_report_rows_of_day(conn: psycopg.Connection, day: date) -> int:
    return queries.scalar(conn, "metadata_txn_report_rows_of_day", report_date=day)


def receipts_of_day(conn: psycopg.Connection, day: date, tz: ZoneInfo) -> int:
    start, end = day_bounds(day, tz)
    return queries.scalar(conn, "metadata_delivery_receipts_of_day", day_start=start, day_end=end)


def messages_of_day(conn: psycopg.Connection, day: date, tz: ZoneInfo) -> int:
    start, end = day_bounds(day, tz)
    return queries.scalar(conn, "metadata_outbound_messages_of_day", day_start=start, day_end=end)
