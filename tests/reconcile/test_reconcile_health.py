"""Health checks (on msg/outbound_queue, dlr/receipts, msg/reconciliation, marts/cost_daily, one step):
they fail when they should and pass on a healthy day."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta

import dagster as dg
import pytest

from sms_pipeline.orchestration.asset_keys import OUTBOUND_QUEUE
from sms_pipeline.orchestration.asset_keys import HEALTH_CHECK_TARGETS
from tests.support.numbers import numbers
from tests.support.reconcile import World, world_for

# A fixed day: the simulator's receipt timelines hash the submission time, so on a day relative to today
# the one OTP of the healthy day would now and then draw a receipt that never comes (its class at 100 %).
HEALTHY_DAY = date(2026, 11, 18)


@pytest.fixture
def healthy_world(db_url, tmp_path) -> Iterator[World]:
    yield from world_for(db_url, tmp_path, day=HEALTHY_DAY)


def _checks(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_a_healthy_day_passes_every_check(healthy_world):
    world = healthy_world
    world.send(numbers(40))
    world.otp("919700000030")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    checks = _checks(world.run_checks())
    assert set(checks) == {"oldest_pending_age", "still_pending_ratio", "receipts_flowing", "orphan_rate",
                           "unknown_open", "ambiguous_open", "unpriced_units"}
    failed = {name: c.description for name, c in checks.items() if not c.passed}
    assert failed == {}
    assert checks["oldest_pending_age"].metadata["oldest_pending_age_seconds"].value == 0
    assert {name: c.asset_key for name, c in checks.items()} == HEALTH_CHECK_TARGETS


def test_the_checks_run_as_one_step_after_the_queue_is_observed(world):
    world._insert("919700000034", "Waiting", "SGCSMS", "transactional")
    world.move_to(world.clock.now() + timedelta(minutes=20))
    result = world.run_checks()
    steps = {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION}
    assert len(steps) == 1
    (observation,) = [e.event_specific_data.asset_observation for e in result.all_events
                      if e.event_type == dg.DagsterEventType.ASSET_OBSERVATION]
    assert observation.asset_key == OUTBOUND_QUEUE
    meta = {k: v.value for k, v in observation.metadata.items()}
    assert (meta["pending"], meta["claimed"], meta["oldest_age_seconds"], meta["oldest_age"]) == (1, 0, 1200, "20 min")
    check = _checks(result)["oldest_pending_age"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.description.startswith("oldest pending/claimed work is 20 min old (warn > 15 min, error > 1 h)")


def test_a_stale_pending_row_fails_loudly(world):
    world._insert("919700000031", "Waiting", "SGCSMS", "transactional")
    world.move_to(world.clock.now() + timedelta(hours=2))
    check = _checks(world.run_checks())["oldest_pending_age"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert check.metadata["oldest_pending_age_seconds"].value == 7200
    assert check.metadata["oldest_pending_age"].value == "2 h"


def test_receipts_that_stopped_coming_are_an_error(world):
    world.send(numbers(10))
    world.move_to(world.clock.now() + timedelta(hours=4))  # no report was ever loaded
    checks = _checks(world.run_checks())
    for name in ("receipts_flowing", "still_pending_ratio"):
        assert not checks[name].passed and checks[name].severity == dg.AssetCheckSeverity.ERROR, name
    assert checks["receipts_flowing"].metadata["messages_awaiting_receipt"].value == 10
    assert checks["receipts_flowing"].metadata["last_receipt_at"].value == "never"
    assert checks["still_pending_ratio"].metadata["still_pending_ratio"].value["transactional"] == 1.0


def test_an_unpriced_message_fails_the_unpriced_check(world):
    world.conn.execute("DELETE FROM msg.rate_card WHERE message_class = 'promotional'")
    world.send(numbers(2), text="Sale today", message_class="promotional")
    check = _checks(world.run_checks())["unpriced_units"]
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert (check.metadata["unpriced_rows"].value, check.metadata["unpriced_units"].value) == (2, 2)


def test_ambiguous_and_orphaned_receipts_are_reported(world):
    # The same text to one number twice inside the window, both answers lost: nothing tells them apart.
    world.send_ambiguous(["919700000032"], "accept_then_drop")
    world.move_to(world.clock.now() + timedelta(seconds=40))
    world.send_ambiguous(["919700000032"], "accept_then_drop")
    world.client.send(["919700000033"], "No row for this one", "SGCSMS")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    checks = _checks(world.run_checks())
    assert not checks["ambiguous_open"].passed and checks["ambiguous_open"].metadata["ambiguous_open"].value == 2
    assert not checks["orphan_rate"].passed and checks["orphan_rate"].metadata["orphaned_receipts"].value == 1
