"""What the demo shows: per-day figures read back from the marts and the message table."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

import psycopg
from psycopg.rows import class_row

_PER_DAY = """
WITH days AS (
    SELECT generate_series(%(first)s::date, %(last)s::date, interval '1 day')::date AS day
), delivery AS (
    SELECT day, sum(submitted) AS sent, sum(delivered) AS delivered, sum(failed) AS failed,
           sum(expired) AS expired_after_submission, sum(unknown) AS unknown, sum(still_pending) AS still_pending
      FROM marts.delivery_by_class_daily GROUP BY day
), costs AS (
    SELECT day, sum(billable_units) AS billable_units, sum(cost) AS cost, sum(rejected_messages) AS rejected,
           sum(unpriced_units) AS unpriced_units
      FROM marts.cost_daily GROUP BY day
), tieout AS (
    SELECT day, bool_and(status = 'match') AS tied_out, count(*) AS senders
      FROM marts.provider_tieout_daily GROUP BY day
), rows_by_day AS (
    -- A message's day is the provider-local day of its send attempt (design.md).
    SELECT (COALESCE(submitted_at, claimed_at, created_at) AT TIME ZONE %(tz)s)::date AS day,
           count(*) FILTER (WHERE correlation_result = 'ambiguous') AS ambiguous,
           count(*) FILTER (WHERE state = 'expired' AND submitted_at IS NULL) AS expired_unsent
      FROM msg.outbound_message GROUP BY 1
)
SELECT d.day,
       COALESCE(delivery.sent, 0)::bigint            AS sent,
       COALESCE(delivery.delivered, 0)::bigint       AS delivered,
       COALESCE(delivery.failed, 0)::bigint          AS failed,
       (COALESCE(delivery.expired_after_submission, 0) + COALESCE(r.expired_unsent, 0))::bigint AS expired,
       COALESCE(delivery.still_pending, 0)::bigint   AS still_pending,
       COALESCE(delivery.unknown, 0)::bigint         AS unknown,
       COALESCE(r.ambiguous, 0)::bigint              AS ambiguous,
       COALESCE(costs.rejected, 0)::bigint           AS rejected,
       COALESCE(rec.orphans_opened, 0)::bigint       AS orphans,
       COALESCE(costs.billable_units, 0)::bigint     AS billable_units,
       COALESCE(costs.cost, 0)::numeric(14, 4)       AS cost,
       COALESCE(costs.unpriced_units, 0)::bigint     AS unpriced_units,
       CASE WHEN tieout.senders IS NULL THEN 'no data'
            WHEN tieout.tied_out THEN 'ok' ELSE 'MISMATCH' END AS tieout
  FROM days d
  LEFT JOIN delivery ON delivery.day = d.day
  LEFT JOIN costs ON costs.day = d.day
  LEFT JOIN tieout ON tieout.day = d.day
  LEFT JOIN rows_by_day r ON r.day = d.day
  LEFT JOIN marts.reconciliation_daily rec ON rec.day = d.day
 ORDER BY d.day
"""


@dataclass(frozen=True)
class DaySummary:
    day: date
    sent: int
    delivered: int
    failed: int
    expired: int
    still_pending: int
    unknown: int
    ambiguous: int
    rejected: int
    orphans: int
    billable_units: int
    cost: Decimal
    unpriced_units: int
    tieout: str


def per_day(conn: psycopg.Connection, first: date, last: date, tz: str) -> list[DaySummary]:
    with conn.cursor(row_factory=class_row(DaySummary)) as cur:
        return cur.execute(_PER_DAY, {"first": first, "last": last, "tz": tz}).fetchall()


def to_json(days: list[DaySummary], extra: dict) -> str:
    """Money as a decimal string (never a float), dates as ISO."""
    rows = [{**asdict(d), "day": d.day.isoformat(), "cost": str(d.cost)} for d in days]
    total_cost = sum((d.cost for d in days), Decimal("0"))
    return json.dumps({**extra, "days": rows, "total_cost": str(total_cost),
                       "total_billable_units": sum(d.billable_units for d in days)}, indent=2)


def render(days: list[DaySummary], currency: str = "INR"):
    from rich import box
    from rich.table import Table

    table = Table(title="sms-pipeline demo: per provider-local day", box=box.SIMPLE_HEAD,
                  collapse_padding=True)
    headers = ("day", "sent", "delivered", "failed", "expired", "pending", "unknown", "ambiguous",
               "rejected", "orphans", "units", f"cost {currency}", "tie-out")
    for h in headers:
        # Compact box and collapsed padding: the table fits the demo's
        # 132-column console whole (a boxed one cut the day to "2026-11…").
        table.add_column(h, justify="left" if h in ("day", "tie-out") else "right", no_wrap=True,
                         min_width={"day": 10, "tie-out": 8}.get(h))
    for d in days:
        table.add_row(d.day.isoformat(), *(str(v) for v in (
            d.sent, d.delivered, d.failed, d.expired, d.still_pending, d.unknown, d.ambiguous, d.rejected,
            d.orphans, d.billable_units, d.cost)), d.tieout)
    return table


def write_json(path: Path, days: list[DaySummary], extra: dict) -> None:
    path.write_text(to_json(days, extra) + "\n", encoding="utf-8")
