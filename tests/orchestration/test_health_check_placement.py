"""The seven health checks: one op, each on the asset it judges, each job running its own."""

from __future__ import annotations

import dagster as dg
import pytest

from sms_pipeline.definitions import defs as pipeline_defs
from sms_pipeline.orchestration import reconcile_assets
from sms_pipeline.orchestration.asset_keys import (COST_DAILY, OUTBOUND_QUEUE, RECEIPTS, RECONCILIATION,
                                                   SCHEDULE_CROSSCHECK, UPKEEP)
from sms_pipeline.orchestration.schedules import DAILY_JOB, HOURLY_JOB
from sms_pipeline.reconcile import health

QUEUE_CHECKS = {dg.AssetCheckKey(OUTBOUND_QUEUE, "oldest_pending_age"),
                dg.AssetCheckKey(OUTBOUND_QUEUE, "still_pending_ratio")}
DAILY_CHECKS = {dg.AssetCheckKey(RECEIPTS, "receipts_flowing"), dg.AssetCheckKey(RECEIPTS, "orphan_rate"),
                dg.AssetCheckKey(RECONCILIATION, "unknown_open"), dg.AssetCheckKey(RECONCILIATION, "ambiguous_open"),
                dg.AssetCheckKey(COST_DAILY, "unpriced_units")}


@pytest.fixture(scope="module")
def defs() -> dg.Definitions:
    return pipeline_defs


def test_the_seven_checks_are_one_op_on_the_assets_they_judge(defs):
    (checks,) = [c for c in defs.asset_checks if c.node_def.name == reconcile_assets.HEALTH_CHECKS_NAME]
    assert set(checks.check_keys) == QUEUE_CHECKS | DAILY_CHECKS
    assert {k.name for k in checks.check_keys} == set(health.READINGS)
    graph = defs.resolve_asset_graph()
    assert not graph.get(UPKEEP).check_keys  # upkeep does the housekeeping, nothing more
    for key in checks.check_keys:
        spec = graph.get_check_spec(key)
        assert spec.description and not spec.blocking, key


def test_the_send_queue_is_an_observable_hourly_asset(defs):
    node = defs.resolve_asset_graph().get(OUTBOUND_QUEUE)
    assert node.is_observable and not node.is_materializable


def _job_checks(defs: dg.Definitions, job: str) -> tuple[set[dg.AssetCheckKey], list[str]]:
    job_def = defs.resolve_job_def(job)
    health_nodes = [n for n in job_def.graph.node_defs if n.name == reconcile_assets.HEALTH_CHECKS_NAME]
    return set(job_def.asset_layer.asset_graph.asset_check_keys), health_nodes


def test_the_hourly_job_observes_the_queue_and_runs_every_health_check(defs):
    """On-call hears within the hour when receipts stop: every reading runs hourly, on what is stored."""
    job = defs.resolve_job_def(HOURLY_JOB)
    assert {OUTBOUND_QUEUE, UPKEEP} <= job.asset_layer.selected_asset_keys
    assert not {RECEIPTS, RECONCILIATION, COST_DAILY} & job.asset_layer.selected_asset_keys
    checks, nodes = _job_checks(defs, HOURLY_JOB)
    crosscheck = dg.AssetCheckKey(SCHEDULE_CROSSCHECK, "schedule_matches_provider")
    assert checks == QUEUE_CHECKS | DAILY_CHECKS | {crosscheck} and len(nodes) == 1


def test_the_daily_job_runs_the_receipts_reconciliation_and_cost_checks(defs):
    job = defs.resolve_job_def(DAILY_JOB)
    assert OUTBOUND_QUEUE not in job.asset_layer.selected_asset_keys
    checks, nodes = _job_checks(defs, DAILY_JOB)
    assert DAILY_CHECKS <= checks and not QUEUE_CHECKS & checks and len(nodes) == 1


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0 s"), (45, "45 s"), (900, "15 min"), (930, "15 min 30 s"), (3600, "1 h"), (11520, "3 h 12 min"),
    (86400, "1 d"), (93600, "1 d 2 h"),
])  # fmt: skip
def test_durations_read_as_people_write_them(seconds, text):
    assert health.duration_text(seconds) == text


def test_every_asset_that_writes_a_table_names_it_in_its_definition(defs):
    """The catalog shows each asset's table before its first run (dbt's under the application database's schema)."""
    graph = defs.resolve_asset_graph()
    unnamed = [key.to_user_string() for key in graph.get_all_asset_keys()
               if key not in (OUTBOUND_QUEUE, UPKEEP, SCHEDULE_CROSSCHECK) and "dagster/table_name" not in graph.get(key).metadata]
    assert unnamed == []
    assert graph.get(COST_DAILY).metadata["dagster/table_name"] == "marts.cost_daily"
    assert graph.get(RECEIPTS).metadata["dagster/table_name"] == "dlr.delivery_receipts"
