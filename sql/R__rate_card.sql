-- The live definition of the rate card's overlap check and price lookup.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function or a trigger here, never in a
-- new V file. The tables are made by V files; each trigger is restated below
-- the function it fires, in its live form (the V files that first created
-- it are history).

-- At most one price applies to a (tenant, channel, class) on any day, whatever
-- the currency: two prices for one moment would make the cost a guess. A
-- trigger, not an EXCLUDE constraint: btree_gist is not available on every
-- server, the embedded one included.
CREATE OR REPLACE FUNCTION msg.rate_card_refuse_overlap() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    other msg.rate_card;
BEGIN
    -- Serialise writers of one (tenant, channel, class): two concurrent
    -- inserts could each miss the other's row otherwise.
    PERFORM pg_advisory_xact_lock(hashtextextended(
        concat_ws(chr(31), 'msg.rate_card', NEW.tenant_id, NEW.channel, NEW.message_class), 0));
    SELECT * INTO other
      FROM msg.rate_card r
     WHERE r.tenant_id = NEW.tenant_id AND r.channel = NEW.channel
       AND r.message_class = NEW.message_class AND r.id <> NEW.id
       AND daterange(r.valid_from, r.valid_to) && daterange(NEW.valid_from, NEW.valid_to)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'rate card for tenant %, % %: validity [%, %) overlaps row id=% [%, %)',
                        NEW.tenant_id, NEW.channel, NEW.message_class,
                        NEW.valid_from, coalesce(NEW.valid_to::text, 'open'),
                        other.id, other.valid_from, coalesce(other.valid_to::text, 'open')
              USING ERRCODE = 'exclusion_violation', CONSTRAINT = 'rate_card_no_overlap',
                    TABLE = 'rate_card', SCHEMA = 'msg';
    END IF;
    RETURN NULL;
END;
$$;

-- AFTER, so NEW.id is the stored row's and a concurrent writer sees it once
-- it holds the lock. A constraint trigger has no CREATE OR REPLACE: dropped
-- and created again, in this file's transaction.
DROP TRIGGER IF EXISTS rate_card_no_overlap ON msg.rate_card;
CREATE CONSTRAINT TRIGGER rate_card_no_overlap
    AFTER INSERT OR UPDATE ON msg.rate_card
    FOR EACH ROW EXECUTE FUNCTION msg.rate_card_refuse_overlap();

-- The price of one unit for a tenant, channel and class at an instant; the
-- instant's day is taken in p_time_zone (pass the provider's zone when the
-- card's days are provider-local). No row = no price: the cost stays NULL
-- and is counted as unpriced, never 0.
CREATE OR REPLACE FUNCTION msg.unit_price(
    p_tenant_id text, p_channel msg.message_channel, p_message_class text,
    p_at timestamptz, p_time_zone text DEFAULT 'UTC')
RETURNS TABLE (unit_price numeric(12,4), currency char(3))
LANGUAGE sql STABLE
AS $$
    SELECT r.unit_price, r.currency
      FROM msg.rate_card r
     WHERE r.tenant_id = p_tenant_id AND r.channel = p_channel AND r.message_class = p_message_class
       AND r.valid_from <= (p_at AT TIME ZONE p_time_zone)::date
       AND (r.valid_to IS NULL OR r.valid_to > (p_at AT TIME ZONE p_time_zone)::date)
$$;
