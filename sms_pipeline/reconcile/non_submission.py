"""Proof of non-submission (docs/design.md#proof-of-non-submission).

An ``unknown`` row may have been billed, so it is never re-sent blind. It
becomes ``failed`` / ``not_submitted`` (unbilled, replayable by an operator)
only when absence is proof: its attempt lies in provider day D, D's day
report was downloaded after D closed plus the grace (the provider lists
every message submitted on D in that file), and no correlation pass found
anything for the row. The neighbouring days' reports must be loaded and
reconciled since they were loaded: a row can be filed in the neighbouring
day's file (docs/receipt-cases.md#case-20), and only that day's own pass
matches its lines (the neighbour's pass then retries this day's proof).

A handed-over row (a provider-side campaign's, scheduled_for > claimed_at)
may be sent up to the campaign send spread after its time, on a later day:
it is proved only once the complete reports reach past its time plus the
spread (the following days' reports, each downloaded after its close plus the
grace and reconciled since it was loaded: only that day's own pass matches
its lines); until then it waits, and the day's other rows are proved as before.
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


def _evidence(
    conn: psycopg.Connection,
    day: date,
    provider_timezone: ZoneInfo,
    non_submission_grace_h: int,
    partition_start: date,
    spread: timedelta,
) -> tuple[tuple[str, ...], datetime]:
    """What is missing for D's proof, and until when the complete reports reach: D's end, or the end of
    the last of the following days (as far as D's end + ``spread``) whose reports are all complete and
    reconciled since they were loaded."""
    grace = timedelta(hours=non_submission_grace_h)
    _, day_end = day_bounds(day, provider_timezone)
    neighbours = [d for d in (day - timedelta(days=1), day + timedelta(days=1)) if d >= partition_start]
    following = [day + timedelta(days=1)]
    while day_bounds(following[-1], provider_timezone)[1] < day_end + spread:  # a short (DST) day: one more
        following.append(following[-1] + timedelta(days=1))
    reports = queries.run(conn, "reconcile_loaded_day_reports", days=sorted({day, *neighbours, *following}))
    loaded, reconciled = {}, set()
    for report_date, downloaded_at, was_reconciled in reports:
        loaded[report_date] = downloaded_at
        if was_reconciled:
            reconciled.add(report_date)
    missing = []
    if day not in loaded:
        missing.append(f"day report {day} not loaded")
    elif loaded[day] < day_end + grace:
        missing.append(f"day report {day} downloaded before {(day_end + grace).isoformat()} (close + grace)")
    missing += [f"neighbouring day report {d} not loaded" for d in neighbours if d not in loaded]
    missing += [f"neighbouring day report {d} not reconciled since it was loaded"
                for d in neighbours if d in loaded and d not in reconciled]
    complete_until = day_end
    for d in following:
        _, end = day_bounds(d, provider_timezone)
        # Complete is not enough: D + 1's lines are matched only by D + 1's own pass, which a daily run
        # makes after D's; until then a handed-over row sent after midnight would look unsent.
        if d not in loaded or loaded[d] < end + grace or d not in reconciled:
            break
        complete_until = end
    return tuple(missing), complete_until


def prove_non_submission(
    conn: psycopg.Connection,
    *,
    day: date,
    now: datetime,
    provider_timezone: ZoneInfo,
    non_submission_grace_h: int,
    partition_start: date,
    spread: timedelta,
) -> NonSubmission:
    """Fail the day's provably unsent ``unknown`` rows (inside the caller's transaction, after correlation).

    ``non_submission_grace_h``: hours after D closes before D's report counts as complete;
    ``partition_start``: the first day, whose earlier neighbour is never expected;
    ``spread``: how long after its time a handed-over row may still be sent.
    """
    missing, complete_until = _evidence(conn, day, provider_timezone, non_submission_grace_h, partition_start,
                                        spread)
    if missing:
        return NonSubmission(report_complete=False, proved=0, missing=missing)
    day_start, day_end = day_bounds(day, provider_timezone)
    proved = queries.scalar(conn, "reconcile_non_submission", day_start=day_start, day_end=day_end,
                            spread=spread, complete_until=complete_until, now=now)
    return NonSubmission(report_complete=True, proved=proved)
