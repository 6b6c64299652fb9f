-- Where `messages forget` finds the number outside the message tables: the
-- primary keys of the push inbox, raw report, receipt event and orphan rows
-- holding it in any stored form (compared after removing every non-digit).
-- One scan per table, run before the reconciliation lock is taken, so nothing
-- waits on it; each batch re-checks its rows under the lock
-- (erasure_<table>.sql), since a load may have rewritten them meanwhile.
-- Parameters: forms (the number's digit strings).
-- Returns (table_name, row_key: the primary key as JSON, as the batches read it).
SELECT 'dlr.receipt_push_inbox' AS table_name,
       jsonb_build_object('provider_message_id', provider_message_id, 'error_code', error_code) AS row_key
  FROM dlr.receipt_push_inbox
 WHERE recipient = ANY(%(forms)s::text[])
UNION ALL
SELECT 'dlr.day_report_rows', jsonb_build_object('report_date', report_date, 'line_no', line_no)
  FROM dlr.day_report_rows
 WHERE regexp_replace(mobile, '[^0-9]', '', 'g') = ANY(%(forms)s::text[]) AND mobile !~ '^erased:'
UNION ALL
SELECT 'dlr.txn_report_rows', jsonb_build_object('transaction_id', transaction_id, 'row_no', row_no)
  FROM dlr.txn_report_rows
 WHERE regexp_replace(mobile, '[^0-9]', '', 'g') = ANY(%(forms)s::text[]) AND mobile !~ '^erased:'
UNION ALL
SELECT 'dlr.getdlr_rows', jsonb_build_object('report_date', report_date, 'row_no', row_no)
  FROM dlr.getdlr_rows
 WHERE regexp_replace(mobile, '[^0-9]', '', 'g') = ANY(%(forms)s::text[]) AND mobile !~ '^erased:'
UNION ALL
SELECT 'dlr.delivery_receipts', jsonb_build_object('receipt_id', receipt_id, 'submit_month', submit_month)
  FROM dlr.delivery_receipts
 WHERE regexp_replace(recipient, '[^0-9]', '', 'g') = ANY(%(forms)s::text[]) AND recipient !~ '^erased:'
UNION ALL
SELECT 'dlr.orphaned_receipts', jsonb_build_object('orphan_id', orphan_id)
  FROM dlr.orphaned_receipts
 WHERE regexp_replace(raw_payload ->> 'mobile', '[^0-9]', '', 'g') = ANY(%(forms)s::text[])
   AND raw_payload ->> 'mobile' !~ '^erased:'
