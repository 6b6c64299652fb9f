"""Report endpoints through the client: day zip, getDlr pages, by transaction, summary."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from pydantic import SecretStr
import pytest

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.core.provider_time import format_local, local_date
from sms_pipeline.core.statuses import normalise_status
from sms_pipeline.provider import DayReportError, ProviderClient, ReportError, SendAccepted
from sms_pipeline.simulator import run_simulator

NUMBERS = [f"9198765{n:05d}" for n in range(40)]


def _send_batches(client, numbers, size=10, text="Order {n} shipped, track it online."):
    outcomes = [client.send(numbers[i:i + size], text.format(n=i), "SGCSMS") for i in range(0, len(numbers), size)]
    assert all(isinstance(o, SendAccepted) for o in outcomes)
    return outcomes


def _today(sim):
    return local_date(sim.clock.now(), sim.state.timezone)


def test_day_report_matches_the_ledger(client, sim, tmp_path):
    _send_batches(client, NUMBERS)
    client.otp_generate(NUMBERS[0], "Code $otp$", "SGCSMS", "123456")
    sim.clock.advance(timedelta(hours=2))

    report = client.day_report(_today(sim), tmp_path)

    ledger = list(sim.state.ledger_entries())
    rows = list(report.rows())
    assert report.row_count == len(rows) == len(ledger) == 41
    assert [r["msg_id"] for r in rows] == [e.msg_id for e in ledger]
    assert [r["transaction_id"] for r in rows] == [e.transaction_id for e in ledger]
    assert [r["mobile"] for r in rows] == [e.mobile for e in ledger]
    assert [int(r["units"]) for r in rows] == [e.units for e in ledger]
    assert {r["submit_time"] for r in rows} == {format_local(sim.clock.now() - timedelta(hours=2), sim.state.timezone)}
    assert rows[-1]["transaction_id"] == "0" and rows[-1]["message"] == "Code 123456"
    assert report.path.exists() and report.path.parent == tmp_path
    assert list(tmp_path.iterdir()) == [report.path]
    assert report.ignored_columns == () and report.rows_with_extra_fields == 0


def test_day_report_shows_latest_status_at_download_time(client, sim, tmp_path):
    _send_batches(client, NUMBERS)
    day = _today(sim)

    early = {r["msg_id"]: r for r in client.day_report(day, tmp_path).rows()}
    sim.clock.advance(timedelta(hours=80))
    late = {r["msg_id"]: r for r in client.day_report(day, tmp_path).rows()}

    assert all(r["status"] == "SUBMITTED" and r["delivery_time"] == "" for r in early.values())
    finals = [r for r in late.values() if normalise_status(r["status"]).is_final]
    assert len(finals) >= 35  # ~97% get a final receipt within 72 h
    assert all(r["delivery_time"] for r in finals)
    assert all(r["delivery_time"] == "" for r in late.values() if not normalise_status(r["status"]).is_final)


def test_receipts_cross_day_boundaries(make_client, account, tmp_path):
    """Messages sent just before local midnight stay in their submit day's file."""
    before_midnight = datetime(2025, 6, 10, 18, 29, 0, tzinfo=UTC)  # 23:59 in Kolkata
    with run_simulator(clock=VirtualClock(before_midnight), seed=3, password=account.password) as sim:
        with ProviderClient(sim.base_url, account.userid, SecretStr(account.password), None, account.timezone) as c:
            _send_batches(c, NUMBERS)
            sim.clock.advance(timedelta(days=4))
            day = local_date(before_midnight, account.timezone)
            rows = list(c.day_report(day, tmp_path).rows())
            next_day = list(c.day_report(day + timedelta(days=1), tmp_path).rows())
    assert len(rows) == 40 and next_day == []
    assert any(r["delivery_time"][:10] > day.isoformat() for r in rows)


def test_empty_day_is_a_header_only_zip(client, sim, tmp_path):
    report = client.day_report(_today(sim) - timedelta(days=3), tmp_path)

    assert report.row_count == 0
    assert list(report.rows()) == []


def test_future_and_too_old_dates_are_errors_naming_the_date(client, sim, tmp_path):
    future = _today(sim) + timedelta(days=1)
    too_old = _today(sim) - timedelta(days=91)

    with pytest.raises(DayReportError, match=f"{future.isoformat()}.*400"):
        client.day_report(future, tmp_path)
    with pytest.raises(DayReportError, match=f"{too_old.isoformat()}.*404"):
        client.day_report(too_old, tmp_path)
    assert list(tmp_path.iterdir()) == []
    client.day_report(_today(sim) - timedelta(days=90), tmp_path)  # the oldest kept day


def test_delivery_reports_pages_through_every_row(client, sim):
    outcomes = _send_batches(client, NUMBERS[:23], size=5)
    client.otp_generate(NUMBERS[30], "Code $otp$", "SGCSMS", "999999")
    sim.clock.advance(timedelta(hours=1))
    day = _today(sim)

    rows = list(client.delivery_reports(day, day, page_limit=4))

    ledger = list(sim.state.ledger_entries())
    assert [r.msg_id for r in rows] == [e.msg_id for e in ledger]
    assert rows[-1].transaction_id is None  # OTP: "0" on the wire
    assert {r.transaction_id for r in rows[:-1]} == {o.transaction_id for o in outcomes}
    assert all(r.submit_time == sim.clock.now() - timedelta(hours=1) for r in rows)
    for row in rows:
        status = normalise_status(row.status)
        assert (row.delivery_time is not None) == status.is_final


def test_transaction_report_parses_nested_status_and_local_times(client, sim):
    outcome = _send_batches(client, NUMBERS[:10])[0]
    sim.clock.advance(timedelta(hours=6))
    day = _today(sim)

    rows = client.transaction_report(outcome.transaction_id, day, day)

    assert [r.msg_id for r in rows] == [e.msg_id for e in sim.state.ledger_entries()]
    assert all(r.submit_time == sim.clock.now() - timedelta(hours=6) for r in rows)
    assert {normalise_status(r.status).word for r in rows} <= {"DELIVRD", "UNDELIV", "REJECTD", "EXPIRED",
                                                              "ACCEPTD", "ENROUTE", "SUBMITTED"}
    delivered = [r for r in rows if r.status == "DELIVERED"]
    assert delivered and all(r.cause == "Success" and r.delivery_time > r.submit_time for r in delivered)
    assert client.transaction_report("1234567890123456789", day, day) == []


def test_transaction_report_times_in_a_dst_zone(account, tmp_path):
    """Human-readable local times convert with the configured zone across a DST change."""
    tz = ZoneInfo("America/New_York")
    before_change = datetime(2025, 11, 2, 4, 0, tzinfo=UTC)  # 00:00 EDT; clocks go back at 06:00 UTC
    with run_simulator(clock=VirtualClock(before_change), seed=5, timezone=tz, password=account.password) as sim:
        with ProviderClient(sim.base_url, account.userid, SecretStr(account.password), None, tz) as c:
            early = c.send([NUMBERS[0]], "before", "SGCSMS")
            sim.clock.advance(timedelta(hours=4))  # 03:00 EST, after the change
            late = c.send([NUMBERS[1]], "after", "SGCSMS")
            day = local_date(before_change, tz)
            [early_row] = c.transaction_report(early.transaction_id, day, day)
            [late_row] = c.transaction_report(late.transaction_id, day, day)
    assert early_row.submit_time == before_change
    assert late_row.submit_time == before_change + timedelta(hours=4)


def test_summary_units_tie_out_with_the_ledger(client, sim):
    _send_batches(client, NUMBERS[:20], size=10)
    client.send(NUMBERS[20:25], "x" * 200, "OTHERS")  # two segments each
    sim.clock.advance(timedelta(hours=1))
    day = _today(sim)

    by_date = client.summary(day, day, groupby="date")
    by_sender = client.summary(day, day, groupby="senderid")

    assert [(r.day, r.sender_id, r.total, r.units) for r in by_date] == [(day, None, 25, 30)]
    assert sum(r.units for r in by_date) == sim.state.billed_units()
    assert sorted((r.sender_id, r.units) for r in by_sender) == [("OTHERS", 10), ("SGCSMS", 20)]
    assert all(r.delivered + r.failed + r.pending == r.total for r in by_sender)


def test_report_call_with_wrong_credentials_is_an_error_without_the_secret(make_client, sim, tmp_path):
    bad = make_client(password=SecretStr("wrong-secret-123"))

    with pytest.raises(ReportError) as err:
        bad.summary(_today(sim), _today(sim))

    assert "216" in str(err.value) and "wrong-secret-123" not in str(err.value)
