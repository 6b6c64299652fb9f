-- The staged day report into its report date's partition of
-- dlr.day_report_rows: the provider's texts as they are ('' for an empty
-- value), the line number in input order, the times and the message's
-- fingerprint looked up from what Python computed once per distinct text
-- (day_report_times, day_report_fingerprints). The delivery time takes its
-- second reading when the first would precede the submit time and the second
-- does not (ingest.times.consistent_done_time).
-- Identifiers: partition (from ingest_day_report_partition).
-- Parameters: report_date.
INSERT INTO {partition} (report_date, line_no, msg_id, transaction_id, mobile, sender_name, msg_type,
                         submit_time_local, delivery_time_local, status, cause, error_code, units,
                         message_fingerprint, provider_submit_at, provider_done_at)
SELECT %(report_date)s, s.line_no, COALESCE(s.msg_id, ''), COALESCE(s.transaction_id, ''),
       COALESCE(s.mobile, ''), COALESCE(s.sender, ''), COALESCE(s.msg_type, ''),
       COALESCE(s.submit_time, ''), COALESCE(s.delivery_time, ''), COALESCE(s.status, ''),
       COALESCE(s.cause, ''), COALESCE(s.error_code, ''), COALESCE(s.units, ''),
       f.fingerprint, submitted.first_at,
       CASE WHEN done.first_at < submitted.first_at AND done.later_at >= submitted.first_at
            THEN done.later_at ELSE done.first_at END
  FROM day_report_staging s
  LEFT JOIN day_report_times submitted ON submitted.local_text = s.submit_time
  LEFT JOIN day_report_times done ON done.local_text = s.delivery_time
  LEFT JOIN day_report_fingerprints f ON f.message = s.message
