-- Rows awaiting evidence (`submitted` without a final receipt, `unknown`)
-- whose attempt time lies in a window, e.g. one provider day (access
-- pattern 3: outbound_message_open_idx). Attempt time is submitted_at, else
-- claimed_at. The window is half-open.
-- Parameters: attempted_from, attempted_before.
SELECT id, created_at, state, tenant_id, recipient, sender_id,
       provider_txn_id, provider_message_id, claimed_at, submitted_at,
       COALESCE(submitted_at, claimed_at) AS attempted_at
  FROM msg.outbound_message
 WHERE state IN ('submitted', 'unknown')
   AND COALESCE(submitted_at, claimed_at) >= %(attempted_from)s::timestamptz
   AND COALESCE(submitted_at, claimed_at) < %(attempted_before)s::timestamptz
 ORDER BY COALESCE(submitted_at, claimed_at), id
