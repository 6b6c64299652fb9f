-- Legacy side: every later transaction of this session is read only (as
-- default_transaction_read_only = on), so the adoption cannot write there.
-- Parameters: none.
SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY
