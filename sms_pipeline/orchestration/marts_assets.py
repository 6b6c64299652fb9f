"""Dagster assets of the marts: dbt models through dagster-dbt, and the provider summary.

* ``marts_daily``: the incremental marts (dbt selector ``daily_marts``) on the
  pipeline's one day-partitions object and backfill policy. A run for
  partitions ``[first, last]`` hands dbt the window of
  ``windows.marts_window`` (the partitions plus the lookback days) as
  ``--vars``; with ``full_refresh`` it rebuilds every day from the message
  retention horizon up to ``last`` and keeps older days' rows. No run
  rebuilds a day whose messages retention dropped (:func:`build_window`).
* ``marts_views``: staging and intermediate views (selector ``marts_views``).
  A view holds no days, but it sits between day-partitioned assets and
  day-partitioned marts: partitioned alike (the same days, the same policy),
  a range backfill passes through it to the marts. Building a view is
  cheap and the same whatever the days.
* ``["dlr", "provider_summary"]``: the provider's ``/report/summary`` per day
  (groupby=senderid), which the tie-out mart compares with our units.

dbt tests are asset checks (dagster-dbt); the tie-out check fails on any day
that does not tie out: an ERROR on a residual nobody can explain, a WARN
with its breakdown when the buckets explain it. A weekly schedule rebuilds
the marts from the retention horizon, catching changes older than the lookback.
"""


import dataclasses
import json
import tempfile
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg
from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtCliResource, DbtProject, dbt_assets
from pydantic import Field

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.marts import cost_report, tieout
from sms_pipeline.marts.dbt_env import dbt_env_for_url, dbt_environment
from sms_pipeline.marts.project import dbt_project, manifest_in_database, prepare_manifest
from sms_pipeline.db.report_guards import ReportShrinkRefused
from sms_pipeline.marts.provider_summary import SenderSummary, SummaryMismatch, fetch_day, store_summary
from sms_pipeline.orchestration.asset_keys import COST_DAILY, FINANCE, PROVIDER_SUMMARY
from sms_pipeline.orchestration import table_metadata
from sms_pipeline.orchestration.day_runs import day_by_day
from sms_pipeline.orchestration.location import SETTINGS
from sms_pipeline.orchestration.partitions import BACKFILL_POLICY, DAY_ASSET_OPTIONS, DAY_PARTITIONS, FIRST_DAY
from sms_pipeline.orchestration.resources import (
    ClockResource,
    DatabaseResource,
    PipelineResource,
    ProviderResource,
    ReportGuardResource,
)
from sms_pipeline.orchestration.schedules import DAILY_FRESHNESS
from sms_pipeline.orchestration.windows import Window, dbt_vars, marts_window, window_for_days
from sms_pipeline.provider.results import ProviderCallError
from sms_pipeline.reconcile import retention

MARTS_GROUP = "marts"
# Two dbt runs over the same incremental marts at once could interleave their
# delete+insert of overlapping windows; dagster.yaml limits every pool to one.
MARTS_POOL = "sms_pipeline_marts"
FULL_REBUILD_JOB = "marts_full_rebuild"
# The dbt test that the provider tie-out holds (dbt_project/models/marts/provider_tieout_daily.yml).
TIEOUT_CHECK = "provider_tieout_difference_is_zero"


class MartsBuildConfig(dg.Config):
    full_refresh: bool = Field(
        default=False,
        description="Rebuild every day from the message retention horizon (or the first partition) up to the "
                    "run's day instead of the window; the marts' rows of older days are kept.",
    )
    message_retention_days: int = Field(
        default=SETTINGS.message_retention_days, ge=0,
        description="Finance's horizon (SMS_PIPELINE_MESSAGE_RETENTION_DAYS; 0 = for ever): where a full "
                    "rebuild starts.",
    )


class MartsTranslator(DagsterDbtTranslator):
    """Every dbt asset in the ``marts`` group (the daily job selects by group); each dbt test's
    check described by the test's own ``description`` (what its failure means for a person)."""

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        return MARTS_GROUP

    def get_metadata(self, dbt_resource_props: Mapping[str, Any]) -> Mapping[str, Any]:
        metadata = dict(super().get_metadata(dbt_resource_props))
        # The manifest is parsed without a database (named "parse-only"); in the
        # application database a model is schema.name, as the Python assets name theirs.
        if dbt_resource_props.get("resource_type") == "model":
            metadata["dagster/table_name"] = f"{dbt_resource_props['schema']}.{dbt_resource_props['alias']}"
        return metadata

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str,
                       project: DbtProject | None) -> dg.AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        # The marts are built by the daily run, like the days they are built from.
        if manifest["nodes"].get(unique_id, {}).get("resource_type") == "model":
            return spec.replace_attributes(freshness_policy=DAILY_FRESHNESS)
        return spec

    def get_asset_check_spec(self, asset_spec: dg.AssetSpec, manifest: Mapping[str, Any], unique_id: str,
                             project: DbtProject | None) -> dg.AssetCheckSpec | None:
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        # dagster-dbt 0.29 reads a check's description from the test's meta only.
        description = manifest["nodes"].get(unique_id, {}).get("description")
        if spec is None or spec.description or not description:
            return spec
        return spec._replace(description=description)  # a NamedTuple: its documented copy-with-changes


def partition_days(context: dg.AssetExecutionContext) -> tuple[date, date]:
    """First and last provider-local day of the run's partition range."""
    keys = context.partition_key_range
    return date.fromisoformat(keys.start), date.fromisoformat(keys.end)


def dbt_build_args(variables: dict[str, str], *, full_refresh: bool = False) -> list[str]:
    """``dbt build`` with the run's vars. dbt unit tests check the SQL's logic on
    fixtures: CI runs them (``dbt test --select test_type:unit``), scheduled
    builds skip them."""
    return ["build", "--vars", json.dumps(variables, sort_keys=True), "--exclude-resource-type", "unit_test",
            *(["--full-refresh"] if full_refresh else [])]


_TIEOUT_BREAKDOWN = ("status", "provider_units", "day_report_units", "our_units", "difference",
                     "units_differ_messages", "units_differ_units", "provider_only_messages", "provider_only_units",
                     "ours_only_messages", "ours_only_units", "ambiguous_provider_messages", "ambiguous_our_messages",
                     "ambiguous_units", "summary_minus_report_units", "residual", "unplaced_messages",
                     "unknown_units", "unpriced_units")


def tieout_metadata(found: list[tieout.TieoutRow], first: date, last: date) -> dict[str, Any]:
    """The buckets of every day and sender id that does not tie out (explained, not or not compared), for a person
    to follow up."""
    differing = [r for r in found if r.status != tieout.OK]
    columns = [dg.TableColumn("day", "string"), dg.TableColumn("sender_id", "string"),
               *(dg.TableColumn(n, "string" if n == "status" else "int") for n in _TIEOUT_BREAKDOWN)]
    records = [dg.TableRecord({"day": r.day.isoformat(), "sender_id": r.sender_id or "(none)",
                               **{n: getattr(r, n) for n in _TIEOUT_BREAKDOWN}}) for r in differing]
    labels = tieout.day_labels(found)
    return {
        "days_compared": f"{first.isoformat()}..{last.isoformat()}",
        "days_with_differences": ", ".join(sorted({r.day.isoformat() for r in differing})) or "none",
        "days_with_residual": ", ".join(sorted({r.day.isoformat() for r in differing
                                                if r.status == tieout.MISMATCH})) or "none",
        "residual_units": sum(abs(r.residual or 0) for r in differing),
        "tieout_by_day": "; ".join(f"{day.isoformat()} {label}" for day, label in sorted(labels.items())),
        "breakdown": dg.MetadataValue.table(records=records, schema=dg.TableSchema(columns=columns)),
    }


def tieout_check(event: dg.AssetCheckResult, found: list[tieout.TieoutRow], first: date,
                 last: date) -> dg.AssetCheckResult:
    """The tie-out check with its breakdown: an ERROR only on a mismatch.

    dbt fails its test (a warning) on any day that does not tie out; a
    difference its buckets explain, or a day that could not be compared,
    stays a warning; one nobody can explain is an error (not a failed run:
    the other marts are right). A failure with no row that does not tie out
    (the test itself failed) stays an error.
    """
    metadata = tieout_metadata(found, first, last)
    event = event.with_metadata({**event.metadata, **metadata})
    if event.passed:
        return event
    not_ok = "; ".join(f"{day.isoformat()} {label}" for day, label in sorted(tieout.day_labels(found).items())
                       if label != tieout.OK)
    if tieout.has_mismatch(found) or not not_ok:
        severity, description = dg.AssetCheckSeverity.ERROR, (
            f"units nobody can explain: {not_ok}" if not_ok else "the tie-out test failed without a day to show")
    else:
        severity, description = dg.AssetCheckSeverity.WARN, f"explained or not compared: {not_ok}"
    # AssetCheckResult is a NamedTuple: _replace copies it with these fields changed
    return event._replace(severity=severity, description=description)


def day_totals_metadata(totals: list[cost_report.DayTotal]) -> dg.MetadataValue:
    """The day's cost totals as a table; amounts as their exact decimal text, never floats, and
    ``unpriced`` where no rate applies (never 0); the exposure of unknown rows beside them."""
    columns = [
        ("day", "string"), ("currency", "string"), ("messages_submitted", "int"), ("billable_units", "int"),
        ("cost", "string"), ("rejected_messages", "int"), ("unpriced_units", "int"), ("cost_of_failed", "string"),
        ("unknown_messages", "int"), ("unknown_units", "int"), ("unknown_cost_at_risk", "string"),
    ]
    records = [
        dg.TableRecord({
            "day": t.day.isoformat(),
            "currency": t.currency or "(unpriced)",
            "messages_submitted": t.messages_submitted,
            "billable_units": t.billable_units,
            "cost": cost_report.money_text(t.cost),
            "rejected_messages": t.rejected_messages,
            "unpriced_units": t.unpriced_units,
            "cost_of_failed": cost_report.money_text(t.cost_of_failed),
            "unknown_messages": t.unknown_messages,
            "unknown_units": t.unknown_units,
            "unknown_cost_at_risk": cost_report.money_text(t.unknown_cost_at_risk),
        })
        for t in totals
    ]
    schema = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in columns])
    return dg.MetadataValue.table(records=records, schema=schema)


DBT_PROJECT = dbt_project(SETTINGS.home)
TRANSLATOR = MartsTranslator(
    # Two sources share one asset (e.g. outbound_message and orphaned_receipts
    # are both written by the reconciliation asset).
    # Code references: the UI links each model to its SQL file.
    settings=DagsterDbtTranslatorSettings(enable_duplicate_source_asset_keys=True, enable_code_references=True),
)
# What both dbt selections share: the project, the day partitions and policy, the marts' pool.
DBT_ASSET_OPTIONS: dict[str, Any] = {
    "manifest": prepare_manifest(DBT_PROJECT),
    "project": DBT_PROJECT,
    "partitions_def": DAY_PARTITIONS,
    "backfill_policy": BACKFILL_POLICY,
    "dagster_dbt_translator": TRANSLATOR,
    "pool": MARTS_POOL,
}


def run_dbt(context: dg.AssetExecutionContext, dbt: DbtCliResource, database: DatabaseResource,
            args: list[str]) -> Iterator[Any]:
    # Artifacts and logs of one run go to a folder that goes away with it
    # (dagster-dbt would otherwise keep a few MB per run under target/);
    # the run's events and dbt's output stay in Dagster's run log.
    environment = dbt_env_for_url(database.dsn())
    with dbt_environment(environment), tempfile.TemporaryDirectory(prefix="sms-dbt-") as target:
        invocation = dbt.cli(args, context=context, target_path=Path(target))
        # Column types and column lineage of each built model (read from the
        # database the run built in, hence the relocated manifest).
        invocation = dataclasses.replace(
            invocation, manifest=manifest_in_database(invocation.manifest, environment["DBT_SMS_DBNAME"]))
        yield from invocation.stream().fetch_column_metadata()


def add_mart_day_figures(context: dg.AssetExecutionContext, conn: psycopg.Connection, key: dg.AssetKey,
                         first: date, last: date) -> None:
    """Each day's materialisation of mart ``key``: its table, and that day's rows and (cost) totals.

    Not dagster-dbt's fetch_row_counts(): it counts the whole table (the same
    figure on every day), through the relation named in the parse-time manifest,
    whose database is not the deployment's.
    """
    mart = key.path[-1]
    rows = table_metadata.mart_rows_by_day(conn, mart, first, last)
    totals = cost_report.day_totals(conn, first, last) if key == COST_DAILY else []
    for day, count in rows.items():
        figures: dict[str, Any] = {"dagster/table_name": f"marts.{mart}", "dagster/row_count": count}
        if key == COST_DAILY:
            figures["day_totals"] = day_totals_metadata([t for t in totals if t.day == day])
        context.add_asset_metadata(figures, asset_key=key, partition_key=day.isoformat())


def build_window(first: date, last: date, zone: ZoneInfo, *, config: MartsBuildConfig, lookback_days: int,
                 now: datetime, rebuildable_from: date | None) -> tuple[Window | None, bool]:
    """The days one run of ``marts_daily`` rebuilds, and whether dbt recreates the tables (``--full-refresh``).

    Never a day before ``rebuildable_from`` (:func:`retention.first_rebuildable_day`): such a day may read
    message rows retention dropped, so its mart rows stay as they are (None: nothing to rebuild). A full
    rebuild starts at the retention horizon's day and rebuilds its window incrementally, keeping older rows;
    only while it covers every day since the first partition does dbt recreate the tables (so a release that
    changes a mart's columns is still rebuilt by it).
    """
    floor = max(FIRST_DAY, rebuildable_from or FIRST_DAY)
    if config.full_refresh:
        horizon = retention.message_horizon(now, config.message_retention_days)
        start = max(floor, local_date(horizon, zone) if horizon else floor)
        window = window_for_days(start, last, zone) if start <= last else None
        return window, rebuildable_from is None and start <= FIRST_DAY
    if last < floor:
        return None, False
    window = marts_window(max(first, floor), last, zone, lookback_days=lookback_days, history_start=floor)
    return window, False


@dbt_assets(selector="daily_marts", name="marts_daily", **DBT_ASSET_OPTIONS)
def marts_daily(context: dg.AssetExecutionContext, config: MartsBuildConfig, dbt: DbtCliResource,
                database: DatabaseResource, pipeline: PipelineResource, clock: ClockResource):
    first, last = partition_days(context)
    zone = pipeline.zone
    now = clock.clock().now()
    with database.connect() as conn:
        rebuildable_from = retention.first_rebuildable_day(conn, zone)
    window, recreate = build_window(first, last, zone, config=config, lookback_days=pipeline.lookback_days,
                                    now=now, rebuildable_from=rebuildable_from)
    if window is None:
        context.log.warning(f"days {first}..{last} not rebuilt: they are before the first day the marts may "
                            f"rebuild ({rebuildable_from}, message retention); the marts keep their rows")
        return
    context.log.info(f"dbt window {window.first_day}..{window.last_day} "
                     f"[{window.start.isoformat()}, {window.end.isoformat()})"
                     + (" (full rebuild, tables recreated)" if recreate
                        else " (full rebuild, older days kept)" if config.full_refresh else ""))
    # built_at: the clock that stamps the messages' updated_at, for retention's build record
    args = dbt_build_args({**dbt_vars(window, zone), "built_at": now.isoformat()}, full_refresh=recreate)
    for event in run_dbt(context, dbt, database, args):
        if isinstance(event, dg.Output):
            key = context.asset_key_for_output(event.output_name)
            with database.connect() as conn:
                add_mart_day_figures(context, conn, key, first, last)
        elif isinstance(event, dg.AssetCheckResult) and event.check_name == TIEOUT_CHECK:
            with database.connect() as conn:
                found = tieout.rows(conn, window.first_day, window.last_day)
            event = tieout_check(event, found, window.first_day, window.last_day)
        yield event


@dbt_assets(selector="marts_views", name="marts_views", **DBT_ASSET_OPTIONS)
def marts_views(context: dg.AssetExecutionContext, dbt: DbtCliResource, database: DatabaseResource,
                pipeline: PipelineResource):
    # Views hold no days; the intermediate one only needs the provider zone.
    # "cautious": a test that also reads a mart (it needs the marts' window)
    # belongs to the marts run, not to this one.
    args = [*dbt_build_args({"provider_timezone": pipeline.provider_timezone}), "--indirect-selection", "cautious"]
    yield from run_dbt(context, dbt, database, args)


@dg.asset(
    key=PROVIDER_SUMMARY,
    metadata=table_metadata.named(table_metadata.PROVIDER_SUMMARY),
    **DAY_ASSET_OPTIONS,
    group_name=MARTS_GROUP,
    owners=FINANCE,
    freshness_policy=DAILY_FRESHNESS,
    description="The provider's /report/summary per provider-local day and sender id "
                "(one call per day), for the tie-out of billed units. A day with fewer units or "
                "sender rows than stored stops the run and writes nothing (unless report_guard allows it).",
)
def provider_summary(context: dg.AssetExecutionContext, database: DatabaseResource,
                     provider: ProviderResource, clock: ClockResource,
                     report_guard: ReportGuardResource) -> dg.MaterializeResult:
    with provider.client() as client, database.connect() as conn:
        def fetch_and_store(day: date) -> list[SenderSummary]:
            summary = fetch_day(client, day)
            store_summary(conn, day, summary, clock.clock().now(), allow_shrink=report_guard.allow_shrink)
            return summary

        return day_by_day(
            context, fetch_and_store,
            # the day's rows of dlr.provider_summary: one per sender id (replaced as a whole)
            lambda summary: {**table_metadata.table(conn, table_metadata.PROVIDER_SUMMARY, len(summary)),
                             "provider_units": sum(s.units for s in summary)},
            # the provider failing one day's summary does not stop the other days
            skippable=(ProviderCallError, SummaryMismatch),
            # a summary that would shrink does: a person must look (docs/design.md#report-guards)
            stops=(ReportShrinkRefused,),
        )


full_rebuild_job = dg.define_asset_job(
    FULL_REBUILD_JOB,
    selection=dg.AssetSelection.assets(marts_views, marts_daily),
    config={"ops": {"marts_daily": {"config": {"full_refresh": True}}}},
    description="Rebuild every mart from the message retention horizon (or the first partition) up to the "
                "run's day; rows of older days are kept.",
)


@dg.schedule(
    job=full_rebuild_job,
    cron_schedule="0 4 * * 0",
    execution_timezone=SETTINGS.provider_timezone.key,
    name="marts_weekly_full_rebuild",
    description="Sundays 04:00 provider time: rebuild the marts from the retention horizon, catching "
                "changes older than the lookback window (older days keep their rows).",
)
def weekly_full_rebuild(context: dg.ScheduleEvaluationContext):
    with dg.partition_loading_context(effective_dt=context.scheduled_execution_time):
        key = DAY_PARTITIONS.get_last_partition_key()
    if key is None:
        return dg.SkipReason("no day partition has closed yet")
    return dg.RunRequest(run_key=f"{FULL_REBUILD_JOB}-{key}", partition_key=key)

