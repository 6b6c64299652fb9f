-- Record a report load, in the transaction that replaced its rows. Only run
-- when the checksum changed: an unchanged download writes nothing at all.
-- Parameters: report_kind, report_date, checksum, rows, bytes, fetched_at, loaded_at,
-- fingerprint_key_id.
INSERT INTO dlr.report_checkpoints AS c
       (report_kind, report_date, checksum, rows, bytes, fetched_at, loaded_at, fingerprint_key_id)
VALUES (%(report_kind)s, %(report_date)s, %(checksum)s, %(rows)s, %(bytes)s,
        %(fetched_at)s, %(loaded_at)s, %(fingerprint_key_id)s)
ON CONFLICT (report_kind, report_date) DO UPDATE
   SET checksum   = EXCLUDED.checksum,
       rows       = EXCLUDED.rows,
       bytes      = EXCLUDED.bytes,
       fetched_at = EXCLUDED.fetched_at,
       loaded_at  = EXCLUDED.loaded_at,
       fingerprint_key_id = EXCLUDED.fingerprint_key_id
