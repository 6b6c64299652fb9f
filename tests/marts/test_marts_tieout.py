"""The tie-out end to end: a running simulator, the real worker, ingest, reconciliation and marts.

The simulator is told to report 3 units more in its /report/summary than it
billed (fault ``summary_units_offset``, added to its first row, sender
TIEAAA): its day report still lists what it billed. Every message is matched,
so the provider's two figures disagreeing is the only difference: named on
its own line of the equation (summary - day report = 3), residual 0, and the
tie-out check is a WARN whose breakdown shows it; TIEBBB ties out. (A
residual, units nobody can place, is an ERROR: test_marts_tieout_buckets.)
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.marts import Marts, rows_as_dicts
from tests.support.reconcile import world_for
from sms_pipeline.core.provider_time import day_bounds
from sms_pipeline.core.segments import count_segments
from sms_pipeline.orchestration.marts_assets import TIEOUT_CHECK

pytestmark = pytest.mark.slow

OFFSET = 3
LONG_UNICODE = "नमस्ते, आपका ऑर्डर भेज दिया गया है। " * 3  # UCS-2, several segments


@pytest.fixture
def world(db_url, tmp_path):
    yield from world_for(db_url, tmp_path, faults={"summary_units_offset": OFFSET})


def test_the_summary_disagreeing_with_the_day_report_is_named_and_a_warning(world, db_url):
    world.send(["919800000001", "919800000002", "919800000003"], "Your parcel is on its way", sender="TIEAAA")
    world.send(["919800000004", "919800000005"], LONG_UNICODE, sender="TIEBBB")
    long_units = count_segments(LONG_UNICODE).segments * 2
    assert long_units > 2
    _, day_end = day_bounds(world.day, world.tz)
    world.move_to(day_end + timedelta(hours=3))
    world.run_daily(world.day)

    marts = Marts(world.settings)
    [summary] = marts.fetch_summary(world.day).asset_materializations_for_node("dlr__provider_summary")
    assert summary.metadata["provider_units"].value == 3 + OFFSET + long_units
    marts.build_views()
    result = marts.build_day(world.day)

    rows = rows_as_dicts(db_url, "SELECT sender_id, provider_units, day_report_units, our_units, matched_messages, "
                                 "summary_minus_report_units, residual, status FROM marts.provider_tieout_daily "
                                 "WHERE day = %s ORDER BY sender_id", (world.day,))
    assert rows == [
        {"sender_id": "TIEAAA", "provider_units": 3 + OFFSET, "day_report_units": 3, "our_units": 3,
         "matched_messages": 3, "summary_minus_report_units": OFFSET, "residual": 0, "status": "explained"},
        {"sender_id": "TIEBBB", "provider_units": long_units, "day_report_units": long_units, "our_units": long_units,
         "matched_messages": 2, "summary_minus_report_units": 0, "residual": 0, "status": "ok"},
    ]
    [check] = [c for c in result.get_asset_check_evaluations() if c.asset_check_key.name == TIEOUT_CHECK]
    assert check.asset_key.path == ["marts", "provider_tieout_daily"]
    assert check.passed is False
    assert check.severity.value == "WARN"
    assert check.metadata["dagster_dbt/failed_row_count"].value == 1
    # what a person needs to follow it up: the day, the sender and the buckets (no numbers, no texts)
    assert check.metadata["days_with_residual"].value == "none"
    assert check.metadata["residual_units"].value == 0
    [record] = [r.data for r in check.metadata["breakdown"].value.records]
    assert (record["day"], record["sender_id"], record["provider_units"], record["day_report_units"],
            record["our_units"], record["summary_minus_report_units"], record["residual"]) == \
        (world.day.isoformat(), "TIEAAA", 3 + OFFSET, 3, 3, OFFSET, 0)
