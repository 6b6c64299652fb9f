"""Receipts stored before fingerprints get the text's evidence from their day reloaded
(docs/design.md#text-fingerprint)."""

from __future__ import annotations

from datetime import timedelta


def test_an_old_ambiguous_receipt_is_resolved_by_its_reloaded_day(world):
    first = world.send_ambiguous(["919700000016"], "accept_then_drop", text="Your parcel is at the door")
    world.move_to(world.clock.now() + timedelta(seconds=40))
    second = world.send_ambiguous(["919700000016"], "accept_then_drop", text="Your parcel left the depot")
    world.move_to(world.at(world.day + timedelta(days=1), 3))
    world.run_daily(world.day, reconcile=False)
    # As the upgrade leaves a day loaded before fingerprints: no key id, no fingerprints.
    world.conn.execute("UPDATE dlr.report_checkpoints SET fingerprint_key_id = NULL")
    world.conn.execute("UPDATE dlr.day_report_rows SET message_fingerprint = NULL")
    world.run_daily(world.day, ingest=False)
    assert [world.row(k)["correlation_result"] for k in (*first, *second)] == ["ambiguous"] * 2
    assert world.conn.execute("SELECT count(*) FROM dlr.delivery_receipts WHERE message_fingerprint IS NOT NULL"
                              ).fetchone() == (0,)

    world.move_to(world.clock.now() + timedelta(hours=1))
    world.run_daily(world.day)  # the day reloaded under the key: its rows carry fingerprints, no event is new
    for key, entry in zip((*first, *second), world.ledger(), strict=True):
        row = world.row(key)
        assert (row["correlation_result"], row["correlation_evidence"], row["provider_message_id"]) == (
            "matched", "fingerprint", entry.msg_id)
        assert row["state"] == world.expected_state(entry.msg_id, world.clock.now())
