-- Closed vocabularies of the outbound message model (values equal
-- sms_pipeline.core.states) and the one definition of a "clean" provider id.

CREATE TYPE msg.message_state AS ENUM (
    'pending',      -- intent recorded, nothing sent
    'claimed',      -- a worker owns it; the send may be in flight
    'submitted',    -- the provider accepted it: billed from here
    'rejected',     -- the provider refused it: not billed
    'delivered',    -- a final receipt says the handset has it
    'failed',       -- a final receipt says it never will (or: proved never submitted)
    'unknown',      -- the outcome cannot be known yet; never re-sent blind
    'expired',      -- validity passed (queued too long, or no receipt in time)
    'superseded'    -- an operator replayed it as a new row
);

CREATE TYPE msg.message_channel AS ENUM ('sms', 'whatsapp', 'voice', 'rcs', 'telegram');

CREATE TYPE msg.correlation_result AS ENUM ('matched', 'not_found', 'ambiguous');

-- The database twin of sms_pipeline.core.ids.clean_id: NULL, or an opaque
-- string that is not a placeholder ("0" means "no id", not an id) and holds no
-- whitespace or control characters (those mean the field was mangled).
CREATE FUNCTION msg.is_clean_provider_id(p_value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_value IS NULL
    OR (p_value NOT IN ('', '0', 'null', 'NULL', '-')
        AND p_value !~ '[[:space:][:cntrl:]]');

-- The transition table of design.md. Same-state writes are not transitions
-- and are always allowed (the no-op guard handles them).
CREATE FUNCTION msg.is_legal_transition(p_from msg.message_state, p_to msg.message_state)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_from = p_to OR CASE p_from
    WHEN 'pending'   THEN p_to IN ('claimed', 'expired')
    WHEN 'claimed'   THEN p_to IN ('pending', 'submitted', 'rejected', 'unknown')
    WHEN 'submitted' THEN p_to IN ('delivered', 'failed', 'expired')
    WHEN 'unknown'   THEN p_to IN ('submitted', 'failed')
    WHEN 'failed'    THEN p_to = 'superseded'
    WHEN 'rejected'  THEN p_to = 'superseded'
    WHEN 'expired'   THEN p_to = 'superseded'
    ELSE false  -- delivered, superseded: nothing leaves them
END;
