-- The stored by-transaction report of one transaction (its checksum and
-- size), locked so two fetches of one transaction cannot interleave.
-- Parameters: transaction_id.
SELECT checksum, rows
  FROM dlr.txn_report_fetches
 WHERE transaction_id = %(transaction_id)s
   FOR UPDATE
