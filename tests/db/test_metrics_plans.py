"""The metrics exporter's queries read their indexes at volume: a scrape costs what the queue and the recent
window hold, never the tables' history (docs/design.md#metrics)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sms_pipeline.db import queries
from tests.db.test_schema_indexes import MONTHS_BACK, NOW, ROWS, SEED, _scans
from tests.support.rows import month_start

PLANS = [
    ("metrics_queue", {"outbound_message_claim_idx", "outbound_message_lease_idx", "outbound_message_open_idx"},
     {"now": NOW}),
    ("metrics_messages_recent", {"outbound_message_attempt_at_idx"}, {"since": NOW - timedelta(hours=24), "now": NOW}),
    ("metrics_receipts_recent", {"delivery_receipts_first_seen_at_idx"},
     {"since": NOW - timedelta(hours=24), "now": NOW}),
]

# One receipt event per delivered or failed message, stored a minute after its submission.
RECEIPTS = """
INSERT INTO dlr.delivery_receipts (provider_message_id, status_word, raw_status, outcome, provider_submit_at,
                                   submit_month, source, first_seen_at)
SELECT provider_message_id, w, w, CASE w WHEN 'DELIVRD' THEN 'delivered' ELSE 'failed' END, submitted_at,
       dlr.submit_month(submitted_at), CASE WHEN id % 3 = 0 THEN 'push' ELSE 'day_report' END,
       submitted_at + interval '1 minute'
  FROM (SELECT id, provider_message_id, submitted_at,
               CASE state WHEN 'delivered' THEN 'DELIVRD' ELSE 'UNDELIV' END AS w
          FROM msg.outbound_message WHERE state IN ('delivered', 'failed')) AS finished
"""


@pytest.mark.slow
@pytest.mark.every_server  # plans differ between Postgres versions
def test_the_exporters_message_queries_use_their_indexes_at_volume(db):
    start = month_start(-MONTHS_BACK)
    db.execute("SELECT msg.ensure_partitions(%s, %s)", (start, MONTHS_BACK + 2))
    db.execute(SEED, {"now": NOW, "rows": ROWS, "spacing": (NOW - start) / ROWS})
    db.execute("SELECT dlr.ensure_partitions(%s, %s)", (start, MONTHS_BACK + 2))
    db.execute(RECEIPTS)
    db.execute("ANALYZE msg.outbound_message")
    db.execute("ANALYZE dlr.delivery_receipts")
    # Months whose rows are mostly history: reading one whole would cost the history, not the window's
    # traffic (the current month, nearly all inside the window, is rightly read whole).
    since = NOW - timedelta(hours=24)
    history = {name.split(".")[1] for (name,) in db.execute(
        """SELECT tableoid::regclass::text FROM msg.outbound_message GROUP BY 1
            HAVING avg((COALESCE(msg.attempt_at(submitted_at, claimed_at, scheduled_for), created_at) < %(since)s)::int) > 0.5
           UNION ALL
           SELECT tableoid::regclass::text FROM dlr.delivery_receipts GROUP BY 1
            HAVING avg((first_seen_at < %(since)s)::int) > 0.5""", {"since": since})}
    assert len(history) >= 2 * MONTHS_BACK

    for name, wanted, params in PLANS:
        indexes, seq_scans = _scans(db, queries.load(name), params)
        assert wanted <= indexes, f"{name}: planned on {indexes or 'no index'}"
        assert not seq_scans & history, f"{name}: seq scan on {seq_scans & history}"
