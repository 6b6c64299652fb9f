"""Concurrent requests: every accepted recipient billed once, ids unique."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

AUTH = {"userid": "demo", "password": "demo"}


def test_concurrent_sends_are_all_billed_with_unique_ids(sim):
    def batch(worker: int) -> list[str]:
        with httpx.Client(base_url=sim.base_url, timeout=10) as http:
            txns = []
            for i in range(15):
                numbers = ",".join(f"91{9 - worker % 4}{worker:02d}{i:03d}{n:04d}" for n in range(20))
                body = http.post("/send", data={**AUTH, "senderid": "SGCSMS", "msg": "hi", "mobile": numbers}).json()
                assert body["status"] == "success", body
                txns.append(body["transactionId"])
            return txns

    with ThreadPoolExecutor(max_workers=8) as pool:
        txns = [t for result in pool.map(batch, range(8)) for t in result]

    entries = list(sim.state.ledger_entries())
    assert len(entries) == 8 * 15 * 20
    assert len({e.msg_id for e in entries}) == len(entries)
    assert len(set(txns)) == len(txns) == 120
    assert {e.transaction_id for e in entries} == set(txns)
