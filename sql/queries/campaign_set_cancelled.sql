-- A cancel that reached every row: the campaign is marked cancelled, once.
-- Parameters: id, now.
UPDATE msg.campaign
   SET cancelled_at = %(now)s, updated_at = %(now)s
 WHERE id = %(id)s AND cancelled_at IS NULL
