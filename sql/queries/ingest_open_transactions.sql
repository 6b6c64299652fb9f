-- Transactions of one provider day worth a by-transaction report: they still
-- have rows awaiting a final status (`submitted` or `unknown`, no final
-- applied) whose attempt time lies in the day (access pattern 3:
-- outbound_message_open_idx), and the day report shows no final status for
-- that transaction and recipient. Rows filed in a neighbouring day's file
-- count, so the files of the day before and after are looked at too.
-- `final_words` are the status spellings with a final outcome
-- (core.statuses), compared after trimming and upper-casing.
-- Parameters: report_date, day_start, day_end, final_words.
SELECT m.provider_txn_id AS transaction_id,
       count(*)          AS open_rows
  FROM msg.outbound_message m
 WHERE m.queue_state IN ('submitted', 'unknown')  -- = state; the partial indexes read queue_state (V73)
   AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) >= %(day_start)s::timestamptz
   AND msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for) < %(day_end)s::timestamptz
   AND m.final_status IS NULL
   AND m.provider_txn_id IS NOT NULL
   AND NOT EXISTS (
         SELECT 1
           FROM dlr.day_report_rows r
          WHERE r.report_date BETWEEN %(report_date)s::date - 1 AND %(report_date)s::date + 1
            AND r.transaction_id = m.provider_txn_id
            AND r.mobile = m.recipient
            AND upper(btrim(r.status)) = ANY (%(final_words)s::text[]))
 GROUP BY m.provider_txn_id
 ORDER BY m.provider_txn_id
