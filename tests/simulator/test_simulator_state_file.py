"""The simulator's state file: saved, loaded, and the same reports and new ids after a restart."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from sms_pipeline.cli import main
from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.simulator import SimulatorState, run_simulator, statefile

AUTH = {"userid": "demo", "password": "demo"}
NUMBERS = [f"9198765{n:05d}" for n in range(40)]
ROW_FAULTS = {"duplicate_rows": 0.2, "unmapped_status": 0.2, "neighbour_day": 0.1, "summary_units_offset": 3}
DAYS = ("2025-06-09", "2025-06-10", "2025-06-11", "2025-06-12")
_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("SMS_PIPELINE_", "SMS_PROVIDER_"))}


def _first_half(http: httpx.Client, clock: VirtualClock) -> list[dict]:
    """Sends over two days: batches, a repeated identical send, OTPs, a campaign scheduled for later.

    Answers 0-11 the sends, 12 an OTP still valid at the end, 13 the campaign.
    """
    answers = []
    for i in range(0, 40, 10):
        answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": f"batch {i}",
                                                "mobile": ",".join(NUMBERS[i:i + 10])}).json())
        answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": "same",
                                                "mobile": NUMBERS[i]}).json())
        answers.append(http.post("/otp", data={**AUTH, "sendMethod": "generate", "mobile": NUMBERS[i],
                                               "senderid": "SGCSMS", "msg": "Code $otp$"}).json())
        clock.advance(timedelta(hours=7))
    answers.append(http.post("/otp", data={**AUTH, "sendMethod": "generate", "mobile": NUMBERS[39],
                                           "senderid": "SGCSMS", "msg": "Code $otp$", "otp": "424242"}).json())
    answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": "later", "mobile": NUMBERS[5],
                                            "scheduleTime": "2025-06-12 09:00"}).json())
    return answers


def _second_half(http: httpx.Client, clock: VirtualClock) -> list[dict]:
    """At once: the OTP issued last verified; then the same requests again (identical fingerprints: new ids)."""
    answers = [http.post("/otp", data={**AUTH, "sendMethod": "verify", "mobile": NUMBERS[39], "otp": "424242"}).json()]
    for i in (0, 10):
        answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": "same",
                                                "mobile": NUMBERS[i]}).json())
        answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": f"batch {i}",
                                                "mobile": ",".join(NUMBERS[i:i + 10])}).json())
    clock.advance(timedelta(days=1))
    answers.append(http.get("/schedule/read", params=AUTH).json())
    return answers


def _day_rows(http: httpx.Client, day: str) -> list[list[str]]:
    response = http.get("/report/day", params={**AUTH, "date": day})
    assert response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        (member,) = archive.namelist()
        return list(csv.reader(io.TextIOWrapper(archive.open(member), encoding="utf-8", newline="")))


def _reports(http: httpx.Client, transaction_id: str, campaign_id: str) -> dict[str, object]:
    return {
        "days": {day: _day_rows(http, day) for day in DAYS},
        "summary": http.post("/report/summary", data={**AUTH, "fromdate": DAYS[0], "todate": DAYS[-1],
                                                      "groupby": "senderid"}).json(),
        "dlr": http.post("/report/status", data={**AUTH, "method": "getDlr", "fromdate": DAYS[0],
                                                 "todate": DAYS[-1], "pageLimit": "1000"}).json(),
        "transaction": http.post("/report/status", data={**AUTH, "uuid": transaction_id, "fromdate": DAYS[0],
                                                         "todate": DAYS[-1]}).json(),
        "campaign": http.get("/campaign/read", params={**AUTH, "campaignid": campaign_id}).json(),
    }


def _ledger(sim) -> list[tuple]:
    return [tuple(e) for e in sim.state.ledger_entries()]


def _simulator(now: datetime, path: Path, seed: int = 7, **options):
    return run_simulator(clock=VirtualClock(now), seed=seed, faults=ROW_FAULTS, state_file=path, **options)


def test_a_loaded_state_answers_the_same_reports(tmp_path, start_time):
    path = tmp_path / "simulator" / "state.jsonl"
    with _simulator(start_time, path) as sim, httpx.Client(base_url=sim.base_url, timeout=10) as http:
        answers = _first_half(http, sim.clock)
        sim.clock.advance(timedelta(hours=30))
        txn, campaign = answers[0]["transactionId"], answers[13]["campaignId"]
        before = _reports(http, txn, campaign)
        ledger_before = _ledger(sim)
        saved_at = sim.clock.now()
    assert sum(len(rows) - 1 for rows in before["days"].values()) > 4 * 12 + 2  # duplicated rows included
    header = statefile.read_header(path)
    assert (header.seed, header.timezone) == (7, "Asia/Kolkata")
    assert header.report_faults == {**dict.fromkeys(("duplicate_rows", "neighbour_day", "unmapped_status"), 0.0),
                                    **ROW_FAULTS}

    # A new simulator on the file (report faults from its header, as the CLI does), at the same instant.
    with run_simulator(clock=VirtualClock(saved_at), seed=header.seed, timezone=header.timezone,
                       faults=header.report_faults, state_file=path) as sim, \
            httpx.Client(base_url=sim.base_url, timeout=10) as http:
        assert _ledger(sim) == ledger_before
        assert _reports(http, txn, campaign) == before
        # Later, a day report only moves forward: the same rows (msgIds, in order), statuses final or newer.
        sim.clock.advance(timedelta(days=3))
        later = _day_rows(http, DAYS[1])
    earlier = before["days"][DAYS[1]]
    assert [row[0] for row in later] == [row[0] for row in earlier]
    assert all(old[8] == new[8] or old[8] in ("SUBMITTED", "ACCEPTD", "ENROUTE") for old, new in zip(earlier, later))


def test_a_restart_changes_nothing_and_new_ids_never_collide(tmp_path, start_time):
    """Save and restart midway: the same answers as a simulator that ran throughout."""
    with _simulator(start_time, tmp_path / "throughout.jsonl") as sim, \
            httpx.Client(base_url=sim.base_url, timeout=10) as http:
        throughout = _first_half(http, sim.clock) + _second_half(http, sim.clock)
        reports = _reports(http, throughout[0]["transactionId"], throughout[13]["campaignId"])
        ledger = _ledger(sim)

    path = tmp_path / "restarted.jsonl"
    with _simulator(start_time, path) as sim, httpx.Client(base_url=sim.base_url, timeout=10) as http:
        answers = _first_half(http, sim.clock)
        stopped_at = sim.clock.now()
    with _simulator(stopped_at, path) as sim, httpx.Client(base_url=sim.base_url, timeout=10) as http:
        answers += _second_half(http, sim.clock)
        assert _reports(http, answers[0]["transactionId"], answers[13]["campaignId"]) == reports
        assert _ledger(sim) == ledger

    # The OTP code issued before the restart still verified; the schedule survived and was released.
    assert answers == throughout
    assert answers[14]["reason"] == "OTP verified"
    assert answers[-1]["response"]["scheduleList"] == []
    assert reports["campaign"]["response"]["campaignList"][0]["campaign"]["status"] == "completed"
    # Identical requests after the restart got new transactions and msgIds.
    txns = [a["transactionId"] for a in answers if a.get("transactionId") not in (None, "0")]
    assert len(txns) == len(set(txns))
    msg_ids = [entry[1] for entry in ledger]
    assert len(msg_ids) == len(set(msg_ids)) == 4 * 12 + 2 + 2 * 11


def test_the_file_is_private_and_replaced_whole(tmp_path, start_time):
    path = tmp_path / "state.jsonl"
    with _simulator(start_time, path, save_interval_s=0.05) as sim, \
            httpx.Client(base_url=sim.base_url, timeout=10) as http:
        _first_half(http, sim.clock)
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["state.jsonl"]  # no temporary file left behind
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1]) == {"kind": "end", "requests": 4 * 3 + 1, "rows": 4 * 12 + 1}  # campaign pending


def _saved(tmp_path: Path, start_time: datetime, seed: int = 7) -> Path:
    path = tmp_path / "state.jsonl"
    state = SimulatorState(clock=VirtualClock(start_time), seed=seed)
    with _simulator(start_time, path, seed=seed) as sim, httpx.Client(base_url=sim.base_url, timeout=10) as http:
        _first_half(http, sim.clock)
    state.restore(path)  # readable as saved
    return path


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: lines[:-1], "truncated (no end line)"),
        (lambda lines: lines[:2] + ['{"kind": "request", "rows": [["919876500001"'] + lines[3:], "line 3 is not JSON"),
        (lambda lines: lines[:2] + [lines[2].replace('"units":1', '"units":"one"')] + lines[3:],
         "line 3: malformed request record"),
        (lambda lines: [lines[0].replace('"version":1', '"version":2')] + lines[1:],
         "format version 2; this simulator reads 1"),
        (lambda lines: ["{}"] + lines[1:], "not a simulator state file"),
        (lambda lines: lines[:1] + ['"\udcff"'] + lines[2:], "line 2 is not UTF-8 text"),
    ],
)
def test_a_damaged_file_is_refused_in_one_line_without_its_content(tmp_path, start_time, damage, message):
    path = _saved(tmp_path, start_time)
    damaged = "\n".join(damage(path.read_text(encoding="utf-8").splitlines())) + "\n"
    path.write_bytes(damaged.encode("utf-8", "surrogateescape"))  # a lone surrogate escape: a byte that is not UTF-8
    state = SimulatorState(clock=VirtualClock(start_time), seed=7)
    state.credits = 5

    with pytest.raises(statefile.StateFileError) as refused:
        state.restore(path)
    assert str(refused.value) == f"simulator state {path}: {message}"
    assert state.ledger_size() == 0 and state.credits == 5  # nothing changed


def test_another_seed_or_time_zone_is_refused(tmp_path, start_time):
    path = _saved(tmp_path, start_time, seed=3)

    with pytest.raises(statefile.StateFileError, match=f"^simulator state {path} was saved with seed 3, not 4$"):
        SimulatorState(clock=VirtualClock(start_time), seed=4).restore(path)
    with pytest.raises(statefile.StateFileError, match="saved in time zone Asia/Kolkata, not Europe/Paris$"):
        SimulatorState(clock=VirtualClock(start_time), seed=3, timezone="Europe/Paris").restore(path)
    loaded = SimulatorState.load(path, clock=VirtualClock(start_time))
    assert (loaded.seed, loaded.ledger_size(), loaded.faults.rate("duplicate_rows")) == (3, 4 * 12 + 1, 0.2)


def test_cli_seed_disagreeing_with_the_file_is_a_one_line_error(tmp_path, start_time, capsys, monkeypatch):
    path = _saved(tmp_path, start_time, seed=3)
    monkeypatch.setenv("SMS_PIPELINE_HOME", str(tmp_path))

    assert main(["simulator", "--state", str(path), "--seed", "4"]) == 2
    err = capsys.readouterr().err
    assert f"--seed 4: the simulator state {path} was saved with seed 3" in err and err.count("\n") == 1


def _serve(state: Path, home: Path, *args: str) -> tuple[subprocess.Popen, str, str]:
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("sms-pipeline")), "simulator", "--port", "0", "--state", str(state),
         *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**_ENV, "SMS_PIPELINE_HOME": str(home)},
    )
    base_url = process.stdout.readline().split()[-1]
    admin_url = process.stdout.readline().split()[1]
    return process, base_url, admin_url


def test_cli_keeps_its_traffic_across_a_kill(tmp_path, start_time):
    state = tmp_path / "home" / "simulator" / "state.jsonl"
    process, base_url, _ = _serve(state, tmp_path, "--seed", "3", "--start", start_time.isoformat(),
                                  "--fault", "duplicate_rows=0.5", "--fault", "rate_limit_report=0.5")
    try:
        sent = httpx.post(f"{base_url}/send", data={**AUTH, "senderid": "SGCSMS", "msg": "hello",
                                                    "mobile": ",".join(NUMBERS[:3])}).json()
    finally:
        process.send_signal(signal.SIGTERM)  # a plain kill: saved on the way out
        assert process.wait(timeout=15) == 0

    # Seed and time zone from the file; its row faults, not its request faults.
    process, _, admin_url = _serve(state, tmp_path)
    try:
        ledger = httpx.get(f"{admin_url}/ledger").json()
        faults = httpx.get(f"{admin_url}/faults").json()["rates"]
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0
    assert sent["status"] == "success"
    assert {e["transaction_id"] for e in ledger["entries"]} == {sent["transactionId"]} and ledger["count"] == 3
    assert faults["duplicate_rows"] == 0.5 and faults["rate_limit_report"] == 0.0
