-- A cancel that reached every row: the campaign is marked cancelled, once.
-- cancelled_at says the cancel finished (nothing of the campaign goes any
-- more), not that nothing went: rows sent before it (submitted_at set) stay
-- billed, and list/show call such a campaign "partly sent"
-- (docs/design.md#cancel-and-reschedule).
-- Parameters: id, now.
UPDATE msg.campaign
   SET cancelled_at = %(now)s, updated_at = %(now)s
 WHERE id = %(id)s AND cancelled_at IS NULL
