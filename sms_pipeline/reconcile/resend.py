"""Re-send after proof (docs/design.md#re-send-after-proof).

A row reconciliation proved never submitted (``failed`` / ``not_submitted``)
was never billed and never reached the recipient. When its class is one of
``SMS_PIPELINE_RESEND_AFTER_PROOF`` (never ``otp``: a late code is useless)
and its message was created less than ``SMS_PIPELINE_RESEND_MAX_AGE_H`` ago
(on the reconciliation's clock), it is superseded by a new pending attempt,
due at once, exactly as an operator replay does
(:func:`sms_pipeline.intake.attempts.supersede_with_new_attempts`), with
state_reason ``resent_after_proof``. Set-based and in the proof's
transaction; every write is guarded by ``failed`` / ``not_submitted``, so a
re-run of the day re-sends nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import psycopg

from sms_pipeline.core.states import MessageClass, MessageState
from sms_pipeline.db import queries
from sms_pipeline.intake.attempts import supersede_with_new_attempts

RESENT_REASON = "resent_after_proof"
PROVED_REASON = "not_submitted"


def resend_after_proof(
    conn: psycopg.Connection,
    *,
    day_start: datetime,
    day_end: datetime,
    now: datetime,
    classes: Sequence[str],
    max_age_h: int,
    send_window: timedelta,
) -> int:
    """Supersede the day's proved-unsent rows of ``classes`` younger than ``max_age_h`` with new attempts.

    Inside the caller's transaction, after the proof. Returns how many rows were re-sent.
    """
    if MessageClass.otp.value in classes:
        raise ValueError("otp messages are never re-sent automatically: a late code is useless")
    if not classes:
        return 0
    rows = queries.run(
        conn, "reconcile_resend_candidates", day_start=day_start, day_end=day_end, classes=list(classes),
        created_after=now - timedelta(hours=max_age_h),
    ).fetchall()
    done = supersede_with_new_attempts(
        conn, rows, state=MessageState.failed.value, state_reason_was=PROVED_REASON, state_reason=RESENT_REASON, now=now,
        send_window=send_window,
    )
    return len(done)
