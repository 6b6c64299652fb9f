-- What makes `messages forget` refuse before it changes anything: the
-- recipient's rows a worker or the provider holds (claimed, its request under
-- way, or scheduled by a provider-side campaign: still to be sent) and its
-- sent rows not yet reconciled (submitted or unknown without a msgId). Only
-- reconciliation writes the msgId, matching by transaction + recipient or by
-- reconstruction, both on the number: erased first, such a row's receipts
-- would find nothing and keep the number as orphans. Found through
-- msg.message_lookup's recipient index, then each message by its primary key.
-- Parameters: recipient (E.164 digits), tenant (NULL: every tenant).
-- Returns (held, awaiting, latest_attempt_at: the awaiting rows' latest attempt time).
SELECT count(*) FILTER (WHERE m.state IN ('claimed', 'sending', 'scheduled')) AS held,
       count(*) FILTER (WHERE m.state IN ('submitted', 'unknown') AND m.provider_message_id IS NULL) AS awaiting,
       max(COALESCE(msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for), m.created_at))
           FILTER (WHERE m.state IN ('submitted', 'unknown') AND m.provider_message_id IS NULL) AS latest_attempt_at
  FROM msg.message_lookup l
  JOIN msg.outbound_message m ON m.id = l.message_id AND m.created_at = l.message_created_at
 WHERE l.recipient = %(recipient)s
   AND (%(tenant)s::text IS NULL OR l.tenant_id = %(tenant)s::text)
