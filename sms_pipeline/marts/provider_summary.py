"""The provider's own day summary (``/report/summary``, ``groupby=senderid``).

One call per provider-local day; the day's rows replace any earlier fetch of
that day in one transaction, and a fetch-marker row records that the day was
fetched even when the provider had nothing for it (the tie-out then compares
against zero instead of calling the day "not fetched").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import date, datetime

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import SummaryRow


class SummaryMismatch(ValueError):
    """The provider answered for a day it was not asked about."""


@dataclass(frozen=True)
class SenderSummary:
    """The provider's figures for one day and sender id ('' when it gave none)."""

    sender_id: str
    total_messages: int
    delivered: int
    failed: int
    pending: int
    units: int


def summarise_by_sender(day: date, rows: list[SummaryRow]) -> list[SenderSummary]:
    """One entry per sender id, rows for the same sender added up; refuses rows of another day."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        if row.day is not None and row.day != day:
            raise SummaryMismatch(f"asked for the provider summary of {day}, got a row for {row.day}")
        into = totals[row.sender_id or ""]
        for i, value in enumerate((row.total, row.delivered, row.failed, row.pending, row.units)):
            into[i] += value
    return [SenderSummary(sender, *values) for sender, values in sorted(totals.items())]


def store_summary(conn: psycopg.Connection, day: date, senders: list[SenderSummary], fetched_at: datetime) -> None:
    """Replace ``day``'s stored summary with ``senders`` (one transaction)."""
    with conn.transaction():
        # the fetch marker owns the day's rows (ON DELETE CASCADE)
        queries.run(conn, "marts_provider_summary_clear", day=day)
        queries.run(conn, "marts_provider_summary_fetched", day=day, fetched_at=fetched_at, sender_rows=len(senders))
        queries.run_many(conn, "marts_provider_summary_row", [{"day": day, **asdict(s)} for s in senders])


def fetch_day(client: ProviderClient, day: date) -> list[SenderSummary]:
    return summarise_by_sender(day, client.summary(day, day, groupby="senderid"))
