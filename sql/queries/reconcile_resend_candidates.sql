-- Rows of one provider day proved never submitted (failed / not_submitted,
-- not superseded yet) that reconciliation re-sends
-- (docs/design.md#re-send-after-proof): their class is one of `classes`
-- (never otp) and their message was created after `created_after` (the
-- reconciliation's now minus SMS_PIPELINE_RESEND_MAX_AGE_H), measured on the
-- chain's first attempt, so re-sends cannot chain past the limit. The
-- marts' day, COALESCE(msg.attempt_at(...), created_at), equals the proof's
-- attempt time for these rows (claimed, never submitted; a handed-over
-- campaign row's is its scheduled_for, V80) and is the expression of
-- outbound_message_attempt_at_idx. A row without a body (redacted, or its
-- recipient erased) is never re-sent: the copy would carry a NULL body, or a
-- marker for a number. A campaign's row (campaign_id set) is never re-sent
-- automatically: a campaign is sent at its time, and a late copy is not what
-- its owner asked for (docs/design.md#re-send-after-proof); its proved
-- failures stay failed, to be seen in `campaigns show`.
-- Parameters: day_start, day_end, classes, created_after. Returns (id, created_at), by id.
WITH RECURSIVE proved AS (
    SELECT m.id, m.created_at, m.replaces_id
      FROM msg.outbound_message m
     WHERE COALESCE(msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for), m.created_at)
           >= %(day_start)s::timestamptz
       AND COALESCE(msg.attempt_at(m.submitted_at, m.claimed_at, m.scheduled_for), m.created_at)
           < %(day_end)s::timestamptz
       AND m.state = 'failed'
       AND m.state_reason = 'not_submitted'
       AND m.message_class = ANY(%(classes)s::text[])
       AND m.message_class <> 'otp'
       AND m.created_at > %(created_after)s::timestamptz
       AND m.body IS NOT NULL
       AND m.campaign_id IS NULL
       AND m.adopted_from IS NULL
),
-- Earlier attempts of the re-sent ones (rare): back through replaces_id.
ancestors AS (
    SELECT p.id, p.created_at, a.created_at AS ancestor_created_at, a.replaces_id AS next_id
      FROM proved p
      JOIN msg.outbound_message a ON a.id = p.replaces_id
    UNION ALL
    SELECT x.id, x.created_at, a.created_at, a.replaces_id
      FROM ancestors x
      JOIN msg.outbound_message a ON a.id = x.next_id
)
SELECT p.id, p.created_at
  FROM proved p
 WHERE NOT EXISTS (SELECT 1 FROM ancestors x
                    WHERE x.id = p.id AND x.created_at = p.created_at
                      AND x.ancestor_created_at <= %(created_after)s::timestamptz)
 ORDER BY p.id
