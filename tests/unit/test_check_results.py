"""Failed asset checks as one line each: ERROR first, a figure, never a number that could be a recipient."""

from __future__ import annotations

import dagster as dg

from sms_pipeline.orchestration.check_results import DBT_FAILED_ROWS, failed_checks

UPKEEP = dg.AssetKey(["msg", "upkeep"])
TIEOUT = dg.AssetKey(["marts", "provider_tieout_daily"])
COST = dg.AssetKey(["marts", "cost_daily"])


def _evaluation(key: dg.AssetKey, name: str, passed: bool, severity: dg.AssetCheckSeverity, **more):
    return dg.AssetCheckEvaluation(asset_key=key, check_name=name, passed=passed, severity=severity, **more)


def test_failed_checks_error_first_each_with_its_figure() -> None:
    checks = failed_checks([
        _evaluation(TIEOUT, "provider_tieout_difference_is_zero", False, dg.AssetCheckSeverity.WARN,
                    metadata={DBT_FAILED_ROWS: 2, "status": "warn"}),
        _evaluation(UPKEEP, "oldest_pending_age", True, dg.AssetCheckSeverity.WARN, description="fine"),
        _evaluation(UPKEEP, "still_pending_ratio", False, dg.AssetCheckSeverity.ERROR,
                    description="share still without a final receipt: too high for otp\nsecond line"),
        _evaluation(COST, "cost_daily_ties_to_messages", False, dg.AssetCheckSeverity.ERROR,
                    metadata={DBT_FAILED_ROWS: 1}),
        _evaluation(COST, "no_figure", False, dg.AssetCheckSeverity.ERROR),
    ])
    assert [c.line() for c in checks] == [
        "check failed (ERROR): marts/cost_daily cost_daily_ties_to_messages: 1 failing row(s)",
        "check failed (ERROR): marts/cost_daily no_figure: failed",
        "check failed (ERROR): msg/upkeep still_pending_ratio: share still without a final receipt: too high for otp",
        "check failed (WARN): marts/provider_tieout_daily provider_tieout_difference_is_zero: 2 failing row(s)",
    ]
    assert [c.is_error for c in checks] == [True, True, True, False]


def test_a_description_never_shows_a_long_number_or_runs_on() -> None:
    [check] = failed_checks([_evaluation(UPKEEP, "x", False, dg.AssetCheckSeverity.WARN,
                                         description="row for 919812345678 looks odd " + "x" * 400)])
    assert "919812345678" not in check.line() and "row for … looks odd" in check.line()
    assert len(check.detail) == 200


def test_a_check_per_partition_is_listed_per_failed_partition() -> None:
    checks = failed_checks([
        _evaluation(UPKEEP, "daily", False, dg.AssetCheckSeverity.ERROR, partition="2026-03-01", description="a"),
        _evaluation(UPKEEP, "daily", True, dg.AssetCheckSeverity.ERROR, partition="2026-03-02", description="b"),
        _evaluation(UPKEEP, "daily", False, dg.AssetCheckSeverity.ERROR, partition="2026-03-03", description="c"),
    ])
    assert [c.asset for c in checks] == ["msg/upkeep 2026-03-01", "msg/upkeep 2026-03-03"]
