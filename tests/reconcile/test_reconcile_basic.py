"""A plain day sent by the worker: every submitted message is matched and follows its final receipt."""

from __future__ import annotations

from datetime import timedelta

from tests.support.numbers import numbers


def test_a_day_of_batch_sends_reconciles_to_the_simulators_outcomes(world):
    # 200 messages: some still open at the download whatever the day's draws
    # (each has about a 6% chance of no final receipt within the first day).
    keys = world.send(numbers(200))
    download_at = world.at(world.day + timedelta(days=1), 3)
    world.move_to(download_at)
    world.run_daily(world.day)
    states = set()
    for key in keys:
        row = world.row(key)
        assert (row["correlation_result"], row["provider_message_id"]) == ("matched", world.msg_id_of(row["recipient"]))
        assert row["state"] == world.expected_state(row["provider_message_id"], download_at)
        states.add(row["state"])
    assert {"delivered", "failed", "submitted"} <= states  # the simulator's mix reached the rows
