-- The campaigns a person's word names: the one of that name, or of that id
-- (a name wins over an id; two answers mean the word is both, and the
-- caller asks for the other).
-- Parameters: key (a campaign's name or id, as typed).
SELECT id
  FROM msg.campaign
 WHERE name = %(key)s OR id::text = %(key)s
 ORDER BY name = %(key)s DESC, id
 LIMIT 2
