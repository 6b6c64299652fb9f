"""Money (docs/receipt-cases.md#case-22, #case-23): NUMERIC end to end, rejected unbilled, unpriced NULL and counted."""

from __future__ import annotations

from decimal import Decimal

from tests.support.worker import FOREIGN_NUMBER, enqueue, ledger, make_worker, price, request, states

TOTALS = """
SELECT sum(cost), sum(billable_units),
       COALESCE(sum(cost) FILTER (WHERE state = 'rejected'), 0),
       count(*) FILTER (WHERE state = 'rejected' AND (cost IS NOT NULL OR billable_units IS NOT NULL))
  FROM msg.outbound_message
"""


def test_case_22_a_thousand_messages_at_0_0079_cost_exactly_7_9000_and_rejected_rows_nothing(
        db, db_url, sim, client, clock):
    price(db, "0.0079")
    enqueue(db, [request(n) for n in range(1000)]
            + [request(1000 + n, recipient=FOREIGN_NUMBER, event_type="refused") for n in range(3)], clock)

    summary = make_worker(db_url, client, clock).run(once=True)

    assert states(db) == {"submitted": 1000, "rejected": 3}
    total, units, rejected_cost, rejected_billed = db.execute(TOTALS).fetchone()
    assert isinstance(total, Decimal) and total == Decimal("7.9000") and str(total) == "7.9000"
    assert (units, rejected_cost, rejected_billed) == (1000, 0, 0)
    assert summary.unpriced == 0
    assert sum(e.units for e in ledger(sim)) == units  # what we bill ourselves = what was billed

    # Receipts later fail or expire some of them: what was billed stays billed.
    db.execute("""UPDATE msg.outbound_message SET state = 'failed'
                   WHERE id IN (SELECT id FROM msg.outbound_message WHERE state = 'submitted' LIMIT 10)""")
    db.execute("""UPDATE msg.outbound_message SET state = 'expired'
                   WHERE id IN (SELECT id FROM msg.outbound_message WHERE state = 'submitted' LIMIT 10)""")
    assert db.execute(TOTALS).fetchone()[0] == Decimal("7.9000")


def test_case_23_a_message_without_a_rate_keeps_cost_null_and_is_counted_unpriced(
        db, db_url, sim, client, clock):
    price(db, "0.0079", message_class="transactional")  # promotional has no price
    enqueue(db, [request(1), request(2, message_class="promotional"), request(3, message_class="promotional")],
            clock)

    summary = make_worker(db_url, client, clock).run(once=True)

    assert states(db) == {"submitted": 3}
    assert summary.unpriced == 2
    by_class = db.execute("""
        SELECT message_class, count(*) FILTER (WHERE cost IS NULL), sum(billable_units), sum(cost)
          FROM msg.outbound_message GROUP BY 1 ORDER BY 1""").fetchall()
    assert by_class == [("promotional", 2, 2, None), ("transactional", 0, 1, Decimal("0.0079"))]
