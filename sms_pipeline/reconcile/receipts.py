"""Raw report loads of one provider day, and receipt pushes, -> receipt events (``dlr.delivery_receipts``).

One event per (msgId, canonical status word): a replayed event (the same day
downloaded again, a duplicated row, the same status from another source) is
dropped, a new status of a known msgId is a new event. Status words are
normalised in SQL through ``dlr.status_outcomes`` / ``dlr.status_aliases``,
the mirror of :mod:`sms_pipeline.core.statuses`; unmapped words are kept
with their raw spelling and counted.

A receipt push (``dlr.receipt_push_inbox``) is one more source: its error
code becomes the word of the provider's code table (``dlr.delivery_codes``),
then the same normalisation; a code the table lacks is the unmapped word
``CODE_<code>``. The day's run reads no pushes; a pass over new pushes
(:mod:`sms_pipeline.reconcile.pushes`) reads only the waiting pushes.

The new events are staged first (:func:`stage_new_receipts`, the
work table ``reconcile_work.reconcile_new_events``), correlated and decided with the
stored ones, and only then stored, once, already linked to their message
(:func:`store_new_receipts`). Both run inside the reconciliation's
transaction (:func:`sms_pipeline.reconcile.run.reconcile_day`,
:func:`sms_pipeline.reconcile.pushes.reconcile_pushes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction


@dataclass(frozen=True)
class ReceiptLoad:
    day: date | None  # None: a pass over new pushes
    source_rows: int  # raw rows of the day (day report, transaction reports, getDlr) and waiting pushes read
    new_receipts: int  # events stored for the first time
    duplicate_rows: int  # rows whose event was already stored (or repeated in the same load)
    unkeyed_rows: int  # rows without a usable msgId or submit time: cannot be keyed, skipped
    new_unmapped_receipts: int  # new events whose word is outside the vocabulary (stored, counted)
    unmapped_rows: int  # source rows with such a word (every source, replays included)
    unmapped_words: dict[str, int] = field(default_factory=dict)
    partitions_created: int = 0


def stage_new_receipts(
    conn: psycopg.Connection, day: date | None, now: datetime, *, push_days: Sequence[date] = ()
) -> ReceiptLoad:
    """Stage the events not stored yet of day ``day``'s raw loads (``None``: no raw loads) and of the
    waiting pushes of ``push_days``; what those sources held."""
    queries.run(conn, "reconcile_receipts_normalise", report_date=day, push_days=list(push_days))
    queries.run(conn, "reconcile_receipts_new_events", now=now)
    transaction.analyze(conn, "reconcile_new_events")
    created = queries.scalar(conn, "reconcile_receipts_partitions")
    return count_staged(conn, day, partitions_created=created)


def count_staged(conn: psycopg.Connection, day: date | None, *, partitions_created: int) -> ReceiptLoad:
    """What the staged sources and new events hold now (again after a pass held some events back)."""
    source_rows, unkeyed, new, new_unmapped, unmapped_rows, unmapped_words = queries.run(
        conn, "reconcile_receipts_counts"
    ).fetchone()
    return ReceiptLoad(
        day=day,
        source_rows=source_rows,
        new_receipts=new,
        new_unmapped_receipts=new_unmapped,
        duplicate_rows=source_rows - unkeyed - new,
        unkeyed_rows=unkeyed,
        unmapped_rows=unmapped_rows,
        unmapped_words=dict(sorted(unmapped_words.items())),
        partitions_created=partitions_created,
    )


def store_new_receipts(conn: psycopg.Connection, staged: ReceiptLoad, now: datetime) -> None:
    """Insert the staged events with their correlation and disposition (after the decisions)."""
    stored = queries.scalar(conn, "reconcile_receipts_insert", now=now)
    if stored != staged.new_receipts:
        raise RuntimeError(f"stored {stored} receipt events of {staged.day or 'new pushes'}, "
                           f"staged {staged.new_receipts}")
