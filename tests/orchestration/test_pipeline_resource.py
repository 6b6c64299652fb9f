"""The pipeline's values as a Dagster resource: a launchpad value gets the setting's own checks."""

from __future__ import annotations

import dagster as dg
import pytest

from sms_pipeline.orchestration.resources import PipelineResource


@pytest.mark.parametrize(("field", "value", "message"), [
    ("reconcile_work_mem_mb", 0, "from 1 to 2,097,151"),
    ("reconcile_work_mem_mb", 2_097_152, "from 1 to 2,097,151"),
    ("campaign_send_spread_s", 86_401, "at most 86400"),
    ("correlation_window_s", 0, "must be a positive integer"),
    ("claim_lease_s", -5, "must be a positive integer"),
    ("lookback_days", -1, "must be zero or more"),
    ("resend_after_proof", "transactionl", "must be message classes"),
    ("resend_after_proof", "otp", "a late code is useless"),
    ("provider_timezone", "Asia/Kolkat", "must be an IANA time zone"),
])
def test_a_value_the_settings_refuse_is_refused_by_the_resource(field, value, message):
    with pytest.raises(ValueError, match=message):
        PipelineResource(**{field: value})


@dg.asset
def work_mem_in_use(pipeline: PipelineResource) -> int:
    return pipeline.reconcile_work_mem_mb


def _run_with(work_mem_mb: int) -> dg.ExecuteInProcessResult:
    """A run whose launchpad config sets the reconciliation's work_mem, over the built resource's default."""
    return dg.materialize(
        [work_mem_in_use], resources={"pipeline": PipelineResource()}, raise_on_error=False,
        run_config={"resources": {"pipeline": {"config": {"reconcile_work_mem_mb": work_mem_mb}}}},
    )


def test_a_launchpad_work_mem_is_checked_when_the_run_starts():
    refused = _run_with(0)
    assert not refused.success
    (failure,) = [event for event in refused.all_events if event.event_type_value == "RESOURCE_INIT_FAILURE"]
    assert "from 1 to 2,097,151" in str(failure.event_specific_data.error)

    taken = _run_with(512)
    assert taken.success and taken.output_for_node("work_mem_in_use") == 512
