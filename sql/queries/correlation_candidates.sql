-- Candidates for correlation by reconstruction, for a receipt that has no
-- transaction id to go by (OTP; rows that went `unknown` before their
-- response was stored): same recipient, same sender, attempt time within the
-- window around the receipt's submit time, both ends included (access
-- pattern 4: outbound_message_correlate_idx). One candidate = matched, none =
-- not_found, two or more = ambiguous; never pick one of several.
-- Parameters: recipient, sender_id, window_start, window_end.
SELECT id, created_at, state, claimed_at, submitted_at,
       COALESCE(submitted_at, claimed_at) AS attempted_at
  FROM msg.outbound_message
 WHERE provider_txn_id IS NULL
   AND state IN ('submitted', 'unknown')
   AND recipient = %(recipient)s
   AND sender_id = %(sender_id)s
   AND COALESCE(submitted_at, claimed_at) >= %(window_start)s::timestamptz
   AND COALESCE(submitted_at, claimed_at) <= %(window_end)s::timestamptz
 ORDER BY COALESCE(submitted_at, claimed_at), id
