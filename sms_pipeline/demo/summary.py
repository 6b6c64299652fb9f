"""What the demo shows: per-day figures read back from the marts and the message table."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from sms_pipeline.db import queries
from sms_pipeline.marts import tieout

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
    tieout: str  # ok, explained (provider-only 3, ...), MISMATCH (residual N), not compared (...) or no data


def per_day(conn: psycopg.Connection, first: date, last: date, tz: str) -> list[DaySummary]:
    """Each day's figures, its tie-out as ``ok``, ``explained (...)`` or ``MISMATCH (residual N)``."""
    labels = tieout.day_labels(tieout.rows(conn, first, last))
    with conn.cursor(row_factory=dict_row) as cur:
        figures = queries.run(cur, "demo_per_day", first=first, last=last, tz=tz).fetchall()
    return [DaySummary(**day, tieout=labels.get(day["day"], "no data")) for day in figures]


@dataclass(frozen=True)
class PushSummary:
    """Receipt pushes the demo's receiver took and ``reconcile recent`` reconciled."""

    received: int
    reconciled: int
    median_latency_s: float | None  # received -> reconciled, on the database's clock
    p95_latency_s: float | None

    def line(self) -> str:
        if self.median_latency_s is None:
            return f"receipt pushes: {self.received} received, none reconciled"
        return (f"receipt pushes: {self.received} received, {self.reconciled} reconciled; push to reconciled "
                f"median {self.median_latency_s:.1f} s, p95 {self.p95_latency_s:.1f} s")


def pushes(conn: psycopg.Connection) -> PushSummary:
    received, reconciled, median, p95 = queries.run(conn, "demo_push_latency").fetchone()
    return PushSummary(received, reconciled, median, p95)


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
        # The tie-out wraps within its own cell: an explained day's buckets
        # would otherwise push every other column off the console.
        table.add_column(h, justify="left" if h in ("day", "tie-out") else "right", no_wrap=h != "tie-out",
                         min_width={"day": 10, "tie-out": 8}.get(h), max_width=36 if h == "tie-out" else None)
    for d in days:
        table.add_row(d.day.isoformat(), *(str(v) for v in (
            d.sent, d.delivered, d.failed, d.expired, d.still_pending, d.unknown, d.ambiguous, d.rejected,
            d.orphans, d.billable_units, d.cost)), d.tieout)
    return table


def write_json(path: Path, days: list[DaySummary], extra: dict) -> None:
    path.write_text(to_json(days, extra) + "\n", encoding="utf-8")
