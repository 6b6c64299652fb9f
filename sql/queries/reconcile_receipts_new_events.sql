-- The day's receipt events not stored yet, keyed (msgId, canonical status
-- word, submit month): a replay of a stored event, from any source or an
-- earlier download, is dropped here, and so is a row repeated within the
-- day (the best-ranked source's row is kept). Rows without a usable msgId
-- or submit time cannot be keyed and are left out (counted).
-- Each event takes its receipt_id from the table's own sequence now: the
-- correlation and the decisions name events by id before they are stored,
-- and the insert at the end keeps those ids.
-- The day's rows are sorted byte-wise (COLLATE "C": the same groups, the
-- row kept chosen by source_rank as before; docs/design.md#sorting-ids-byte-wise).
-- Parameters: now (first_seen_at of the new events).
-- Creates the work table reconcile_work.reconcile_new_events.
CREATE UNLOGGED TABLE reconcile_work.reconcile_new_events AS
SELECT nextval((SELECT pg_get_serial_sequence('dlr.delivery_receipts', 'receipt_id'))::regclass) AS receipt_id,
       e.*,
       %(now)s::timestamptz AS first_seen_at
  FROM (SELECT DISTINCT ON (msg_id COLLATE "C", status_word COLLATE "C", submit_month)
               msg_id, status_word, dlr.submit_month(provider_submit_at) AS submit_month,
               raw_status, outcome, txn_id, recipient, sender_name, cause, error_code, units,
               provider_submit_at, provider_done_at, source, message_fingerprint
          FROM reconcile_work.reconcile_source_rows
         WHERE msg_id IS NOT NULL AND provider_submit_at IS NOT NULL
         ORDER BY msg_id COLLATE "C", status_word COLLATE "C", submit_month, source_rank) AS e
 WHERE NOT EXISTS (SELECT 1
                     FROM dlr.delivery_receipts r
                    WHERE r.provider_message_id = e.msg_id
                      AND r.status_word = e.status_word
                      AND r.submit_month = e.submit_month)
