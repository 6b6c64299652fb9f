-- Whether a row was handed to the provider ahead of its time (a provider-side
-- campaign's: claimed, then sent by the provider at scheduled_for), defined
-- once for every query that treats such a row differently (how far
-- correlation looks, when its proof may come, the campaign views); V80's
-- msg.attempt_at already counts such a row from scheduled_for.
--
-- A plain IMMUTABLE SQL expression, not STRICT, so the planner inlines it;
-- NULL when either time is missing, as the comparison it stands for.
CREATE FUNCTION msg.handed_over(claimed_at timestamptz, scheduled_for timestamptz)
    RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT scheduled_for > claimed_at
$$;
