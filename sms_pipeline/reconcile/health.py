"""Health readings for on-call: plain values, a verdict and a severity.

Each reading runs one or two named queries and decides pass/fail against
thresholds written down here. The Dagster asset checks only wrap them, so
the same verdicts can be computed from a shell or a test. Severity: a dead
receipt pipeline (receipts stopped, submitted messages not confirmed) is an
ERROR; everything a person should look at soon is a WARN.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import psycopg

from sms_pipeline.db import queries

Severity = Literal["WARN", "ERROR"]


@dataclass(frozen=True)
class Thresholds:
    # SMS_PIPELINE_NON_SUBMISSION_GRACE_H: an unknown row still open this long (plus two days)
    # after its day closed should have been decided by the day report's reconciliation.
    non_submission_grace_h: int = field(kw_only=True)
    oldest_pending_warn_s: int = 15 * 60  # the worker should drain the queue within minutes
    oldest_pending_error_s: int = 60 * 60  # an hour: sending has stopped
    # Messages created in [now - ratio_window_end - ratio_window, now - ratio_window_end) should
    # mostly have a final receipt by now (hourly getDlr pulls, daily day reports).
    ratio_window: timedelta = timedelta(hours=24)
    ratio_window_end: timedelta = timedelta(hours=2)
    still_pending_ratio_error: float = 0.5
    receipt_expected_lag: timedelta = timedelta(hours=1)  # a receipt should be stored within this
    receipt_silence_error: timedelta = timedelta(hours=2)
    orphan_window: timedelta = timedelta(hours=24)
    orphan_rate_warn: float = 0.01
    unpriced_window: timedelta = timedelta(days=7)
    # Times in descriptions and metadata are shown in the provider's zone.
    zone: ZoneInfo = ZoneInfo("UTC")


def duration_text(seconds: float | timedelta) -> str:
    """A duration as a person reads it: "45 s", "15 min 30 s", "3 h 12 min", "2 d 4 h"."""
    total = int(seconds.total_seconds() if isinstance(seconds, timedelta) else seconds)
    if total < 60:
        return f"{total} s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        parts = [(days, "d"), (hours, "h")]
    elif hours:
        parts = [(hours, "h"), (minutes, "min")]
    else:
        parts = [(minutes, "min"), (secs, "s")]
    return " ".join(f"{n} {unit}" for n, unit in parts if n) or "0 s"


def local_minutes(instant: datetime, zone: ZoneInfo) -> str:
    """An instant as ISO text to the minute in ``zone`` (e.g. 2026-03-01T14:05+05:30)."""
    return instant.astimezone(zone).isoformat(timespec="minutes")


@dataclass(frozen=True)
class Reading:
    name: str
    passed: bool
    severity: Severity  # how loud a failure is
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def oldest_pending(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Age of the oldest pending/claimed/sending work (0 when empty): is sending keeping up?"""
    age = queries.scalar(conn, "oldest_pending_age_seconds", now=now)
    severity: Severity = "ERROR" if age > t.oldest_pending_error_s else "WARN"
    return Reading(
        "oldest_pending_age",
        passed=age <= t.oldest_pending_warn_s,
        severity=severity,
        description=f"oldest pending/claimed work is {duration_text(age)} old "
        f"(warn > {duration_text(t.oldest_pending_warn_s)}, error > {duration_text(t.oldest_pending_error_s)})",
        metadata={"oldest_pending_age_seconds": age, "oldest_pending_age": duration_text(age)},
    )


def pending_ratio(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Share of submitted messages still without a final receipt, per class."""
    until = now - t.ratio_window_end
    rows = queries.run(conn, "pending_ratio_by_class", since=until - t.ratio_window, until=until).fetchall()
    ratios = {cls: float(ratio) for cls, _submitted, _pending, ratio in rows}
    submitted = {cls: n for cls, n, _pending, _ratio in rows}
    failing = sorted(cls for cls, ratio in ratios.items() if ratio > t.still_pending_ratio_error)
    return Reading(
        "still_pending_ratio",
        passed=not failing,
        severity="ERROR",
        description=(
            f"share of submitted messages (created {duration_text(t.ratio_window_end)} to "
            f"{duration_text(t.ratio_window + t.ratio_window_end)} ago) "
            f"still without a final receipt; error above {t.still_pending_ratio_error}"
            + (f": too high for {', '.join(failing)}" if failing else "")
        ),
        metadata={
            "still_pending_ratio": ratios,
            "submitted": submitted,
            "created_from": local_minutes(until - t.ratio_window, t.zone),
            "created_until": local_minutes(until, t.zone),
        },
    )


def receipts_flowing(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Receipts still arriving for what was sent (a dead receipt pipeline is an ERROR)."""
    seconds = queries.scalar(conn, "seconds_since_last_receipt", now=now)
    last_at, awaiting = queries.run(
        conn, "reconcile_health_receipts_awaited", now=now, expected_lag=t.receipt_expected_lag
    ).fetchone()
    silent = seconds is None or seconds > t.receipt_silence_error.total_seconds()
    dead = silent and awaiting > 0
    since = "ever" if seconds is None else duration_text(seconds)
    lag = duration_text(t.receipt_expected_lag)
    return Reading(
        "receipts_flowing",
        passed=not dead,
        severity="ERROR",
        description=(
            f"no receipt stored for {since} while {awaiting} message(s) "
            f"submitted since wait longer than {lag}: the receipt pipeline is dead"
            if dead
            else f"last receipt {'never' if seconds is None else f'{since} ago'}; "
            f"{awaiting} message(s) submitted since are past the expected lag ({lag})"
        ),
        metadata={
            **({} if seconds is None else {"seconds_since_last_receipt": seconds}),
            "time_since_last_receipt": "never" if seconds is None else duration_text(seconds),
            "last_receipt_at": local_minutes(last_at, t.zone) if last_at else "never",
            "messages_awaiting_receipt": awaiting,
        },
    )


def orphan_rate(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Share of recent receipt events that match no message."""
    receipts, orphaned, rate = queries.run(
        conn, "reconcile_health_orphan_rate", since=now - t.orphan_window, now=now
    ).fetchone()
    return Reading(
        "orphan_rate",
        passed=float(rate) <= t.orphan_rate_warn,
        severity="WARN",
        description=f"{orphaned} of {receipts} receipt events stored in the last {duration_text(t.orphan_window)} "
        f"match no message (warn above {t.orphan_rate_warn:.0%})",
        metadata={"orphan_rate": float(rate), "orphaned_receipts": orphaned, "receipts": receipts,
                  "window": duration_text(t.orphan_window)},
    )


def _open_evidence(conn: psycopg.Connection, now: datetime, t: Thresholds) -> tuple[datetime, dict[str, Any]]:
    # By then a complete day report (close + grace) has been reconciled: the
    # row should have been matched or proved never submitted.
    stale_before = now - timedelta(hours=t.non_submission_grace_h) - timedelta(days=2)
    return stale_before, queries.record(conn, "reconcile_health_open_evidence", stale_before=stale_before)


def unknown_open(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Unknown rows waiting for evidence, and those overdue for a decision."""
    stale_before, row = _open_evidence(conn, now, t)
    return Reading(
        "unknown_open",
        passed=row["unknown_stale"] == 0,
        severity="WARN",
        description=f"{row['unknown_open']} unknown row(s) wait for evidence; {row['unknown_stale']} attempted "
        f"before {local_minutes(stale_before, t.zone)} should have been decided by now",
        metadata={"unknown_open": row["unknown_open"], "unknown_stale": row["unknown_stale"],
                  "stale_before": local_minutes(stale_before, t.zone)},
    )


def ambiguous_open(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Open rows left ambiguous by correlation: a person must decide."""
    _, row = _open_evidence(conn, now, t)
    return Reading(
        "ambiguous_open",
        passed=row["ambiguous_open"] == 0,
        severity="WARN",
        description=f"{row['ambiguous_open']} open row(s) are ambiguous: never guessed, never re-sent; "
        "a person must decide",
        metadata={"ambiguous_open": row["ambiguous_open"]},
    )


def unpriced(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Billed units without a rate-card price (cost NULL)."""
    rows, units = queries.run(conn, "reconcile_health_unpriced", since=now - t.unpriced_window, now=now).fetchone()
    return Reading(
        "unpriced_units",
        passed=units == 0 and rows == 0,
        severity="WARN",
        description=f"{rows} billed row(s), {units} unit(s), submitted in the last "
        f"{duration_text(t.unpriced_window)} have no rate-card price (cost NULL, never 0)",
        metadata={"unpriced_rows": rows, "unpriced_units": units, "window": duration_text(t.unpriced_window)},
    )


def queue_backlog(conn: psycopg.Connection, now: datetime, zone: ZoneInfo) -> dict[str, Any]:
    """The send queue now: work due and waiting (pending), held by a worker (claimed), in a request in
    flight (sending), and the oldest's age."""
    pending, claimed, sending, oldest_due_at = queries.run(conn, "outbound_queue_observation", now=now).fetchone()
    age = 0 if oldest_due_at is None else max(0, int((now - oldest_due_at).total_seconds()))
    return {
        "pending": pending,
        "claimed": claimed,
        "sending": sending,
        "oldest_due_at": "none waiting" if oldest_due_at is None else local_minutes(oldest_due_at, zone),
        "oldest_age_seconds": age,
        "oldest_age": duration_text(age),
    }


READINGS: dict[str, Callable[[psycopg.Connection, datetime, Thresholds], Reading]] = {
    "oldest_pending_age": oldest_pending,
    "still_pending_ratio": pending_ratio,
    "receipts_flowing": receipts_flowing,
    "orphan_rate": orphan_rate,
    "unknown_open": unknown_open,
    "ambiguous_open": ambiguous_open,
    "unpriced_units": unpriced,
}
