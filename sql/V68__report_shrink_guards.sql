-- Never load a smaller report over a bigger one (issue 17): a provider's day
-- report and its day summary only ever grow, so a re-fetch that has fewer
-- rows or units than what is stored is the provider's fault or ours, never
-- news. The guards themselves (functions and triggers) live in
-- R__report_guards.sql; this file adds what they compare.
--
-- The provider summary had no record of a day's total: its fetch marker was
-- deleted and inserted again with every fetch (the day's sender rows going by
-- cascade), so nothing was there to compare a new fetch with. The marker now
-- keeps the day's units and is updated in place (marts_provider_summary_fetched).

ALTER TABLE dlr.provider_summary_fetch ADD COLUMN units BIGINT;

UPDATE dlr.provider_summary_fetch f
   SET units = COALESCE((SELECT sum(s.units) FROM dlr.provider_summary s WHERE s.day = f.day), 0);

ALTER TABLE dlr.provider_summary_fetch
    ALTER COLUMN units SET NOT NULL,
    ADD CONSTRAINT provider_summary_fetch_units_check CHECK (units >= 0);

COMMENT ON COLUMN dlr.provider_summary_fetch.units IS
    'The day''s units over all sender rows, as fetched; never shrinks (trigger provider_summary_fetch_never_shrinks).';
