"""Report-side faults: retried, bounded, or a clear error that keeps nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sms_pipeline.core.provider_time import local_date
from sms_pipeline.core.statuses import normalise_status
from sms_pipeline.provider import DayReportError, ReportError, SendAccepted

NUMBERS = [f"9198765{n:05d}" for n in range(30)]


@pytest.fixture
def patient(make_client):
    """A client with retries enough to get through a 50% fault rate."""
    return make_client(max_retries=10)


@pytest.fixture
def day(client, sim):
    """A day with 30 messages, read two hours later."""
    for start in range(0, 30, 10):
        assert isinstance(client.send(NUMBERS[start:start + 10], f"batch {start}", "SGCSMS"), SendAccepted)
    sim.clock.advance(timedelta(hours=2))
    return local_date(sim.clock.now(), sim.state.timezone)


def test_rate_limited_report_calls_are_retried_until_they_pass(patient, sim, day):
    sim.faults.update({"rate_limit_report": 0.5})

    results = [patient.summary(day, day) for _ in range(6)]

    assert all(r[0].total == 30 for r in results)
    assert sim.faults.fired()["rate_limit_report"] > 0


def test_retries_are_bounded(make_client, sim, day):
    sim.faults.update({"rate_limit_report": 1.0})

    with pytest.raises(ReportError, match="after 3 attempts"):
        make_client(max_retries=2).summary(day, day)
    assert sim.faults.fired()["rate_limit_report"] == 3


def test_http_5xx_on_reports_is_retried(patient, sim, day):
    sim.faults.update({"http_5xx": 0.5})

    rows = list(patient.delivery_reports(day, day, page_limit=7))

    assert len(rows) == 30
    assert sim.faults.fired()["http_5xx"] > 0


def test_stalled_report_call_times_out_and_is_retried(make_client, sim, day):
    sim.faults.update({"stall": 1.0})
    with pytest.raises(ReportError, match="Timeout"):
        make_client(read_timeout=0.2, max_retries=1).summary(day, day)

    sim.faults.update({"stall": 0.5})
    assert make_client(read_timeout=0.2, max_retries=10).summary(day, day)[0].total == 30


def test_dropped_connection_on_day_report_is_retried(patient, sim, day, tmp_path):
    sim.faults.update({"accept_then_drop": 0.5})

    reports = [patient.day_report(day, tmp_path) for _ in range(4)]

    assert all(r.row_count == 30 for r in reports)
    assert sim.faults.fired()["accept_then_drop"] > 0


def test_rate_limited_day_report_is_retried(patient, sim, day, tmp_path):
    sim.faults.update({"rate_limit_report": 0.5})

    assert all(patient.day_report(day, tmp_path).row_count == 30 for _ in range(4))
    assert sim.faults.fired()["rate_limit_report"] > 0


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("corrupt_zip", "corrupt|CRC"),
        ("truncated_zip", "corrupt or truncated"),
        ("error_body_zip", "code 500"),
    ],
)
def test_bad_day_archives_raise_naming_the_date_and_keep_nothing(client, sim, day, tmp_path, fault, message):
    sim.faults.update({fault: 1.0})

    with pytest.raises(DayReportError, match=message) as err:
        client.day_report(day, tmp_path)

    assert day.isoformat() in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_duplicated_rows_are_returned_as_the_file_has_them(client, sim, day, tmp_path):
    clean = [r["msg_id"] for r in client.day_report(day, tmp_path).rows()]
    sim.faults.update({"duplicate_rows": 1.0})

    doubled = [r["msg_id"] for r in client.day_report(day, tmp_path).rows()]

    assert doubled == [m for m in clean for _ in range(2)]


def test_rows_filed_in_the_neighbouring_day(client, sim, day, tmp_path):
    """Morning rows (10:00 local) drift into the previous day's file."""
    sim.faults.update({"neighbour_day": 1.0})

    own = list(client.day_report(day, tmp_path).rows())
    previous = list(client.day_report(day - timedelta(days=1), tmp_path).rows())

    assert own == []
    assert [r["msg_id"] for r in previous] == [e.msg_id for e in sim.state.ledger_entries()]
    assert {r["submit_time"][:10] for r in previous} == {day.isoformat()}


def test_unmapped_status_words_are_returned_raw(client, sim, day, tmp_path):
    sim.clock.advance(timedelta(days=3))
    sim.faults.update({"unmapped_status": 1.0})

    words = {r["status"] for r in client.day_report(day, tmp_path).rows()}
    dlr_words = {r.status for r in client.delivery_reports(day, day)}

    odd = {w for w in words if w.strip() not in ("SUBMITTED", "ACCEPTD", "ENROUTE")}
    assert odd and all(w in ("BLACKLST", "NCPR") or w != w.strip() or w.islower() for w in odd)
    assert words == dlr_words
    assert {normalise_status(w).outcome for w in words} >= {"unmapped"}


def test_summary_disagrees_with_the_ledger_by_the_configured_offset(client, sim, day):
    sim.faults.update({"summary_units_offset": 5})

    [row] = client.summary(day, day)

    assert row.units == sim.state.billed_units() + 5
