-- The month partition of msg.outbound_message that a row created at `at`
-- goes into, created when it is missing. Upkeep normally makes partitions
-- ahead; a virtual clock may be elsewhere. The cheap existence check comes
-- first, so the usual call takes no lock (msg.ensure_partitions serialises
-- partition creation).
-- Parameters: partition (its schema-qualified name), at.
SELECT CASE WHEN to_regclass(%(partition)s) IS NULL THEN msg.ensure_partitions(%(at)s, 0) END
