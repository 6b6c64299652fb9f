"""docs/receipt-cases.md#case-5: the same partition twice, or a range over reconciled days, changes nothing."""

from __future__ import annotations

from datetime import timedelta

from tests.support.numbers import numbers
from tests.support.runs import metadata_of


def test_the_same_day_twice_and_a_range_over_reconciled_days_update_nothing(world):
    world.send(numbers(30))
    world.otp("919700000001")
    (unknown,) = world.send_ambiguous(["919700000002"], "accept_then_drop")
    world.client.send(["919700000003"], "No row for this one", "SGCSMS")  # an orphan
    world.move_to(world.at(world.day + timedelta(days=1), 12))
    world.send(numbers(5, start=100))  # the next day has traffic too
    world.move_to(world.at(world.day + timedelta(days=3), 3))
    world.run_daily(world.day, world.day + timedelta(days=1))
    before = world.snapshot()
    assert before["orphans"] and before["receipts"]

    again = world.run_daily(world.day)
    assert world.snapshot() == before  # same rows, same row versions: nothing was rewritten
    meta = metadata_of(again, "msg/reconciliation")
    assert meta["rows_updated"] == 0 and meta["state_moves"] == {} and meta["orphans_opened"] == 0
    receipts = metadata_of(again, "dlr/receipts")
    assert receipts["new_receipts"] == 0

    world.run_daily(world.day - timedelta(days=2), world.day + timedelta(days=1))
    assert world.snapshot() == before
