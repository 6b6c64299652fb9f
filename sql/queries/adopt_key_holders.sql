-- Which of these business keys of a tenant are held already, by which row:
-- its adopted_from (the legacy row it was adopted from; NULL: a row of ours)
-- and its created_at. One index probe per key: the correlated subquery looks
-- the holder up by its primary key with the partition pruned at run time (a
-- join on (id, created_at) is planned as a hash join reading every partition).
-- Parameters: tenant_id, business_keys (text[]).
-- Returns (business_key, adopted_from, created_at).
SELECT k.business_key,
       (SELECT m.adopted_from
          FROM msg.outbound_message m
         WHERE m.id = k.message_id AND m.created_at = k.message_created_at
         LIMIT 1),
       k.message_created_at
  FROM msg.business_key_registry k
 WHERE k.tenant_id = %(tenant_id)s
   AND k.business_key = ANY(%(business_keys)s::text[])
