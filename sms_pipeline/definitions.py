"""The one Dagster ``Definitions`` object (loaded by ``workspace.yaml``).

Each pipeline module defines its assets, checks, jobs and schedules at module
level (from the code location's one settings object,
:mod:`sms_pipeline.orchestration.location`); this module collects them and
adds the shared resources, built once from the same settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from sms_pipeline.orchestration import campaign_assets, ingest_assets, marts_assets, reconcile_assets, schedules
from sms_pipeline.orchestration.alerts import alert_sensor, alert_sensor_for
from sms_pipeline.orchestration.location import SETTINGS
from sms_pipeline.orchestration.resources import build_resources
from sms_pipeline.settings import Settings

PIPELINE_MODULES = (ingest_assets, reconcile_assets, campaign_assets, marts_assets, schedules)
# Code references: the UI links each asset to the function that defines it.
ASSETS = dg.with_source_code_references(dg.load_assets_from_modules(PIPELINE_MODULES))
ASSET_CHECKS = dg.load_asset_checks_from_modules(PIPELINE_MODULES)
JOBS = [schedules.daily_reports_job, schedules.day_close_job, schedules.hourly_job, schedules.daily_upkeep_job,
        marts_assets.full_rebuild_job]
SCHEDULES = [schedules.daily_reports_schedule, schedules.hourly_schedule, schedules.daily_upkeep_schedule,
             marts_assets.weekly_full_rebuild]

defs = dg.Definitions(
    assets=ASSETS, asset_checks=ASSET_CHECKS, jobs=JOBS, schedules=SCHEDULES, sensors=[alert_sensor],
    resources=build_resources(SETTINGS),
)


def definitions_for(settings: Settings, *, jobs: Sequence[Any] = ()) -> dg.Definitions:
    """The pipeline with resources from ``settings``: a CLI command's or a test's own, built the same way."""
    return dg.Definitions(assets=ASSETS, asset_checks=ASSET_CHECKS, jobs=[*JOBS, *jobs], schedules=SCHEDULES,
                          sensors=[alert_sensor_for(settings)], resources=build_resources(settings))
