-- The reconciliation's work tables (docs/design.md "Work tables and the
-- second core"): each run creates its staged events, candidate pairs and
-- decisions here as unlogged tables and drops them before it commits, so
-- the schema is empty between runs. Temporary tables, which the run used
-- before, live in the backend's own buffers, where no parallel worker can
-- read them; these can be scanned, sorted and joined by two processes.
CREATE SCHEMA reconcile_work;
COMMENT ON SCHEMA reconcile_work IS
    'The reconciliation''s unlogged work tables, created and dropped inside its transaction (empty between runs)';
