"""The provider summary never shrinks (issue 17, docs/design.md#report-guards).

The day's summary is fetched from a running simulator through the
provider_summary asset; then the simulator forgets its traffic (``reset``,
as a fresh simulator would) and knows one message of the day: the asset
refuses to store 1 unit over the 5 stored, the stored day stays as it was,
and the run config of the report guard lets a person load it anyway.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import dagster as dg
import psycopg
import pytest
from pydantic import SecretStr

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.db.report_guards import OVERRIDE, ReportShrinkRefused
from sms_pipeline.marts.provider_summary import SenderSummary, store_summary
from sms_pipeline.provider import ProviderClient
from sms_pipeline.provider.results import SendAccepted
from sms_pipeline.simulator import run_simulator
from tests.support.environment import provider_variables, settings_for
from tests.support.marts import Marts
from tests.support.rows import snapshot

pytestmark = pytest.mark.slow

KOLKATA = ZoneInfo("Asia/Kolkata")
D = date(2026, 5, 20)
SENT_AT = datetime(2026, 5, 20, 5, 30, tzinfo=UTC)  # 11:00 in Kolkata
USER, PASSWORD = "demo", "pw-guard-never-logged"
PROVIDER_SUMMARY = dg.AssetKey(["dlr", "provider_summary"])
ALLOW_SHRINK = {"resources": {"report_guard": {"config": {"allow_shrink": True}}}}
TABLES = (("dlr.provider_summary_fetch", "day"), ("dlr.provider_summary", "day, sender_id"))


def _stored(conn: psycopg.Connection) -> list:
    return [snapshot(conn, table, order) for table, order in TABLES]


def _fetch(marts: Marts, run_config: dict | None = None) -> dg.ExecuteInProcessResult:
    return dg.materialize(marts.assets, selection=[PROVIDER_SUMMARY], partition_key=D.isoformat(),
                          resources=marts.resources, run_config=run_config or {}, raise_on_error=False)


def test_a_summary_with_fewer_units_is_refused_and_stored_only_when_allowed(db_url, tmp_path):
    clock = VirtualClock(SENT_AT)
    with run_simulator(clock=clock, seed=11, timezone=KOLKATA, userid=USER, password=PASSWORD) as sim, \
            ProviderClient(sim.base_url, userid=USER, password=SecretStr(PASSWORD), api_key=None,
                           timezone=KOLKATA) as client, \
            psycopg.connect(db_url, autocommit=True) as conn:
        for sender, mobiles in (("GRDAAA", ["919800000001", "919800000002", "919800000003"]),
                                ("GRDBBB", ["919800000004", "919800000005"])):
            assert isinstance(client.send(mobiles, "Your parcel is on its way", sender), SendAccepted)
        marts = Marts(settings_for(db_url, tmp_path / "home",
                                   **provider_variables(sim.base_url, KOLKATA.key, userid=USER, password=PASSWORD)))
        first = _fetch(marts)
        assert first.success
        assert conn.execute("SELECT sender_rows, units FROM dlr.provider_summary_fetch").fetchone() == (2, 5)
        before = _stored(conn)

        sim.state.reset()  # the provider forgot the day ...
        clock.advance(timedelta(minutes=5))
        client.send(["919800000009"], "Your parcel is on its way", "GRDAAA")  # ... and knows one message of it
        refused = _fetch(marts)

        assert not refused.success
        (failure,) = [e for e in refused.all_events if e.is_step_failure]
        assert failure.step_failure_data.user_failure_data.description == (
            f"provider summary {D}: the provider now has 1 unit in 1 sender row, 5 units in 2 sender rows are "
            f"stored; refused (a day's summary only grows). {OVERRIDE}")
        assert refused.get_asset_materialization_events() == []
        assert _stored(conn) == before  # the stored day as it was, to the byte

        allowed = _fetch(marts, ALLOW_SHRINK)

        assert allowed.success
        assert conn.execute("SELECT sender_rows, units FROM dlr.provider_summary_fetch").fetchone() == (1, 1)
        assert conn.execute("SELECT sender_id, units FROM dlr.provider_summary").fetchall() == [("GRDAAA", 1)]


def test_fewer_sender_rows_are_refused_even_with_more_units_and_a_growing_day_is_stored(db):
    fetched = datetime(2026, 5, 21, tzinfo=UTC)
    store_summary(db, D, [SenderSummary("A", 3, 3, 0, 0, 3), SenderSummary("B", 2, 2, 0, 0, 2)], fetched)
    before = _stored(db)

    with pytest.raises(ReportShrinkRefused, match=r"provider summary 2026-05-20: the provider now has 9 units in "
                                                  r"1 sender row, 5 units in 2 sender rows are stored; refused"):
        store_summary(db, D, [SenderSummary("A", 9, 9, 0, 0, 9)], fetched)
    assert _stored(db) == before

    # statuses moved forward, the same units: normal, stored
    store_summary(db, D, [SenderSummary("A", 3, 2, 1, 0, 3), SenderSummary("B", 2, 1, 0, 1, 2)], fetched)
    assert db.execute("SELECT sum(delivered), sum(units) FROM dlr.provider_summary").fetchone() == (3, 5)
    # an empty day over an empty day is no shrink
    store_summary(db, D - timedelta(days=1), [], fetched)
    store_summary(db, D - timedelta(days=1), [], fetched)
