"""Proof of non-submission (docs/design.md#proof-of-non-submission).

An ``unknown`` row may have been billed, so it is never re-sent blind. It
becomes ``failed`` / ``not_submitted`` (unbilled, replayable by an operator)
only when absence is proof: its attempt lies in provider day D, D's day
report was downloaded after D closed plus the grace (the provider lists
every message submitted on D in that file), and no correlation pass found
anything for the row. The neighbouring days' reports must be loaded as well:
a row can be filed in the neighbouring day's file (docs/receipt-cases.md#case-20), and it
only counts as found once that file's events are stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.db import queries


@dataclass(frozen=True)
class NonSubmission:
    report_complete: bool  # the evidence needed for a proof was there
    proved: int  # unknown -> failed / not_submitted
    missing: tuple[str, ...] = ()  # why not: which report is missing or too early


def _missing_evidence(
    conn: psycopg.Connection, day: date, provider_timezone: ZoneInfo, non_submission_grace_h: int, partition_start: date
) -> tuple[str, ...]:
    _, day_end = day_bounds(day, provider_timezone)
    complete_after = day_end + timedelta(hours=non_submission_grace_h)
    neighbours = [d for d in (day - timedelta(days=1), day + timedelta(days=1)) if d >= partition_start]
    loaded = dict(queries.run(conn, "reconcile_loaded_day_reports", days=[day, *neighbours]).fetchall())
    missing = []
    if day not in loaded:
        missing.append(f"day report {day} not loaded")
    elif loaded[day] < complete_after:
        missing.append(f"day report {day} downloaded before {complete_after.isoformat()} (close + grace)")
    missing += [f"neighbouring day report {d} not loaded" for d in neighbours if d not in loaded]
    return tuple(missing)


def prove_non_submission(
    conn: psycopg.Connection,
    *,
    day: date,
    now: datetime,
    provider_timezone: ZoneInfo,
    non_submission_grace_h: int,
    partition_start: date,
) -> NonSubmission:
    """Fail the day's provably unsent ``unknown`` rows (inside the caller's transaction, after correlation).

    ``non_submission_grace_h``: hours after D closes before D's report counts as complete;
    ``partition_start``: the first day, whose earlier neighbour is never expected.
    """
    missing = _missing_evidence(conn, day, provider_timezone, non_submission_grace_h, partition_start)
    if missing:
        return NonSubmission(report_complete=False, proved=0, missing=missing)
    day_start, day_end = day_bounds(day, provider_timezone)
    proved = queries.scalar(conn, "reconcile_non_submission", day_start=day_start, day_end=day_end, now=now)
    return NonSubmission(report_complete=True, proved=proved)
