-- Copy the rows of one by-transaction report answer into
-- dlr.txn_report_rows (after ingest_txn_report_rows_clear), in the column
-- order the ingest writes them.
-- Identifiers: columns (the column list).
-- Parameters: none.
COPY dlr.txn_report_rows ({columns}) FROM STDIN
