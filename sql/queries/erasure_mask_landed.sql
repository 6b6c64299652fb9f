-- The loads' tombstone hook (docs/design.md#redaction-and-erasure): in the
-- load's transaction, after its rows are written, the rows of an erased
-- msgId take its marker instead of the number (dlr.mask_erased_rows).
-- Parameters: kind ('day', 'getdlr' or 'txn'), scope_date (the report day;
-- NULL for 'txn'), transaction_id (NULL unless 'txn'). Returns the rows masked.
SELECT dlr.mask_erased_rows(%(kind)s, %(scope_date)s::date, %(transaction_id)s::text)
