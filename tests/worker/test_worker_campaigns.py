"""Provider-side campaigns (docs/design.md#provider-side-campaigns): handed over at the worker's next claim
with their scheduleTime, mapped to the provider's split transactions, `scheduled` and unbilled until their
time, then `submitted` at it and billed at the rate in force then."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from uuid import uuid4

import psycopg
import pytest

from sms_pipeline import rates, settings
from sms_pipeline.provider.results import CampaignTransaction
from sms_pipeline.core.provider_time import localise
from sms_pipeline.errors import SettingsError
from sms_pipeline.send.batching import plan_campaign_requests
from sms_pipeline.send.campaigns import CampaignUnmapped, map_transactions
from sms_pipeline.send.claim import ClaimedMessage
from tests.support.campaigns import BODY, TZ, add_campaign, campaign_worker
from tests.support.numbers import numbers
from tests.support.worker import ledger, states



@pytest.fixture
def reproducible() -> bool:
    return True  # starts 2025-06-10 10:00 in Kolkata


def rows(conn: psycopg.Connection) -> list[dict]:
    cur = conn.execute(
        """SELECT recipient, state::text, state_reason, provider_txn_id, provider_campaign_id, claimed_at,
                  submitted_at, billable_units, cost
             FROM msg.outbound_message ORDER BY id""")
    names = [c.name for c in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def test_the_campaign_request_size_is_10000_by_default_and_bounded():
    assert settings.load({}).campaign_request_size == 10_000
    assert settings.load({"SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE": "100000"}).campaign_request_size == 100_000
    for refused in ("0", "100001", "5.0"):
        with pytest.raises(SettingsError, match="SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE"):
            settings.load({"SMS_PIPELINE_CAMPAIGN_REQUEST_SIZE": refused})


def _transaction(uuid: str | None, total: int) -> CampaignTransaction:
    return CampaignTransaction(uuid, "scheduled", total, None, None, None)


def test_the_kth_thousand_accepted_recipients_are_the_kth_transactions_and_nothing_else_is_guessed():
    split = [_transaction("a", 1000), _transaction("b", 1000), _transaction("c", 500)]

    assert map_transactions(2500, split) == ["a"] * 1000 + ["b"] * 1000 + ["c"] * 500
    assert map_transactions(1000, split[:1]) == ["a"] * 1000
    for wrong in (split[:2],  # a transaction missing (or dropped)
                  [*split, _transaction("d", 1)],  # one too many
                  [split[0], _transaction(None, 1000), split[2]],  # no id
                  [split[0], split[0], split[2]],  # one id twice
                  [split[0], _transaction("b", 999), _transaction("c", 501)]):  # not split by 1,000
        with pytest.raises(CampaignUnmapped):
            map_transactions(2500, wrong)


def test_a_campaign_request_never_mixes_two_campaigns_or_times_nor_repeats_a_number():
    def row(n: int, recipient: str, campaign: int, at: datetime) -> ClaimedMessage:
        return ClaimedMessage(
            id=n, created_at=at, attempt_key=uuid4(), tenant_id="t", channel="sms",
            message_class="promotional", recipient=recipient, sender_id="SGCSMS", body=BODY, encoding="GSM7",
            segments=1, template_id=None, dlt_entity_id=None, dlt_template_id=None, scheduled_for=at,
            expires_at=None, claimed_at=at, attempt_count=1, campaign_id=campaign)

    at = datetime(2026, 3, 1, 4, 30, tzinfo=TZ)
    rows_ = [row(1, "a", 1, at), row(2, "b", 2, at), row(3, "a", 1, at), row(4, "c", 1, at),
             row(5, "d", 1, at + timedelta(hours=1)), row(6, "e", 1, at)]

    planned = plan_campaign_requests(rows_, 2)

    assert [[m.id for m in batch.messages] for batch in planned] == [[1, 4], [6], [3], [2], [5]]


def test_a_2500_number_campaign_is_one_request_of_three_transactions_scheduled_then_billed_at_its_time(
        db, db_url, sim, client, clock):
    submitted_on = clock.now()
    at = localise(datetime(2025, 6, 11, 10, 0), TZ)  # tomorrow 10:00 in the provider's zone
    # The price changes between the hand-over and the campaign's time: the later one is billed.
    card = ["tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to",
            "tenant-a,sms,promotional,0.0079,INR,2020-01-01,2025-06-11",
            "tenant-a,sms,promotional,0.0125,INR,2025-06-11,"]
    parsed, bad = rates.parse_rate_card(card)
    assert not bad
    rates.load_rates(db, parsed)
    recipients = numbers(2500)
    campaign_id = add_campaign(db, clock, recipients, at=at)

    summary = campaign_worker(db_url, client, clock).run(once=True)

    # Sent at the first claim, not at its time: one request, one provider campaign split in three.
    assert (summary.claimed, summary.requests, summary.scheduled, summary.submitted) == (2500, 1, 2500, 0)
    before = rows(db)
    (provider_campaign,) = {r["provider_campaign_id"] for r in before}
    transactions = client.campaign_read(provider_campaign)
    assert [t.total for t in transactions] == [1000, 1000, 500]
    assert {t.scheduled_for for t in transactions} == {at}
    uuids = [t.transaction_id for t in transactions]
    assert [r["provider_txn_id"] for r in before] == [uuids[0]] * 1000 + [uuids[1]] * 1000 + [uuids[2]] * 500
    assert {(r["state"], r["claimed_at"], r["submitted_at"], r["billable_units"], r["cost"]) for r in before} == {
        ("scheduled", submitted_on, None, None, None)}
    assert ledger(sim) == []  # the provider billed nothing yet

    clock.set(at - timedelta(seconds=1))
    assert campaign_worker(db_url, client, clock).run(once=True).promoted == 0
    assert states(db) == {"scheduled": 2500} and ledger(sim) == []

    clock.set(at + timedelta(minutes=1))
    summary = campaign_worker(db_url, client, clock).run(once=True)

    assert (summary.promoted, summary.requests, summary.unpriced) == (2500, 0, 0)
    after = rows(db)
    assert {(r["state"], r["submitted_at"], r["billable_units"], r["cost"]) for r in after} == {
        ("submitted", at, 1, Decimal("0.0125"))}
    assert [r["provider_txn_id"] for r in after] == [r["provider_txn_id"] for r in before]
    # What the provider billed, transaction by transaction, is what each row says it was sent in.
    billed = ledger(sim)
    assert sum(e.units for e in billed) == 2500 and {e.submitted_at for e in billed} == {at}
    for transaction in uuids:
        assert {e.mobile for e in sim.state.ledger_entries(transaction_id=transaction)} == {
            r["recipient"] for r in after if r["provider_txn_id"] == transaction}
    assert db.execute("SELECT count(*) FROM msg.outbound_message WHERE campaign_id = %s",
                      (campaign_id,)).fetchone()[0] == 2500


def test_refused_numbers_are_rejected_and_left_out_of_the_split(db, db_url, sim, client, clock):
    at = clock.now() + timedelta(hours=3)
    foreign = ["16502530000", "16502530001"]  # valid numbers the simulator refuses (it takes Indian mobiles only)
    recipients = numbers(999) + foreign[:1] + numbers(2, start=999) + foreign[1:]  # refused ones around a boundary
    add_campaign(db, clock, recipients, at=at)

    summary = campaign_worker(db_url, client, clock).run(once=True)

    assert (summary.requests, summary.scheduled, summary.rejected) == (1, 1001, 2)
    found = rows(db)
    refused = [r for r in found if r["recipient"] in foreign]
    assert {(r["state"], r["state_reason"], r["cost"]) for r in refused} == {("rejected", "invalid_mobile", None)}
    scheduled = [r for r in found if r["state"] == "scheduled"]
    first, second = (t.transaction_id for t in client.campaign_read(scheduled[0]["provider_campaign_id"]))
    # The split counts the accepted numbers only: the 1,001st accepted one opens the second transaction.
    assert [r["provider_txn_id"] for r in scheduled] == [first] * 1000 + [second]


def test_an_answer_that_does_not_show_the_split_leaves_its_rows_unknown_never_resent(
        db, db_url, sim, client, clock):
    at = clock.now() + timedelta(hours=3)
    add_campaign(db, clock, numbers(1500), at=at)
    sim.faults.update({"answer_omits_recipient": 0.01})  # a few numbers in neither list of the answer

    summary = campaign_worker(db_url, client, clock).run(once=True)

    found = rows(db)
    omitted = [r for r in found if r["state_reason"] == "not_in_answer"]
    assert omitted and summary.unknown == 1500 and summary.scheduled == 0
    # Which transaction holds which number is not known: nothing guessed, the campaignId kept as evidence.
    assert {(r["state"], r["provider_txn_id"]) for r in found} == {("unknown", None)}
    assert {r["state_reason"] for r in found} == {"not_in_answer", "campaign_unmapped"}
    assert len({r["provider_campaign_id"] for r in found} - {None}) == 1
    assert campaign_worker(db_url, client, clock).run(once=True).requests == 0


def test_a_failed_campaign_read_leaves_the_rows_unknown(db, db_url, sim, make_client, clock):
    at = clock.now() + timedelta(hours=3)
    add_campaign(db, clock, numbers(20), at=at)
    sim.faults.update({"rate_limit_report": 1.0})  # campaign/read refused, the send itself accepted

    summary = campaign_worker(db_url, make_client(max_retries=0), clock).run(once=True)

    assert (summary.requests, summary.unknown, summary.scheduled) == (1, 20, 0)
    found = rows(db)
    assert {(r["state"], r["state_reason"], r["provider_txn_id"]) for r in found} == {
        ("unknown", "campaign_unmapped", None)}
    assert None not in {r["provider_campaign_id"] for r in found}


def test_a_local_campaigns_future_rows_wait_until_due(db, db_url, sim, client, clock):
    at = clock.now() + timedelta(hours=3)
    add_campaign(db, clock, numbers(5), at=at, provider_side=False)

    assert campaign_worker(db_url, client, clock).run(once=True).claimed == 0
    assert states(db) == {"pending": 5} and ledger(sim) == []

    clock.set(at)
    summary = campaign_worker(db_url, client, clock).run(once=True)

    assert (summary.requests, summary.submitted, summary.scheduled) == (1, 5, 0)
    assert {(r["state"], r["provider_campaign_id"], r["submitted_at"]) for r in rows(db)} == {("submitted", None, at)}


def test_a_campaign_whose_rows_would_expire_before_its_time_is_not_handed_over(db, db_url, sim, client, clock):
    at = clock.now() + timedelta(hours=3)
    add_campaign(db, clock, numbers(3), at=at, expires_at=at - timedelta(minutes=1))

    assert campaign_worker(db_url, client, clock).run(once=True).claimed == 0
    assert states(db) == {"pending": 3} and ledger(sim) == []


def test_reconciliation_finds_a_campaign_sent_at_its_time_submitted_and_matched(world):
    at = world.at(world.day, 14)
    add_campaign(world.conn, world.clock, numbers(30), at=at, message_class="transactional", zone=world.tz)
    summary = campaign_worker(world.db_url, world.client, world.clock, zone=world.tz.key).run(once=True)
    assert summary.scheduled == 30

    # No worker runs after the time: reconciliation itself promotes the rows before it correlates the day.
    download_at = world.at(world.day + timedelta(days=1), 3)
    world.move_to(download_at)
    world.run_daily(world.day)

    found = world.conn.execute(
        """SELECT recipient, state::text, provider_message_id, correlation_result::text, submitted_at, cost
             FROM msg.outbound_message ORDER BY id""").fetchall()
    for recipient, state, msg_id, result, submitted_at, cost in found:
        assert (msg_id, result, submitted_at, cost) == (world.msg_id_of(recipient), "matched", at, Decimal("0.0079"))
        assert state == world.expected_state(msg_id, download_at)
