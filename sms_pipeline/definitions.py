"""The one Dagster ``Definitions`` object (loaded by ``workspace.yaml``).

Each pipeline module contributes its own assets, checks, jobs and schedules
through ``definitions(settings)``; this module merges them and adds the
shared resources.
"""

from __future__ import annotations

import importlib
import warnings

import dagster as dg

from sms_pipeline import settings as settings_module
from sms_pipeline.orchestration.resources import build_resources
from sms_pipeline.settings import Settings

PIPELINE_MODULES: tuple[str, ...] = (
    "sms_pipeline.orchestration.ingest_assets",
    "sms_pipeline.orchestration.reconcile_assets",
    "sms_pipeline.orchestration.marts_assets",
    "sms_pipeline.orchestration.schedules",
)


# The project pins Dagster: a "beta parameter" note on every load of the code
# location (webserver, daemon, each run) says nothing to a person.
PINNED_BETA_NOTE = r"Parameter `backfill_policy` of function .* is currently in beta"


def build_definitions(settings: Settings | None = None) -> dg.Definitions:
    cfg = settings or settings_module.load()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PINNED_BETA_NOTE)
        parts = [importlib.import_module(name).definitions(cfg) for name in PIPELINE_MODULES]
    return dg.Definitions.merge(*parts, dg.Definitions(resources=build_resources(cfg)))


defs = build_definitions()
