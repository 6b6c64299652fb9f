-- Fan-out of a provider-side campaign's answer, second half
-- (docs/design.md#provider-side-campaigns): the rows the provider took with a
-- scheduleTime (the refused numbers were written `rejected` just before)
-- become `scheduled`, each with its campaignId and its own transaction's uuId
-- (the provider splits a request into transactions of at most 1,000
-- recipients, in request order: sms_pipeline.send.campaigns maps them). Not
-- billed: nothing is sent until its time; claimed_at stays, submitted_at and
-- cost stay NULL (campaign_promote.sql bills them then).
-- Conditional on `sending`: the same answer applied twice matches nothing.
-- Parameters: ids and transaction_ids (the uuId of each id, same order),
-- created_ats (the rows' partition keys), campaign_id, status_code (the
-- answer's statusCode), now.
-- Returns the rows moved.
UPDATE msg.outbound_message m
   SET state = 'scheduled',
       state_reason = NULL,
       provider_txn_id = t.transaction_id,
       provider_campaign_id = %(campaign_id)s,
       provider_status_code = %(status_code)s,
       updated_at = %(now)s::timestamptz
  FROM unnest(%(ids)s::bigint[], %(transaction_ids)s::text[]) AS t (id, transaction_id)
 WHERE m.id = t.id
   AND m.created_at = ANY(%(created_ats)s::timestamptz[])  -- prunes partitions
   AND m.state = 'sending'
RETURNING m.id, m.attempt_key
