"""Forward-only state moves from matched receipts (after :mod:`correlate`).

* An ``unknown`` row with a matched receipt was taken by the provider: it
  becomes ``submitted`` and is billed like any submission (one statement),
  then follows its receipts like every other row (the next statement): the
  trigger allows unknown -> submitted -> final, never unknown -> final.
* Intermediate and unmapped words never move a state; the first final (by
  provider done time, then first seen) moves ``submitted`` to
  ``delivered``/``failed``/``expired``; a later final that disagrees is kept
  on the receipt as ``conflicting_final`` and on the row as
  ``conflicting_final_status``, and counted, never applied.
* Every statement writes only rows whose values change: a re-run updates
  nothing.

Runs inside the caller's transaction, reading correlate's work tables.
Stored events that were waiting are linked here; the day's new events are
inserted linked afterwards, from ``reconcile_event_dispositions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction
from sms_pipeline.reconcile.correlate import window_ms


@dataclass(frozen=True)
class Applied:
    submissions_confirmed: int  # unknown -> submitted on receipt evidence
    rows_updated: int  # matched rows that changed (msgId, correlation, state...)
    moves: dict[str, int] = field(default_factory=dict)  # "submitted->delivered": rows, ... (changes only)
    dispositions: dict[str, int] = field(default_factory=dict)  # events linked this run, by disposition

    @property
    def conflicting_finals(self) -> int:
        return self.dispositions.get("conflicting_final", 0)


def apply_receipts(
    conn: psycopg.Connection, *, window: timedelta, spread: timedelta, provider_timezone: ZoneInfo, now: datetime
) -> Applied:
    """Apply the matched receipts; ``window`` / ``spread``: how far reconstruction looked (recorded on the
    rows it matched: the spread for a handed-over row, the window for any other)."""
    queries.run(conn, "reconcile_apply_events")
    transaction.analyze(conn, "reconcile_events")
    queries.run(conn, "reconcile_apply_decide")
    queries.run(conn, "reconcile_apply_conflicts")
    transaction.analyze(conn, "reconcile_message_decisions")
    confirmed = queries.scalar(
        conn, "reconcile_apply_confirm_submission", time_zone=provider_timezone.key, now=now
    )
    changed = queries.run(conn, "reconcile_apply_messages", window_ms=window_ms(window),
                         spread_ms=window_ms(spread), now=now).fetchall()
    moves = {f"{old}->{new}": n for old, new, n in changed if old != new}
    if confirmed:
        moves["unknown->submitted"] = confirmed
    queries.run(conn, "reconcile_apply_dispositions")
    queries.run(conn, "reconcile_apply_receipts", now=now)
    dispositions = queries.counts(conn, "reconcile_apply_disposition_counts")
    return Applied(
        submissions_confirmed=confirmed,
        rows_updated=sum(n for _, _, n in changed),
        moves=dict(sorted(moves.items())),
        dispositions=dispositions,
    )
