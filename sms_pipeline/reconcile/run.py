"""One provider day, end to end: receipts, correlation, state moves, orphans, proof, re-send after proof.

:func:`reconcile_day` is what the Dagster assets (also when the CLI runs them)
and the benchmark call. Everything runs in one transaction
(:func:`sms_pipeline.reconcile.transaction.reconciliation`): the steps read each other's work
tables (``reconcile_work``), each receipt event is written once (after its correlation and
disposition are known, never stored uncorrelated and then rewritten), and a failure leaves the
day exactly as it was.

Receipt pushes are not read here: the push pass
(:func:`sms_pipeline.reconcile.pushes.reconcile_pushes`) reads them, with
the code-table guard and the hold for early pushes, and the day report
carries the same receipts anyway.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.core.clock import Clock
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.reconcile import transaction
from sms_pipeline.reconcile.apply import Applied, apply_receipts
from sms_pipeline.reconcile.correlate import Correlation, correlate
from sms_pipeline.reconcile.non_submission import NonSubmission, prove_non_submission
from sms_pipeline.reconcile.orphans import Orphans, settle_orphans
from sms_pipeline.reconcile.receipts import ReceiptLoad, stage_new_receipts, store_new_receipts
from sms_pipeline.reconcile.resend import resend_after_proof
from sms_pipeline.send.upkeep import promote_scheduled

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReconcileResult:
    day: date
    receipts: ReceiptLoad
    correlation: Correlation
    applied: Applied
    orphans: Orphans
    non_submission: NonSubmission
    duration_s: float
    resent_after_proof: int = 0  # proved-unsent rows superseded by a new attempt (this day's and neighbours')
    # Rows of the neighbouring days proved once this day's report counted as reconciled.
    neighbours_proved: int = 0

    @property
    def unknown_resolved(self) -> int:
        return self.applied.submissions_confirmed + self.non_submission.proved

    def summary(self) -> dict[str, Any]:
        """Plain counts (no recipients, no ids) for logs and materialisation metadata."""
        return {
            "day": self.day.isoformat(),
            "receipts": {k: v for k, v in asdict(self.receipts).items() if k != "day"},
            "msgids_tried": self.correlation.tried,
            "matched": self.correlation.matched,
            "matched_by_msgid": self.correlation.by_msgid,
            "matched_by_transaction": self.correlation.by_transaction,
            "matched_by_reconstruction": self.correlation.by_reconstruction,
            "receipts_ambiguous": self.correlation.ambiguous,
            "receipts_not_found": self.correlation.not_found,
            "messages_marked_ambiguous": self.correlation.rows_ambiguous,
            "messages_marked_not_found": self.correlation.rows_not_found,
            "rows_updated": self.applied.rows_updated,
            "state_moves": dict(self.applied.moves),
            "receipt_dispositions": dict(self.applied.dispositions),
            "conflicting_finals": self.applied.conflicting_finals,
            "unknown_resolved": self.unknown_resolved,
            "orphans_opened": self.orphans.opened,
            "orphans_resolved": self.orphans.resolved,
            "not_submitted_proved": self.non_submission.proved,
            "not_submitted_proved_on_neighbour_days": self.neighbours_proved,
            "resent_after_proof": self.resent_after_proof,
            "non_submission_evidence_missing": list(self.non_submission.missing),
            "duration_s": round(self.duration_s, 3),
        }


def reconcile_day(
    conn: psycopg.Connection,
    day: date,
    clock: Clock,
    *,
    provider_timezone: ZoneInfo,
    correlation_window_s: int,
    non_submission_grace_h: int,
    partition_start: date,
    resend_after_proof_classes: Sequence[str],
    resend_max_age_h: int,
    max_send_delay_h: int,
    campaign_send_spread_s: int,
    work_mem_mb: int,
) -> ReconcileResult:
    """Store day ``day``'s receipt events, correlate, move states, settle orphans, prove the day,
    re-send what was proved never submitted, record the day's loaded report as reconciled, then prove
    (and re-send) what the neighbouring days could not prove before it was; commits.

    Provider-side campaign rows whose time has passed and whose transaction
    the day's report shows sent become ``submitted`` first (billed at their
    time), so the report's receipts find them submitted, not ``scheduled``.

    ``correlation_window_s``: ± seconds for correlation by reconstruction;
    ``campaign_send_spread_s``: how long after its time a handed-over campaign row may still be sent
    (reconstruction looks that far; its proof waits for the reports that far);
    ``non_submission_grace_h`` and ``partition_start``: see :func:`prove_non_submission`;
    ``resend_after_proof_classes``, ``resend_max_age_h`` (measured on ``clock``) and
    ``max_send_delay_h`` (a new attempt's send window): see
    :func:`~sms_pipeline.reconcile.resend.resend_after_proof`;
    ``work_mem_mb``: the transaction's ``work_mem`` (docs/design.md#reconciliation-memory).
    """
    transaction.require_no_open_transaction(conn)
    started = time.perf_counter()
    now = clock.now()
    tz = provider_timezone
    day_start, day_end = day_bounds(day, tz)
    window = timedelta(seconds=correlation_window_s)
    spread = timedelta(seconds=campaign_send_spread_s)
    with transaction.reconciliation(conn, work_mem_mb):
        receipts = stage_new_receipts(conn, day, now)
        # Provider-side campaign rows whose transaction the day's report shows sent: submitted (billed at
        # their time) before the day is correlated; what the report does not show waits for the worker.
        reported = [txn for (txn,) in queries.run(conn, "campaign_reported_transactions")]
        promote_scheduled(conn, now=now, price_time_zone=tz.key, transaction_ids=reported)
        correlation = correlate(conn, day=(day_start, day_end), window=window, spread=spread, provider_timezone=tz,
                                now=now)
        applied = apply_receipts(conn, window=window, spread=spread, provider_timezone=tz, now=now)
        store_new_receipts(conn, receipts, now)
        orphans = settle_orphans(conn, now=now)
        def prove_and_resend(proof_day: date) -> tuple[NonSubmission, int]:
            proof = prove_non_submission(
                conn, day=proof_day, now=now, provider_timezone=tz, non_submission_grace_h=non_submission_grace_h,
                partition_start=partition_start, spread=spread,
            )
            if not proof.report_complete:
                return proof, 0
            start, end = day_bounds(proof_day, tz)
            return proof, resend_after_proof(
                conn, day_start=start, day_end=end, now=now, classes=resend_after_proof_classes,
                max_age_h=resend_max_age_h, send_window=timedelta(hours=max_send_delay_h),
            )

        proof, resent = prove_and_resend(day)
        # The day's loaded lines are now matched: its neighbours' proofs may count this report (V82). In a
        # range run (days ascending) D's proof waits for D + 1's pass, which proves D here, in the same run.
        queries.run(conn, "reconcile_report_reconciled", report_date=day, now=now)
        neighbours_proved = 0
        for neighbour in (day - timedelta(days=1), day + timedelta(days=1)):
            if neighbour >= partition_start:
                neighbour_proof, neighbour_resent = prove_and_resend(neighbour)
                neighbours_proved += neighbour_proof.proved
                resent += neighbour_resent
    if proof.proved or neighbours_proved or resent:
        log.info("reconciled day=%s not_submitted_proved=%d on_neighbour_days=%d resent_after_proof=%d",
                 day.isoformat(), proof.proved, neighbours_proved, resent)
    return ReconcileResult(
        day=day,
        receipts=receipts,
        correlation=correlation,
        applied=applied,
        orphans=orphans,
        non_submission=proof,
        duration_s=time.perf_counter() - started,
        resent_after_proof=resent,
        neighbours_proved=neighbours_proved,
    )
