-- One batch of body redaction (docs/design.md#redaction-and-erasure): the
-- bodies of final rows created before `before` go, their length kept (the
-- fingerprint, segments, units and cost stay). Oldest first through
-- outbound_message_unredacted_idx; rows another transaction holds are left
-- for the next run.
-- Parameters: before, now (application clock), batch_size. Returns the rows redacted.
WITH batch AS (
    SELECT id, created_at
      FROM msg.outbound_message
     WHERE body IS NOT NULL
       AND created_at < %(before)s::timestamptz
       AND state IN ('delivered', 'failed', 'rejected', 'expired', 'superseded')
     ORDER BY created_at
     LIMIT %(batch_size)s
       FOR UPDATE SKIP LOCKED
), redacted AS (
    UPDATE msg.outbound_message m
       SET body = NULL, body_length = char_length(m.body), body_redacted_at = %(now)s::timestamptz,
           updated_at = %(now)s::timestamptz
      FROM batch b
     WHERE m.id = b.id AND m.created_at = b.created_at
    RETURNING 1
)
SELECT count(*) FROM redacted
