"""A campaign's time is the provider's wall clock: DST gaps and repeats refused, a change in between honoured."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from tests.support.cli import write_lines
from tests.support.provider import Account
from tests.support.worker import INTAKE_POLICY, ledger, make_worker, request

from sms_pipeline.core.provider_time import (AmbiguousLocalTime, InvalidLocalTime, NonexistentLocalTime,
                                             wall_clock_instant)
from sms_pipeline.intake import campaigns

LONDON = ZoneInfo("Europe/London")


def test_wall_clock_time_is_read_in_the_zone_and_dst_gaps_and_repeats_are_refused():
    assert wall_clock_instant("2026-12-05 10:00", ZoneInfo("Asia/Kolkata")) == (
        datetime(2026, 12, 5, 10, 0), datetime(2026, 12, 5, 4, 30, tzinfo=UTC))
    # The day the clocks go forward: before the gap GMT, after it BST.
    assert wall_clock_instant("2026-03-29 00:59:59", LONDON)[1] == datetime(2026, 3, 29, 0, 59, 59, tzinfo=UTC)
    assert wall_clock_instant("2026-03-29 10:00", LONDON)[1] == datetime(2026, 3, 29, 9, 0, tzinfo=UTC)
    assert wall_clock_instant("2026-10-25T10:00", LONDON)[1] == datetime(2026, 10, 25, 10, 0, tzinfo=UTC)
    with pytest.raises(NonexistentLocalTime, match="2026-03-29 01:30:00 does not exist in Europe/London"):
        wall_clock_instant("2026-03-29 01:30", LONDON)
    with pytest.raises(AmbiguousLocalTime, match="2026-10-25 01:30:00 happens twice in Europe/London"):
        wall_clock_instant("2026-10-25 01:30", LONDON)
    for malformed in ("2026-02-30 10:00", "tomorrow 10:00", "2026-12-05", "2026-12-05 10:00+01:00"):
        with pytest.raises(InvalidLocalTime):
            wall_clock_instant(malformed, LONDON)


@pytest.mark.parametrize(("at", "why"), [("2026-03-29 01:30", "does not exist in Europe/London"),
                                         ("2026-10-25 01:30", "happens twice in Europe/London")])
def test_create_refuses_a_local_time_the_clocks_skip_or_repeat_and_writes_nothing(run, db, tmp_path, at, why):
    path = write_lines(tmp_path / "promo.jsonl", [json.dumps(request(1))])

    code, out, err = run("campaigns", "create", str(path), "--name", "spring", "--at", at,
                         SMS_PROVIDER_TIMEZONE="Europe/London")

    assert code == 2 and out == ""
    assert err.count("\n") == 1 and why in err and err.startswith("sms-pipeline: error: --at: ")
    assert db.execute("SELECT count(*) FROM msg.campaign").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0] == 0


def _next_spring_forward(after: datetime) -> date:
    """The next last Sunday of March (London's clocks go forward) more than a day after ``after``."""
    for year in (after.year, after.year + 1):
        day = date(year, 3, 31)
        day -= timedelta(days=(day.weekday() + 1) % 7)
        if datetime(day.year, day.month, day.day, tzinfo=UTC) > after + timedelta(days=1):
            return day
    raise AssertionError("unreachable")


def test_a_campaign_created_before_the_clocks_change_is_due_at_the_wall_clock_time_after_it(run, db, tmp_path):
    change = _next_spring_forward(datetime.now(UTC))
    path = write_lines(tmp_path / "promo.jsonl", [json.dumps(request(n)) for n in range(3)])

    code, out, _ = run("campaigns", "create", str(path), "--name", "spring", "--at", f"{change} 10:00",
                       SMS_PROVIDER_TIMEZONE="Europe/London")

    assert code == 0, out
    assert f"(local, {change} 10:00 Europe/London) created: 3 requests: 3 new" in out
    due = datetime(change.year, change.month, change.day, 9, 0, tzinfo=UTC)  # 10:00 BST, not 10:00 GMT
    assert db.execute("SELECT local_time, time_zone, scheduled_for FROM msg.campaign").fetchone() == (
        datetime(change.year, change.month, change.day, 10, 0), "Europe/London", due)
    assert db.execute("SELECT DISTINCT scheduled_for, expires_at - scheduled_for FROM msg.outbound_message"
                      ).fetchall() == [(due, timedelta(hours=24))]


# ----- sent at the wall-clock time asked for, across a past change, on the simulator's clock -------


@pytest.fixture
def account() -> Account:
    return Account("demo", "demo", "demo-key", LONDON)


@pytest.fixture
def start_time() -> datetime:
    return datetime(2026, 3, 28, 12, 0, tzinfo=UTC)  # a Saturday noon, GMT; the clocks go forward that night


def test_a_local_campaign_across_the_change_is_sent_at_the_wall_clock_time(db, db_url, sim, client, clock):
    created = campaigns.create(db, [json.dumps(request(n)).encode() for n in range(2)], name="spring",
                               at="2026-03-29 10:00", tz=LONDON, provider_side=False, clock=clock,
                               policy=INTAKE_POLICY)
    assert created.new and created.intake.created == 2
    worker = make_worker(db_url, client, clock, zone="Europe/London")

    clock.set(datetime(2026, 3, 29, 8, 59, 59, tzinfo=UTC))  # 09:59:59 BST
    worker.run(once=True)
    assert ledger(sim) == []
    clock.set(datetime(2026, 3, 29, 9, 0, tzinfo=UTC))  # 10:00 BST (10:00 GMT would be an hour later)
    worker.run(once=True)

    sent = ledger(sim)
    assert len(sent) == 2
    assert {e.submitted_at.astimezone(LONDON).strftime("%Y-%m-%d %H:%M") for e in sent} == {"2026-03-29 10:00"}
