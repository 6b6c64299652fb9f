"""The schedule cross-check: the pure comparison, and the hourly asset over HTTP against the simulator
with rows put into `scheduled` by SQL along the legal path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import dagster as dg

from sms_pipeline.definitions import defs
from sms_pipeline.orchestration import campaign_assets
from sms_pipeline.orchestration.asset_keys import SCHEDULE_CROSSCHECK
from sms_pipeline.orchestration.schedules import DAILY_JOB, HOURLY_JOB
from sms_pipeline.provider.results import CampaignTransaction, ScheduleRow, SendAccepted
from sms_pipeline.reconcile.campaign_check import HeldTransaction, compare
from sms_pipeline.simulator.state import CAMPAIGN_SPLIT, DROP_AFTER_MS
from tests.support.campaigns import add_campaign, campaign_worker
from tests.support.numbers import numbers

KOLKATA = ZoneInfo("Asia/Kolkata")
AT = datetime(2026, 12, 5, 4, 30, tzinfo=UTC)  # 10:00 in Kolkata


def _held(txn: str, at: datetime = AT, messages: int = 1000, last: datetime | None = None) -> HeldTransaction:
    return HeldTransaction("c1", txn, messages, at, last or at)


def _listed(txn: str, at: datetime = AT, total: int = 1000) -> ScheduleRow:
    return ScheduleRow(txn, "c1", "SGCSMS", "text", total, at)


def _part(txn: str, status: str, at: datetime = AT, total: int = 1000) -> CampaignTransaction:
    return CampaignTransaction(txn, status, total, AT - timedelta(days=1), at, None)


# ----- the comparison --------------------------------------------------------


def test_the_same_transactions_at_the_same_time_pass():
    result = compare([_held("1"), _held("2", messages=500)], [_listed("1"), _listed("2", total=500)],
                     {"c1": [_part("1", "scheduled"), _part("2", "scheduled", total=500)]}, KOLKATA)
    assert result.passed and result.differences == () and result.held == result.provider_pending == 2


def test_times_compare_at_the_providers_precision_as_we_sent_them():
    # We send the time rounded up to the second; the provider lists whole seconds.
    ours = _held("1", at=AT - timedelta(milliseconds=400))
    assert compare([ours], [_listed("1")], {}, KOLKATA).passed
    late = compare([_held("1")], [_listed("1", at=AT + timedelta(seconds=1))], {}, KOLKATA)
    assert [(d.kind, d.transaction_id) for d in late.differences] == [("time_differs", "1")]
    assert "2026-12-05 10:00:00" in late.differences[0].detail and "10:00:01" in late.differences[0].detail


def test_a_repeated_dst_hour_compares_by_wall_clock_text():
    zone = ZoneInfo("America/New_York")
    second = datetime(2026, 11, 1, 6, 30, tzinfo=UTC)  # 01:30 EST, the repeated hour's second pass
    listed_as_parsed = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # its text parsed as the first pass
    assert compare([_held("1", at=second)], [_listed("1", at=listed_as_parsed)], {}, zone).passed


def test_every_kind_of_difference_is_named_by_transaction():
    held = [_held("gone"), _held("cancelled"), _held("moved"), _held("short"),
            _held("split", last=AT + timedelta(minutes=1)), _held("sent")]
    listed = [_listed("moved", at=AT + timedelta(hours=1)), _listed("short", total=999), _listed("split"),
              _listed("theirs")]
    parts = {"c1": [_part("cancelled", "cancelled"), _part("sent", "completed")]}
    result = compare(held, listed, parts, KOLKATA)
    assert not result.passed
    assert sorted((d.kind, d.transaction_id) for d in result.differences) == [
        ("count_differs", "short"), ("missing", "gone"), ("not_sending", "cancelled"),
        ("time_differs", "moved"), ("time_differs", "split"), ("unknown_to_us", "theirs")]
    assert result.awaiting_promotion == ("sent",)  # sent by the provider: not a difference
    metadata = result.metadata()
    assert metadata["missing"] == "gone" and metadata["unknown_to_us"] == "theirs"
    assert "missing gone" in result.description()


def test_nothing_held_and_nothing_listed_passes():
    assert compare([], [], {}, KOLKATA).passed


# ----- the asset ---------------------------------------------------------------


def test_the_cross_check_runs_hourly_only():
    assert SCHEDULE_CROSSCHECK in defs.resolve_job_def(HOURLY_JOB).asset_layer.selected_asset_keys
    assert SCHEDULE_CROSSCHECK not in defs.resolve_job_def(DAILY_JOB).asset_layer.selected_asset_keys


_FIRST_NUMBER = iter(range(9_100_000_000, 9_900_000_000, 10_000))


def _provider_campaign(world, size: int, at: datetime) -> SendAccepted:
    first = next(_FIRST_NUMBER)
    mobiles = [f"91{first + i}" for i in range(size)]
    answer = world.client.send(mobiles, "Sale starts at ten", "SGCSMS", schedule_time=at)
    assert isinstance(answer, SendAccepted) and answer.campaign_id is not None
    return answer


def _hold(world, name: str, answer: SendAccepted, at: datetime) -> None:
    """Our rows of a provider campaign, in `scheduled` along the legal path: pending -> claimed -> sending ->
    scheduled, each row with its transaction's uuId (1,000 rows per uuId, in request order)."""
    conn, now = world.conn, world.clock.now()
    transactions = world.sim.state.split_of(answer.campaign_id)
    (campaign_id,) = conn.execute(
        "INSERT INTO msg.campaign (name, provider_side, local_time, time_zone, scheduled_for, created_at, updated_at)"
        " VALUES (%s, true, %s, %s, %s, %s, %s) RETURNING id",
        (name, at.astimezone(world.tz).replace(tzinfo=None), world.tz.key, at, now, now)).fetchone()
    conn.execute(
        "INSERT INTO msg.outbound_message (business_key, tenant_id, channel, message_class, recipient, sender_id, "
        "body, encoding, segments, scheduled_for, created_at, campaign_id) "
        "SELECT %(name)s || ':' || m, 'acme', 'sms', 'promotional', m, 'SGCSMS', 'Sale starts at ten', 'GSM7', 1, "
        "%(at)s, %(now)s, %(campaign)s FROM unnest(%(mobiles)s::text[]) AS m",
        {"name": name, "at": at, "now": now, "campaign": campaign_id, "mobiles": list(answer.accepted)})
    conn.execute("UPDATE msg.outbound_message SET state = 'claimed', claimed_at = %s WHERE campaign_id = %s",
                 (now, campaign_id))
    conn.execute("UPDATE msg.outbound_message SET state = 'sending' WHERE campaign_id = %s", (campaign_id,))
    conn.execute(
        "UPDATE msg.outbound_message AS m SET state = 'scheduled', provider_campaign_id = %(provider)s, "
        "       provider_txn_id = (%(transactions)s::text[])[(o.position - 1) / %(split)s + 1] "
        "  FROM (SELECT id, created_at, row_number() OVER (ORDER BY recipient) AS position "
        "          FROM msg.outbound_message WHERE campaign_id = %(campaign)s) AS o "
        " WHERE m.id = o.id AND m.created_at = o.created_at",
        {"provider": answer.campaign_id, "transactions": transactions, "split": CAMPAIGN_SPLIT,
         "campaign": campaign_id})


def _check(world) -> dg.AssetCheckEvaluation:
    result = dg.materialize([campaign_assets.schedule_crosscheck], resources=world.resources(),
                            instance=dg.DagsterInstance.ephemeral())
    assert result.success
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == campaign_assets.CHECK
    assert evaluation.severity == dg.AssetCheckSeverity.ERROR
    return evaluation


def _ids(evaluation: dg.AssetCheckEvaluation, kind: str) -> set[str]:
    entry = evaluation.metadata.get(kind)
    return set() if entry is None else set(entry.value.split(", "))


def test_the_cross_check_passes_then_names_every_difference(world):
    at = world.clock.now() + timedelta(days=1)
    big = _provider_campaign(world, 2500, at)
    _hold(world, "big", big, at)
    held = world.conn.execute(
        "SELECT provider_txn_id, count(*) FROM msg.outbound_message WHERE state = 'scheduled' "
        "GROUP BY 1 ORDER BY min(recipient)").fetchall()
    assert held == [(t, n) for t, n in zip(world.sim.state.split_of(big.campaign_id), (1000, 1000, 500),
                                           strict=True)]

    passed = _check(world)
    assert passed.passed, passed.description
    assert passed.metadata["held_transactions"].value == 3

    # A fresh campaign the provider loses one transaction of; one we do not hold; one moved on the provider.
    world.sim.state.faults.update({"drop_scheduled_transaction": 1.0})
    lossy = _provider_campaign(world, 1500, at)
    world.sim.state.faults.update({"drop_scheduled_transaction": 0.0})
    _hold(world, "lossy", lossy, at)
    world.move_to(world.clock.now() + timedelta(milliseconds=DROP_AFTER_MS))  # the provider loses it a minute later
    listed = {p.transaction_id for p in world.client.campaign_read(lossy.campaign_id)}
    (dropped,) = set(world.sim.state.split_of(lossy.campaign_id)) - listed
    stranger = _provider_campaign(world, 10, at)
    moved = _provider_campaign(world, 10, at)
    _hold(world, "moved", moved, at)
    world.client.schedule_update(moved.transaction_id, at + timedelta(minutes=5))

    failed = _check(world)
    assert not failed.passed
    assert _ids(failed, "missing") == {dropped}
    assert _ids(failed, "unknown_to_us") == {stranger.transaction_id}
    assert _ids(failed, "time_differs") == {moved.transaction_id}
    assert failed.metadata["differences"].value == 3
    for txn in (dropped, stranger.transaction_id, moved.transaction_id):
        assert txn in failed.description
    assert not any(m in failed.description for m in (*lossy.accepted, *stranger.accepted, *moved.accepted))


def test_the_worker_hands_a_campaign_over_and_the_cross_check_catches_the_transaction_the_provider_loses(world):
    """The issue's chain: the real worker hands 2,500 numbers over (3 transactions), the cross-check passes; the
    provider loses one transaction a minute later: the check names it; at the time the worker bills the two
    transactions the provider sent and leaves the lost one `unknown`, never billed."""
    at = world.clock.now() + timedelta(days=1)
    add_campaign(world.conn, world.clock, numbers(2500), at=at, zone=world.tz)
    world.sim.state.faults.update({"drop_scheduled_transaction": 1.0})
    try:
        summary = campaign_worker(world.db_url, world.client, world.clock, zone=world.tz.key).run(once=True)
    finally:
        world.sim.state.faults.update({"drop_scheduled_transaction": 0.0})
    assert (summary.requests, summary.scheduled) == (1, 2500)
    assert _check(world).passed

    world.move_to(world.clock.now() + timedelta(milliseconds=DROP_AFTER_MS))
    failed = _check(world)
    (campaign,) = {c for (c,) in world.conn.execute("SELECT DISTINCT provider_campaign_id FROM msg.outbound_message")}
    listed = {t.transaction_id for t in world.client.campaign_read(campaign)}
    (dropped,) = set(world.sim.state.split_of(campaign)) - listed
    assert not failed.passed and _ids(failed, "missing") == {dropped} and dropped in failed.description

    world.move_to(at + timedelta(minutes=1))
    after = campaign_worker(world.db_url, world.client, world.clock, zone=world.tz.key).run(once=True)
    lost = 500 if dropped == world.sim.state.split_of(campaign)[2] else 1000
    assert after.promoted == 2500 - lost
    states = dict(world.conn.execute(
        "SELECT provider_txn_id, string_agg(DISTINCT state::text || '/' || COALESCE(state_reason, '') || '/' || "
        "(cost IS NOT NULL)::text, ',') FROM msg.outbound_message GROUP BY 1").fetchall())
    assert states.pop(dropped) == "unknown/provider_not_sending/false"
    assert set(states.values()) == {"submitted//true"}
    billed = [e.transaction_id for e in world.sim.state.ledger_entries()]
    assert len(billed) == 2500 - lost and dropped not in billed  # the provider billed what it sent, as we did
