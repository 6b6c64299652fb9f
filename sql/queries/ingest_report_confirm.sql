-- Record that a download at fetched_at had exactly the stored content
-- (nothing else is written for it). Never moves backwards.
-- Parameters: report_kind, report_date, fetched_at.
INSERT INTO dlr.report_confirmations AS c (report_kind, report_date, confirmed_at)
VALUES (%(report_kind)s, %(report_date)s, %(fetched_at)s)
ON CONFLICT (report_kind, report_date) DO UPDATE
   SET confirmed_at = GREATEST(c.confirmed_at, EXCLUDED.confirmed_at)
