-- Rows of a request whose fate cannot be known (read time-out, reset after
-- writing, HTTP 5xx, unparseable answer; or recipients an accepted answer
-- names in neither of its lists) become `unknown`: possibly billed, never
-- re-sent blind; only evidence from the reports resolves them. An accepted
-- answer's transaction id and status code are kept: the reports correlate by
-- transaction + recipient; so is a provider-side campaign's campaignId (the
-- evidence a person needs when its transactions could not be mapped).
-- Conditional on `sending`: an answer applied twice matches nothing.
-- The text fingerprint of a request whose text exists only now (an OTP's
-- code) is kept: reconstruction may be all that resolves the row.
-- Parameters: ids, created_ats (the rows' partition keys), recipients (text[]
-- or NULL = every row), reason, transaction_id, campaign_id, status_code,
-- fingerprint (bytea or NULL = keep intake's), now.
-- Returns the rows moved.
UPDATE msg.outbound_message
   SET state = 'unknown',
       state_reason = %(reason)s,
       provider_txn_id = coalesce(%(transaction_id)s, provider_txn_id),
       provider_campaign_id = coalesce(%(campaign_id)s, provider_campaign_id),
       provider_status_code = coalesce(%(status_code)s, provider_status_code),
       message_fingerprint = coalesce(%(fingerprint)s::bytea, message_fingerprint),
       updated_at = %(now)s::timestamptz
 WHERE id = ANY(%(ids)s::bigint[])
   AND created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND state = 'sending'
   AND (%(recipients)s::text[] IS NULL OR recipient = ANY(%(recipients)s::text[]))
RETURNING id, attempt_key
