"""Reading ``marts.cost_daily`` for finance: rows by group, and totals per day; and
``marts.campaign_daily``: each campaign's cost and outcomes per day.

Money comes back as ``Decimal`` exactly as the mart holds it (NUMERIC); it is
never turned into a float on the way to a table, a CSV or Dagster metadata.
An amount is ``None`` where its rows are unpriced (no rate applies): unknown,
never 0. ``unknown_*`` is the exposure of rows whose send outcome is unknown
(possibly billed): not in the billed figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import psycopg

from sms_pipeline.marts.reading import mart_rows


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
    cost: Decimal | None
    rejected_messages: int
    unpriced_units: int
    cost_of_failed: Decimal | None
    unknown_messages: int
    unknown_units: int
    unknown_cost_at_risk: Decimal | None


@dataclass(frozen=True)
class DayTotal:
    day: date
    currency: str | None
    messages_submitted: int
    billable_units: int
    cost: Decimal | None
    rejected_messages: int
    unpriced_units: int
    cost_of_failed: Decimal | None
    unknown_messages: int
    unknown_units: int
    unknown_cost_at_risk: Decimal | None


@dataclass(frozen=True)
class CampaignCostRow:
    day: date
    campaign_id: int
    campaign_name: str
    tenant_id: str
    message_class: str
    currency: str | None
    messages: int
    submitted: int
    billable_units: int
    cost: Decimal | None
    delivered: int
    failed: int
    expired: int
    cancelled: int
    rejected: int
    pending: int
    delivery_ratio: Decimal | None
    median_latency_seconds: Decimal | None


UNPRICED = "unpriced"


def money_text(amount: Decimal | None) -> str:
    """An amount as its exact decimal text; ``unpriced`` where no rate applies (never ``0.0000``)."""
    return UNPRICED if amount is None else str(amount)


def cost_rows(conn: psycopg.Connection, first: date, last: date, tenant: str | None = None) -> list[CostRow]:
    """Every cost_daily row of days ``first``..``last`` (inclusive), optionally one tenant's."""
    return mart_rows(conn, "cost_daily", "marts_cost_rows", CostRow, first, last, tenant=tenant)


def campaign_rows(conn: psycopg.Connection, first: date, last: date,
                  tenant: str | None = None) -> list[CampaignCostRow]:
    """Every campaign_daily row of days ``first``..``last`` (inclusive), optionally one tenant's."""
    return mart_rows(conn, "campaign_daily", "campaign_report_rows", CampaignCostRow, first, last, tenant=tenant)


def day_totals(conn: psycopg.Connection, first: date, last: date) -> list[DayTotal]:
    """Totals per day and currency over all tenants, channels, classes and senders."""
    return mart_rows(conn, "cost_daily", "marts_cost_day_totals", DayTotal, first, last)
