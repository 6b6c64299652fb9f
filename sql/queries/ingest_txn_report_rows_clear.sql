-- Forget the stored rows of one transaction's by-transaction report, in the
-- transaction that copies the changed answer's rows in their place.
-- Parameters: transaction_id.
DELETE FROM dlr.txn_report_rows WHERE transaction_id = %(transaction_id)s
