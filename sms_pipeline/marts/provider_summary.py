"""The provider's own day summary (``/report/summary``, ``groupby=senderid``).

One call per provider-local day; the day's rows replace any earlier fetch of
that day in one transaction, and a fetch-marker row records that the day was
fetched even when the provider had nothing for it (the tie-out then compares
against zero instead of calling the day "not fetched"), with the day's sender
rows and units. A day's summary only grows: a fetch with fewer units or fewer
sender rows than the stored one is refused and writes nothing
(docs/design.md#report-guards), unless the caller passes ``allow_shrink``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import date, datetime

import psycopg

from sms_pipeline.db import queries, report_guards
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


def store_summary(conn: psycopg.Connection, day: date, senders: list[SenderSummary], fetched_at: datetime, *,
                  allow_shrink: bool = False) -> None:
    """Replace ``day``'s stored summary with ``senders`` (one transaction).

    Raises ``ReportShrinkRefused`` (nothing written) when ``senders`` has fewer
    units or fewer rows than the stored summary of the day, unless ``allow_shrink``.
    """
    units = sum(s.units for s in senders)
    with conn.transaction():
        stored = queries.run(conn, "marts_provider_summary_stored", day=day).fetchone()
        if allow_shrink:
            report_guards.allow_shrink(conn)  # the database's guard too, for this transaction
        elif stored is not None and (units < stored[1] or len(senders) < stored[0]):
            raise report_guards.refused(
                f"provider summary {day.isoformat()}",
                f"{report_guards.amount(units, 'unit')} in {report_guards.amount(len(senders), 'sender row')}",
                f"{report_guards.amount(stored[1], 'unit')} in "
                f"{report_guards.are_stored(stored[0], 'sender row')}",
                "a day's summary only grows",
            )
        # the marker first (the day's rows reference it), updated in place: the guard compares old and new
        queries.run(conn, "marts_provider_summary_fetched", day=day, fetched_at=fetched_at,
                    sender_rows=len(senders), units=units)
        queries.run(conn, "marts_provider_summary_clear", day=day)
        queries.run_many(conn, "marts_provider_summary_row", [{"day": day, **asdict(s)} for s in senders])


def fetch_day(client: ProviderClient, day: date) -> list[SenderSummary]:
    return summarise_by_sender(day, client.summary(day, day, groupby="senderid"))
