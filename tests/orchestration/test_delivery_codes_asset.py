"""dlr/delivery_codes: the provider's code table, refreshed by the hourly job (never by the daily one)."""

from __future__ import annotations

import dagster as dg

from sms_pipeline.definitions import defs
from sms_pipeline.orchestration import ingest_assets
from sms_pipeline.orchestration.asset_keys import DELIVERY_CODES
from sms_pipeline.orchestration.schedules import DAILY_JOB, HOURLY_JOB


def test_the_code_table_is_refreshed_hourly_only():
    assert DELIVERY_CODES in defs.resolve_job_def(HOURLY_JOB).asset_layer.selected_asset_keys
    assert DELIVERY_CODES not in defs.resolve_job_def(DAILY_JOB).asset_layer.selected_asset_keys


def test_the_asset_stores_the_providers_code_table(world):
    result = dg.materialize([ingest_assets.delivery_codes], resources=world.resources(),
                            instance=dg.DagsterInstance.ephemeral())
    assert result.success
    (materialization,) = result.asset_materializations_for_node("dlr__delivery_codes")
    metadata = {name: value.value for name, value in materialization.metadata.items()}
    stored = world.conn.execute("SELECT count(*) FROM dlr.delivery_codes").fetchone()[0]
    assert metadata["listed"] == metadata["added"] == stored > 0
    assert metadata["kept_unlisted"] == 0
