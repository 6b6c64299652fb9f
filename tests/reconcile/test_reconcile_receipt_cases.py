"""Cases of docs/receipt-cases.md (1-4, 6-8, 10, 13, 15, 20): simulator -> ingest -> assets."""

from __future__ import annotations

from datetime import timedelta

from tests.support.numbers import numbers
from tests.support.reconcile import STATE_OF_WORD, world_for
from tests.support.runs import metadata_of
from sms_pipeline.simulator import generation


def test_case_1_intermediate_then_final_both_stored_and_final_not_lost(world):
    recipients = numbers(60)
    keys = dict(zip(recipients, world.send(recipients)))
    lines = {r: world.timeline(world.msg_id_of(r)) for r in recipients}
    recipient = next(
        r for r, line in lines.items()
        if line.intermediate != generation.SUBMITTED and line.final != generation.NEVER_FINAL
        and line.final_ms - line.intermediate_ms > 2000
    )
    msg_id, line = world.msg_id_of(recipient), lines[recipient]
    submitted = world.submitted_at(msg_id)

    world.move_to(submitted + timedelta(milliseconds=line.intermediate_ms + 500))
    world.run_daily(world.day)
    assert world.row(keys[recipient])["state"] == "submitted"
    assert [r["status_word"] for r in world.receipts(msg_id)] == [generation.STATUSES[line.intermediate].word]

    world.move_to(submitted + timedelta(milliseconds=line.final_ms + 1000))
    world.run_daily(world.day)
    final_word = generation.STATUSES[line.final].word
    row = world.row(keys[recipient])
    assert row["state"] == STATE_OF_WORD[final_word]
    assert row["final_status"] == final_word
    events = {r["status_word"]: r["disposition"] for r in world.receipts(msg_id)}
    assert events == {generation.STATUSES[line.intermediate].word: "ignored_intermediate", final_word: "applied"}


def test_case_2_a_late_intermediate_after_the_final_changes_nothing(world):
    recipients = numbers(20)
    keys = dict(zip(recipients, world.send(recipients)))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    recipient = next(r for r in recipients if world.row(keys[r])["state"] == "delivered")
    msg_id, before = world.msg_id_of(recipient), world.row(keys[recipient])

    world.inject_getdlr(world.day, msg_id, "ENROUTE", recipient=recipient, submit_at=world.submitted_at(msg_id))
    world.run_daily(world.day)
    assert world.row(keys[recipient]) == before  # state, final, updated_at: nothing moved
    events = {r["status_word"]: r["disposition"] for r in world.receipts(msg_id)}
    assert events == {"DELIVRD": "applied", "ENROUTE": "ignored_intermediate"}


def test_case_3_conflicting_finals_first_wins_and_the_conflict_is_recorded(world):
    recipients = numbers(60)
    keys = dict(zip(recipients, world.send(recipients)))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    delivered = next(r for r in recipients if world.row(keys[r])["state"] == "delivered")
    undelivered = next(r for r in recipients if world.row(keys[r])["final_status"] == "UNDELIV")
    never_final = next(r for r in recipients if world.row(keys[r])["state"] == "submitted")  # no final yet
    later = world.clock.now()

    # a later report disagrees with an applied final, in both directions
    for recipient, word in ((delivered, "UNDELIV"), (undelivered, "DELIVRD")):
        msg_id = world.msg_id_of(recipient)
        world.inject_getdlr(world.day, msg_id, word, recipient=recipient, submit_at=world.submitted_at(msg_id),
                            done_at=later)
    # two finals arrive in the same run: the earlier done time wins
    msg_id = world.msg_id_of(never_final)
    submit = world.submitted_at(msg_id)
    world.inject_getdlr(world.day, msg_id, "UNDELIV", recipient=never_final, submit_at=submit,
                        done_at=submit + timedelta(minutes=5))
    world.inject_getdlr(world.day, msg_id, "DELIVRD", recipient=never_final, submit_at=submit,
                        done_at=submit + timedelta(minutes=2))
    result = world.run_daily(world.day)

    assert (world.row(keys[delivered])["state"], world.row(keys[delivered])["conflicting_final_status"]) == (
        "delivered", "UNDELIV")
    assert (world.row(keys[undelivered])["state"], world.row(keys[undelivered])["conflicting_final_status"]) == (
        "failed", "DELIVRD")
    row = world.row(keys[never_final])
    assert (row["state"], row["final_status"], row["conflicting_final_status"]) == ("delivered", "DELIVRD", "UNDELIV")
    assert row["delivered_at"] == submit + timedelta(minutes=2)
    events = {r["status_word"]: r["disposition"] for r in world.receipts(msg_id)}
    assert events["DELIVRD"] == "applied" and events["UNDELIV"] == "conflicting_final"
    assert metadata_of(result, "msg/reconciliation")["conflicting_finals"] == 3


def test_case_4_the_same_receipt_twice_is_one_event(db_url, tmp_path):
    for world in world_for(db_url, tmp_path, faults={"duplicate_rows": 1.0}):
        keys = world.send(numbers(30))
        world.move_to(world.at(world.day + timedelta(days=1), 3))
        result = world.run_daily(world.day)
        receipts = metadata_of(result, "dlr/receipts")
        assert receipts["duplicate_rows"] >= 30  # every row of the file came twice
        events = world.conn.execute(
            "SELECT count(*), count(DISTINCT (provider_message_id, status_word)) FROM dlr.delivery_receipts"
        ).fetchone()
        assert events[0] == events[1] == 30
        states = [world.row(k)["state"] for k in keys]
        costs = [world.row(k)["cost"] for k in keys]
        world.run_daily(world.day)  # and the same file once more
        assert [world.row(k)["state"] for k in keys] == states
        assert [world.row(k)["cost"] for k in keys] == costs


def test_case_6_a_receipt_without_a_message_is_an_orphan_until_the_message_appears(world):
    recipient = numbers(1)[0]
    sent = world.client.send([recipient], "Your order has shipped", "SGCSMS")  # no row recorded (yet)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    result = world.run_daily(world.day)
    msg_id = world.msg_id_of(recipient)
    orphans = world.conn.execute(
        "SELECT provider_message_id, raw_payload, resolved_at FROM dlr.orphaned_receipts").fetchall()
    assert [(o[0], o[1]["msgId"], o[1]["mobile"], o[2]) for o in orphans] == [(msg_id, msg_id, recipient, None)]
    assert metadata_of(result, "msg/reconciliation")["orphans_opened"] == 1

    # the message appears (e.g. restored from the worker's log) and the orphan is resolved
    world.clock.set(world.clock.now())
    key = world._insert(recipient, "Your order has shipped", "SGCSMS", "transactional", state="sending",
                        claimed_at=world.submitted_at(msg_id))
    world.conn.execute(
        "UPDATE msg.outbound_message SET state = 'submitted', provider_txn_id = %s, submitted_at = claimed_at, "
        "billable_units = 1 WHERE id = %s AND created_at = %s", (sent.transaction_id, *key))
    result = world.run_daily(world.day)
    assert world.row(key)["provider_message_id"] == msg_id
    resolved = world.conn.execute(
        "SELECT o.resolved_at IS NOT NULL, r.message_id FROM dlr.orphaned_receipts o "
        "JOIN dlr.delivery_receipts r ON r.receipt_id = o.resolved_receipt_id "
        "AND r.submit_month = o.resolved_receipt_submit_month").fetchall()
    assert resolved == [(True, key[0])]
    assert metadata_of(result, "msg/reconciliation")["orphans_resolved"] == 1


def test_case_7_receipt_before_the_response_was_stored(world):
    recipient = numbers(1)[0]
    key = world.send_then_crash(recipient)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    assert world.row(key)["state"] == "sending"  # a request in flight is the worker's: never touched
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone() == (1,)

    world.run_upkeep()  # the lease ran out with the request in flight: sending -> unknown
    assert world.row(key)["state"] == "unknown"
    world.run_daily(world.day)
    row = world.row(key)
    msg_id = world.msg_id_of(recipient)
    assert row["provider_message_id"] == msg_id
    assert row["correlation_result"] == "matched" and row["correlation_window_ms"] == 90_000
    assert row["correlation_evidence"] == "reconstruction"  # the crashed row has no text fingerprint
    assert row["state"] == world.expected_state(msg_id, world.clock.now())
    assert row["billable_units"] == 1 and row["cost"] is not None
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts WHERE resolved_at IS NULL").fetchone() == (0,)
    assert [e.mobile for e in world.ledger()] == [recipient]  # billed once, never re-sent


def test_case_8_msg_ids_above_2_63_and_with_leading_zeros_survive_exactly(world):
    recipients = numbers(40)
    keys = dict(zip(recipients, world.send(recipients)))
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    stored = {r: world.row(k)["provider_message_id"] for r, k in keys.items()}
    assert stored == {r: world.msg_id_of(r) for r in recipients}
    assert any(int(m) >= 2**63 for m in stored.values())

    padded = "00" + world.msg_id_of(recipients[0])[2:]  # same digits after the zeros: a different id
    world.inject_getdlr(world.day, padded, "DELIVRD", recipient="919999999999",
                        submit_at=world.submitted_at(world.msg_id_of(recipients[0])))
    world.run_daily(world.day)
    assert world.conn.execute(
        "SELECT raw_payload->>'msgId' FROM dlr.orphaned_receipts WHERE provider_message_id = %s", (padded,)
    ).fetchone() == (padded,)


def test_case_10_the_same_recipient_twice_in_one_transaction_is_ambiguous(world):
    recipient = numbers(1)[0]
    keys = world.send_same_number_twice(recipient)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    for key in keys:
        row = world.row(key)
        assert (row["state"], row["correlation_result"], row["provider_message_id"]) == ("submitted", "ambiguous", None)
    results = world.conn.execute("SELECT DISTINCT correlation_result::text FROM dlr.delivery_receipts").fetchall()
    assert results == [("ambiguous",)]
    assert world.conn.execute("SELECT count(*) FROM dlr.orphaned_receipts").fetchone() == (0,)


def test_case_13_accepted_then_dropped_is_found_billed_once_and_never_resent(world):
    recipients = numbers(3)
    keys = world.send_ambiguous(recipients, "accept_then_drop")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    for recipient, key in zip(recipients, keys):
        row = world.row(key)
        msg_id = world.msg_id_of(recipient)
        assert row["provider_message_id"] == msg_id
        assert row["state"] == world.expected_state(msg_id, world.clock.now())
        assert row["submitted_at"] == world.submitted_at(msg_id).replace(microsecond=0)
        assert row["billable_units"] == 1 and str(row["cost"]) == "0.0079"
    assert sorted(e.mobile for e in world.ledger()) == sorted(recipients)


def test_case_15_unmapped_status_words_are_stored_counted_and_move_nothing(db_url, tmp_path):
    for world in world_for(db_url, tmp_path, faults={"unmapped_status": 1.0}):
        keys = world.send(numbers(40))
        world.move_to(world.at(world.day + timedelta(days=4), 3))
        result = world.run_daily(world.day)
        rows = world.conn.execute(
            """SELECT r.raw_status, r.status_word, r.outcome, r.disposition, m.state::text
                 FROM dlr.delivery_receipts r JOIN msg.outbound_message m
                   ON m.id = r.message_id AND m.created_at = r.message_created_at""").fetchall()
        unmapped = [r for r in rows if r[2] == "unmapped"]
        assert {r[1] for r in unmapped} <= {"BLACKLST", "NCPR"} and unmapped
        assert all(r[3] == "ignored_unmapped" and r[4] == "submitted" for r in unmapped)
        # lower case and trailing spaces are the same word: mapped, applied, raw spelling kept
        respelled = [r for r in rows if r[0] != r[1] and r[2] != "unmapped" and r[1] != "SUBMITTED"]
        assert respelled and all(r[3] == "applied" and r[4] != "submitted" for r in respelled)
        meta = metadata_of(result, "dlr/receipts")
        assert meta["new_unmapped_receipts"] == len(unmapped) <= meta["unmapped_rows"]
        assert set(meta["unmapped_words"]) == {r[1] for r in unmapped}
        assert len(keys) == 40


def test_case_20_a_row_filed_in_the_neighbouring_days_file_is_still_matched_once(db_url, tmp_path):
    for world in world_for(db_url, tmp_path, faults={"neighbour_day": 1.0}):
        world.move_to(world.at(world.day, 15))  # afternoon rows drift into the next day's file
        recipients = numbers(10)
        keys = dict(zip(recipients, world.send(recipients)))
        world.move_to(world.at(world.day + timedelta(days=2), 3))
        world.run_daily(world.day, world.day + timedelta(days=1))
        for recipient, key in keys.items():
            row = world.row(key)
            assert row["provider_message_id"] == world.msg_id_of(recipient)
            assert row["state"] == world.expected_state(row["provider_message_id"], world.clock.now())
        days = world.conn.execute("SELECT DISTINCT report_date FROM dlr.day_report_rows").fetchall()
        assert days == [(world.day + timedelta(days=1),)]
        duplicates = world.conn.execute(
            "SELECT count(*) - count(DISTINCT (provider_message_id, status_word)) FROM dlr.delivery_receipts"
        ).fetchone()
        assert duplicates == (0,)


def test_a_receipt_known_only_from_a_transaction_report_is_matched_by_transaction(world):
    recipient = numbers(1)[0]
    (key,) = world.send([recipient])
    msg_id, txn_id = world.msg_id_of(recipient), world.row(key)["provider_txn_id"]
    submitted = world.submitted_at(msg_id)
    world.conn.execute(
        "INSERT INTO dlr.txn_report_fetches (transaction_id, report_date, checksum, rows, fetched_at) "
        "VALUES (%s, %s, repeat('a', 64), 1, %s)", (txn_id, world.day, submitted))
    world.conn.execute(
        """INSERT INTO dlr.txn_report_rows (transaction_id, row_no, report_date, msg_id, mobile, sender_name, status,
               cause, provider_submit_at, provider_done_at)
           VALUES (%s, 1, %s, %s, %s, 'SGCSMS', 'DELIVERED', 'Success', %s, %s)""",
        (txn_id, world.day, msg_id, recipient, submitted, submitted + timedelta(seconds=4)))
    world.run_daily(world.day, ingest=False)  # no day report: the by-transaction answer is all there is
    row = world.row(key)
    assert (row["provider_message_id"], row["state"], row["final_status"]) == (msg_id, "delivered", "DELIVRD")
    assert row["correlation_evidence"] == "transaction"
    assert [(r["source"], r["provider_txn_id"]) for r in world.receipts(msg_id)] == [("txn_report", txn_id)]
