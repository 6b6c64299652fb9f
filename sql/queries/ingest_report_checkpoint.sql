-- The checkpoint of one fetched report: what was last loaded for a kind
-- ('day' zip, 'getdlr' intraday pull) and provider-local date. No row: never
-- loaded.
-- fingerprint_key_id: the text key the stored rows were fingerprinted with
-- (NULL before fingerprints): a load under another key is not a no-op.
-- Parameters: report_kind, report_date.
SELECT checksum, rows, bytes, fetched_at, loaded_at, fingerprint_key_id
  FROM dlr.report_checkpoints
 WHERE report_kind = %(report_kind)s
   AND report_date = %(report_date)s
