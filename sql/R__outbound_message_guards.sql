-- The live definition of the update guard of msg.outbound_message.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a function or a trigger here, never in a
-- new V file. The tables are made by V files; each trigger is restated below
-- the function it fires, in its live form (the V files that first created
-- it are history).

-- The last guard against bugs (set-based statements must still select only
-- legal transitions themselves): the whole transition table, identity,
-- money, text fingerprint and correlation evidence that never change once
-- written, body and recipient that change only by redaction or erasure,
-- and updated_at that moves only when something really changed.
CREATE OR REPLACE FUNCTION msg.outbound_message_before_update() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    requested_updated_at timestamptz := NEW.updated_at;
BEGIN
    IF NOT msg.is_legal_transition(OLD.state, NEW.state) THEN
        RAISE EXCEPTION 'illegal state transition on msg.outbound_message id=%: % -> %',
                        OLD.id, OLD.state, NEW.state
              USING ERRCODE = 'check_violation',
                    CONSTRAINT = 'outbound_message_state_transition',
                    TABLE = 'outbound_message', SCHEMA = 'msg';
    END IF;

    IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
       OR NEW.business_key IS DISTINCT FROM OLD.business_key
       OR NEW.attempt_key IS DISTINCT FROM OLD.attempt_key
       OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR NEW.campaign_id IS DISTINCT FROM OLD.campaign_id
       OR NEW.adopted_from IS DISTINCT FROM OLD.adopted_from THEN
        RAISE EXCEPTION 'msg.outbound_message id=%: tenant_id, business_key, attempt_key, created_at, campaign_id and adopted_from never change',
                        OLD.id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'outbound_message_identity_immutable',
                    TABLE = 'outbound_message', SCHEMA = 'msg';
    END IF;

    -- Billing follows the submission: what was billed stays billed.
    IF (OLD.cost IS NOT NULL AND NEW.cost IS DISTINCT FROM OLD.cost)
       OR (OLD.cost_currency IS NOT NULL AND NEW.cost_currency IS DISTINCT FROM OLD.cost_currency)
       OR (OLD.billable_units IS NOT NULL AND NEW.billable_units IS DISTINCT FROM OLD.billable_units)
       OR NEW.segments IS DISTINCT FROM OLD.segments THEN
        RAISE EXCEPTION 'msg.outbound_message id=%: segments, billable_units and cost are immutable once set',
                        OLD.id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'outbound_message_money_immutable',
                    TABLE = 'outbound_message', SCHEMA = 'msg';
    END IF;

    -- What a match rested on, and the text it was told apart by: rewriting
    -- either would change the grounds of a decision already applied.
    IF OLD.message_fingerprint IS NOT NULL AND NEW.message_fingerprint IS DISTINCT FROM OLD.message_fingerprint THEN
        RAISE EXCEPTION 'msg.outbound_message id=%: message_fingerprint is immutable once set', OLD.id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'outbound_message_fingerprint_immutable',
                    TABLE = 'outbound_message', SCHEMA = 'msg';
    END IF;
    IF OLD.correlation_evidence IS NOT NULL
       AND NEW.correlation_evidence IS DISTINCT FROM OLD.correlation_evidence THEN
        RAISE EXCEPTION 'msg.outbound_message id=%: correlation_evidence is immutable once set', OLD.id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'outbound_message_evidence_immutable',
                    TABLE = 'outbound_message', SCHEMA = 'msg';
    END IF;

    -- Two erasures are the only changes of the text and the number
    -- (docs/design.md#redaction-and-erasure), each once and for good: the body
    -- goes (its length kept) only from a final row or with its number, and
    -- the number becomes its marker only on a row no worker will send and
    -- none of whose receipts still needs the number to find it (a sent row
    -- without a msgId is matched by transaction + recipient or by
    -- reconstruction, both on the number).
    IF NEW.body IS DISTINCT FROM OLD.body OR NEW.body_length IS DISTINCT FROM OLD.body_length
       OR NEW.body_redacted_at IS DISTINCT FROM OLD.body_redacted_at THEN
        IF OLD.body IS NULL OR NEW.body IS NOT NULL
           OR NEW.body_length IS DISTINCT FROM char_length(OLD.body)
           OR NOT (NEW.state IN ('delivered', 'failed', 'rejected', 'expired', 'superseded')
                   OR NEW.recipient ~ '^erased:[0-9a-f]{16}$') THEN
            RAISE EXCEPTION 'msg.outbound_message id=%: a body only goes, once, from a final or erased row (% row)',
                            OLD.id, NEW.state
                  USING ERRCODE = 'check_violation', CONSTRAINT = 'outbound_message_body_redaction',
                        TABLE = 'outbound_message', SCHEMA = 'msg';
        END IF;
    END IF;
    IF NEW.recipient IS DISTINCT FROM OLD.recipient
       AND (OLD.recipient ~ '^erased:' OR NEW.recipient !~ '^erased:[0-9a-f]{16}$'
            OR NEW.state IN ('pending', 'claimed', 'sending', 'scheduled')
            OR (NEW.state IN ('submitted', 'unknown') AND NEW.provider_message_id IS NULL)) THEN
        RAISE EXCEPTION 'msg.outbound_message id=%: a recipient only becomes its erased marker, once, on a row not being sent or awaiting reconciliation (% row)',
                        OLD.id, NEW.state
              USING ERRCODE = 'check_violation', CONSTRAINT = 'outbound_message_recipient_erasure',
                    TABLE = 'outbound_message', SCHEMA = 'msg';
    END IF;

    -- Compare everything but updated_at. A statement that changes nothing
    -- keeps the old updated_at even if it set one; a real change keeps the
    -- statement's own value (the application clock) or falls back to now().
    -- queue_state (V73) is generated after this trigger, and NEW carries it
    -- as NULL here; it follows state, which the comparison sees.
    NEW.updated_at := OLD.updated_at;
    NEW.queue_state := OLD.queue_state;
    IF NEW IS DISTINCT FROM OLD THEN
        NEW.updated_at := CASE WHEN requested_updated_at IS DISTINCT FROM OLD.updated_at
                               THEN requested_updated_at ELSE now() END;
    END IF;
    RETURN NEW;
END;
$$;

-- The request-started step (claimed -> sending, updated_at moved, nothing
-- else changed) is the one update on every sent row's path that the function
-- above would pass without a word: it is a legal transition and touches no
-- guarded column. The WHEN clause, evaluated without calling the function,
-- lets exactly that through and nothing more: every column but state,
-- updated_at and the generated queue_state is compared (a test checks the
-- list against the table, so a new column cannot slip past).
CREATE OR REPLACE TRIGGER outbound_message_guard
    BEFORE UPDATE ON msg.outbound_message
    FOR EACH ROW
    WHEN (NOT (OLD.state = 'claimed' AND NEW.state = 'sending'
               AND NEW.updated_at IS DISTINCT FROM OLD.updated_at
               AND
               ROW(OLD.id, OLD.business_key, OLD.attempt_key, OLD.replaces_id, OLD.tenant_id, OLD.channel,
                   OLD.message_class, OLD.recipient, OLD.sender_id, OLD.body, OLD.encoding, OLD.segments,
                   OLD.template_id, OLD.dlt_entity_id, OLD.dlt_template_id, OLD.state_reason,
                   OLD.attempt_count, OLD.provider_txn_id, OLD.provider_message_id, OLD.provider_campaign_id,
                   OLD.provider_status_code, OLD.provider_cause, OLD.final_status,
                   OLD.conflicting_final_status, OLD.created_at, OLD.claimed_at, OLD.submitted_at,
                   OLD.delivered_at, OLD.reconciled_at, OLD.scheduled_for, OLD.expires_at,
                   OLD.billable_units, OLD.cost, OLD.cost_currency, OLD.correlation_result,
                   OLD.correlation_window_ms, OLD.message_fingerprint, OLD.provider_created_at,
                   OLD.correlation_evidence, OLD.body_length, OLD.body_redacted_at,
                   OLD.campaign_id, OLD.adopted_from)
                   IS NOT DISTINCT FROM
               ROW(NEW.id, NEW.business_key, NEW.attempt_key, NEW.replaces_id, NEW.tenant_id, NEW.channel,
                   NEW.message_class, NEW.recipient, NEW.sender_id, NEW.body, NEW.encoding, NEW.segments,
                   NEW.template_id, NEW.dlt_entity_id, NEW.dlt_template_id, NEW.state_reason,
                   NEW.attempt_count, NEW.provider_txn_id, NEW.provider_message_id, NEW.provider_campaign_id,
                   NEW.provider_status_code, NEW.provider_cause, NEW.final_status,
                   NEW.conflicting_final_status, NEW.created_at, NEW.claimed_at, NEW.submitted_at,
                   NEW.delivered_at, NEW.reconciled_at, NEW.scheduled_for, NEW.expires_at,
                   NEW.billable_units, NEW.cost, NEW.cost_currency, NEW.correlation_result,
                   NEW.correlation_window_ms, NEW.message_fingerprint, NEW.provider_created_at,
                   NEW.correlation_evidence, NEW.body_length, NEW.body_redacted_at,
                   NEW.campaign_id, NEW.adopted_from)))
    EXECUTE FUNCTION msg.outbound_message_before_update();
