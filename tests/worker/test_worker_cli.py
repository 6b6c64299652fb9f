"""The commands: enqueue, rates load, worker, messages show, messages replay."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from tests.support.cli import write_lines
from tests.support.environment import app_environ, provider_variables
from tests.support.numbers import digits
from tests.support.worker import FOREIGN_NUMBER, enqueue, ledger, make_worker, request, rows, states

from sms_pipeline.simulator.server import run_simulator


def test_enqueue_loads_good_lines_reports_bad_ones_by_line_and_field_and_exits_non_zero(run, db, tmp_path):
    path = write_lines(tmp_path / "requests.jsonl", [
        json.dumps(request(1)),
        json.dumps(request(2, recipient="not a number")),
        "{not json",
        "",
        json.dumps(request(3, scheduled_for="2026-03-01T09:00:00")),
        json.dumps(request(4)),
        json.dumps({k: v for k, v in request(5).items() if k != "channel"}),
        json.dumps(request(1)),  # the same event again: maps to the same row
    ])

    code, out, err = run("enqueue", str(path))

    assert code == 1
    assert "requests.jsonl: line 2: recipient: not a valid phone number" in err
    assert "requests.jsonl: line 3: not valid JSON" in err
    assert "requests.jsonl: line 5: scheduled_for: has no time zone offset" in err
    assert "requests.jsonl: line 7: channel: is required" in err
    assert "not a number" not in err
    assert "3 requests: 2 new, 1 already enqueued; 4 bad lines" in out
    assert states(db) == {"pending": 2}

    code, out, _ = run("enqueue", str(path))
    assert code == 1 and "3 requests: 0 new, 3 already enqueued" in out
    assert states(db) == {"pending": 2}


COMMAND = "import sys; from sms_pipeline.cli import main; sys.exit(main())"
RATE_HEADER = "tenant_id,channel,message_class,unit_price,currency,valid_from,valid_to"


def test_rates_load_is_idempotent_updates_corrections_and_refuses_bad_files_whole(run, db, tmp_path):
    good = write_lines(tmp_path / "rates.csv", [
        RATE_HEADER, "tenant-a,sms,transactional,0.0079,INR,2026-01-01,2026-07-01",
        "tenant-a,sms,transactional,0.0081,INR,2026-07-01,"])
    card = "SELECT unit_price::text, valid_from::text, valid_to::text FROM msg.rate_card ORDER BY valid_from"

    assert run("rates", "load", str(good))[:2] == (0, "2 rates: 2 new, 0 updated, 0 unchanged\n")
    assert run("rates", "load", str(good))[:2] == (0, "2 rates: 0 new, 0 updated, 2 unchanged\n")
    write_lines(good, [RATE_HEADER, "tenant-a,sms,transactional,0.0080,INR,2026-01-01,2026-07-01"])
    assert run("rates", "load", str(good))[:2] == (0, "1 rates: 0 new, 1 updated, 0 unchanged\n")
    assert db.execute(card).fetchall() == [("0.0080", "2026-01-01", "2026-07-01"), ("0.0081", "2026-07-01", None)]

    bad = write_lines(tmp_path / "bad.csv", [
        RATE_HEADER, "tenant-b,sms,otp,0.1,INR,2026-01-01,", "tenant-b,sms,otp,free,INR,2026-02-01,"])
    code, _, err = run("rates", "load", str(bad))
    assert code == 2 and "bad.csv: line 3: unit_price:" in err and "nothing loaded" in err
    overlap = write_lines(tmp_path / "overlap.csv", [RATE_HEADER, "tenant-a,sms,transactional,0.0090,INR,2026-03-01,"])
    code, _, err = run("rates", "load", str(overlap))
    assert code == 2 and "overlaps" in err
    assert db.execute("SELECT count(*) FROM msg.rate_card").fetchone()[0] == 2


def test_messages_show_traces_every_attempt_with_ids_receipts_and_cost(run, db, db_url, sim, client, clock):
    [row] = enqueue(db, [request(1)], clock)
    make_worker(db_url, client, clock).run(once=True)
    [billed] = ledger(sim)
    db.execute("""INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome,
                      provider_txn_id, provider_submit_at, submit_month, provider_done_at, source, first_seen_at,
                      message_id, message_created_at, correlation_result, disposition)
                  VALUES (%s, 'DELIVRD', 'DELIVRD', 'delivered', %s, %s, dlr.submit_month(%s), %s, 'day_report',
                          %s, %s, %s, 'matched', 'applied')""",
               (billed.msg_id, billed.transaction_id, billed.submitted_at, billed.submitted_at,
                billed.submitted_at, clock.now(), row.message_id, row.created_at))
    business_key = db.execute("SELECT business_key FROM msg.outbound_message").fetchone()[0]

    code, out, _ = run("messages", "show", "--business-key", business_key)

    assert code == 0
    assert f"attempt 1: id={row.message_id} attempt_key={row.attempt_key} state=submitted" in out
    assert f"txn={billed.transaction_id}" in out
    assert f"receipt DELIVRD (delivered) msg={billed.msg_id} from day_report" in out
    assert "billable_units=1 cost=unpriced" in out
    assert digits(1) not in out and "to 91******0001 from SGCSMS" in out
    assert run("messages", "show", "--attempt-key", str(row.attempt_key))[1] == out
    assert run("messages", "show", "--recipient", "098000 00001", "--tenant", "tenant-a")[1] == out
    assert run("messages", "show", "--recipient", "098000 00001", "--tenant", "tenant-b")[:2] == (1, "no message found\n")


def test_messages_replay_supersedes_a_dead_attempt_and_refuses_a_live_one(run, db, db_url, sim, client, clock):
    enqueue(db, [request(1, recipient=FOREIGN_NUMBER), request(2)], clock)
    make_worker(db_url, client, clock).run(once=True)
    rejected, submitted = (r["state"] for r in rows(db))
    assert (rejected, submitted) == ("rejected", "submitted")
    rejected_id, submitted_id = (i for (i,) in db.execute("SELECT id FROM msg.outbound_message ORDER BY id"))

    code, out, _ = run("messages", "replay", str(rejected_id), "--reason", "number corrected upstream")
    assert code == 0 and f"message {rejected_id} superseded; new attempt id=" in out
    chain = db.execute("""SELECT id, state::text, state_reason, replaces_id FROM msg.outbound_message
                           WHERE recipient = '16502530000' ORDER BY id""").fetchall()
    assert chain[0][1:] == ("superseded", "replayed: number corrected upstream", None)
    assert chain[1][1:] == ("pending", None, rejected_id)
    code, out, _ = run("messages", "show", "--recipient", FOREIGN_NUMBER)
    assert "attempts=2" in out and f"replaces={rejected_id}" in out

    for refused_id, why in ((submitted_id, "is submitted: only expired, failed, rejected messages can be replayed"),
                            (rejected_id, "is superseded"), (999_999, "no message with id 999999")):
        code, _, err = run("messages", "replay", str(refused_id), "--reason", "try")
        assert code == 2 and why in err
    assert db.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0] == 3


def test_worker_command_sends_what_is_due_and_stops_gracefully_on_sigterm(run, db, db_url, tmp_path):
    with run_simulator() as sim:  # real time, like the command
        provider = provider_variables(sim.base_url)
        write_lines(tmp_path / "a.jsonl", [json.dumps(request(n)) for n in range(3)])
        assert run("enqueue", str(tmp_path / "a.jsonl"))[0] == 0
        code, out, _ = run("worker", "--once", "--batch-size", "2", **provider)
        assert code == 0 and "requests=2 claimed=3 submitted=3" in out
        assert len(ledger(sim)) == 3

        # A long-running worker with one send loop, three slow requests (one per body: no XML send);
        # SIGTERM while the first is in flight. A claim takes only the request it sends next: the other
        # rows stay pending.
        write_lines(tmp_path / "b.jsonl", [json.dumps(request(10 + n, body=f"Parcel {n} is out")) for n in range(3)])
        assert run("enqueue", str(tmp_path / "b.jsonl"))[0] == 0
        sim.faults.update({"slow": 1.0, "slow_delay_s": 1.0})
        env = app_environ(**provider, SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_HOME=str(tmp_path / "home"),
                          SMS_PROVIDER_XML_SEND="false", SMS_PIPELINE_WORKER_CONCURRENCY="1")
        worker = subprocess.Popen([sys.executable, "-c", COMMAND, "worker"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(ledger(sim)) < 4 and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=30)

    assert worker.returncode == 0, err
    assert "SIGTERM: finishing the request in flight" in err and "requests=1 claimed=1 submitted=1" in out
    assert states(db) == {"submitted": 4, "pending": 2}
