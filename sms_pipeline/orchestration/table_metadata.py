"""Dagster's standard table metadata (``dagster/table_name``, ``dagster/row_count``)
for the Python assets that write a table: the table and its rows of the day."""

from __future__ import annotations

from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg

from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.db import queries

DAY_REPORT_ROWS = "dlr.day_report_rows"
TXN_REPORT_ROWS = "dlr.txn_report_rows"
DELIVERY_RECEIPTS = "dlr.delivery_receipts"
OUTBOUND_MESSAGE = "msg.outbound_message"
PROVIDER_SUMMARY = "dlr.provider_summary"


def table(name: str, row_count: int) -> dict[str, Any]:
    """``dagster/table_name`` and ``dagster/row_count`` (the table's rows of the day).

    The raw keys: Dagster 1.13 keeps ``TableMetadataSet`` out of its public API.
    """
    return {"dagster/table_name": name, "dagster/row_count": int(row_count)}


def txn_report_rows_of_day(conn: psycopg.Connection, day: date) -> int:
    return queries.scalar(conn, "metadata_txn_report_rows_of_day", report_date=day)


def receipts_of_day(conn: psycopg.Connection, day: date, tz: ZoneInfo) -> int:
    start, end = day_bounds(day, tz)
    return queries.scalar(conn, "metadata_delivery_receipts_of_day", day_start=start, day_end=end)


def messages_of_day(conn: psycopg.Connection, day: date, tz: ZoneInfo) -> int:
    start, end = day_bounds(day, tz)
    return queries.scalar(conn, "metadata_outbound_messages_of_day", day_start=start, day_end=end)
