"""Provider-side schedules over HTTP: the split, schedule/read|update|delete and campaign/read agree with
what the simulator sends and bills, and the fault that drops one scheduled transaction silently."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sms_pipeline.provider.results import ProviderCallError, SendAccepted
from sms_pipeline.simulator.state import CAMPAIGN_SPLIT, DROP_AFTER_MS

MOBILES = [f"91{9000000000 + i}" for i in range(2500)]


def _schedule(client, clock, mobiles=MOBILES, *, hours: float = 2) -> tuple[SendAccepted, object]:
    at = clock.now() + timedelta(hours=hours)
    answer = client.send(mobiles, "Sale starts now", "SGCSMS", schedule_time=at)
    assert isinstance(answer, SendAccepted) and answer.campaign_id is not None
    return answer, at


def _billed(sim, transaction_id: str) -> list:
    return list(sim.state.ledger_entries(transaction_id=transaction_id))


def test_a_scheduled_request_is_split_in_order_listed_and_billed_only_when_sent(client, clock, sim):
    answer, at = _schedule(client, clock)

    parts = client.campaign_read(answer.campaign_id)
    assert [p.total for p in parts] == [CAMPAIGN_SPLIT, CAMPAIGN_SPLIT, 500]
    assert parts[0].transaction_id == answer.transaction_id  # the answer names the first part
    assert {p.status for p in parts} == {"scheduled"}
    assert all(p.last_updated is None for p in parts)  # "0" on the wire: never updated
    assert all(p.scheduled_for == at for p in parts)
    listed = client.schedule_read()
    assert [r.transaction_id for r in listed] == [p.transaction_id for p in parts]
    assert {r.schedule_time for r in listed} == {at} and {r.campaign_id for r in listed} == {answer.campaign_id}
    assert sim.state.ledger_size() == 0  # nothing billed while scheduled

    # In request order: part i holds recipients i*1000 .. i*1000+999.
    clock.advance(timedelta(hours=3))
    for index, part in enumerate(client.campaign_read(answer.campaign_id)):
        entries = _billed(sim, part.transaction_id)
        assert [e.mobile for e in entries] == MOBILES[index * CAMPAIGN_SPLIT:(index + 1) * CAMPAIGN_SPLIT]
        assert {e.submitted_at for e in entries} == {at}  # billed at its time, not at the request's
        assert part.status == "completed"
    assert client.schedule_read() == []


def test_update_and_delete_are_what_it_sends_and_a_cancelled_transaction_costs_nothing(client, clock, sim):
    answer, at = _schedule(client, clock)
    first, second, third = (p.transaction_id for p in client.campaign_read(answer.campaign_id))
    later = at + timedelta(hours=1)

    clock.advance(timedelta(minutes=5))
    client.schedule_update(second, later)
    client.schedule_delete(third)

    parts = {p.transaction_id: p for p in client.campaign_read(answer.campaign_id)}
    assert parts[second].scheduled_for == later and parts[second].last_updated == clock.now()
    assert parts[third].status == "cancelled" and parts[first].last_updated is None
    assert {r.transaction_id: r.schedule_time for r in client.schedule_read()} == {first: at, second: later}
    with pytest.raises(ProviderCallError):
        client.schedule_update(third, later)  # no longer pending

    clock.advance(timedelta(hours=2, minutes=30))  # past the first time, before the new one
    assert len(_billed(sim, first)) == CAMPAIGN_SPLIT and _billed(sim, second) == []
    clock.advance(timedelta(hours=1))
    assert {e.submitted_at for e in _billed(sim, second)} == {later}
    assert _billed(sim, third) == []
    assert sim.state.ledger_size() == 2 * CAMPAIGN_SPLIT


def test_an_update_to_a_past_time_sends_it_now_never_billed_in_the_past(client, clock, sim):
    answer, at = _schedule(client, clock, MOBILES[:10])
    clock.advance(timedelta(minutes=10))

    client.schedule_update(answer.transaction_id, at - timedelta(days=1))

    assert {e.submitted_at for e in _billed(sim, answer.transaction_id)} == {clock.now()}


def test_the_drop_fault_loses_one_transaction_silently(client, clock, sim):
    sim.state.faults.update({"drop_scheduled_transaction": 1.0})
    answer, _at = _schedule(client, clock)
    # Right after the answer the provider still lists every transaction (a sender maps its rows then) ...
    assert [p.transaction_id for p in client.campaign_read(answer.campaign_id)] == sim.state.split_of(
        answer.campaign_id)
    clock.advance(timedelta(milliseconds=DROP_AFTER_MS))  # ... and loses one a minute later

    kept = [p.transaction_id for p in client.campaign_read(answer.campaign_id)]
    assert len(kept) == 2 and [p.transaction_id for p in client.schedule_read()] == kept
    assert sim.state.faults.fired()["drop_scheduled_transaction"] == 1
    everything = sim.state.split_of(answer.campaign_id)
    (dropped,) = set(everything) - set(kept)
    assert [t for t in everything if t != dropped] == kept  # the rest still in request order
    with pytest.raises(ProviderCallError):
        client.schedule_delete(dropped)

    clock.advance(timedelta(hours=3))
    assert _billed(sim, dropped) == []
    assert sum(len(_billed(sim, t)) for t in kept) == sim.state.ledger_size()
    assert sim.state.ledger_size() in (2 * CAMPAIGN_SPLIT, CAMPAIGN_SPLIT + 500)


def test_the_drop_fault_at_rate_zero_drops_nothing(client, clock, sim):
    answer, _at = _schedule(client, clock)

    assert len(client.campaign_read(answer.campaign_id)) == 3
    assert sim.state.faults.fired()["drop_scheduled_transaction"] == 0


def test_a_scheduled_test_message_is_never_billed(http, clock, sim):
    at = (clock.now() + timedelta(hours=1)).astimezone(sim.state.timezone).strftime("%Y-%m-%d %H:%M:%S")
    answer = http.post("/send", data={"userid": "demo", "password": "demo", "senderid": "SGCSMS", "msg": "hello",
                                      "mobile": MOBILES[0], "scheduleTime": at, "testMessage": "true"}).json()
    assert answer["status"] == "success" and answer["campaignId"]

    clock.advance(timedelta(hours=2))
    (part,) = http.get("/campaign/read", params={"userid": "demo", "password": "demo",
                                                 "campaignid": answer["campaignId"]}).json()["response"]["campaignList"]
    assert part["campaign"]["status"] == "completed"  # its time came (the read released it) ...
    assert sim.state.ledger_size() == 0  # ... and nothing was billed
