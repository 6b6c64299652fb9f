"""Adoption end to end (issue 23): a naive legacy sender's table, sent through the real simulator, brought in.

The old system (tests/support/legacy_sender.py) keeps ``sends`` in another database and sends over HTTP to
the simulator on the test's virtual clock, with the seed's failure modes: a comma list with a number the
provider refuses, ids stored after a float, an answer lost after the provider took the request, ``sent``
set although nothing left, an unsent row, one business event sent twice, rows on both sides of a month
boundary. ``sms-pipeline adopt backfill`` brings the table in; then the daily assets ingest and reconcile
the simulator's reports for those days, as for any other day. The simulator's ledger (what was billed)
and the sender's own log (what the provider answered) are the ground truth.

A backfill killed after its first batch resumes to the end state of an uninterrupted one. A billed
duplicate's receipts must find its superseded row, and the hourly validity upkeep must leave adopted rows
alone until their days are reconciled. The dual-write tests run the expand phase: the trigger copies what
the old sender keeps sending, ``adopt sync`` moves it in, ``adopt verify`` finds no difference, then
cutover hands the never-sent rows to our worker, and each message is billed once.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg
import pytest

from sms_pipeline.core.msisdn import normalise
from sms_pipeline.core.provider_time import local_date
from sms_pipeline.core.segments import count_segments
from sms_pipeline.orchestration.schedules import daily_days
from tests.support.databases import scratch_database
from tests.support.environment import app_environ
from tests.support.legacy_sender import LegacySender, Sent, Stored
from tests.support.numbers import numbers
from tests.support.reconcile import SENDER, TENANT, UNIT_PRICE, world_for
from tests.support.worker import FOREIGN_NUMBER, make_worker

pytestmark = pytest.mark.slow

ZONE = ZoneInfo("Asia/Kolkata")
EVENT_TYPE = "legacy_send"
CLI = "import sys; from sms_pipeline.cli import main; sys.exit(main())"
HINDI = "आपका ऑर्डर भेज दिया गया है। ट्रैक करने के लिए ऐप खोलें और ऑर्डर नंबर दर्ज करें, धन्यवाद!"
LONG = "Your order has shipped. " * 8  # GSM-7, more than one segment


def _month_boundary() -> tuple[date, date]:
    """The last day of a month and the first of the next, both at least five days back: each
    clock move below stays in the past whatever the hour."""
    second = (local_date(datetime.now(UTC), ZONE) - timedelta(days=5)).replace(day=1)
    return second - timedelta(days=1), second


@pytest.fixture
def days() -> tuple[date, date]:
    return _month_boundary()


@pytest.fixture
def world(db_url, tmp_path, days):
    yield from world_for(db_url, tmp_path, day=days[0])


@pytest.fixture
def legacy(second_db_url, world):
    sender = LegacySender(second_db_url, world.sim.base_url, world.clock, sender_id=SENDER)
    sender.create_table()
    yield sender
    sender.close()


@pytest.fixture
def column_map(tmp_path):
    path = tmp_path / "legacy-map.toml"
    path.write_text('[columns]\nevent = "event"\n', encoding="utf-8")
    return path


def _backfill_args(legacy_url: str, column_map, *more: str) -> list[str]:
    return ["adopt", "backfill", "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT,
            "--class", "transactional", "--sender", SENDER, "--event-type", EVENT_TYPE,
            "--map", str(column_map), *more]


def _legacy_traffic(world, legacy: LegacySender, days: tuple[date, date]) -> None:
    """The old system's two days, one failure mode after another, a minute apart (so no two rows to
    one number meet in the reconstruction window, except the duplicate event, which has its id)."""
    first, second = days
    n = iter(numbers(20, start=500))

    def step():
        world.move_to(world.clock.now() + timedelta(minutes=1))

    world.move_to(world.at(first, 10))
    legacy.send([next(n)], "Order 1 has shipped", event="order-1")
    step()
    legacy.send([next(n), next(n), FOREIGN_NUMBER.lstrip("+")], "Order 2 has shipped", event="order-2")
    step()
    legacy.send([next(n)], "Order 3 has shipped", event="order-3", stored=Stored.FLOAT_JSON)
    step()
    legacy.send([next(n)], "Order 4 has shipped", event="order-4", stored=Stored.NOTHING)
    step()
    twice = next(n)
    legacy.send([twice], "Order 5 has shipped", event="order-5")
    world.move_to(world.clock.now() + timedelta(minutes=3))
    legacy.send([twice], "Order 5 has shipped", event="order-5")  # the same event again: billed twice
    step()
    legacy.leave_unsent([next(n)], "Order 6 has shipped", event="order-6")
    legacy.send([next(n)], HINDI, event="order-7")
    step()
    legacy.mark_sent_without_sending([next(n)], "Order 8 has shipped", event="order-8")
    # The next month: partitions of their own, ids mangled the other ways.
    world.move_to(world.at(second, 9, 30))
    legacy.send([next(n), next(n)], "Order 9 has shipped", event="order-9", stored=Stored.FLOAT_TEXT)
    step()
    legacy.send([next(n)], "Order 11 has shipped", event="order-11", stored=Stored.BIGINT_FROM_FLOAT)
    step()
    legacy.send([next(n)], LONG, event="order-12")
    step()
    legacy.leave_unsent([next(n)], "Order 13 has shipped", event="order-13")


def _sent(legacy: LegacySender) -> list[Sent]:
    """The legacy rows marked sent (those the backfill adopts)."""
    return [s for s in legacy.log if s.stored is not None]


def _mangled(sent: Sent) -> bool:
    return sent.stored in (Stored.FLOAT_JSON, Stored.FLOAT_TEXT, Stored.BIGINT_FROM_FLOAT)


def _usable(sent: Sent) -> bool:
    """The response holds the provider's id as it was: unless the id itself is one a float gives back
    unchanged (above 2^53), which the adoption cannot tell from a mangled one (docs/adoption.md)."""
    if sent.stored is not Stored.ANSWER:
        return False
    value = int(sent.transaction_id)
    return value <= 2**53 or int(float(value)) != value


def _mangled_forms(sent: Sent) -> set[str]:
    return {str(float(sent.transaction_id)), str(int(float(sent.transaction_id)))}


def _rows(conn: psycopg.Connection) -> list[dict]:
    cur = conn.execute("SELECT to_jsonb(m) FROM msg.outbound_message m ORDER BY created_at, recipient, id")
    return [r for (r,) in cur.fetchall()]


# Columns that differ between two databases for the same content: generated per database or per write.
_VOLATILE = ("id", "attempt_key", "replaces_id", "updated_at")


def _comparable(conn: psycopg.Connection) -> Counter:
    return Counter(
        tuple(sorted((k, str(v)) for k, v in row.items() if k not in _VOLATILE))
        + (("replaces", row["replaces_id"] is not None),)
        for row in _rows(conn))


def _kept_evidence(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT tenant_id, adopted_from, problem, response FROM msg.adoption_evidence "
                        "ORDER BY adopted_from").fetchall()


def _evidence(conn: psycopg.Connection) -> list[dict]:
    """Each row with the status words of the receipts linked to it."""
    cur = conn.execute(
        """SELECT to_jsonb(m) || jsonb_build_object('words', COALESCE(
                      (SELECT jsonb_agg(r.status_word ORDER BY r.status_word) FROM dlr.delivery_receipts r
                        WHERE r.message_id = m.id AND r.message_created_at = m.created_at), '[]'::jsonb))
             FROM msg.outbound_message m ORDER BY m.id""")
    return [r for (r,) in cur.fetchall()]


def test_backfilled_legacy_traffic_settles_through_the_providers_reports(world, legacy, second_db_url, column_map,
                                                                        run, days):
    _legacy_traffic(world, legacy, days)
    code, inspected, err = run("adopt", "inspect", "--from-url", second_db_url, "--table", "sends",
                               "--tenant", TENANT, "--map", str(column_map))
    assert code == 0, err
    code, out, err = run(*_backfill_args(second_db_url, column_map, "--batch", "3", "--pause-ms", "0"))
    assert code == 0, err

    sent = _sent(legacy)
    rows = _rows(world.conn)
    # What inspect said the backfill would make of the table is what it made.
    states = Counter(r["state"] for r in rows)
    predicted = dict(re.findall(r"(submitted|rejected|unknown)=(\d+)", inspected))
    assert predicted == {"submitted": str(states["submitted"] + states["superseded"]),
                         "rejected": str(states["rejected"]), "unknown": str(states["unknown"])}, inspected
    assert "duplicate business events: 1 events, 1 more recipients" in inspected
    # Every recipient of every sent legacy row is one outbound row; never-sent rows are not adopted.
    expected = Counter(normalise(r) for s in sent for r in s.recipients)
    assert Counter(r["recipient"] for r in rows) == expected
    unsent = {normalise(r) for s in legacy.log if s not in sent for r in s.recipients}
    assert unsent and not unsent & {r["recipient"] for r in rows}
    assert {r["state"] for r in rows} <= {"submitted", "rejected", "unknown", "superseded"}
    assert {r["state_reason"] for r in rows} == {"adopted"}
    by_recipient = {r["recipient"]: r for r in rows}
    for s in sent:
        for recipient in s.recipients:
            row = by_recipient[normalise(recipient)]
            assert row["body"] == s.message and row["sender_id"] == SENDER
            assert row["segments"] == count_segments(s.message).segments
            if recipient in s.invalid:
                assert (row["state"], row["cost"]) == ("rejected", None)
            elif not _usable(s):
                # No usable id in the response: unknown, not billed yet, never correlated by the mangled text.
                assert (row["state"], row["provider_txn_id"], row["cost"]) == ("unknown", None, None)
            elif row["state"] != "superseded":
                assert (row["state"], row["provider_txn_id"]) == ("submitted", s.transaction_id)
    (first_of_twice, _) = [s for s in sent if s.event == "order-5"]
    twice = [r for r in rows if r["recipient"] == normalise(first_of_twice.recipients[0])]
    assert [r["state"] for r in twice] == ["submitted" if _usable(first_of_twice) else "unknown", "superseded"]
    assert all(r["billable_units"] == r["segments"] for r in twice)  # both were sent and billed
    mangled_text = {form for s in sent if _mangled(s) for form in _mangled_forms(s)}
    assert len({s.stored for s in sent if _mangled(s)}) == 3  # each way a float mangles an id
    assert not mangled_text & {r["provider_txn_id"] for r in rows}

    # A second run inserts nothing and changes nothing.
    before = _rows(world.conn)
    code, out, err = run(*_backfill_args(second_db_url, column_map))
    assert code == 0, err
    assert _rows(world.conn) == before

    # The provider's days, reconciled as the daily schedule does once the grace after the second day passed.
    world.move_to(world.at(days[1] + timedelta(days=2), 2, 30))
    first, last = daily_days(world.clock.now(), world.tz, world.settings.partition_start,
                             world.settings.lookback_days)
    assert first <= days[0]
    world.run_daily(first, last)
    make_worker(world.db_url, world.client, world.clock, zone=world.tz.key).run(once=True)

    rows = _evidence(world.conn)
    ledger = world.ledger()
    true_ids = {s.transaction_id for s in sent if s.transaction_id}
    never_left = {normalise(r) for s in sent if s.transaction_id is None for r in s.recipients}
    assert never_left and not never_left & {e.mobile for e in ledger}
    # Nothing re-sent: no new attempt, no billed entry beyond the old system's own requests.
    assert len(rows) == sum(expected.values())
    assert {e.transaction_id for e in ledger} == true_ids
    for row in rows:
        assert row["replaces_id"] is None and row["state"] not in ("pending", "claimed", "sending")
        if row["state"] == "delivered":
            assert "DELIVRD" in row["words"], row
        if row["state"] == "failed":
            # A receipt said so, or the complete reports prove the request never left.
            proved = row["state_reason"] == "not_submitted" and row["recipient"] in never_left
            assert proved or {"UNDELIV", "REJECTD"} & set(row["words"]), row
        if row["recipient"] in never_left:
            assert (row["state"], row["state_reason"], row["cost"]) == ("failed", "not_submitted", None)
        if row["provider_message_id"]:  # found: the state the provider's report shows, nothing more
            assert row["state"] == world.expected_state(row["provider_message_id"], world.clock.now()), row
        assert row["provider_txn_id"] is None or row["provider_txn_id"] in true_ids
        assert row["provider_txn_id"] not in mangled_text
    # The rows whose id was mangled or lost are found by reconstruction alone (their own number, sender
    # and time), and get the provider's true id from the report, never from what the old system stored.
    by_recipient = {r["recipient"]: r for r in rows}
    for s in sent:
        if s.transaction_id and not _usable(s):
            for recipient in s.recipients:
                row = by_recipient[normalise(recipient)]
                assert row["correlation_evidence"] in ("reconstruction", "fingerprint"), row
                assert row["provider_txn_id"] == s.transaction_id and row["state"] != "unknown"
    # Every billed unit is one adopted row's, at the rate card's price.
    price = Decimal(UNIT_PRICE)
    billed = [r for r in rows if r["billable_units"] is not None]
    assert sum(r["billable_units"] for r in billed) == world.sim.state.billed_units()
    for row in billed:
        assert Decimal(str(row["cost"])) == row["billable_units"] * price and row["cost_currency"] == "INR"
    assert {r["state"] for r in rows if r["billable_units"] is None} <= {"rejected", "failed"}


def test_a_backfill_killed_after_its_first_batch_resumes_to_the_uninterrupted_end_state(
        world, legacy, db_url, second_db_url, pg_admin_url, template_db, column_map, run, days, tmp_path):
    _legacy_traffic(world, legacy, days)
    args = _backfill_args(second_db_url, column_map, "--batch", "2", "--pause-ms", "60000")
    env = app_environ(SMS_PIPELINE_DATABASE_URL=db_url, SMS_PIPELINE_HOME=str(tmp_path / "home"))
    process = subprocess.Popen([sys.executable, "-c", CLI, *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        # Killed in the pause after its first batch committed, with the checkpoint.
        while world.conn.execute("SELECT count(*) FROM msg.adoption_checkpoint").fetchone()[0] == 0:
            assert process.poll() is None, process.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    halfway = world.conn.execute("SELECT count(*) FROM msg.outbound_message").fetchone()[0]
    total = sum(len(s.recipients) for s in _sent(legacy))
    assert 0 < halfway < total

    code, out, err = run(*_backfill_args(second_db_url, column_map, "--batch", "2", "--pause-ms", "0"))
    assert code == 0, err
    resumed = _comparable(world.conn)
    assert sum(resumed.values()) == total
    evidence = _kept_evidence(world.conn)
    assert len(evidence) == sum(1 for s in _sent(legacy) if not _usable(s))

    for reference_url in scratch_database(pg_admin_url, template_db):
        with psycopg.connect(reference_url, autocommit=True) as reference:
            with reference.cursor().copy("COPY msg.rate_card FROM STDIN") as into, \
                    world.conn.cursor().copy("COPY msg.rate_card TO STDOUT") as out_of:
                for block in out_of:
                    into.write(block)
            code, out, err = run(*_backfill_args(second_db_url, column_map),
                                 SMS_PIPELINE_DATABASE_URL=reference_url)
            assert code == 0, err
            assert _comparable(reference) == resumed
            assert _kept_evidence(reference) == evidence



def _legacy_args(command: str, legacy_url: str, column_map, *more: str) -> list[str]:
    return ["adopt", command, "--from-url", legacy_url, "--table", "sends", "--tenant", TENANT,
            "--map", str(column_map), *more]


def _mapping_args() -> list[str]:
    return ["--class", "transactional", "--sender", SENDER, "--event-type", EVENT_TYPE]


def test_dual_write_then_cutover_sends_each_message_once(world, legacy, second_db_url, column_map, run, days):
    n = iter(numbers(12, start=700))
    world.move_to(world.at(days[0], 10))
    legacy.send([next(n)], "Order 1 has shipped", event="order-1")  # history, before the expand phase
    legacy.send([next(n)], "Order 2 has shipped", event="order-2", stored=Stored.FLOAT_TEXT)

    code, out, err = run("adopt", "install-trigger", "--from-url", second_db_url, "--table", "sends",
                         "--map", str(column_map))
    assert code == 0, err
    world.move_to(world.at(days[0], 11))
    # The old sender keeps sending while the trigger copies each recorded send.
    legacy.send([next(n), next(n)], "Order 3 has shipped", event="order-3")
    legacy.send([next(n)], HINDI, event="order-4", stored=Stored.NOTHING)
    legacy.leave_unsent([next(n), next(n)], "Order 5 has shipped", event="order-5")
    code, out, err = run(*_legacy_args("sync", second_db_url, column_map, *_mapping_args(), "--once"))
    assert code == 0, err
    code, out, err = run(*_legacy_args("verify", second_db_url, column_map))
    assert code != 0, out  # the history is not in yet: a difference
    code, out, err = run(*_backfill_args(second_db_url, column_map))
    assert code == 0, err
    code, out, err = run(*_legacy_args("verify", second_db_url, column_map))
    assert code == 0, out + err

    world.move_to(world.at(days[0], 12))
    legacy.send([next(n)], "Order 6 has shipped", event="order-6")
    legacy.leave_unsent([next(n)], "Order 7 has shipped", event="order-7")
    make_worker(world.db_url, world.client, world.clock, zone=world.tz.key).run(once=True)
    assert len(world.ledger()) == 6  # our worker sent none of the old sender's messages
    code, out, err = run(*_legacy_args("cutover", second_db_url, column_map, *_mapping_args(), "--include-unsent",
                                       "--quiet-minutes", "0"))
    assert code != 0, out  # the trigger is still there, the last send not synced
    code, out, err = run(*_legacy_args("sync", second_db_url, column_map, *_mapping_args(), "--once"))
    assert code == 0, err
    code, out, err = run(*_legacy_args("verify", second_db_url, column_map))
    assert code == 0, out + err
    code, out, err = run("adopt", "remove-trigger", "--from-url", second_db_url, "--table", "sends",
                         "--map", str(column_map))
    assert code == 0, err
    for _ in range(2):  # a second cutover enqueues nothing more
        code, out, err = run(*_legacy_args("cutover", second_db_url, column_map, *_mapping_args(),
                                           "--include-unsent", "--quiet-minutes", "0"))
        assert code == 0, out + err
    # The cutover enqueued on the wall clock: our worker runs from then on.
    world.move_to(datetime.now(UTC))
    for _ in range(2):
        make_worker(world.db_url, world.client, world.clock, zone=world.tz.key).run(once=True)

    # Each business event's recipients were billed exactly once: by the old sender, or by our worker after cutover.
    recipients = [normalise(r) for s in legacy.log for r in s.recipients]
    billed = Counter(e.mobile for e in world.ledger())
    assert billed == Counter(recipients)
    rows = _rows(world.conn)
    assert Counter(r["recipient"] for r in rows) == Counter(recipients)
    never_sent = {normalise(r) for s in legacy.log if s.stored is None for r in s.recipients}
    for row in rows:
        assert row["state"] not in ("pending", "claimed", "sending"), row
        assert (row["state_reason"] == "adopted") == (row["recipient"] not in never_sent), row


def test_a_billed_duplicate_is_superseded_with_its_cost_and_its_line_never_settles_the_first_row(
        world, legacy, second_db_url, column_map, run, days):
    """The old system sent one event twice: the provider billed and reported both. The later row is
    superseded with its cost kept; the first row is settled by its own line, never by the duplicate's.
    Reconciliation matches only rows awaiting an outcome, so the duplicate's line stays an orphan, a known
    cause (docs/adoption.md#business-keys-and-duplicate-events)."""
    (n,) = numbers(1, start=800)
    world.move_to(world.at(days[0], 10))
    first = legacy.send([n], "Order 1 has shipped", event="order-1")
    world.move_to(world.at(days[0], 10, 5))
    second = legacy.send([n], "Order 1 has shipped", event="order-1")
    code, out, err = run(*_backfill_args(second_db_url, column_map))
    assert code == 0, err
    rows = _rows(world.conn)
    assert [r["state"] for r in rows] == ["submitted" if _usable(first) else "unknown", "superseded"]
    if _usable(second):
        assert rows[1]["cost"] is not None and rows[1]["billable_units"] == 1  # really sent and billed

    world.move_to(world.at(days[1] + timedelta(days=1), 2, 30))
    world.run_daily(days[0] - timedelta(days=1), days[1])
    first_id, second_id = (e.msg_id for e in world.ledger())  # in the order the provider took them
    rows = _rows(world.conn)
    assert rows[0]["provider_message_id"] == first_id and rows[0]["state"] != "unknown"
    assert rows[1]["state"] == "superseded" and rows[1]["provider_message_id"] is None
    orphans = {m for (m,) in world.conn.execute("SELECT provider_message_id FROM dlr.orphaned_receipts")}
    assert orphans == {second_id}


def test_a_send_recorded_in_two_statements_is_settled_with_the_providers_id(world, legacy, second_db_url,
                                                                            column_map, run, days):
    """Old code that sets ``sent`` in one statement and writes ``response`` in the next, with a sync in
    between: the first copy is a sent row without an answer. Whatever the sync makes of the second, the
    row ends with the provider's own id, never another, once its day is reconciled."""
    (n,) = numbers(1, start=900)
    code, out, err = run("adopt", "install-trigger", "--from-url", second_db_url, "--table", "sends",
                         "--map", str(column_map))
    assert code == 0, err
    world.move_to(world.at(days[0], 10))
    sent = legacy.send([n], "Order 1 has shipped", event="order-1", answer_later=True)
    sync = _legacy_args("sync", second_db_url, column_map, *_mapping_args(), "--once")
    code, out, err = run(*sync)
    assert code == 0, err
    legacy.write_answer(sent)
    code, out, err = run(*sync)
    assert code == 0, err
    (row,) = _rows(world.conn)
    assert (row["state"], row["provider_txn_id"]) in {("unknown", None), ("submitted", sent.transaction_id)}

    world.move_to(world.at(days[1] + timedelta(days=1), 2, 30))
    world.run_daily(days[0] - timedelta(days=1), days[1])
    ((row,), (entry,)) = _evidence(world.conn), world.ledger()
    assert row["provider_txn_id"] == sent.transaction_id and row["provider_message_id"] == entry.msg_id
    assert row["state"] == world.expected_state(entry.msg_id, world.clock.now())


def test_validity_upkeep_waits_for_the_adopted_days_reports(world, legacy, second_db_url, column_map, run, days):
    """History is adopted days after it was sent, and the hourly upkeep runs before anyone reconciles those
    days: it must not expire an adopted row for want of a receipt nobody has read yet."""
    n = iter(numbers(4, start=950))
    world.move_to(world.at(days[0], 10))
    for event in range(3):
        legacy.send([next(n)], f"Order {event} has shipped", event=f"order-{event}")
        world.move_to(world.clock.now() + timedelta(minutes=1))
    legacy.mark_sent_without_sending([next(n)], "Order 3 has shipped", event="order-3")
    code, out, err = run(*_backfill_args(second_db_url, column_map))
    assert code == 0, err
    adopted = _rows(world.conn)

    world.move_to(world.at(days[0] + timedelta(days=5), 2, 30))  # past validity and the proof's grace
    world.run_upkeep()
    assert [r["state"] for r in _rows(world.conn)] == [r["state"] for r in adopted]
    assert _rows(world.conn) == adopted

    world.run_daily(days[0] - timedelta(days=1), days[0] + timedelta(days=1))
    found = {e.msg_id for e in world.ledger()}
    for row in _evidence(world.conn):
        if row["provider_message_id"] in found:
            assert row["state"] == world.expected_state(row["provider_message_id"], world.clock.now()), row
        else:
            assert (row["state"], row["state_reason"]) == ("failed", "not_submitted"), row
    assert len(found) == 3
