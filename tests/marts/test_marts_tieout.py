"""The tie-out against the provider's own summary, fetched from a running simulator.

The simulator is told to report 3 units more than it billed (fault
``summary_units_offset``, added to its first row): the provider_summary asset
fetches /report/summary for the day, the marts run compares, and the tie-out
check fails on exactly that sender while the other one matches.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg
from pydantic import SecretStr
import pytest

from tests.support.environment import provider_variables, settings_for
from tests.support.marts import Marts, rows_as_dicts
from tests.support.rows import ensure_partitions, insert_messages
from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.core.segments import count_segments
from sms_pipeline.provider import ProviderClient
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.simulator import run_simulator

pytestmark = pytest.mark.slow

KOLKATA = ZoneInfo("Asia/Kolkata")
D = date(2026, 5, 20)
SENT_AT = datetime(2026, 5, 20, 5, 30, tzinfo=UTC)  # 11:00 in Kolkata
USER, PASSWORD = "demo", "pw-tieout-never-logged"
OFFSET = 3
LONG_UNICODE = "नमस्ते, आपका ऑर्डर भेज दिया गया है। " * 3  # UCS-2, several segments


def test_tieout_flags_the_units_the_simulator_over_reports(db_url, tmp_path):
    clock = VirtualClock(SENT_AT)
    with run_simulator(clock=clock, seed=11, timezone=KOLKATA, userid=USER, password=PASSWORD,
                       faults={"summary_units_offset": OFFSET}) as sim:
        sends = [("TIEAAA", "Your parcel is on its way", ["919800000001", "919800000002", "919800000003"]),
                 ("TIEBBB", LONG_UNICODE, ["919800000004", "919800000005"])]
        with ProviderClient(sim.base_url, userid=USER, password=SecretStr(PASSWORD), api_key=None,
                            timezone=KOLKATA) as client, \
                psycopg.connect(db_url, autocommit=True) as conn:
            ensure_partitions(conn, date(2026, 5, 1))
            for sender, text, mobiles in sends:
                outcome = client.send(mobiles, text, sender, msg_type="unicode" if sender == "TIEBBB" else "text")
                assert isinstance(outcome, SendAccepted) and len(outcome.accepted) == len(mobiles)
                segments = count_segments(text)
                insert_messages(conn, len(mobiles), state="submitted", sender_id=sender,
                                encoding=segments.encoding, segments=segments.segments,
                                billable_units=segments.segments, cost=Decimal("0.0079") * segments.segments,
                                cost_currency="INR", created_at=SENT_AT - timedelta(seconds=1),
                                claimed_at=SENT_AT, submitted_at=SENT_AT)
        assert count_segments(LONG_UNICODE).segments > 1

        marts = Marts(settings_for(db_url, tmp_path / "home",
                                   **provider_variables(sim.base_url, KOLKATA.key, userid=USER, password=PASSWORD)))
        fetched = marts.fetch_summary(D)
    [summary] = fetched.asset_materializations_for_node("dlr__provider_summary")
    assert summary.partition == D.isoformat()
    assert summary.metadata["provider_units"].value == 3 + OFFSET + count_segments(LONG_UNICODE).segments * 2

    marts.build_views()
    result = marts.build_day(D)

    long_units = count_segments(LONG_UNICODE).segments * 2
    rows = rows_as_dicts(db_url, "SELECT sender_id, our_units, provider_units, difference, status "
                                 "FROM marts.provider_tieout_daily WHERE day = %s ORDER BY sender_id", (D,))
    assert rows == [
        {"sender_id": "TIEAAA", "our_units": 3, "provider_units": 3 + OFFSET, "difference": OFFSET,
         "status": "mismatch"},
        {"sender_id": "TIEBBB", "our_units": long_units, "provider_units": long_units, "difference": 0,
         "status": "match"},
    ]
    [check] = [c for c in result.get_asset_check_evaluations()
               if c.asset_check_key.name == "provider_tieout_difference_is_zero"]
    assert check.asset_key.path == ["marts", "provider_tieout_daily"]
    assert check.passed is False
    assert check.metadata["dagster_dbt/failed_row_count"].value == 1
    # what a person needs to follow it up: the day, the sender and the difference
    assert check.metadata["days_with_differences"].value == D.isoformat()
    assert check.metadata["net_difference_units"].value == OFFSET
    assert [r.data for r in check.metadata["differences"].value.records] == [
        {"day": D.isoformat(), "sender_id": "TIEAAA", "our_units": 3, "provider_units": 3 + OFFSET,
         "difference": OFFSET}]
