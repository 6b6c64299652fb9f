"""Late receipts, and `unknown` rows resolved by evidence or by proof of non-submission."""

from __future__ import annotations

from datetime import timedelta

from tests.support.numbers import numbers
from tests.support.reconcile import STATE_OF_WORD
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.orchestration.schedules import daily_days
from sms_pipeline.simulator import generation


def _daily_tick(world, tick_day):
    """What the daily schedule runs at 02:30 provider-local on ``tick_day``: yesterday + lookback."""
    world.move_to(world.at(tick_day, 2, 30))
    first, last = daily_days(world.clock.now(), world.tz, world.settings.partition_start,
                             world.settings.lookback_days)
    world.run_daily(first, last)


def test_a_final_receipt_arriving_two_days_later_lands_with_the_lookback_run(world):
    tz = world.tz

    def final_day(recipient):
        line = world.timeline(world.msg_id_of(recipient))
        if line.final == generation.NEVER_FINAL:
            return None
        return local_date(world.submitted_at(world.msg_id_of(recipient)) + timedelta(milliseconds=line.final_ms), tz)

    def lands_after_the_second_tick(recipient):
        final_at = (world.submitted_at(world.msg_id_of(recipient))
                    + timedelta(milliseconds=world.timeline(world.msg_id_of(recipient)).final_ms))
        return (final_day(recipient) == world.day + timedelta(days=2)
                and world.at(world.day + timedelta(days=2), 2, 30) < final_at)

    # The simulator's timelines follow the msgIds, which follow the (date-dependent) day: on some days 300
    # sends hold no such receipt, so send more batches until one does.
    keys, late = {}, None
    for batch in range(8):
        recipients = numbers(300, start=300 * batch)
        keys.update(zip(recipients, world.send(recipients)))
        late = next((r for r in recipients if lands_after_the_second_tick(r)), None)
        if late is not None:
            break
    assert late is not None, "no receipt finalising on D + 2 after its tick in 2,400 sends"
    final_word = generation.STATUSES[world.timeline(world.msg_id_of(late)).final].word

    _daily_tick(world, world.day + timedelta(days=1))
    assert world.row(keys[late])["state"] == "submitted"
    _daily_tick(world, world.day + timedelta(days=2))
    assert world.row(keys[late])["state"] == "submitted"  # not final yet at this tick
    _daily_tick(world, world.day + timedelta(days=3))  # day D is in the lookback of this run
    row = world.row(keys[late])
    assert (row["state"], row["final_status"]) == (STATE_OF_WORD[final_word], final_word)


def test_an_unknown_row_from_accept_then_drop_ends_submitted_then_final(world):
    keys = world.send_ambiguous(numbers(2), "accept_then_drop")
    _daily_tick(world, world.day + timedelta(days=1))
    for recipient, key in zip(numbers(2), keys):
        row = world.row(key)
        msg_id = world.msg_id_of(recipient)
        assert row["state"] in ("submitted", "delivered", "failed", "expired")
        assert row["state"] == world.expected_state(msg_id, world.clock.now())
        # our classification: confirmed by a receipt, then (if any) the final receipt's own
        expected_reason = {"failed": "receipt_failed", "expired": "receipt_expired"}.get(row["state"],
                                                                                         "submission_confirmed")
        assert row["state_reason"] == expected_reason and row["submitted_at"] is not None


def test_an_unknown_row_from_a_5xx_is_proved_never_submitted_after_the_grace(world):
    (key,) = world.send_ambiguous(numbers(1), "http_5xx")
    # Other traffic of the day, some of it with receipts between the two ticks, so the second
    # download changes the day's file (an unchanged download leaves the checkpoint as it was).
    world.send(numbers(300, start=50))
    _daily_tick(world, world.day + timedelta(days=1))  # the report is in, but the grace has not passed
    assert world.row(key)["state"] == "unknown"
    assert world.row(key)["correlation_result"] == "not_found"
    _daily_tick(world, world.day + timedelta(days=2))  # downloaded after close + 24 h: absence is proof
    fetched_at = world.conn.execute(
        "SELECT fetched_at FROM dlr.report_checkpoints WHERE report_kind = 'day' AND report_date = %s", (world.day,)
    ).fetchone()[0]
    assert fetched_at == world.clock.now()
    row = world.row(key)
    # proved never submitted, then re-sent as a new attempt in the same transaction (a transactional row)
    assert (row["state"], row["state_reason"]) == ("superseded", "resent_after_proof")
    assert (row["submitted_at"], row["billable_units"], row["cost"]) == (None, None, None)
    assert world.ledger() and numbers(1)[0] not in [e.mobile for e in world.ledger()]


def test_a_quiet_days_unknown_row_is_proved_by_a_later_download_that_found_the_file_unchanged(world):
    (key,) = world.send_ambiguous(numbers(1), "http_5xx")  # the day's only traffic: its file never changes
    _daily_tick(world, world.day + timedelta(days=1))  # loaded, but before close + grace
    assert world.row(key)["state"] == "unknown"
    _daily_tick(world, world.day + timedelta(days=2))  # same content, downloaded after close + grace
    checkpoint = world.conn.execute(
        """SELECT c.fetched_at, f.confirmed_at FROM dlr.report_checkpoints c
             JOIN dlr.report_confirmations f USING (report_kind, report_date)
            WHERE c.report_kind = 'day' AND c.report_date = %s""", (world.day,)).fetchone()
    assert checkpoint is not None and checkpoint[0] < checkpoint[1] == world.clock.now()
    row = world.row(key)
    assert (row["state"], row["state_reason"]) == ("superseded", "resent_after_proof")  # proved, then re-sent
