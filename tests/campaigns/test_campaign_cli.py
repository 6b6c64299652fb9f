"""``sms-pipeline campaigns``: create, list, show, cancel and reschedule, local and provider-side.

Provider-side rows are handed to the simulator by the worker itself (its next
claim, one ``--once`` pass): one request with the campaign's scheduleTime,
then pending -> claimed -> sending -> scheduled with each transaction's uuId.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg
import pytest
from tests.support.campaigns import campaign_worker
from tests.support.cli import write_lines
from tests.support.environment import provider_variables
from tests.support.worker import INTAKE_POLICY, ledger, price, request

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.core.provider_time import wall_clock_instant
from sms_pipeline.intake import campaigns
from sms_pipeline.provider.client import ProviderClient
from sms_pipeline.provider.results import ProviderCallError
from sms_pipeline.simulator.server import RunningSimulator

KOLKATA = ZoneInfo("Asia/Kolkata")


def _wall(instant: datetime) -> str:
    return instant.astimezone(KOLKATA).strftime("%Y-%m-%d %H:%M")


def _ahead(**delta: float) -> str:
    """A wall-clock time in Kolkata this far ahead of real time, to the minute (what --at takes)."""
    return _wall(datetime.now(UTC) + timedelta(**delta))


def _instant(at: str) -> datetime:
    return wall_clock_instant(at, KOLKATA)[1]


def _file(tmp_path, count: int, start: int = 0, name: str = "promo.jsonl", **overrides):
    return write_lines(tmp_path / name, [json.dumps(request(n, **overrides)) for n in range(start, start + count)])


def _rows(db: psycopg.Connection, name: str) -> list[tuple]:
    return db.execute("""SELECT m.state::text, m.state_reason, m.scheduled_for, m.expires_at, m.provider_txn_id,
                                m.submitted_at, m.cost
                           FROM msg.outbound_message m JOIN msg.campaign c ON c.id = m.campaign_id
                          WHERE c.name = %s ORDER BY m.id""", (name,)).fetchall()


def _states(db: psycopg.Connection, name: str) -> dict[tuple[str, str | None], int]:
    counted: dict[tuple[str, str | None], int] = {}
    for state, reason, *_ in _rows(db, name):
        counted[state, reason] = counted.get((state, reason), 0) + 1
    return counted


def _campaign(db: psycopg.Connection, name: str) -> tuple:
    return db.execute("SELECT id, local_time, scheduled_for, cancelled_at FROM msg.campaign WHERE name = %s",
                      (name,)).fetchone()


def _transactions(db: psycopg.Connection, name: str) -> list[str]:
    """The uuIds of the transactions holding the campaign's rows, in request order."""
    return list(dict.fromkeys(row[4] for row in _rows(db, name) if row[4] is not None))


def _hand_over(db_url: str, client: ProviderClient, clock: VirtualClock) -> None:
    """One worker pass (``sms-pipeline worker --once``): the provider-side campaigns go to the provider."""
    campaign_worker(db_url, client, clock).run(once=True)


@contextmanager
def _provider_refuses(sim: RunningSimulator, uuid: str) -> Iterator[None]:
    """The provider answers "no pending schedule" for this one transaction for a while, then holds it again."""
    schedule = sim.state._schedules[uuid]
    with sim.state._lock:
        schedule.state = "dropped"
    try:
        yield
    finally:
        with sim.state._lock:
            schedule.state = "scheduled"


# ----- create ----------------------------------------------------------------------


def test_create_loads_good_lines_refuses_bad_ones_and_a_rerun_adds_nothing(run, db, tmp_path):
    at = _ahead(days=3)
    path = write_lines(tmp_path / "promo.jsonl", [
        json.dumps(request(1)),
        json.dumps(request(2, recipient="not a number")),
        json.dumps(request(3, scheduled_for="2030-01-01T10:00:00+05:30")),
        json.dumps(request(4, expires_at=(_instant(at) + timedelta(hours=2)).isoformat())),
        json.dumps(request(5, expires_at=_instant(at).isoformat())),
    ])

    code, out, err = run("campaigns", "create", str(path), "--name", "promo", "--at", at)

    assert code == 1
    assert "promo.jsonl: line 2: recipient: not a valid phone number" in err
    assert "promo.jsonl: line 3: scheduled_for: not allowed in a campaign file (the campaign sets the time)" in err
    assert "promo.jsonl: line 5: expires_at: must be later than the campaign's time" in err
    assert f"'promo' (local, {at} Asia/Kolkata) created: 2 requests: 2 new, 0 already in it; 3 bad lines" in out
    campaign_id, local_time, due, cancelled_at = _campaign(db, "promo")
    assert (local_time, due, cancelled_at) == (datetime.strptime(at, "%Y-%m-%d %H:%M"), _instant(at), None)
    assert [row[:4] for row in _rows(db, "promo")] == [
        ("pending", None, due, due + timedelta(hours=24)),  # SMS_PIPELINE_MAX_SEND_DELAY_H after the time
        ("pending", None, due, due + timedelta(hours=2))]

    code, out, _ = run("campaigns", "create", str(path), "--name", "promo", "--at", at)
    assert code == 1 and "already there: 2 requests: 0 new, 2 already in it; nothing added; 3 bad lines" in out
    assert db.execute("SELECT count(*) FROM msg.campaign").fetchone()[0] == 1
    assert len(_rows(db, "promo")) == 2

    code, out, err = run("campaigns", "create", str(path), "--name", "promo", "--at", _ahead(days=4))
    assert code == 2 and out == ""
    assert f"campaign {campaign_id} 'promo' is set for {at} Asia/Kolkata" in err
    assert f"sms-pipeline campaigns reschedule {campaign_id} --at" in err
    assert len(_rows(db, "promo")) == 2


def test_create_refuses_a_past_time_and_lines_already_enqueued_outside_it(run, db, tmp_path):
    code, _, err = run("campaigns", "create", str(_file(tmp_path, 1)), "--name", "late", "--at", _ahead(hours=-1))
    assert code == 2 and "has already passed" in err
    assert db.execute("SELECT count(*) FROM msg.campaign").fetchone()[0] == 0

    assert run("enqueue", str(_file(tmp_path, 1, start=7, name="before.jsonl")))[0] == 0
    code, out, err = run("campaigns", "create", str(_file(tmp_path, 2, start=7)), "--name", "promo",
                         "--at", _ahead(days=1))
    assert code == 1
    assert "promo.jsonl: line 1: event_id: already enqueued outside this campaign (message " in err
    assert "created: 1 requests: 1 new, 0 already in it; 1 bad lines" in out
    assert len(_rows(db, "promo")) == 1


# ----- list and show -----------------------------------------------------------------


def test_list_and_show_give_times_kinds_states_cost_and_provider_ids(run, db, tmp_path):
    at = _ahead(days=2)
    assert run("campaigns", "create", str(_file(tmp_path, 3)), "--name", "promo", "--at", at)[0] == 0
    assert run("campaigns", "create", str(_file(tmp_path, 2, start=10, name="b.jsonl")), "--name", "later",
               "--at", _ahead(days=5), "--provider-side")[0] == 0
    campaign_id = _campaign(db, "promo")[0]
    # One row sent and billed (as the worker leaves it), with its transaction.
    now = datetime.now(UTC).replace(second=7)  # whole seconds show, as show prints them
    first = db.execute("SELECT min(id) FROM msg.outbound_message WHERE campaign_id = %s", (campaign_id,)).fetchone()[0]
    db.execute("UPDATE msg.outbound_message SET state = 'claimed', claimed_at = %s WHERE id = %s", (now, first))
    db.execute("UPDATE msg.outbound_message SET state = 'sending' WHERE id = %s", (first,))
    db.execute("UPDATE msg.outbound_message SET state = 'submitted', submitted_at = %s, billable_units = 1, "
               "cost = 0.0079, cost_currency = 'INR', provider_txn_id = 'T-1' WHERE id = %s", (now, first))

    code, out, _ = run("campaigns", "list")
    assert code == 0
    header, promo, later = out.splitlines()
    assert header.split() == ["id", "name", "time", "kind", "rows", "sent", "by", "state", "outcome"]
    assert promo.split() == [str(campaign_id), "promo", *at.split(), "Asia/Kolkata", "local", "3", "1", "pending=2",
                             "submitted=1", "-"]
    assert later.split()[1] == "later" and "provider-side" in later and "pending=2" in later

    for key in ("promo", str(campaign_id)):
        code, out, _ = run("campaigns", "show", key)
        assert code == 0
        assert f"campaign {campaign_id} 'promo' (local, {at} Asia/Kolkata): due {_instant(at).isoformat()}" in out
        assert "rows: 3 (pending=2 submitted=1)" in out
        assert "cost so far: 0.0079 INR for 1 billed rows (1 units)" in out
        sent_at = now.astimezone(KOLKATA).strftime("%Y-%m-%d %H:%M:%S")
        assert f"sent: 1 rows, at {sent_at}" in out
        assert f"provider campaign - transaction T-1: 1 rows (0 held by the provider, 1 sent at {sent_at})" in out
        assert f"waiting: 2 pending for {at}" in out
        assert "unfinished" not in out

    code, _, err = run("campaigns", "show", "nope")
    assert code == 2 and "no campaign named or numbered 'nope'" in err


# ----- cancel and reschedule, local ----------------------------------------------------


def test_local_cancel_leaves_rows_a_worker_holds_and_a_second_run_finishes(run, db, tmp_path):
    assert run("campaigns", "create", str(_file(tmp_path, 3)), "--name", "promo", "--at", _ahead(days=1))[0] == 0
    campaign_id = _campaign(db, "promo")[0]
    held = db.execute("SELECT min(id) FROM msg.outbound_message").fetchone()[0]
    db.execute("UPDATE msg.outbound_message SET state = 'claimed', claimed_at = now() WHERE id = %s", (held,))

    code, out, err = run("campaigns", "cancel", "promo")

    assert code == 1
    assert "2 rows waiting here cancelled" in out and "1 rows with a worker right now: left alone" in out
    assert f"campaign {campaign_id} not fully cancelled: 1 rows left; run the command again" in err
    assert _states(db, "promo") == {("expired", "cancelled"): 2, ("claimed", None): 1}
    assert _campaign(db, "promo")[3] is None
    assert "unfinished cancel: 1 rows not cancelled yet" in run("campaigns", "show", "promo")[1]

    db.execute("UPDATE msg.outbound_message SET state = 'pending' WHERE id = %s", (held,))  # released
    code, out, _ = run("campaigns", "cancel", str(campaign_id))
    assert code == 0 and "1 rows waiting here cancelled" in out and f"campaign {campaign_id} 'promo' cancelled" in out
    assert _states(db, "promo") == {("expired", "cancelled"): 3}
    assert _campaign(db, "promo")[3] is not None
    assert run("campaigns", "cancel", "promo")[:2] == (0, out.replace("1 rows waiting", "0 rows waiting"))

    code, _, err = run("campaigns", "reschedule", "promo", "--at", _ahead(days=2))
    assert code == 2 and "was cancelled" in err


def test_local_reschedule_moves_due_time_and_expiry_together(run, db, tmp_path):
    at, new_at = _ahead(days=1), _ahead(days=2, minutes=30)
    early = (_instant(at) + timedelta(hours=2)).isoformat()
    path = write_lines(tmp_path / "promo.jsonl", [json.dumps(request(1)), json.dumps(request(2, expires_at=early))])
    assert run("campaigns", "create", str(path), "--name", "promo", "--at", at)[0] == 0

    code, out, _ = run("campaigns", "reschedule", "promo", "--at", new_at)

    assert code == 0, out
    assert "2 rows waiting here rescheduled" in out and f"'promo' rescheduled to {new_at} Asia/Kolkata" in out
    due = _instant(new_at)
    assert [row[:4] for row in _rows(db, "promo")] == [
        ("pending", None, due, due + timedelta(hours=24)), ("pending", None, due, due + timedelta(hours=2))]
    assert _campaign(db, "promo")[1:] == (datetime.strptime(new_at, "%Y-%m-%d %H:%M"), due, None)

    code, out, _ = run("campaigns", "reschedule", "promo", "--at", new_at)
    assert code == 0 and "0 rows waiting here rescheduled" in out
    code, _, err = run("campaigns", "reschedule", "promo", "--at", _ahead(hours=-1))
    assert code == 2 and "has already passed" in err
    assert [row[2] for row in _rows(db, "promo")] == [due, due]


def test_cancel_and_reschedule_after_the_send_time_are_refused_and_change_nothing(run, db, clock):
    # Created on a clock six hours behind: its time is already behind the command's real clock.
    at = _wall(clock.now() + timedelta(hours=3))
    campaigns.create(db, [json.dumps(request(1)).encode()], name="gone", at=at, tz=KOLKATA, provider_side=False,
                     clock=clock, policy=INTAKE_POLICY)
    before = _rows(db, "gone")

    for command in (("cancel", "gone"), ("reschedule", "gone", "--at", _ahead(days=1))):
        code, out, err = run("campaigns", *command)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and f"was due at {at} Asia/Kolkata; too late to {command[0]} it" in err
    assert _rows(db, "gone") == before and _campaign(db, "gone")[3] is None


# ----- provider-side ---------------------------------------------------------------------


def test_provider_side_reschedule_moves_every_transaction_at_the_provider(run, db, db_url, tmp_path, sim, client,
                                                                          clock):
    at, new_at = _ahead(days=3), _ahead(days=4)
    assert run("campaigns", "create", str(_file(tmp_path, 2100)), "--name", "promo", "--at", at, "--provider-side",
               "--workers", "1")[0] == 0
    campaign_id = _campaign(db, "promo")[0]
    _hand_over(db_url, client, clock)
    assert _states(db, "promo") == {("scheduled", None): 2100}
    uuids = _transactions(db, "promo")
    assert len(uuids) == 3
    provider = provider_variables(sim.base_url)

    with _provider_refuses(sim, uuids[0]):
        code, out, err = run("campaigns", "reschedule", "promo", "--at", new_at, **provider)

    assert code == 1
    assert f"transaction {uuids[0]}: NOT rescheduled: provider schedule update of {uuids[0]} failed" in out
    assert f"transaction {uuids[1]}: 1000 rows rescheduled" in out and f"transaction {uuids[2]}: 100 rows" in out
    assert f"campaign {campaign_id} not fully rescheduled: 1 of 3 provider transactions unchanged, 1000 rows left" \
        in err
    assert _campaign(db, "promo")[2] == _instant(at)  # the campaign keeps its time until every row has moved
    assert "unfinished reschedule: 1100 rows at another time than the campaign's" in run(
        "campaigns", "show", "promo")[1]

    code, out, err = run("campaigns", "reschedule", "promo", "--at", new_at, **provider)

    assert code == 0, err
    assert f"transaction {uuids[0]}: 1000 rows rescheduled" in out
    assert uuids[1] not in out and uuids[2] not in out  # already at the new time: not asked again
    due = _instant(new_at)
    assert {(s.transaction_id, s.schedule_time) for s in client.schedule_read()} == {(u, due) for u in uuids}
    rows = _rows(db, "promo")
    assert {(state, scheduled_for, expires_at - scheduled_for) for state, _, scheduled_for, expires_at, *_ in rows} \
        == {("scheduled", due, timedelta(hours=24))}
    assert _campaign(db, "promo")[2] == due

    code, out, _ = run("campaigns", "reschedule", "promo", "--at", new_at, **provider_variables(sim.base_url))
    assert code == 0 and "transaction" not in out  # nothing left to move: no provider call


def test_provider_side_cancel_partial_failure_says_which_and_a_second_run_finishes(run, db, db_url, tmp_path, sim,
                                                                                   client, clock):
    assert run("campaigns", "create", str(_file(tmp_path, 2100)), "--name", "promo", "--at", _ahead(days=3),
               "--provider-side", "--workers", "1")[0] == 0
    campaign_id = _campaign(db, "promo")[0]
    _hand_over(db_url, client, clock)
    assert _states(db, "promo") == {("scheduled", None): 2100}
    first, second, third = _transactions(db, "promo")
    # An earlier cancel reached the provider for the third, but its answer was lost: the provider's view counts.
    client.schedule_delete(third)
    provider = provider_variables(sim.base_url)

    with _provider_refuses(sim, second):
        code, out, err = run("campaigns", "cancel", "promo", **provider)

    assert code == 1
    assert f"transaction {first}: 1000 rows cancelled" in out
    assert f"transaction {second}: NOT cancelled: provider schedule delete of {second} failed" in out
    assert f"transaction {third}: 100 rows cancelled" in out
    assert f"campaign {campaign_id} not fully cancelled: 1 of 3 provider transactions unchanged, 1000 rows left" in err
    assert _states(db, "promo") == {("expired", "cancelled"): 1100, ("scheduled", None): 1000}
    assert {r[4] for r in _rows(db, "promo") if r[0] == "scheduled"} == {second}
    assert _campaign(db, "promo")[3] is None
    assert "unfinished cancel: 1000 rows not cancelled yet" in run("campaigns", "show", "promo")[1]

    code, out, _ = run("campaigns", "cancel", "promo", **provider)

    assert code == 0, out
    assert f"transaction {second}: 1000 rows cancelled" in out
    assert first not in out and third not in out  # already done: not asked again
    assert _states(db, "promo") == {("expired", "cancelled"): 2100}
    assert all(r[5] is None and r[6] is None for r in _rows(db, "promo"))  # never billed
    assert _campaign(db, "promo")[3] is not None
    assert client.schedule_read() == []
    assert {t.status for t in client.campaign_read(db.execute(
        "SELECT DISTINCT provider_campaign_id FROM msg.outbound_message").fetchone()[0])} == {"cancelled"}


def test_a_cancel_that_cannot_reach_rows_handed_over_as_unknown_never_reads_as_done(run, db, db_url, tmp_path, sim,
                                                                                    make_client, clock):
    at = _ahead(days=3)
    assert run("campaigns", "create", str(_file(tmp_path, 1000)), "--name", "promo", "--at", at, "--provider-side",
               "--workers", "1")[0] == 0
    _hand_over(db_url, make_client(), clock)
    [first] = _transactions(db, "promo")
    # 200 more lines join it; the worker hands them over but cannot place them (campaign/read fails after the
    # send): unknown, campaign_unmapped, no uuId, and the provider may still send them.
    assert run("campaigns", "create", str(_file(tmp_path, 200, start=1000, name="more.jsonl")), "--name", "promo",
               "--at", at, "--provider-side", "--workers", "1")[0] == 0
    sim.faults.update({"rate_limit_report": 1.0})
    assert campaign_worker(db_url, make_client(max_retries=0), clock).run(once=True).unknown == 200
    sim.faults.clear()

    code, out, err = run("campaigns", "cancel", "promo", **provider_variables(sim.base_url))

    assert code == 1, out
    assert f"transaction {first}: 1000 rows cancelled" in out
    assert "200 rows left; run the command again" in err
    assert _campaign(db, "promo")[3] is None  # not shown cancelled: the provider may still send those 200
    assert _states(db, "promo") == {("expired", "cancelled"): 1000, ("unknown", "campaign_unmapped"): 200}


def test_a_cancelled_provider_side_campaign_costs_nothing_when_its_time_comes(run, db, db_url, sim, client, clock):
    price(db, "0.0079")  # per unit, the requests' class
    at = _wall(clock.now() + timedelta(hours=1))
    for name, start in (("cancelled", 0), ("kept", 100)):
        campaigns.create(db, [json.dumps(request(n)).encode() for n in range(start, start + 3)], name=name, at=at,
                         tz=KOLKATA, provider_side=True, clock=clock, policy=INTAKE_POLICY)
    _hand_over(db_url, client, clock)
    [dropped], [kept] = _transactions(db, "cancelled"), _transactions(db, "kept")

    change = campaigns.cancel(db, campaigns.find(db, "cancelled"), clock=clock, provider=client)
    assert change.done and [(t.transaction_id, t.problem) for t in change.transactions] == [(dropped, None)]
    clock.advance(timedelta(hours=2))  # past the time on the simulator's clock
    # The worker's settle pass: the provider lists the kept transaction sent, so its rows are promoted.
    assert campaign_worker(db_url, client, clock).run(once=True).promoted == 3

    assert {e.transaction_id for e in ledger(sim)} == {kept} and len(ledger(sim)) == 3  # the provider billed
    assert _states(db, "kept") == {("submitted", None): 3}
    assert {row[5:] for row in _rows(db, "kept")} == {(_instant(at), Decimal("0.0079"))}  # 1 unit x the rate
    assert _states(db, "cancelled") == {("expired", "cancelled"): 3}
    assert {row[5:] for row in _rows(db, "cancelled")} == {(None, None)}
    assert campaigns.cost(db, campaigns.find(db, "cancelled")) == []
    assert campaigns.cost(db, campaigns.find(db, "kept")) == [campaigns.Cost("INR", Decimal("0.0237"), 3, 3, 0)]
    assert "cost so far: nothing billed" in run("campaigns", "show", "cancelled")[1]
    with pytest.raises(campaigns.CampaignRefused, match="too late to cancel"):
        campaigns.cancel(db, campaigns.find(db, "kept"), clock=clock, provider=client)
    assert _states(db, "kept") == {("submitted", None): 3}


class _ReadingMovesIt:
    """A clock that moves ``step`` forward each time the command reads it, and gives the new time; the
    simulator reads the clock underneath, which does not move it."""

    def __init__(self, clock: VirtualClock, step: timedelta) -> None:
        self._clock, self._step = clock, step

    def now(self) -> datetime:
        return self._clock.advance(self._step)


def test_a_cancel_that_meets_the_send_time_leaves_the_rest_to_the_provider_and_the_worker_records_it(
        db, db_url, sim, client, clock):
    price(db, "0.0079")
    at = _wall(clock.now() + timedelta(hours=1))
    campaigns.create(db, [json.dumps(request(n)).encode() for n in range(1200)], name="promo", at=at, tz=KOLKATA,
                     provider_side=True, clock=clock, policy=INTAKE_POLICY)
    _hand_over(db_url, client, clock)
    first, second = _transactions(db, "promo")
    due = _instant(at)
    # The command reads the clock as it starts (1.5 minutes before the time), before asking about the first
    # transaction (half a minute before: the provider deletes it) and before the second (half a minute after).
    clock.set(due - timedelta(minutes=2, seconds=30))

    change = campaigns.cancel(db, campaigns.find(db, "promo"), clock=_ReadingMovesIt(clock, timedelta(minutes=1)),
                              provider=client)

    assert clock.now() == due + timedelta(seconds=30)
    assert [(t.transaction_id, t.messages, t.problem) for t in change.transactions] == [
        (first, 1000, None), (second, 200, f"the send time has passed ({at} Asia/Kolkata); left to the provider")]
    assert (change.done, change.too_late, change.left, change.campaign.cancelled_at) == (False, True, 200, None)
    assert _states(db, "promo") == {("expired", "cancelled"): 1000, ("scheduled", None): 200}

    # The provider sent the second at its time; the worker's settle pass records it, billed.
    assert campaign_worker(db_url, client, clock).run(once=True).promoted == 200
    rows = _rows(db, "promo")
    assert {(r[0], r[1], r[5], r[6]) for r in rows if r[4] == first} == {("expired", "cancelled", None, None)}
    assert {(r[0], r[5], r[6]) for r in rows if r[4] == second} == {("submitted", due, Decimal("0.0079"))}
    assert {e.transaction_id for e in ledger(sim)} == {second} and len(ledger(sim)) == 200
    assert campaigns.cost(db, campaigns.find(db, "promo")) == [campaigns.Cost("INR", Decimal("1.5800"), 200, 200, 0)]


def _provider_side(db: psycopg.Connection, db_url: str, client: ProviderClient, clock: VirtualClock, count: int,
                   at: str) -> list[str]:
    """A provider-side campaign 'promo' of ``count`` rows at ``at``, handed over: its transactions' uuIds."""
    campaigns.create(db, [json.dumps(request(n)).encode() for n in range(count)], name="promo", at=at, tz=KOLKATA,
                     provider_side=True, clock=clock, policy=INTAKE_POLICY)
    _hand_over(db_url, client, clock)
    return _transactions(db, "promo")


def test_a_cancel_whose_answer_comes_after_the_worker_read_cancelled_still_reads_done(
        db, db_url, sim, client, make_client, clock, monkeypatch):
    price(db, "0.0079")
    at = _wall(clock.now() + timedelta(hours=1))
    [txn] = _provider_side(db, db_url, client, clock, 3, at)
    due = _instant(at)
    clock.set(due - timedelta(seconds=1))
    delete = client.schedule_delete

    def answered_late(txn_id: str) -> None:
        delete(txn_id)  # the provider deletes the schedule a second before the time ...
        clock.set(due + timedelta(seconds=1))  # ... its answer comes after it; meanwhile the worker's settle
        campaign_worker(db_url, make_client(), clock).run(once=True)  # pass reads the transaction `cancelled`

    monkeypatch.setattr(client, "schedule_delete", answered_late)
    change = campaigns.cancel(db, campaigns.find(db, "promo"), clock=clock, provider=client)

    assert [(t.transaction_id, t.problem) for t in change.transactions] == [(txn, None)]
    assert change.done and change.campaign.cancelled_at is not None
    # Expired as the cancel writes them, never `unknown` (which a proof could later turn into a re-send).
    assert _states(db, "promo") == {("expired", "cancelled"): 3}
    assert {row[5:] for row in _rows(db, "promo")} == {(None, None)}  # never billed
    assert ledger(sim) == []


def test_a_transaction_the_provider_sent_before_its_delete_makes_the_cancel_read_partly_sent(
        run, db, db_url, sim, client, make_client, clock, monkeypatch):
    price(db, "0.0079")
    at = _wall(clock.now() + timedelta(hours=1))
    first, second = _provider_side(db, db_url, client, clock, 1200, at)
    due = _instant(at)
    clock.set(due - timedelta(minutes=2))
    delete = client.schedule_delete

    def sent_meanwhile(txn_id: str) -> None:
        if txn_id == second:
            # The time comes while the request for the second is on its way: the provider sends that
            # transaction, and the worker's settle pass promotes its rows before the cancel reads them.
            clock.set(due + timedelta(seconds=1))
            assert campaign_worker(db_url, make_client(), clock).run(once=True).promoted == 200
        delete(txn_id)

    monkeypatch.setattr(client, "schedule_delete", sent_meanwhile)
    change = campaigns.cancel(db, campaigns.find(db, "promo"), clock=clock, provider=client)

    assert [(t.transaction_id, t.problem is None) for t in change.transactions] == [(first, True), (second, False)]
    # Nothing is left to cancel: the cancel is finished, but part went out and was billed, so the campaign
    # reads "partly sent", never plainly "cancelled" (which says it cost nothing).
    assert (change.left, change.done) == (0, True) and change.campaign.cancelled_at is not None
    assert (change.campaign.outcome, change.campaign.sent, change.campaign.first_sent_at) == ("partly sent", 200, due)
    assert _states(db, "promo") == {("expired", "cancelled"): 1000, ("submitted", None): 200}
    assert {e.transaction_id for e in ledger(sim)} == {second} and len(ledger(sim)) == 200
    out = run("campaigns", "show", "promo")[1]
    assert "partly sent: 200 rows sent before the cancel, the rest cancelled" in out
    assert f"transaction {second}: 200 rows (0 held by the provider, 200 sent at {at})" in out
    assert "nothing sent" not in out and "unfinished" not in out
    [listed] = run("campaigns", "list")[1].splitlines()[1:]
    assert listed.split()[7:11] == ["200", "cancelled=1000", "submitted=200", "partly"]
    assert "partly sent, rest cancelled" in listed


def test_a_reschedule_cut_off_by_the_send_time_leaves_the_moved_rows_controllable(run, db, db_url, sim, client,
                                                                                   clock):
    price(db, "0.0079")
    at, new_at = _wall(clock.now() + timedelta(hours=1)), _wall(clock.now() + timedelta(days=1))
    first, second = _provider_side(db, db_url, client, clock, 1200, at)
    due, new_due = _instant(at), _instant(new_at)
    # The command reads the clock as it starts and before each transaction: the first is moved half a
    # minute before the time, the second is reached half a minute after it.
    clock.set(due - timedelta(minutes=2, seconds=30))

    change = campaigns.reschedule(db, campaigns.find(db, "promo"), new_at,
                                  clock=_ReadingMovesIt(clock, timedelta(minutes=1)), provider=client)

    assert clock.now() == due + timedelta(seconds=30)
    assert [(t.transaction_id, t.messages, t.problem) for t in change.transactions] == [
        (first, 1000, None), (second, 200, f"the send time has passed ({at} Asia/Kolkata); left to the provider")]
    assert (change.done, change.too_late, change.campaign.scheduled_for) == (False, True, due)
    assert {(r[4], r[0], r[2]) for r in _rows(db, "promo")} == {(first, "scheduled", new_due),
                                                               (second, "scheduled", due)}
    # The provider sends the second at the old time; the worker records it. What moved is plain to see.
    assert campaign_worker(db_url, client, clock).run(once=True).promoted == 200
    promo = campaigns.find(db, "promo")
    assert [(w.state, w.scheduled_for, w.messages) for w in campaigns.waiting(db, promo)] == [
        ("scheduled", new_due, 1000)]
    out = run("campaigns", "show", "promo")[1]
    assert f"waiting: 1000 scheduled for {new_at}" in out
    assert "unfinished reschedule: 1000 rows at another time than the campaign's" in out

    # An hour after the old time the moved rows are still the campaign's to change: the reschedule run again
    # gives the campaign its new time (nothing left to move), then a cancel stops them.
    clock.set(due + timedelta(hours=1))
    change = campaigns.reschedule(db, promo, new_at, clock=clock, provider=client)
    assert (change.done, change.transactions, change.campaign.scheduled_for) == (True, [], new_due)
    # The campaign has its new time; what went at the old one stays in plain sight.
    out = run("campaigns", "show", "promo")[1]
    assert f", {new_at} Asia/Kolkata)" in out and f"sent: 200 rows, at {at}" in out
    assert f"transaction {second}: 200 rows (0 held by the provider, 200 sent at {at})" in out
    # The cancel (the command, on the real clock: before the new time) stops the moved rows; it finishes, but
    # the campaign reads "partly sent", naming the transaction that went, not plainly "cancelled".
    code, out, err = run("campaigns", "cancel", "promo", **provider_variables(sim.base_url))
    assert code == 0, err
    assert f"transaction {first}: 1000 rows cancelled" in out
    assert f"transaction {second}: 200 rows sent at {at}" in out
    assert f"'promo' partly sent: 200 rows sent before the cancel (at {at}), the rest cancelled" in out
    promo = campaigns.find(db, "promo")
    assert promo.cancelled_at is not None and (promo.outcome, promo.sent) == ("partly sent", 200)
    assert _states(db, "promo") == {("expired", "cancelled"): 1000, ("submitted", None): 200}
    assert {e.transaction_id for e in ledger(sim)} == {second} and len(ledger(sim)) == 200
    assert campaigns.cost(db, promo) == [campaigns.Cost("INR", Decimal("1.5800"), 200, 200, 0)]


def test_a_cancel_that_reached_the_provider_unanswered_finishes_after_the_send_time(
        run, db, db_url, sim, client, make_client, clock, monkeypatch):
    price(db, "0.0079")
    at = _wall(clock.now() + timedelta(hours=1))
    [txn] = _provider_side(db, db_url, client, clock, 3, at)
    due = _instant(at)
    delete = client.schedule_delete

    def answer_lost(txn_id: str) -> None:
        delete(txn_id)  # the provider deletes the schedule, but its answer never comes back ...
        raise ProviderCallError(f"provider schedule delete of {txn_id} failed: connection reset")

    def unreadable(provider_campaign_id: str) -> None:  # ... and the read-back fails too
        raise ProviderCallError("provider campaign read failed: connection reset")

    monkeypatch.setattr(client, "schedule_delete", answer_lost)
    monkeypatch.setattr(client, "campaign_read", unreadable)
    change = campaigns.cancel(db, campaigns.find(db, "promo"), clock=clock, provider=client)
    assert [(t.transaction_id, t.problem is None) for t in change.transactions] == [(txn, False)]
    assert (change.done, change.left, change.campaign.cancelled_at) == (False, 3, None)

    # The send time passes; the worker's settle pass reads the transaction `cancelled` and expires its rows.
    clock.set(due + timedelta(minutes=5))
    campaign_worker(db_url, make_client(), clock).run(once=True)
    assert _states(db, "promo") == {("expired", "cancelled"): 3}

    # Nothing is left to change and nothing went: the cancel run again finishes, past the time.
    code, out, err = run("campaigns", "cancel", "promo", **provider_variables(sim.base_url))
    assert code == 0, err
    assert "'promo' cancelled" in out and "partly sent" not in out
    promo = campaigns.find(db, "promo")
    assert promo.cancelled_at is not None and (promo.outcome, promo.sent) == ("cancelled", 0)
    assert "nothing sent" in run("campaigns", "show", "promo")[1]
    assert ledger(sim) == [] and campaigns.cost(db, promo) == []
