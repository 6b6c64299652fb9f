"""docs/receipt-cases.md#case-16: provider-local times across a DST change (the provider in Europe/London, and
in four more zones for the other reading of a submit time)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from sms_pipeline.db import queries
from tests.support.numbers import numbers
from tests.support.reconcile import world_for

FALL_BACK = date(2026, 10, 25)  # 01:00-02:00 happens twice in Europe/London


def test_sends_inside_the_repeated_hour_are_matched_and_keep_their_instants(db_url, tmp_path):
    for world in world_for(db_url, tmp_path, tz_name="Europe/London", day=FALL_BACK, start=time(0, 10)):
        first_reading = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 01:30 BST
        second_reading = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 01:30 GMT, same wall clock
        world.move_to(first_reading)
        batch = world.send(numbers(3))
        otp_first = world.otp("919700000020")
        world.move_to(second_reading)
        otp_second = world.otp("919700000021")
        (unknown_second,) = world.send_ambiguous(["919700000022"], "accept_then_drop")
        world.move_to(datetime(2026, 10, 26, 3, 0, tzinfo=UTC))
        world.run_daily(FALL_BACK)

        for recipient, key in zip(numbers(3), batch):
            row = world.row(key)
            msg_id = world.msg_id_of(recipient)
            assert row["provider_message_id"] == msg_id
            assert row["state"] == world.expected_state(msg_id, world.clock.now())
            submit_times = {r["provider_submit_at"] for r in world.receipts(msg_id)}
            assert submit_times == {first_reading.replace(microsecond=0)}
        # OTP: no transaction id, reconstruction by time. The day file's "01:30:00" is read as the first
        # occurrence; the row sent in the second one is still found through the other reading.
        for recipient, key in (("919700000020", otp_first), ("919700000021", otp_second)):
            row = world.row(key)
            assert (row["correlation_result"], row["provider_message_id"]) == ("matched", world.msg_id_of(recipient))
        # An `unknown` row confirmed by such a receipt is billed at the reading nearer its own attempt.
        row = world.row(unknown_second)
        # (a final failure or expiry names itself instead: receipt_failed / receipt_expired)
        confirmed = "submission_confirmed" if row["state"] in ("submitted", "delivered") else f"receipt_{row['state']}"
        assert (row["correlation_result"], row["state_reason"]) == ("matched", confirmed)
        assert row["submitted_at"] == second_reading


# ----- the other reading of a provider-local submit time ------------------------

_ZONES = ["Europe/London", "America/New_York", "Australia/Adelaide", "Australia/Lord_Howe", "Asia/Kolkata"]
_HOUR = timedelta(hours=1)


def _wall(instant: datetime, tz: ZoneInfo) -> datetime:
    return instant.astimezone(tz).replace(tzinfo=None)


def _other_reading(instant: datetime, tz: ZoneInfo) -> datetime | None:
    """The instant an hour away that reads the same on the provider's clock, by brute force."""
    for other in (instant - _HOUR, instant + _HOUR):
        if _wall(other, tz) == _wall(instant, tz):
            return other
    return None


def _clock_changes(tz: ZoneInfo, year: int) -> list[datetime]:
    """The instants (UTC, to the quarter hour) at which ``tz`` changes its offset in ``year``."""
    probe, end, changes = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), []
    step = timedelta(minutes=15)
    while probe < end:
        if probe.astimezone(tz).utcoffset() != (probe + step).astimezone(tz).utcoffset():
            changes.append(probe + step)
        probe += step
    return changes


def _fall_backs(tz: ZoneInfo, year: int) -> list[datetime]:
    """The clock changes of ``year`` that set the clocks back (a local time repeats after them)."""
    return [c for c in _clock_changes(tz, year) if _wall(c, tz) < _wall(c - _HOUR, tz) + _HOUR]


def _submit_times(tz: ZoneInfo) -> list[datetime]:
    """Every 7 minutes from three hours before each clock change of 2026 to three hours after, and on each
    edge of its repeated hour, and one ordinary morning a month (so the events span the year, not only the changes)."""
    times = [datetime(2026, month, 10, 4, 0, tzinfo=UTC) for month in range(1, 13)]
    for change in _clock_changes(tz, 2026):
        times += [change + k * timedelta(minutes=7) for k in range(-26, 27)]
        times += [change + d for d in (-_HOUR - timedelta(seconds=1), -_HOUR, -timedelta(seconds=1),
                                       _HOUR - timedelta(seconds=1), _HOUR)]
    return sorted(set(times))


@pytest.mark.parametrize("zone", _ZONES)
def test_every_submit_time_gets_its_other_reading_when_the_provider_clock_repeats_it(db, zone):
    # The statement checks only the times near a fall-back it finds on the events' span; the answer must be
    # the one a check of every time gives (none in a zone without DST, none for a half-hour fall-back).
    tz = ZoneInfo(zone)
    times = _submit_times(tz)
    # A stored event still waiting, in the last repeated hour of the year before (outside the new events'
    # span), and a getDlr event (an exact time) in one of this year's; in Kolkata, times that would be.
    last_year, this_year = _fall_backs(tz, 2025), _fall_backs(tz, 2026)
    waiting_at = (last_year[-1] if last_year else datetime(2025, 10, 26, 1, 0, tzinfo=UTC)) + timedelta(minutes=20)
    exact_at = (this_year[-1] if this_year else datetime(2026, 10, 25, 1, 0, tzinfo=UTC)) + timedelta(minutes=20)
    db.execute("SELECT dlr.ensure_partitions(%s, 24)", (datetime(2025, 1, 1, tzinfo=UTC),))
    db.execute("""INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome,
                                                     provider_submit_at, submit_month, source, first_seen_at)
                  VALUES ('waiting-1', 'DELIVRD', 'DELIVRD', 'delivered', %(at)s, dlr.submit_month(%(at)s),
                          'day_report', %(at)s)""", {"at": waiting_at})
    db.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_source_rows "
               "(msg_id text, sender_name text, message_fingerprint bytea)")
    db.execute("CREATE UNLOGGED TABLE reconcile_work.reconcile_new_events (msg_id text, txn_id text, "
               "recipient text, sender_name text, provider_submit_at timestamptz, source text, "
               "message_fingerprint bytea)")
    with db.cursor() as cur:
        cur.executemany("INSERT INTO reconcile_work.reconcile_new_events VALUES (%s, NULL, NULL, NULL, %s, %s, NULL)",
                        [(f"id-{n}", t, "day_report") for n, t in enumerate(times)]
                        + [("exact-1", exact_at, "getdlr")])

    queries.run(db, "reconcile_correlate_uncorrelated", time_zone=zone, every_waiting=True)

    got = dict(db.execute("SELECT msg_id, alt_submit_at FROM reconcile_work.reconcile_uncorrelated").fetchall())
    expected = {f"id-{n}": _other_reading(t, tz) for n, t in enumerate(times)}
    expected |= {"waiting-1": _other_reading(waiting_at, tz), "exact-1": None}  # a millisecond epoch is exact
    assert got == expected
    repeated = sum(v is not None for v in expected.values())
    if zone in ("Asia/Kolkata", "Australia/Lord_Howe"):
        assert repeated == 0
    else:
        assert repeated > 10 and got["waiting-1"] == waiting_at - _HOUR
        assert _other_reading(exact_at, tz) is not None  # so that exact-1's None is the exact time's doing
