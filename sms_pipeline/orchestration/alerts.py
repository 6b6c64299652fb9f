"""The alert sensor: failed ERROR checks, failed runs and failed backfills, told to a person once.

Each tick reads what Dagster recorded and keeps the open problems in the
sensor's cursor (JSON), with the destinations each notice already reached:

- a **check** (any asset check of the definitions: the health readings and
  dbt's tests) opens a problem per partition (its run's day or range: the
  marts' checks judge their run's days) when an evaluation failed with
  ERROR severity, and clears when an evaluation of the same check and
  partition passes; only the evaluations stored since the last tick are
  read;
- a **run** that failed opens a problem keyed by its job and partition (or
  range; none for the hourly job), cleared by a later successful run of the
  same job and partition; runs of a backfill are the backfill's;
- a **backfill** that failed alerts once (a backfill is not re-run as such:
  its days are, and their runs say whether they succeed).

A problem is told once ("firing") and, when it clears, once more
("resolved"). A notice a destination did not take stays in the cursor and is
sent to that destination again at the next tick; a problem that clears before
anyone heard of it is forgotten. A tick must end well inside Dagster's 60 s
sensor timeout (a tick that times out saves no cursor, so what it delivered
would be sent again at every tick): each destination gets one attempt per
notice, a destination that failed is left alone for the rest of the tick, and
no delivery starts after ``TICK_DEADLINE_S``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, fields
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

from sms_pipeline.ops.alerts import (
    NO_DESTINATION, Alert, Destination, backfill_url, deliver, destinations, run_url,
)
from sms_pipeline.orchestration.check_results import failed_checks
from sms_pipeline.orchestration.location import SETTINGS
from sms_pipeline.settings import Settings

log = logging.getLogger(__name__)

SENSOR_NAME = "alert_sensor"
MINIMUM_INTERVAL_S = 60
TICK_DEADLINE_S = 30.0  # no delivery starts later in a tick: the last one's timeout still ends far inside 60 s
FIRST_LOOKBACK = timedelta(days=1)  # a sensor's first tick tells the failures of the last day, not of all time
BACKFILL_MAX_AGE = timedelta(days=31)  # how long ago a backfill that ends now may have started
# A backfill's end time is taken before its failed status is stored: read the ends from this long before the
# last tick, and remember the ids told meanwhile.
BACKFILL_MARGIN = timedelta(minutes=15)
ALERT_FIELDS = frozenset(f.name for f in fields(Alert))
BACKFILL_TAG = "dagster/backfill"
PARTITION_TAG = "dagster/partition"
RANGE_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")
RUNS_PER_TICK = 500
CHECK_EVALUATIONS_PER_TICK = 2000  # a day brings a few hundred; a backlog is read over the next ticks


class Problems:
    """The cursor: open problems (each with its notice and where it went), how far runs (by their last
    update), check evaluations (by storage id) and backfills (by when they ended) were read, and the
    backfills already told."""

    def __init__(self, cursor: str | None, now: float):
        state = _readable(cursor)
        self.runs_until: float = state.get("runs_until", now - FIRST_LOOKBACK.total_seconds())
        self.backfills_until: float = state.get("backfills_until", now - FIRST_LOOKBACK.total_seconds())
        self.backfills_told: dict[str, float] = state.get("backfills_told", {})  # id -> when it ended
        # Check evaluations are read after the highest storage id of the tick before the last: an evaluation
        # stored while a tick read (a lower id committed after a higher one) is still read at the next tick;
        # reading one again changes nothing, as they are read in order.
        self.checks_after: int | None = state.get("checks_after")
        self.checks_seen: int | None = state.get("checks_seen")
        self.open: dict[str, dict[str, Any]] = state.get("open", {})

    def dump(self) -> str:
        return json.dumps({"runs_until": self.runs_until, "backfills_until": self.backfills_until,
                           "backfills_told": self.backfills_told, "checks_after": self.checks_after,
                           "checks_seen": self.checks_seen, "open": self.open}, sort_keys=True)

    def fire(self, alert: Alert, *, once: bool = False) -> None:
        entry = self.open.get(alert.key)
        if entry is None:
            self.open[alert.key] = {"alert": asdict(alert), "delivered_to": [], "once": once}
        elif entry["alert"]["status"] == "resolved":  # failed again before its resolution went out
            entry["alert"]["status"] = "firing"
            entry["delivered_to"] = entry.pop("told_firing", entry["delivered_to"])

    def clear(self, key: str) -> None:
        entry = self.open.get(key)
        if entry is None or entry["alert"]["status"] == "resolved":
            return
        if not entry["delivered_to"]:
            del self.open[key]  # nobody heard of it: nothing to resolve
            return
        entry["alert"]["status"] = "resolved"
        entry["told_firing"], entry["delivered_to"] = entry["delivered_to"], []

    def deliver(self, targets: list[Destination], *, until: float) -> tuple[int, int]:
        """Send every notice a destination has not taken yet, one attempt each: a destination that fails is
        not tried again in this tick, and no delivery starts after ``until`` (``time.monotonic()``).
        (delivered, still waiting for a destination)."""
        sent = 0
        down: set[str] = set()
        for key, entry in list(self.open.items()):
            alert = Alert(**entry["alert"])
            for target in targets:
                if target.name in entry["delivered_to"] or target.name in down or time.monotonic() >= until:
                    continue
                if deliver(alert, target, attempts=1):
                    entry["delivered_to"].append(target.name)
                    sent += 1
                else:
                    down.add(target.name)
            if all(t.name in entry["delivered_to"] for t in targets) and (
                    alert.status == "resolved" or entry["once"]):
                del self.open[key]
        waiting = sum(t.name not in entry["delivered_to"] for entry in self.open.values() for t in targets)
        if waiting:
            log.warning("%d notice(s) wait for the next tick (%s)", waiting,
                        "deadline reached" if time.monotonic() >= until else
                        "not delivered to " + ", ".join(t.shown for t in targets if t.name in down))
        return sent, waiting


def _readable(cursor: str | None) -> dict[str, Any]:
    """The cursor's state, or nothing (logged) when it cannot be read: an unreadable cursor never stops the
    sensor, it starts afresh as a first tick would. A notice's fields this version does not know (renamed,
    dropped) are left out."""
    if not cursor:
        return {}
    try:
        raw = json.loads(cursor)
        state: dict[str, Any] = {name: float(raw[name]) for name in ("runs_until", "backfills_until") if name in raw}
        state.update({name: int(raw[name]) for name in ("checks_after", "checks_seen") if raw.get(name) is not None})
        state["backfills_told"] = {str(i): float(ended) for i, ended in raw.get("backfills_told", {}).items()}
        state["open"] = {str(key): _open_entry(entry) for key, entry in raw.get("open", {}).items()}
        return state
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning("alert sensor cursor unreadable (%s): starting afresh, the last day's failures may be told "
                    "again", type(exc).__name__)
        return {}


def _open_entry(entry: dict[str, Any]) -> dict[str, Any]:
    alert = Alert(**{name: value for name, value in entry["alert"].items() if name in ALERT_FIELDS})
    kept = {"alert": asdict(alert), "delivered_to": [str(name) for name in entry["delivered_to"]],
            "once": bool(entry.get("once", False))}
    if "told_firing" in entry:
        kept["told_firing"] = [str(name) for name in entry["told_firing"]]
    return kept


def read_checks(instance: dg.DagsterInstance, problems: Problems, check_keys: Iterable[dg.AssetCheckKey],
                now: float, ui_url: str) -> None:
    """Open a problem per check and partition whose evaluation failed with ERROR, clear it when an evaluation
    of that check and partition passes (a WARN failure neither opens nor clears one). The evaluations stored
    since the cursor are read in the order they were stored (a first tick reads the last day's), so the last
    one of each check and partition decides."""
    wanted = set(check_keys)
    after, problems.checks_after = problems.checks_after, problems.checks_seen  # (one tick behind: see Problems)
    records = instance.event_log_storage.get_event_records(
        dg.EventRecordsFilter(
            dg.DagsterEventType.ASSET_CHECK_EVALUATION, after_cursor=after,
            after_timestamp=now - FIRST_LOOKBACK.total_seconds() if after is None else None),
        limit=CHECK_EVALUATIONS_PER_TICK, ascending=True)
    run_ids = list({record.run_id for record in records})
    runs = {run.run_id: run for run in instance.get_runs(dg.RunsFilter(run_ids=run_ids))} if run_ids else {}
    for record in records:
        problems.checks_seen = max(problems.checks_seen or 0, record.storage_id)
        evaluation = record.event_log_entry.asset_check_evaluation
        if evaluation is None or evaluation.asset_check_key not in wanted:
            continue
        run = runs.get(record.run_id)
        # A check of a day-partitioned asset judges its run's day (or range); Dagster records the partition on
        # the evaluation itself only for a check declared partitioned.
        partition = evaluation.partition or (run_partition(run.tags) if run else None)
        key = check_problem_key(evaluation.asset_check_key, partition)
        if evaluation.passed:
            problems.clear(key)
        elif (alert := check_alert(key, evaluation, partition, record.run_id, ui_url)) is not None:
            problems.fire(alert)


def check_problem_key(check_key: dg.AssetCheckKey, partition: str | None) -> str:
    """One problem per check and partition: a pass on one day says nothing of another day."""
    return f"check:{check_key.asset_key.to_user_string()}:{check_key.name}" + (f":{partition}" if partition else "")


def check_alert(key: str, evaluation: dg.AssetCheckEvaluation, partition: str | None, run_id: str,
                ui_url: str) -> Alert | None:
    """The notice of a failed evaluation; None for a WARN one."""
    (failed,) = failed_checks([evaluation])
    if not failed.is_error:
        return None
    asset = evaluation.asset_key.to_user_string()
    return Alert(
        key=key, severity=failed.severity, check=evaluation.check_name,
        title=f"check {evaluation.check_name} failed on {asset}{f' for {partition}' if partition else ''}",
        asset=asset, partition=partition,
        value={name: entry.value for name, entry in evaluation.metadata.items()
               if isinstance(entry.value, int | float) and not isinstance(entry.value, bool)},
        threshold=failed.detail, run_id=run_id, run_url=run_url(ui_url, run_id))


def run_partition(tags: dict[str, str]) -> str | None:
    if PARTITION_TAG in tags:
        return tags[PARTITION_TAG]
    if all(tag in tags for tag in RANGE_TAGS):
        return "...".join(tags[tag] for tag in RANGE_TAGS)
    return None


def read_runs(instance: dg.DagsterInstance, problems: Problems, ui_url: str) -> None:
    """Open a problem per failed run, clear it at the next success of its job and partition (in order)."""
    records = instance.get_run_records(
        dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.SUCCESS],
                      updated_after=datetime.fromtimestamp(problems.runs_until, UTC)),
        order_by="update_timestamp", ascending=True, limit=RUNS_PER_TICK)
    for record in records:
        run = record.dagster_run
        partition = run_partition(run.tags)
        key = f"run:{run.job_name}:{partition or ''}"
        if run.status == dg.DagsterRunStatus.SUCCESS:
            problems.clear(key)
        elif BACKFILL_TAG not in run.tags:
            problems.fire(Alert(
                key=key, severity="ERROR", partition=partition, run_id=run.run_id,
                title=f"run of {run.job_name}{f' for {partition}' if partition else ''} failed",
                run_url=run_url(ui_url, run.run_id)))
        problems.runs_until = max(problems.runs_until, record.update_timestamp.timestamp())


def read_backfills(instance: dg.DagsterInstance, problems: Problems, now: float, ui_url: str) -> None:
    """One notice per backfill that ended failed since the last tick (less the margin), each told once."""
    since = problems.backfills_until - BACKFILL_MARGIN.total_seconds()
    backfills = instance.get_backfills(filters=BulkActionsFilter(
        statuses=[BulkActionStatus.FAILED, BulkActionStatus.COMPLETED_FAILED],
        created_after=datetime.fromtimestamp(since, UTC) - BACKFILL_MAX_AGE))
    for backfill in backfills:
        ended = backfill.backfill_end_timestamp or backfill.backfill_timestamp
        if ended <= since or backfill.backfill_id in problems.backfills_told:
            continue
        problems.backfills_told[backfill.backfill_id] = ended
        names = backfill.partition_names or []
        partition = f"{min(names)}...{max(names)}" if len(names) > 1 else (names[0] if names else None)
        problems.fire(Alert(
            key=f"backfill:{backfill.backfill_id}", severity="ERROR", partition=partition,
            title=f"backfill {backfill.backfill_id}{f' ({partition})' if partition else ''} failed",
            run_url=backfill_url(ui_url, backfill.backfill_id)), once=True)
    problems.backfills_until = now
    # The next tick reads from now less the margin: an id told before that cannot come back.
    problems.backfills_told = {backfill_id: ended for backfill_id, ended in problems.backfills_told.items()
                               if ended > now - BACKFILL_MARGIN.total_seconds()}


def alert_sensor_for(settings: Settings, *, deadline_s: float = TICK_DEADLINE_S) -> dg.SensorDefinition:
    """The alert sensor, delivering to ``settings``' destinations with run links into its UI; no delivery
    starts ``deadline_s`` after a tick began."""

    @dg.sensor(name=SENSOR_NAME, minimum_interval_seconds=MINIMUM_INTERVAL_S,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Tells on-call of failed ERROR checks, failed runs and failed backfills (webhook "
                           "and/or mail): once per problem, then once when it clears.")
    def alert_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        until = time.monotonic() + deadline_s
        targets = destinations(settings)
        if not targets:
            return dg.SkipReason(NO_DESTINATION)
        now = time.time()
        problems = Problems(context.cursor, now)
        read_checks(context.instance, problems, context.repository_def.asset_graph.asset_check_keys, now,
                    settings.ui_url)
        read_runs(context.instance, problems, settings.ui_url)
        read_backfills(context.instance, problems, now, settings.ui_url)
        sent, waiting = problems.deliver(targets, until=until)
        return dg.SensorResult(cursor=problems.dump(), skip_reason=dg.SkipReason(
            f"{sent} notice(s) delivered, {waiting} not delivered (tried again next tick), "
            f"{len(problems.open)} problem(s) open"))

    return alert_sensor


alert_sensor = alert_sensor_for(SETTINGS)
