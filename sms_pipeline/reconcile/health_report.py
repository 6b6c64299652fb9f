"""The dead man's switch: every health reading judged OK/WARN/ERROR, plus the Dagster daemon's heartbeat.

The readings of :mod:`sms_pipeline.reconcile.health` run as Dagster asset
checks, so a dead daemon evaluates nothing and alerts nobody. This report
evaluates the same readings, and the daemon's last heartbeat, with plain SQL
and no Dagster import, for ``sms-pipeline health`` run from cron or a probe:
when Dagster is what died, the report still says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg

from sms_pipeline.db import connection, queries
from sms_pipeline.errors import DatabaseUnavailable, UserError
from sms_pipeline.reconcile import health
from sms_pipeline.reconcile.health import Reading, Thresholds, duration_text

Status = Literal["OK", "WARN", "ERROR"]
EXIT_CODES: dict[Status, int] = {"OK": 0, "WARN": 1, "ERROR": 2}

# The daemons Dagster requires with the project's dagster.yaml (its instance.get_required_daemon_types(); a
# test keeps the two equal). One `dagster-daemon` process runs them all, each thread beating on its own.
REQUIRED_DAEMONS = ("ASSET", "BACKFILL", "FRESHNESS_DAEMON", "MONITORING", "QUEUED_RUN_COORDINATOR", "SCHEDULER",
                    "SENSOR")
# A daemon beats every 30 s between two iterations; four missed beats is a busy or stuck daemon.
DAEMON_SLOW = timedelta(minutes=2)
# Dagster's own verdict (dagster._daemon.controller): a heartbeat older than the interval (30 s) plus the
# tolerance (1,800 s) means the daemon is not running; the UI and `dagster-daemon liveness-check` say the same.
DAEMON_STALE = timedelta(seconds=30 + 1800)
# One process runs every daemon thread: when all of them are silent at once, the process is gone (a long sensor
# or backfill iteration stalls one thread only), and waiting for Dagster's half hour would hide that.
DAEMON_PROCESS_SILENT = timedelta(minutes=3)
DAEMON_READING = "dagster_daemon"
DAEMON_THRESHOLD = (f"warn > {duration_text(DAEMON_SLOW)} or errors, error when all are silent "
                    f"> {duration_text(DAEMON_PROCESS_SILENT)}, one > {duration_text(DAEMON_STALE)}, or never")
# A probe gives up rather than hang: per connection attempt, and per statement.
CONNECT_TIMEOUT_S = 5
STATEMENT_TIMEOUT = "5s"


@dataclass(frozen=True)
class Judged:
    """One line of the report."""

    name: str
    status: Status
    value: str  # what was measured, as a person reads it
    threshold: str  # when it becomes WARN / ERROR
    description: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    checked_at: datetime
    readings: list[Judged]

    @property
    def status(self) -> Status:
        return max((r.status for r in self.readings), key=EXIT_CODES.__getitem__, default="OK")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def as_json(self) -> dict[str, Any]:
        return {"status": self.status, "exit_code": self.exit_code, "checked_at": self.checked_at.isoformat(),
                "readings": [vars(r) for r in self.readings]}


def _receipts_value(m: dict[str, Any]) -> str:
    last = "none ever" if m["time_since_last_receipt"] == "never" else f"last {m['time_since_last_receipt']} ago"
    return f"{last}, {m['messages_awaiting_receipt']} awaiting"


# Per reading of health.READINGS: (value, threshold) from its metadata and the thresholds it was judged by.
PRESENTATION: dict[str, Callable[[dict[str, Any], Thresholds], tuple[str, str]]] = {
    "oldest_pending_age": lambda m, t: (
        m["oldest_pending_age"],
        f"warn > {duration_text(t.oldest_pending_warn_s)}, error > {duration_text(t.oldest_pending_error_s)}"),
    "still_pending_ratio": lambda m, t: (
        ", ".join(f"{cls} {ratio:.0%} of {m['submitted'][cls]}" for cls, ratio in m["still_pending_ratio"].items()),
        f"error > {t.still_pending_ratio_error:.0%} in a class"),
    "receipts_flowing": lambda m, t: (
        _receipts_value(m),
        f"error: no receipt for > {duration_text(t.receipt_silence_error)} while messages wait "
        f"> {duration_text(t.receipt_expected_lag)}"),
    "orphan_rate": lambda m, t: (
        f"{m['orphan_rate']:.1%} ({m['orphaned_receipts']} of {m['receipts']})",
        f"warn > {t.orphan_rate_warn:.0%} over {m['window']}"),
    "unknown_open": lambda m, t: (f"{m['unknown_stale']} overdue, {m['unknown_open']} open", "warn > 0 overdue"),
    "ambiguous_open": lambda m, t: (f"{m['ambiguous_open']} open", "warn > 0"),
    "unpriced_units": lambda m, t: (
        f"{m['unpriced_units']} units ({m['unpriced_rows']} rows)", f"warn > 0 over {m['window']}"),
}


def judge(reading: Reading, t: Thresholds) -> Judged:
    value, threshold = PRESENTATION[reading.name](reading.metadata, t)
    return Judged(reading.name, "OK" if reading.passed else reading.severity, value, threshold,
                  reading.description, reading.metadata)


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def app_readings(conn: psycopg.Connection, now: datetime, t: Thresholds) -> list[Judged]:
    try:
        return [judge(reading_of(conn, now, t), t) for reading_of in health.READINGS.values()]
    except psycopg.Error as exc:  # not migrated, a statement time-out...: the readings cannot be trusted
        raise UserError(f"cannot read the health readings: {_first_line(exc)}") from exc


def _listing(groups: dict[str, list[str]]) -> str:
    return "; ".join(f"{label}: {', '.join(daemons)}" for label, daemons in groups.items() if daemons)


def daemon_reading(heartbeats: list[tuple[str, datetime | None, int]], now: datetime) -> Judged:
    """The Dagster daemon judged by its required daemons' last heartbeats: the stalest one decides."""
    ages = {daemon: None if beat_at is None else max(timedelta(0), now - beat_at)
            for daemon, beat_at, _errors in heartbeats}
    never = sorted(d for d, age in ages.items() if age is None)
    stale = sorted(d for d, age in ages.items() if age is not None and age > DAEMON_STALE)
    slow = sorted(d for d, age in ages.items() if age is not None and DAEMON_SLOW < age <= DAEMON_STALE)
    failing = sorted(d for d, _beat_at, errors in heartbeats if errors)
    all_silent = bool(ages) and all(age is None or age > DAEMON_PROCESS_SILENT for age in ages.values())
    if never or stale or all_silent:
        status: Status = "ERROR"
        description = "the Dagster daemon is not running: " + (_listing(
            {"never beat": never, f"silent for more than {duration_text(DAEMON_STALE)}": stale}) if never or stale
            else f"no daemon has beaten for more than {duration_text(DAEMON_PROCESS_SILENT)}")
    elif slow or failing:
        status, description = "WARN", _listing(
            {f"no heartbeat for more than {duration_text(DAEMON_SLOW)}": slow,
             "errors in the last heartbeat (see the daemon's log)": failing})
    else:
        status, description = "OK", f"all {len(ages)} required daemons beat within {duration_text(DAEMON_SLOW)}"
    stalest = max((age for age in ages.values() if age is not None), default=None)
    value = "never" if never else f"{duration_text(stalest)} since the stalest heartbeat"
    details = {"heartbeat_age": {d: "never" if age is None else duration_text(age) for d, age in ages.items()},
               "errors": {d: errors for d, _beat_at, errors in heartbeats if errors}}
    return Judged(DAEMON_READING, status, value, DAEMON_THRESHOLD, description, details)


def _unread_daemon(description: str) -> Judged:
    return Judged(DAEMON_READING, "ERROR", "unknown", DAEMON_THRESHOLD, description)


def read_daemon(dagster_url: str, now: datetime) -> Judged:
    """The daemon reading from the Dagster database; a missing database or storage is itself an ERROR."""
    try:
        with connection.connect_url(dagster_url, autocommit=True, connect_timeout_s=CONNECT_TIMEOUT_S) as conn:
            queries.run(conn, "session_statement_timeout", timeout=STATEMENT_TIMEOUT)
            beats = queries.run(conn, "health_daemon_heartbeats", daemon_types=list(REQUIRED_DAEMONS)).fetchall()
    except DatabaseUnavailable as exc:  # no Dagster database: no daemon ever ran on this server
        return _unread_daemon(f"the Dagster daemon is not running: {exc}")
    except psycopg.errors.UndefinedTable:
        return _unread_daemon("the Dagster daemon is not running: its database has no heartbeat table "
                              "(Dagster never used it)")
    except psycopg.Error as exc:
        return _unread_daemon(f"the Dagster daemon's heartbeats cannot be read: {_first_line(exc)}")
    return daemon_reading(beats, now)


def evaluate(app_url: str, dagster_url: str, now: datetime, t: Thresholds) -> Report:
    """Every reading at ``now``; the application database unreachable or unreadable raises a ``UserError``."""
    with connection.connect_url(app_url, autocommit=True, connect_timeout_s=CONNECT_TIMEOUT_S) as conn:
        queries.run(conn, "session_statement_timeout", timeout=STATEMENT_TIMEOUT)
        readings = app_readings(conn, now, t)
    return Report(now, [*readings, read_daemon(dagster_url, now)])
