-- The live definition of the outbound message model's two rules, used by
-- CHECK constraints and the update guard.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a body here, never in a new V file; the
-- tables and types these functions use are made by V files.

-- The database twin of sms_pipeline.core.ids.clean_id: NULL, or an opaque
-- string that is not a placeholder ("0" means "no id", not an id) and holds no
-- whitespace or control characters (those mean the field was mangled). Every
-- table that stores provider ids checks them with it (*_clean constraints).
CREATE OR REPLACE FUNCTION msg.is_clean_provider_id(p_value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_value IS NULL
    OR (p_value NOT IN ('', '0', 'null', 'NULL', '-')
        AND p_value !~ '[[:space:][:cntrl:]]');

-- The state machine's transition table (sms_pipeline.core.states
-- LEGAL_TRANSITIONS). Same-state writes are not transitions and are always
-- allowed (the no-op guard handles them). Used by
-- msg.outbound_message_before_update.
CREATE OR REPLACE FUNCTION msg.is_legal_transition(p_from msg.message_state, p_to msg.message_state)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_from = p_to OR CASE p_from
    WHEN 'pending'   THEN p_to IN ('claimed', 'expired')
    WHEN 'claimed'   THEN p_to IN ('pending', 'sending', 'expired')
    WHEN 'sending'   THEN p_to IN ('submitted', 'rejected', 'unknown', 'pending', 'scheduled')
    WHEN 'scheduled' THEN p_to IN ('submitted', 'expired', 'unknown')
    WHEN 'submitted' THEN p_to IN ('delivered', 'failed', 'expired')
    WHEN 'unknown'   THEN p_to IN ('submitted', 'failed')
    WHEN 'failed'    THEN p_to = 'superseded'
    WHEN 'rejected'  THEN p_to = 'superseded'
    WHEN 'expired'   THEN p_to = 'superseded'
    ELSE false  -- delivered, superseded: nothing leaves them
END;
