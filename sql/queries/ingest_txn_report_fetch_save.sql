-- Record a changed by-transaction report; its rows are replaced in the same
-- transaction. An unchanged answer never reaches this statement.
-- Parameters: transaction_id, report_date, checksum, rows, fetched_at.
INSERT INTO dlr.txn_report_fetches AS f (transaction_id, report_date, checksum, rows, fetched_at)
VALUES (%(transaction_id)s, %(report_date)s, %(checksum)s, %(rows)s, %(fetched_at)s)
ON CONFLICT (transaction_id) DO UPDATE
   SET report_date = EXCLUDED.report_date,
       checksum    = EXCLUDED.checksum,
       rows        = EXCLUDED.rows,
       fetched_at  = EXCLUDED.fetched_at
