"""Receipt pushes reconciled within a minute (docs/design.md#receipt-push).

The receiver writes each push to ``dlr.receipt_push_inbox``. A pass
(:func:`reconcile_pushes`, run by ``sms-pipeline reconcile recent``) takes
the pushes not reconciled yet and runs the day's steps over them only: the
receipt events (source ``push``, the error code read through the provider's
code table: :mod:`sms_pipeline.reconcile.receipts`), the three correlation
passes (a push has no text and no sender, so it matches by msgId, by
transaction + recipient, or, for an OTP row, by recipient and the answer's
createTime to the second), the decisions and forward-only moves, the store,
the orphans. Its cost follows the pushes: it reads no day's raw loads and
tries again only the waiting events of its own msgIds (the hourly and daily
runs still try every waiting event). It judges no row by absence (no
``not_found`` marking of a day's rows, no proof of non-submission, no
re-send): a few pushes are no evidence about the rest of a day.

One transaction under the reconciliation's lock, so a pass waits for a
running day and a day waits for a pass; the pushes are marked reconciled in
that transaction, so a crash leaves them for the next pass. An event is
keyed (msgId, status word) like every other, so a push and the same receipt
in the day report or a getDlr pull are one event: whichever is staged first
is stored (the day run reads no pushes, so the two are never staged together).

An early push (it came before the worker wrote the send's answer: no row
has its msgId or transaction yet) is held: a msgId no pass found whose
earliest push of the pass is younger than the hold (the worker's claim
lease: it writes an answer within the lease, or never) is neither stored
nor marked, and the next pass stages it again. After the hold its events
are stored as not found and become orphans, which the hourly and daily runs
try again like any orphan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.reconcile import transaction
from sms_pipeline.reconcile.apply import Applied, apply_receipts
from sms_pipeline.reconcile.correlate import Correlation, correlate
from sms_pipeline.reconcile.orphans import Orphans, settle_orphans
from sms_pipeline.reconcile.receipts import ReceiptLoad, count_staged, stage_new_receipts, store_new_receipts


class NoCodeTable(UserError):
    """The provider's code table was never fetched: a pass would read every pushed code as unmapped."""


@dataclass(frozen=True)
class PushPass:
    receipts: ReceiptLoad  # source_rows: the waiting pushes read; new_receipts: events stored
    correlation: Correlation
    applied: Applied
    orphans: Orphans
    held: int  # msgIds held back (early pushes): staged again by the next pass
    reconciled: int  # pushes marked reconciled
    lag_p50_s: float | None  # push received -> reconciled, over the pushes marked
    lag_p95_s: float | None
    duration_s: float

    @property
    def moved(self) -> int:
        return sum(self.applied.moves.values())

    def summary_line(self) -> str:
        """Counts only (no numbers, no ids), one line."""
        def lag(seconds: float | None) -> str:
            return "-" if seconds is None else f"{seconds:.1f}s"

        c = self.correlation
        return (f"pushes={self.receipts.source_rows} events={self.receipts.new_receipts} matched={c.matched} "
                f"not_found={c.not_found - self.held} ambiguous={c.ambiguous} waiting={self.held} "
                f"moved={self.moved} reconciled={self.reconciled} "
                f"lag_p50={lag(self.lag_p50_s)} lag_p95={lag(self.lag_p95_s)} duration={self.duration_s:.2f}s")


def reconcile_pushes(
    conn: psycopg.Connection,
    clock: Clock,
    *,
    provider_timezone: ZoneInfo,
    correlation_window_s: int,
    hold_s: int,
    campaign_send_spread_s: int,
) -> PushPass | None:
    """Reconcile the pushes waiting in the inbox (see the module); commits. ``None``: none was waiting.

    ``correlation_window_s``, ``campaign_send_spread_s``: as for the day's run; ``hold_s``: how long a
    push nothing matches waits for the send's answer (the claim lease).
    """
    transaction.require_no_open_transaction(conn)
    days = [day for (day,) in queries.run(conn, "reconcile_push_days").fetchall()]
    if not days:
        return None
    if queries.scalar(conn, "delivery_codes_count") == 0:
        # Every code would read as unmapped, for good: the pushes wait until the table is fetched.
        raise NoCodeTable("no stored code table (dlr.delivery_codes): receipt pushes wait in the inbox until "
                          "the hourly job or `reconcile recent` fetches it")
    started = time.perf_counter()
    now = clock.now()
    window, spread = timedelta(seconds=correlation_window_s), timedelta(seconds=campaign_send_spread_s)
    with transaction.reconciliation(conn, transaction.PUSH_PASS_WORK_MEM_MB):
        staged = stage_new_receipts(conn, None, now, push_days=days)
        correlation = correlate(conn, day=None, window=window, spread=spread, provider_timezone=provider_timezone,
                                now=now)
        queries.run(conn, "reconcile_push_held", hold=timedelta(seconds=hold_s))
        held, held_events = queries.run(conn, "reconcile_push_hold").fetchone()
        receipts = count_staged(conn, None, partitions_created=staged.partitions_created) if held_events else staged
        applied = apply_receipts(conn, window=window, spread=spread, provider_timezone=provider_timezone, now=now)
        store_new_receipts(conn, receipts, now)
        orphans = settle_orphans(conn, now=now, every_waiting=False)
        reconciled, lag_p50_s, lag_p95_s = queries.run(conn, "reconcile_push_mark").fetchone()
    return PushPass(
        receipts=receipts,
        correlation=correlation,
        applied=applied,
        orphans=orphans,
        held=held,
        reconciled=reconciled,
        lag_p50_s=lag_p50_s,
        lag_p95_s=lag_p95_s,
        duration_s=time.perf_counter() - started,
    )
