"""The three correlation passes (docs/design.md#correlation), set-based and three-valued.

Every msgId with uncorrelated receipt events is tried on every day's run
(the day's new events staged by :mod:`sms_pipeline.reconcile.receipts`,
stored orphans, earlier ambiguous ones; a pass over new pushes tries only
its own msgIds), in order:

1. by msgId (the global registry);
2. by transaction + recipient, for rows with a transaction id but no msgId;
3. by reconstruction (recipient + sender + attempt time within the window;
   for a handed-over campaign row, from the window before to the campaign
   send spread after its time), for rows without a transaction id.

A msgId goes to the next pass only when the previous one found no
candidate at all. A pair is ``matched`` only when both its msgId and its row
have exactly one candidate; otherwise both sides are ``ambiguous``. A msgId
with no candidate is ``not_found`` (the orphan step takes its events).

:func:`correlate` must run inside the caller's transaction: it leaves the
work tables in ``reconcile_work`` (``reconcile_uncorrelated``, ``reconcile_pairs_by_*``,
``reconcile_decisions``, ``reconcile_unmatched``) that
:mod:`sms_pipeline.reconcile.apply` and the receipt insert read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.reconcile import transaction


@dataclass(frozen=True)
class Correlation:
    tried: int  # msgIds with uncorrelated events
    by_msgid: int  # matched by pass 1
    by_transaction: int  # matched by pass 2
    by_reconstruction: int  # matched by pass 3
    ambiguous: int  # msgIds with several candidates (or sharing their only one)
    not_found: int  # msgIds no pass found anything for
    rows_ambiguous: int  # message rows newly marked ambiguous
    rows_not_found: int  # message rows of the day newly marked not_found

    @property
    def matched(self) -> int:
        return self.by_msgid + self.by_transaction + self.by_reconstruction


def window_ms(window: timedelta) -> int:
    return int(window / timedelta(milliseconds=1))


def correlate(
    conn: psycopg.Connection,
    *,
    day: tuple[datetime, datetime] | None,
    window: timedelta,
    spread: timedelta,
    provider_timezone: ZoneInfo,
    now: datetime,
) -> Correlation:
    """Run the passes and record ambiguous / not-found results (rows and events).

    ``window``: ± the provider's submit time for reconstruction; ``spread``: how long after its time a
    handed-over (provider-side campaign) row may still be sent.

    ``day``: the reconciled day's bounds; its rows no pass found are marked ``not_found``. ``None``: a
    pass over new pushes, which tries only the waiting events of its own msgIds and judges no row
    by absence (a few pushes are no evidence that a row's receipt is missing).
    """
    queries.run(conn, "reconcile_correlate_uncorrelated", time_zone=provider_timezone.key,
                every_waiting=day is not None)
    transaction.analyze(conn, "reconcile_uncorrelated")
    queries.run(conn, "reconcile_correlate_by_msgid")
    transaction.analyze(conn, "reconcile_pairs_by_msgid")
    queries.run(conn, "reconcile_correlate_by_transaction")
    transaction.analyze(conn, "reconcile_pairs_by_transaction")
    queries.run(conn, "reconcile_correlate_by_reconstruction", window=window, spread=spread)
    transaction.analyze(conn, "reconcile_pairs_by_reconstruction")
    queries.run(conn, "reconcile_correlate_decide")
    transaction.analyze(conn, "reconcile_decisions")
    tried, by_msgid, by_txn, by_reconstruction, ambiguous = queries.run(
        conn, "reconcile_correlate_summary"
    ).fetchone()
    queries.run(conn, "reconcile_correlate_unmatched")
    transaction.analyze(conn, "reconcile_unmatched")
    queries.run(conn, "reconcile_correlate_unmatched_receipts", now=now)
    ms = window_ms(window)
    rows_ambiguous = queries.scalar(conn, "reconcile_correlate_ambiguous_rows", window_ms=ms,
                                    spread_ms=window_ms(spread), now=now)
    rows_not_found = 0
    if day is not None:
        day_start, day_end = day
        rows_not_found = queries.scalar(
            conn, "reconcile_correlate_not_found_rows", day_start=day_start, day_end=day_end, window_ms=ms,
            spread_ms=window_ms(spread), now=now,
        )
    return Correlation(
        tried=tried,
        by_msgid=by_msgid,
        by_transaction=by_txn,
        by_reconstruction=by_reconstruction,
        ambiguous=ambiguous,
        not_found=tried - by_msgid - by_txn - by_reconstruction - ambiguous,
        rows_ambiguous=rows_ambiguous,
        rows_not_found=rows_not_found,
    )
