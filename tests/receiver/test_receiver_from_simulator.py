"""The simulator's pushes land in the receiver's inbox: registered through the client, over real HTTP."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from sms_pipeline.provider import SendAccepted
from tests.receiver.receiver_support import inbox, rejects

NUMBERS = [f"9198766{n:05d}" for n in range(30)]


def _caught_up(sim, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot = sim.pushes.snapshot()
        if snapshot["caught_up"] and snapshot["outstanding"] == 0:
            return snapshot
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.1)


@pytest.mark.slow
def test_every_push_the_provider_made_is_stored_once_and_none_refused(sim, client, receiver, db):
    client.webhook_create(receiver.push_url, 500)
    outcomes = [client.send(NUMBERS[i:i + 10], "Your parcel is on its way.", "SGCSMS") for i in range(0, 30, 10)]
    client.otp_generate(NUMBERS[0], "Your code is $otp$", "SGCSMS", "482913")
    assert all(isinstance(o, SendAccepted) for o in outcomes)

    sim.clock.advance(timedelta(hours=5))
    pushed = _caught_up(sim)

    rows = inbox(db)
    assert pushed["acknowledged"] == len(rows) > 0
    assert rejects(db) == []
    ledger = {e.msg_id: e for e in sim.state.ledger_entries()}
    codes = {c.code for c in client.delivery_codes()}
    for msg_id, code, txn_id, recipient, submitted, done, _ in rows:
        entry = ledger[msg_id]
        assert (txn_id, recipient) == (entry.transaction_id if entry.transaction_id != "0" else None, entry.mobile)
        assert submitted == entry.submitted_at.replace(microsecond=0)  # read in the provider's zone
        assert code in codes and done is not None and done >= submitted
