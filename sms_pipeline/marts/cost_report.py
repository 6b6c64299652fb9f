"""Reading ``marts.cost_daily`` for finance: rows by group, and totals per day.

Money comes back as ``Decimal`` exactly as the mart holds it (NUMERIC); it is
never turned into a float on the way to a table, a CSV or Dagster metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import psycopg
from psycopg.rows import class_row

from sms_pipeline.db import queries
from sms_pipeline.errors import UserError


@dataclass(frozen=True)
class CostRow:
    day: date
    tenant_id: str
    channel: str
    message_class: str
    sender_id: str | None
    currency: str | None
    messages_submitted: int
    billable_units: int
    cost: Decimal
    rejected_messages: int
    unpriced_units: int
    cost_of_failed: Decimal


@dataclass(frozen=True)
class DayTotal:
    day: date
    currency: str | None
    messages_submitted: int
    billable_units: int
    cost: Decimal
    rejected_messages: int
    unpriced_units: int
    cost_of_failed: Decimal


def _check_range(first: date, last: date) -> None:
    if last < first:
        raise UserError(f"--to {last} is before --from {first}")


def _fetch(conn: psycopg.Connection, name: str, row_type: type, **params: object) -> list:
    try:
        with conn.cursor(row_factory=class_row(row_type)) as cur:
            return queries.run(cur, name, **params).fetchall()
    except psycopg.errors.UndefinedTable:
        raise UserError("marts.cost_daily does not exist yet: materialise the marts first "
                        "(the Dagster marts assets)") from None


def cost_rows(conn: psycopg.Connection, first: date, last: date, tenant: str | None = None) -> list[CostRow]:
    """Every cost_daily row of days ``first``..``last`` (inclusive), optionally one tenant's."""
    _check_range(first, last)
    return _fetch(conn, "marts_cost_rows", CostRow, first=first, last=last, tenant=tenant)


def day_totals(conn: psycopg.Connection, first: date, last: date) -> list[DayTotal]:
    """Totals per day and currency over all tenants, channels, classes and senders."""
    _check_range(first, last)
    return _fetch(conn, "marts_cost_day_totals", DayTotal, first=first, last=last)
