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


@dataclass(frozen=True)
class Reading:
    name: str
    passed: bool
    severity: Severity  # how loud a failure is
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def oldest_pending(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Age of the oldest pending/claimed work (0 when empty): is sending keeping up?"""
    age = queries.scalar(conn, "oldest_pending_age_seconds", now=now)
    severity: Severity = "ERROR" if age > t.oldest_pending_error_s else "WARN"
    return Reading(
        "oldest_pending_age",
        passed=age <= t.oldest_pending_warn_s,
        severity=severity,
        description=f"oldest pending/claimed work is {age} s old (warn > {t.oldest_pending_warn_s} s, "
        f"error > {t.oldest_pending_error_s} s)",
        metadata={"oldest_pending_age_seconds": age},
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
            f"share of submitted messages (created {t.ratio_window_end} to {t.ratio_window + t.ratio_window_end} ago) "
            f"still without a final receipt; error above {t.still_pending_ratio_error}"
            + (f": too high for {', '.join(failing)}" if failing else "")
        ),
        metadata={"still_pending_ratio": ratios, "submitted": submitted},
    )


def receipts_flowing(conn: psycopg.Connection, now: datetime, t: Thresholds) -> Reading:
    """Receipts still arriving for what was sent (a dead receipt pipeline is an ERROR)."""
    seconds = queries.scalar(conn, "seconds_since_last_receipt", now=now)
    last_at, awaiting = queries.run(
        conn, "reconcile_health_receipts_awaited", now=now, expected_lag=t.receipt_expected_lag
    ).fetchone()
    silent = seconds is None or seconds > t.receipt_silence_error.total_seconds()
    dead = silent and awaiting > 0
    return Reading(
        "receipts_flowing",
        passed=not dead,
        severity="ERROR",
        description=(
            f"no receipt stored for {'ever' if seconds is None else f'{seconds} s'} while {awaiting} message(s) "
            f"submitted since wait longer than {t.receipt_expected_lag}: the receipt pipeline is dead"
            if dead
            else f"last receipt {'never' if seconds is None else f'{seconds} s ago'}; "
            f"{awaiting} message(s) submitted since are past the expected lag"
        ),
        metadata={
            "seconds_since_last_receipt": -1 if seconds is None else seconds,
            "last_receipt_at": last_at.isoformat() if last_at else "never",
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
        description=f"{orphaned} of {receipts} receipt events stored in the last {t.orphan_window} match no "
        f"message (warn above {t.orphan_rate_warn:.0%})",
        metadata={"orphan_rate": float(rate), "orphaned_receipts": orphaned, "receipts": receipts},
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
        f"before {stale_before.isoformat()} should have been decided by now",
        metadata={"unknown_open": row["unknown_open"], "unknown_stale": row["unknown_stale"]},
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
        description=f"{rows} billed row(s), {units} unit(s), submitted in the last {t.unpriced_window} have no "
        "rate-card price (cost NULL, never 0)",
        metadata={"unpriced_rows": rows, "unpriced_units": units},
    )


READINGS: dict[str, Callable[[psycopg.Connection, datetime, Thresholds], Reading]] = {
    "oldest_pending_age": oldest_pending,
    "still_pending_ratio": pending_ratio,
    "receipts_flowing": receipts_flowing,
    "orphan_rate": orphan_rate,
    "unknown_open": unknown_open,
    "ambiguous_open": ambiguous_open,
    "unpriced_units": unpriced,
}
