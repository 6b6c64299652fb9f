"""The provider's own day summary (``/report/summary``, ``groupby=senderid``).

One call per provider-local day; the day's rows replace any earlier fetch of
that day in one transaction, and a fetch-marker row records that the day was
fetched even when the provider had nothing for it (the tie-out then compares
against zero instead of calling the day "not fetched").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime

import psycopg

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
        conn.execute("DELETE FROM dlr.provider_summary_fetch WHERE day = %s", (day,))
        conn.execute(
            "INSERT INTO dlr.provider_summary_fetch (day, fetched_at, sender_rows) VALUES (%s, %s, %s)",
            (day, fetched_at, len(senders)),
        )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO dlr.provider_summary"
                " (day, sender_id, total_messages, delivered, failed, pending, units)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [(day, s.sender_id, s.total_messages, s.delivered, s.failed, s.pending, s.units) for s in senders],
            )


def fetch_day(client: ProviderClient, day: date) -> list[SenderSummary]:
    return summarise_by_sender(day, client.summary(day, day, groupby="senderid"))
