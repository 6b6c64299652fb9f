"""New attempts of messages already in the queue: a superseded row's key taken over by a fresh pending row.

The one mechanism behind an operator replay (:mod:`sms_pipeline.ops.messages`)
and the automatic re-send after proof of non-submission
(:mod:`sms_pipeline.reconcile.resend`): a new attempt enters the queue like
any message, so it lives with intake.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

import psycopg

from sms_pipeline.db import queries
from sms_pipeline.intake.messages import ensure_partition_for


@dataclass(frozen=True, slots=True)
class Replayed:
    replaced_id: int
    message_id: int
    created_at: datetime
    attempt_key: UUID


def supersede_with_new_attempts(
    conn: psycopg.Connection, rows: Sequence[tuple[int, datetime]], *, state: str, state_reason: str,
    now: datetime, send_window: timedelta, state_reason_was: str | None = None,
) -> list[Replayed]:
    """Supersede ``rows`` (id, created_at) still in ``state`` (and ``state_reason_was``, when given),
    each with a new pending attempt taking its business key over; inside the caller's transaction.
    A new attempt keeps its row's expiry while it is ahead, else expires ``send_window`` from ``now``
    (``SMS_PIPELINE_MAX_SEND_DELAY_H``, as intake gives any row).

    The one mechanism behind an operator replay and the automatic re-send
    after proof of non-submission: set-based (two statements whatever the
    number of rows), guarded by the state the caller decided on, so a row
    moved meanwhile is neither superseded nor copied. Returns one
    :class:`Replayed` per row superseded.
    """
    if not rows:
        return []
    ensure_partition_for(conn, now)
    superseded = queries.run(
        conn, "ops_replay_supersede", ids=[r[0] for r in rows], created_ats=[r[1] for r in rows], state=state,
        state_reason_was=state_reason_was, state_reason=state_reason, now=now).fetchall()
    if not superseded:
        return []
    inserted = queries.run(conn, "ops_replay_insert", ids=[r[0] for r in superseded],
                           created_ats=[r[1] for r in superseded], now=now, expires_at=now + send_window).fetchall()
    if len(inserted) != len(superseded):
        raise RuntimeError(f"superseded {len(superseded)} attempts but enqueued {len(inserted)} new ones")
    return [Replayed(replaced_id, new_id, new_created_at, attempt_key)
            for replaced_id, new_id, new_created_at, attempt_key in inserted]
