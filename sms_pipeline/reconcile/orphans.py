"""Orphans: receipt events no correlation pass matched, kept with their payload.

Opened only after all passes ran (so a receipt matched by reconstruction is
never an orphan first); earlier orphans are resolved once their event has
been matched, because every uncorrelated event is tried again on each run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from sms_pipeline.db import queries


@dataclass(frozen=True)
class Orphans:
    opened: int
    resolved: int


def settle_orphans(conn: psycopg.Connection, *, now: datetime, every_waiting: bool = True) -> Orphans:
    """Resolve matched orphans, then open new ones (inside the caller's transaction).

    ``every_waiting=False``: only those of the msgIds this run tried (a pass over new pushes).
    """
    resolved = queries.scalar(conn, "reconcile_orphans_resolve", now=now, every_waiting=every_waiting)
    opened = queries.scalar(conn, "reconcile_orphans_open", every_waiting=every_waiting)
    return Orphans(opened=opened, resolved=resolved)
