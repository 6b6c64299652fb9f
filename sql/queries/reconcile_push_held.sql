-- Pushes that came before the send's own answer was written: a msgId that
-- no pass found (not_found, not ambiguous) whose earliest push of this pass
-- is younger than the hold. Its events are not stored yet and its inbox rows
-- stay unreconciled, so the next pass tries it again; once the hold is over
-- (the worker writes an answer within its claim lease, or never) its events
-- are stored like any other not-found event and become orphans, which every
-- hourly and daily run tries again. Ages on the database's clock, like the
-- inbox's received_at.
-- Parameters: hold (interval).
-- Creates the work table reconcile_work.reconcile_push_held (msg_id).
CREATE UNLOGGED TABLE reconcile_work.reconcile_push_held AS
SELECT s.msg_id
  FROM reconcile_work.reconcile_source_rows s
  JOIN reconcile_work.reconcile_unmatched u ON u.msg_id = s.msg_id AND u.result = 'not_found'
  JOIN dlr.receipt_push_inbox p ON p.provider_message_id = s.msg_id AND p.error_code = s.error_code
 WHERE s.source = 'push'
 GROUP BY s.msg_id
HAVING min(p.received_at) > clock_timestamp() - %(hold)s::interval
