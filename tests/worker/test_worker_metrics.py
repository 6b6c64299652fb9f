"""``sms-pipeline worker`` with ``SMS_PIPELINE_METRICS_PORT``: /metrics scraped during a real run, against the
database and the simulator's own counts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import httpx

from sms_pipeline.simulator.server import run_simulator
from tests.support.environment import app_environ, provider_variables
from tests.support.metrics import assert_fixed_labels, samples, total, value
from tests.support.ports import free_port
from tests.support.worker import FOREIGN_NUMBER, request

COMMAND = "import sys; from sms_pipeline.cli import main; sys.exit(main())"
OPEN_STATES = ("pending", "claimed", "sending")


def _db_states(db) -> dict[tuple[str, str], int]:
    return {(cls, state): n for cls, state, n in db.execute(
        "SELECT message_class, state::text, count(*) FROM msg.outbound_message GROUP BY 1, 2").fetchall()}


def _requests(url: str, answer: str) -> float:
    """Requests so far that got ``answer`` (0 while the worker does not serve metrics yet)."""
    try:
        return total(samples(httpx.get(url, timeout=5).text), "sms_pipeline_worker_request_seconds_count",
                     answer=answer)
    except httpx.HTTPError:
        return 0


def _settled(db, url: str) -> str | None:
    """The exposition once the queue is empty and the counters have every row's outcome, else None."""
    states = _db_states(db)
    if any(state in OPEN_STATES for _, state in states):
        return None
    try:
        text = httpx.get(url, timeout=5).text
    except httpx.HTTPError:
        return None
    found = samples(text)
    moved = sum(total(found, "sms_pipeline_worker_rows_total", outcome=o) for o in ("submitted", "rejected", "unknown"))
    return text if moved == sum(states.values()) else None


def test_worker_metrics_during_a_run_agree_with_the_database_and_the_simulator(run, db, db_url, tmp_path):
    # The foreign numbers (refused in an accepted answer) are in the queue claimed last, past the requests the
    # faults below hit, and are its oldest rows, sharing their body with the rest: a claim looks at the batch
    # size's oldest rows, so they are always claimed, released and sent together with a valid number. Last in
    # a queue, a concurrent claim could lock their siblings and leave a foreign number alone in a request,
    # which the provider refuses whole ("no valid mobile number").
    records = [request(n, body=f"Parcel {n % 3} is out") for n in range(14)]
    records += [request(100 + n, recipient=FOREIGN_NUMBER, message_class="promotional", body="Sale today")
                for n in range(2)]
    records += [request(200 + n, message_class="promotional", body="Sale today") for n in range(5)]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert run("enqueue", str(tmp_path / "requests.jsonl"))[0] == 0
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"

    # Real time, like the command. The first requests are rate-limited (429: released, and the worker pauses);
    # once the metrics show one, requests are answered 5xx (their rows unknown); once they show one, all goes.
    phases = [("rate_limited", {"rate_limit_send": 0.0, "http_5xx": 1.0}), ("ambiguous", {"http_5xx": 0.0})]
    with run_simulator(faults={"rate_limit_send": 1.0}) as sim:
        env = app_environ(**provider_variables(sim.base_url), SMS_PIPELINE_DATABASE_URL=db_url,
                          SMS_PIPELINE_HOME=str(tmp_path / "home"), SMS_PIPELINE_METRICS_PORT=str(port),
                          SMS_PIPELINE_BATCH_SIZE="3", SMS_PIPELINE_WORKER_CONCURRENCY="2",
                          SMS_PIPELINE_CIRCUIT_BREAKER_FAILURES="50")
        worker = subprocess.Popen([sys.executable, "-c", COMMAND, "worker"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            text = None
            while text is None and worker.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
                if phases:
                    answer, faults = phases[0]
                    if _requests(url, answer):
                        sim.faults.update(faults)
                        phases.pop(0)
                else:
                    text = _settled(db, url)
            assert text is not None, f"the worker did not settle: {_db_states(db)}, phases left: {phases}"
            fired = sim.faults.fired()
            billed_transactions = {entry.transaction_id for entry in sim.state.ledger_entries()}
        finally:
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err

    found = samples(text)
    assert_fixed_labels(text)
    states = _db_states(db)
    for cls in ("transactional", "promotional"):
        for outcome in ("submitted", "rejected", "unknown"):
            assert value(found, "sms_pipeline_worker_rows_total", channel="sms", class_=cls, outcome=outcome) \
                == states.get((cls, outcome), 0), (cls, outcome)
    assert total(found, "sms_pipeline_worker_rows_total", outcome="unknown") > 0
    assert total(found, "sms_pipeline_worker_unpriced_rows_total") == total(
        found, "sms_pipeline_worker_rows_total", outcome="submitted")  # no rate card loaded

    # Requests, by the provider's answer, as the simulator and the database counted them.
    requests = {answer: total(found, "sms_pipeline_worker_request_seconds_count", answer=answer)
                for answer in ("accepted", "rate_limited", "ambiguous", "refused", "never_connected")}
    transactions = {txn for (txn,) in db.execute(
        "SELECT DISTINCT provider_txn_id FROM msg.outbound_message WHERE provider_txn_id IS NOT NULL")}
    assert transactions == billed_transactions
    assert requests == {"accepted": len(transactions), "rate_limited": fired["rate_limit_send"],
                        "ambiguous": fired["http_5xx"], "refused": 0, "never_connected": 0}
    assert fired["rate_limit_send"] > 0 and fired["http_5xx"] > 0
    assert total(found, "sms_pipeline_worker_request_seconds_sum") > 0
    # A claim takes the rows of one request (given back unsent when another thread's 429 paused sending
    # meanwhile), and every claimed row has one outcome.
    assert total(found, "sms_pipeline_worker_claims_total") >= sum(requests.values())
    assert total(found, "sms_pipeline_worker_claimed_rows_total") == total(found, "sms_pipeline_worker_rows_total")
    # Rows of a rate-limited request go back to pending; each 429 paused sending.
    assert total(found, "sms_pipeline_worker_rows_total", outcome="released") > 0
    assert value(found, "sms_pipeline_worker_backoffs_total", reason="rate_limited") == fired["rate_limit_send"]
    assert value(found, "sms_pipeline_worker_backoff_seconds_total", reason="rate_limited") >= fired["rate_limit_send"]
    assert value(found, "sms_pipeline_worker_breaker_state", state="closed") == 1
    assert total(found, "sms_pipeline_worker_breaker_state") == 1
    # The summary the command printed at the end says the same.
    assert f"requests={int(sum(requests.values()))} " in out
