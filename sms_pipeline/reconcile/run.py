"""One provider day, end to end: receipts, correlation, state moves, orphans, proof.

:func:`reconcile_day` is what the benchmark and the CLI call;
:func:`reconcile_stored_receipts` is the part after the receipt load (the
Dagster reconciliation asset, whose upstream asset stores the receipts).
Correlation, state moves, orphans and the proof of non-submission run in
one transaction: they read each other's temporary tables, and a failure
leaves the day exactly as it was.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from datetime import date, timedelta
from typing import Any

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.reconcile import statements
from sms_pipeline.reconcile.apply import Applied, apply_receipts
from sms_pipeline.reconcile.correlate import Correlation, correlate
from sms_pipeline.reconcile.non_submission import NonSubmission, prove_non_submission
from sms_pipeline.reconcile.orphans import Orphans, settle_orphans
from sms_pipeline.reconcile.receipts import ReceiptLoad, load_receipts
from sms_pipeline.settings import Settings


@dataclass(frozen=True)
class ReconcileResult:
    day: date
    correlation: Correlation
    applied: Applied
    orphans: Orphans
    non_submission: NonSubmission
    duration_s: float
    receipts: ReceiptLoad | None = None  # None when the receipts were loaded separately

    @property
    def unknown_resolved(self) -> int:
        return self.applied.submissions_confirmed + self.non_submission.proved

    def summary(self) -> dict[str, Any]:
        """Plain counts (no recipients, no ids) for logs and materialisation metadata."""
        out: dict[str, Any] = {
            "day": self.day.isoformat(),
            "msgids_tried": self.correlation.tried,
            "matched": self.correlation.matched,
            "matched_by_msgid": self.correlation.by_msgid,
            "matched_by_transaction": self.correlation.by_transaction,
            "matched_by_reconstruction": self.correlation.by_reconstruction,
            "ambiguous": self.correlation.ambiguous,
            "not_found": self.correlation.not_found,
            "rows_marked_ambiguous": self.correlation.rows_ambiguous,
            "rows_marked_not_found": self.correlation.rows_not_found,
            "rows_updated": self.applied.rows_updated,
            "state_moves": dict(self.applied.moves),
            "receipt_dispositions": dict(self.applied.dispositions),
            "conflicting_finals": self.applied.conflicting_finals,
            "unknown_resolved": self.unknown_resolved,
            "orphans_opened": self.orphans.opened,
            "orphans_resolved": self.orphans.resolved,
            "not_submitted_proved": self.non_submission.proved,
            "non_submission_evidence_missing": list(self.non_submission.missing),
            "duration_s": round(self.duration_s, 3),
        }
        if self.receipts is not None:
            out["receipts"] = {k: v for k, v in asdict(self.receipts).items() if k != "day"}
        return out


def reconcile_stored_receipts(conn: psycopg.Connection, day: date, settings: Settings, clock: Clock) -> ReconcileResult:
    """Correlate every uncorrelated receipt, move states, settle orphans, prove day ``day``; commits."""
    statements.require_no_open_transaction(conn)
    started = time.perf_counter()
    now = clock.now()
    tz = settings.provider_timezone
    day_start, day_end = day_bounds(day, tz)
    window = timedelta(seconds=settings.correlation_window_s)
    with conn.transaction():
        statements.lock(conn)
        statements.use_set_based_memory(conn)
        correlation = correlate(
            conn, day_start=day_start, day_end=day_end, window=window, provider_timezone=tz, now=now
        )
        applied = apply_receipts(conn, window=window, provider_timezone=tz, now=now)
        orphans = settle_orphans(conn, now=now)
        proof = prove_non_submission(conn, day=day, settings=settings, now=now)
    return ReconcileResult(
        day=day,
        correlation=correlation,
        applied=applied,
        orphans=orphans,
        non_submission=proof,
        duration_s=time.perf_counter() - started,
    )


def reconcile_day(conn: psycopg.Connection, day: date, settings: Settings, clock: Clock) -> ReconcileResult:
    """Receipts of day ``day``'s raw loads, then :func:`reconcile_stored_receipts`."""
    started = time.perf_counter()
    receipts = load_receipts(conn, day, clock)
    result = reconcile_stored_receipts(conn, day, settings, clock)
    return replace(result, receipts=receipts, duration_s=time.perf_counter() - started)
