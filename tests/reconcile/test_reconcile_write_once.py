"""Each receipt event is written once, already correlated, in the day's one transaction."""

from __future__ import annotations

from datetime import timedelta

from sms_pipeline.orchestration import reconcile_assets

from tests.support.numbers import numbers

# Records every UPDATE of a receipt event (test-only): a new event must be
# inserted with its correlation and disposition, never stored bare and then
# rewritten by a link update.
_WATCH_RECEIPT_UPDATES = """
CREATE TABLE public.receipt_updates (receipt_id bigint, message_id_before bigint);
CREATE FUNCTION public.record_receipt_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.receipt_updates VALUES (OLD.receipt_id, OLD.message_id);
    RETURN NEW;
END $$;
CREATE TRIGGER record_receipt_update AFTER UPDATE ON dlr.delivery_receipts
    FOR EACH ROW EXECUTE FUNCTION public.record_receipt_update();
"""


def test_a_day_of_new_events_is_stored_correlated_without_a_single_update(world):
    world.send(numbers(20))
    world.otp("919700000001")
    world.client.send(["919700000003"], "No row for this one", "SGCSMS")  # an orphan
    world.move_to(world.at(world.day + timedelta(days=2), 3))
    world.conn.execute(_WATCH_RECEIPT_UPDATES)

    world.run_daily(world.day)

    assert world.conn.execute("SELECT count(*) FROM public.receipt_updates").fetchone()[0] == 0
    results = dict(world.conn.execute(
        """SELECT correlation_result::text, count(*) FROM dlr.delivery_receipts
            WHERE correlated_at IS NOT NULL GROUP BY 1""").fetchall())
    stored = world.conn.execute("SELECT count(*) FROM dlr.delivery_receipts").fetchone()[0]
    assert sum(results.values()) == stored  # every event carries its result from the start
    assert results.get("not_found", 0) >= 1 and results["matched"] >= 21
    unlinked_matched = world.conn.execute(
        """SELECT count(*) FROM dlr.delivery_receipts
            WHERE correlation_result = 'matched' AND (message_id IS NULL OR disposition IS NULL)""").fetchone()[0]
    assert unlinked_matched == 0


def test_a_day_that_fails_midway_stores_nothing_and_its_rerun_completes(world):
    world.send(numbers(10))
    world.move_to(world.at(world.day + timedelta(days=2), 3))
    # A guard on the message table that refuses any final state: the state
    # moves fail after the receipt events were staged and correlated.
    world.conn.execute(
        """CREATE FUNCTION public.refuse_finals() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
           CREATE TRIGGER refuse_finals BEFORE UPDATE ON msg.outbound_message
               FOR EACH ROW WHEN (NEW.state IN ('delivered', 'failed', 'expired'))
               EXECUTE FUNCTION public.refuse_finals();""")
    before = world.snapshot()

    failed = world.run_daily(world.day, must_succeed=False)

    assert not failed.success
    assert world.snapshot() == before  # no receipt event, no state, no orphan: the day is as it was
    assert world.conn.execute("SELECT count(*) FROM dlr.day_report_rows").fetchone()[0] > 0  # raw load kept

    world.conn.execute("DROP TRIGGER refuse_finals ON msg.outbound_message")
    world.run_daily(world.day, ingest=False)
    states = dict(world.conn.execute("SELECT state::text, count(*) FROM msg.outbound_message GROUP BY 1").fetchall())
    assert states.get("submitted", 0) < 10 and sum(states.values()) == 10
    assert world.conn.execute("SELECT count(*) FROM dlr.delivery_receipts WHERE message_id IS NULL").fetchone()[0] == 0


def test_only_an_event_that_waited_is_linked_by_an_update(world):
    """An orphan stored on one run and matched on a later one is the one event rewritten."""
    recipient = numbers(1)[0]
    sent = world.client.send([recipient], "Your order has shipped", "SGCSMS")  # no row recorded (yet)
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day)
    waiting = world.conn.execute("SELECT receipt_id FROM dlr.delivery_receipts WHERE message_id IS NULL").fetchall()
    assert len(waiting) == 1
    world.conn.execute(_WATCH_RECEIPT_UPDATES)

    key = world._insert(recipient, "Your order has shipped", "SGCSMS", "transactional", state="sending",
                        claimed_at=world.submitted_at(world.msg_id_of(recipient)))
    world.conn.execute(
        "UPDATE msg.outbound_message SET state = 'submitted', provider_txn_id = %s, submitted_at = claimed_at, "
        "billable_units = 1 WHERE id = %s AND created_at = %s", (sent.transaction_id, *key))
    world.run_daily(world.day)

    updates = world.conn.execute("SELECT receipt_id, message_id_before FROM public.receipt_updates").fetchall()
    assert updates == [(waiting[0][0], None)]
    assert world.conn.execute(
        "SELECT message_id FROM dlr.delivery_receipts WHERE receipt_id = %s", waiting[0]).fetchone() == (key[0],)


def test_receipts_and_reconciliation_are_materialised_together_or_not_at_all():
    pair = reconcile_assets.receipts_and_reconciliation
    assert pair.keys == {reconcile_assets.RECEIPTS, reconcile_assets.RECONCILIATION}
    assert not pair.can_subset  # one transaction per day: neither asset can be materialised alone
