-- Drops every work table the reconciliation made in reconcile_work (sql/V86),
-- before its transaction commits: unlogged tables have no ON COMMIT DROP,
-- and the next run creates them again. A run that fails rolls back, and its
-- tables with it.
-- Parameters: none.
DO $$
DECLARE
    tables text;
BEGIN
    SELECT string_agg(c.oid::regclass::text, ', ')
      INTO tables
      FROM pg_class c
     WHERE c.relnamespace = 'reconcile_work'::regnamespace
       AND c.relkind = 'r';
    IF tables IS NOT NULL THEN
        EXECUTE 'DROP TABLE ' || tables;
    END IF;
END
$$
