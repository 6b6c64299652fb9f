"""The marts' Dagster definitions: shared partitions and policy, asset keys, checks, schedule; a fresh manifest."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest
from dagster._core.execution.asset_backfill import AssetBackfillData
from dagster_dbt import DbtProject

from sms_pipeline.marts.project import DBT_PROJECT_DIR, manifest_is_current, prepare_manifest
from sms_pipeline.orchestration import asset_keys, marts_assets
from sms_pipeline.orchestration.partitions import BACKFILL_POLICY, DAY_PARTITIONS
from sms_pipeline.definitions import defs as pipeline_defs
from sms_pipeline.orchestration.schedules import DAILY_SELECTION

MARTS = ["cost_daily", "delivery_latency_daily", "delivery_by_class_daily", "reconciliation_daily",
         "provider_tieout_daily", "campaign_daily"]
MARTS_KEYS = [dg.AssetKey(["marts", name]) for name in MARTS]


@pytest.fixture(scope="module")
def defs() -> dg.Definitions:
    return pipeline_defs


def _assets(defs: dg.Definitions, name: str) -> dg.AssetsDefinition:
    return next(a for a in defs.assets if a.node_def.name == name)


def test_partitioned_marts_share_the_pipelines_partitions_and_policy(defs):
    daily = _assets(defs, "marts_daily")
    assert {k.path[-1] for k in daily.keys} == set(MARTS)
    assert all(k.path[0] == "marts" for k in daily.keys)
    assert daily.partitions_def == DAY_PARTITIONS
    assert daily.backfill_policy == BACKFILL_POLICY
    summary = next(a for a in defs.assets if asset_keys.PROVIDER_SUMMARY in a.keys)
    assert summary.partitions_def == DAY_PARTITIONS and summary.backfill_policy == BACKFILL_POLICY


def test_views_are_partitioned_alike_and_everything_is_in_the_marts_group(defs):
    # Between day-partitioned sources and day-partitioned marts: partitioned alike, so a range passes through.
    views = _assets(defs, "marts_views")
    assert views.partitions_def == DAY_PARTITIONS and views.backfill_policy == BACKFILL_POLICY
    assert {k.path[0] for k in views.keys} == {"transform"}
    for assets in (views, _assets(defs, "marts_daily")):
        assert set(assets.group_names_by_key.values()) == {marts_assets.MARTS_GROUP}


def test_a_range_backfill_of_the_daily_selection_targets_every_day_asset_for_every_day(defs):
    """What the UI's "Materialize... > range > Launch backfill" of the daily selection targets."""
    graph = defs.resolve_asset_graph()
    selected = DAILY_SELECTION.resolve(graph)
    days = ["2026-11-27", "2026-11-28", "2026-11-29"]
    backfill = AssetBackfillData.from_asset_partitions(
        asset_graph=graph, partition_names=days, asset_selection=list(selected),
        dynamic_partitions_store=None, backfill_start_timestamp=datetime(2026, 12, 1, tzinfo=UTC).timestamp(),
        all_partitions=False,
    )
    targeted = backfill.target_subset.partitions_subsets_by_asset_key
    partitioned = {key for key in selected if graph.get(key).is_partitioned}
    assert partitioned == selected  # the daily selection holds day assets only
    assert {k.to_user_string() for k in MARTS_KEYS} | {"dlr/provider_summary", "dlr/day_report",
                                                         "msg/reconciliation"} <= {k.to_user_string() for k in selected}
    missing = {key.to_user_string() for key in partitioned
               if key not in targeted or set(targeted[key].get_partition_keys()) != set(days)}
    assert missing == set()
    assert backfill.target_subset.non_partitioned_asset_keys == set()


def test_marts_depend_on_the_reconciliation_and_summary_assets(defs):
    views = _assets(defs, "marts_views")
    deps = views.asset_deps
    assert asset_keys.PROVIDER_SUMMARY in deps[dg.AssetKey(["transform", "stg_dlr__provider_summaries"])]
    assert dg.AssetKey(["msg", "reconciliation"]) in deps[dg.AssetKey(["transform", "stg_msg__outbound_messages"])]
    assert dg.AssetKey(["dlr", "receipts"]) in deps[dg.AssetKey(["transform", "stg_dlr__delivery_receipts"])]
    daily = _assets(defs, "marts_daily")
    assert dg.AssetKey(["transform", "int_messages__final_state"]) in \
        daily.asset_deps[dg.AssetKey(["marts", "provider_tieout_daily"])]


def test_dbt_tests_are_asset_checks_including_the_tieout(defs):
    checks = {key.name: key.asset_key for key in _assets(defs, "marts_daily").check_keys}
    assert checks["provider_tieout_difference_is_zero"] == dg.AssetKey(["marts", "provider_tieout_daily"])
    assert checks["cost_daily_ties_to_messages"] == dg.AssetKey(["marts", "cost_daily"])
    assert checks["one_row_per_window_day_reconciliation_daily_day"] == dg.AssetKey(["marts", "reconciliation_daily"])


def test_weekly_schedule_fully_rebuilds_the_last_closed_day(defs):
    schedule = defs.resolve_schedule_def("marts_weekly_full_rebuild")
    job = defs.resolve_job_def(marts_assets.FULL_REBUILD_JOB)
    assert job.partitions_def == DAY_PARTITIONS
    tick = datetime(2026, 11, 29, 4, 0, tzinfo=ZoneInfo("Asia/Kolkata"))  # a Sunday
    with dg.build_schedule_context(scheduled_execution_time=tick, repository_def=defs.get_repository_def()) as context:
        [request] = schedule.evaluate_tick(context).run_requests
    assert request.partition_key == "2026-11-28"
    assert job.get_run_config_for_partition_key(request.partition_key) == \
        {"ops": {"marts_daily": {"config": {"full_refresh": True}}}}


def test_definitions_load(defs):
    defs.validate_loadable(defs)


@pytest.mark.slow
def test_a_fresh_clone_gets_its_manifest(tmp_path: Path):
    clone = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, clone, ignore=shutil.ignore_patterns("target", "logs"))
    project = DbtProject(project_dir=clone)
    assert not manifest_is_current(project)
    manifest = prepare_manifest(project)
    assert manifest.exists() and manifest_is_current(project)
    text = manifest.read_text()
    assert all(f"model.sms_marts.{name}" in text for name in MARTS)
    (clone / "models" / "marts" / "cost_daily.sql").touch()
    assert not manifest_is_current(project)
