"""The schedule cross-check of provider-side campaigns (group ``reconcile``, hourly).

``msg/schedule_crosscheck`` (unpartitioned, in the hourly job): reads the
provider's ``schedule/read`` and ``campaign/read`` of every provider campaign
on our `scheduled` rows and compares them with those rows
(:mod:`sms_pipeline.reconcile.campaign_check`). Its check fails (ERROR) on any
difference and names the transactions; it writes nothing, so the asset's
materialisation is the record of when the provider was last asked.
"""

# No `from __future__ import annotations`: Dagster inspects the asset
# functions' annotations (context and resource types) at definition time.

import dagster as dg

from sms_pipeline.orchestration.asset_keys import SCHEDULE_CROSSCHECK
from sms_pipeline.orchestration.resources import DatabaseResource, PipelineResource, ProviderResource
from sms_pipeline.orchestration.schedules import HOURLY_ASSET_OPTIONS
from sms_pipeline.reconcile import campaign_check

GROUP = "reconcile"
CHECK = "schedule_matches_provider"


@dg.asset(
    key=SCHEDULE_CROSSCHECK,
    **HOURLY_ASSET_OPTIONS,
    group_name=GROUP,
    check_specs=[dg.AssetCheckSpec(
        CHECK, asset=SCHEDULE_CROSSCHECK, blocking=False,
        description="Every transaction of our scheduled rows is on the provider's schedule at our time, with "
                    "our count, and the provider will send nothing we do not hold (ids named on failure).",
    )],
    description=(
        "Provider-side campaigns as the provider holds them (schedule/read, and campaign/read of each provider "
        "campaign on our scheduled rows) compared with our scheduled rows, per transaction (uuId): missing, "
        "not sending, another time, another count, or unknown to us. Writes nothing."
    ),
)
def schedule_crosscheck(database: DatabaseResource, provider: ProviderResource,
                        pipeline: PipelineResource) -> dg.MaterializeResult:
    with database.connect(autocommit=True) as conn:
        held = campaign_check.held_transactions(conn)
    with provider.client() as client:
        listed = client.schedule_read()
        campaigns = {c: client.campaign_read(c) for c in sorted({h.campaign_id for h in held})}
    result = campaign_check.compare(held, listed, campaigns, pipeline.zone)
    metadata = result.metadata()
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[dg.AssetCheckResult(
            check_name=CHECK, passed=result.passed, severity=dg.AssetCheckSeverity.ERROR,
            description=result.description(), metadata=metadata,
        )],
    )
