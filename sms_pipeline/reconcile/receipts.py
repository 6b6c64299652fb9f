"""Raw report loads of one provider day -> receipt events (``dlr.delivery_receipts``).

One event per (msgId, canonical status word): a replayed event (the same day
downloaded again, a duplicated row, the same status from another source) is
a no-op, a new status of a known msgId is a new event. Status words are
normalised in SQL through ``dlr.status_outcomes`` / ``dlr.status_aliases``,
the mirror of :mod:`sms_pipeline.core.statuses`; unmapped words are stored
with their raw spelling and counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import date

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.reconcile import statements


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
    duration_s: float = 0.0


def load_receipts(conn: psycopg.Connection, day: date, clock: Clock) -> ReceiptLoad:
    """Store the receipt events of provider day ``day``'s raw loads; commits."""
    statements.require_no_open_transaction(conn)
    started = time.perf_counter()
    with conn.transaction():
        statements.lock(conn)
        statements.use_set_based_memory(conn)
        created = statements.scalar(conn, "reconcile_receipts_partitions", report_date=day)
        source_rows, unkeyed, new, new_unmapped, unmapped_rows, unmapped_words = statements.run(
            conn, "reconcile_receipts_insert", report_date=day, now=clock.now()
        ).fetchone()
        if new:
            # A day's events arrive uncorrelated: without fresh statistics the
            # planner still believes almost every receipt is matched, and the
            # correlation that follows picks plans for a handful of rows.
            # Only the columns the correlation filters, groups and joins on
            # (a third of a full ANALYZE's time: every column's statistics
            # over a 30,000-row sample cost ~1 s per 100,000-message day).
            conn.execute("ANALYZE dlr.delivery_receipts (provider_message_id, message_id, correlation_result)")
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
        duration_s=time.perf_counter() - started,
    )
