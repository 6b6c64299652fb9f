"""Raw report loads of one provider day -> receipt events (``dlr.delivery_receipts``).

One event per (msgId, canonical status word): a replayed event (the same day
downloaded again, a duplicated row, the same status from another source) is
dropped, a new status of a known msgId is a new event. Status words are
normalised in SQL through ``dlr.status_outcomes`` / ``dlr.status_aliases``,
the mirror of :mod:`sms_pipeline.core.statuses`; unmapped words are kept
with their raw spelling and counted.

The day's new events are staged first (:func:`stage_new_receipts`, the
temporary table ``reconcile_new_events``), correlated and decided with the
stored ones, and only then stored, once, already linked to their message
(:func:`store_new_receipts`). Both run inside the reconciliation's
transaction (:func:`sms_pipeline.reconcile.run.reconcile_day`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction


@dataclass(frozen=True)
class ReceiptLoad:
    day: date
    source_rows: int  # raw rows of the day across day report, transaction reports and getDlr
    new_receipts: int  # events stored for the first time
    duplicate_rows: int  # rows whose event was already stored (or repeated in the same load)
    unkeyed_rows: int  # rows without a usable msgId or submit time: cannot be keyed, skipped
    new_unmapped_receipts: int  # new events whose word is outside the vocabulary (stored, counted)
    unmapped_rows: int  # source rows with such a word (every source, replays included)
    unmapped_words: dict[str, int] = field(default_factory=dict)
    partitions_created: int = 0


def stage_new_receipts(conn: psycopg.Connection, day: date, now: datetime) -> ReceiptLoad:
    """Stage day ``day``'s events not stored yet; what the raw loads held."""
    queries.run(conn, "reconcile_receipts_normalise", report_date=day)
    queries.run(conn, "reconcile_receipts_new_events", now=now)
    transaction.analyze(conn, "reconcile_new_events")
    source_rows, unkeyed, new, new_unmapped, unmapped_rows, unmapped_words = queries.run(
        conn, "reconcile_receipts_counts"
    ).fetchone()
    created = queries.scalar(conn, "reconcile_receipts_partitions")
    return ReceiptLoad(
        day=day,
        source_rows=source_rows,
        new_receipts=new,
        new_unmapped_receipts=new_unmapped,
        duplicate_rows=source_rows - unkeyed - new,
        unkeyed_rows=unkeyed,
        unmapped_rows=unmapped_rows,
        unmapped_words=dict(sorted(unmapped_words.items())),
        partitions_created=created,
    )


def store_new_receipts(conn: psycopg.Connection, staged: ReceiptLoad, now: datetime) -> None:
    """Insert the staged events with their correlation and disposition (after the decisions)."""
    stored = queries.scalar(conn, "reconcile_receipts_insert", now=now)
    if stored != staged.new_receipts:
        raise RuntimeError(f"stored {stored} receipt events of {staged.day}, staged {staged.new_receipts}")
