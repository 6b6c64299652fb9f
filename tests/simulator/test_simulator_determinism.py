"""One seed and one request sequence give the same ids, outcomes and files."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx

from sms_pipeline.core.clock import VirtualClock
from sms_pipeline.simulator import run_simulator

AUTH = {"userid": "demo", "password": "demo"}
NUMBERS = [f"9198765{n:05d}" for n in range(60)]


def _session(start, seed: int) -> dict[str, object]:
    """A fixed sequence of sends, OTPs and clock moves; what the provider reported back."""
    with run_simulator(clock=VirtualClock(start), seed=seed,
                       faults={"duplicate_rows": 0.2, "unmapped_status": 0.2, "neighbour_day": 0.1}) as sim:
        with httpx.Client(base_url=sim.base_url, timeout=10) as http:
            answers = []
            for i in range(0, 60, 20):
                answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": f"batch {i}",
                                                        "mobile": ",".join(NUMBERS[i:i + 20])}).json())
                answers.append(http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": "same",
                                                        "mobile": NUMBERS[i]}).json())
                answers.append(http.post("/otp", data={**AUTH, "sendMethod": "generate", "mobile": NUMBERS[i],
                                                       "senderid": "SGCSMS", "msg": "Code $otp$"}).json())
                sim.clock.advance(timedelta(hours=7))
            sim.clock.advance(timedelta(days=3))
            zips = [hashlib.sha256(http.get("/report/day", params={**AUTH, "date": day}).content).hexdigest()
                    for day in ("2025-06-09", "2025-06-10", "2025-06-11")]
            dlr = http.post("/report/status", data={**AUTH, "method": "getDlr", "fromdate": "2025-06-10",
                                                    "todate": "2025-06-11", "pageLimit": "1000"}).json()
        ledger = [(e.transaction_id, e.msg_id, e.mobile, e.units, e.submitted_at) for e in sim.state.ledger_entries()]
    return {"answers": answers, "ledger": ledger, "zips": zips, "dlr": dlr}


def test_same_seed_same_everything(start_time):
    first = _session(start_time, seed=42)
    second = _session(start_time, seed=42)

    assert first == second
    assert len(first["ledger"]) == 66


def test_another_seed_gives_other_ids(start_time):
    first = _session(start_time, seed=42)
    other = _session(start_time, seed=43)

    assert {m for _, m, *_ in first["ledger"]}.isdisjoint({m for _, m, *_ in other["ledger"]})
