"""A plain day: every submitted message is matched and follows its final receipt."""

from __future__ import annotations

from datetime import timedelta

from conftest import numbers


def test_a_day_of_batch_sends_reconciles_to_the_simulators_outcomes(world):
    keys = world.send(numbers(40))
    download_at = world.at(world.day + timedelta(days=1), 3)
    world.move_to(download_at)
    result = world.run_daily(world.day)
    print(result.asset_materializations_for_node("msg__reconciliation")[0].metadata if False else "")
    states = {}
    for key in keys:
        row = world.row(key)
        assert row["correlation_result"] == "matched"
        assert row["state"] == world.expected_state(row["provider_message_id"], download_at)
        states[row["state"]] = states.get(row["state"], 0) + 1
    print(states)
