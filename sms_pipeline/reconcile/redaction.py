"""Body redaction: the text of a message that has nothing left to happen is not kept for ever.

The body of a row in a final state (delivered, failed, rejected, expired,
superseded) created more than ``SMS_PIPELINE_REDACT_BODIES_AFTER_DAYS`` ago
becomes NULL; the row keeps its text fingerprint, the body's length, its
segments, units and cost, so correlation, the marts and the tie-out read the
same (docs/design.md#redaction-and-erasure). The update guard allows this
change only on final rows and never back.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import psycopg

from sms_pipeline.db import queries


def redact_final_bodies(conn: psycopg.Connection, now: datetime, *, after_days: int, batch_size: int = 5000) -> int:
    """Redact the bodies of final rows created before ``now - after_days``; how many were redacted.

    Each batch of ``batch_size`` rows is its own short transaction, so a
    large backlog never holds many row locks at once, and an interrupted
    run leaves only whole batches done (the next run takes the rest).
    ``after_days`` 0 means never. ``conn`` must not be inside a transaction.
    """
    if after_days < 0 or batch_size < 1:
        raise ValueError(f"after_days must be >= 0 and batch_size >= 1, got {after_days} and {batch_size}")
    if after_days == 0:
        return 0
    before = now - timedelta(days=after_days)
    total = 0
    while True:
        with conn.transaction():
            done = queries.scalar(conn, "redaction_final_bodies", before=before, now=now, batch_size=batch_size)
        total += done
        if done < batch_size:
            return total
