-- The live definition of the receipt-push inbox's guards (V75,
-- docs/design.md#receipt-push). Repeatable: change a function or a trigger
-- here, never in a new V file.
--
-- A stored push is evidence: what the provider said never changes. The only
-- write after the insert is the reconciliation's mark, once (and an erased
-- number's marker, by `messages forget`); a row leaves
-- only after it was reconciled (the purge). Refusals are check_violation with
-- the trigger's name as constraint name.
CREATE OR REPLACE FUNCTION dlr.receipt_push_inbox_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.reconciled_at IS NULL THEN
            RAISE EXCEPTION 'receipt push %: deleting a push that was never reconciled is refused',
                            OLD.provider_message_id
                  USING ERRCODE = 'check_violation', CONSTRAINT = 'receipt_push_inbox_guard',
                        TABLE = 'receipt_push_inbox', SCHEMA = 'dlr';
        END IF;
        RETURN OLD;
    END IF;
    -- `messages forget` (docs/design.md#redaction-and-erasure): the number, and nothing else, becomes its marker.
    IF NEW.recipient IS DISTINCT FROM OLD.recipient AND OLD.recipient !~ '^erased:'
       AND NEW.recipient ~ '^erased:[0-9a-f]{16}$'
       AND (NEW.provider_message_id, NEW.error_code, NEW.provider_txn_id, NEW.provider_submit_at,
            NEW.provider_done_at, NEW.report_date, NEW.received_at, NEW.reconciled_at)
           IS NOT DISTINCT FROM
           (OLD.provider_message_id, OLD.error_code, OLD.provider_txn_id, OLD.provider_submit_at,
            OLD.provider_done_at, OLD.report_date, OLD.received_at, OLD.reconciled_at) THEN
        RETURN NEW;
    END IF;
    IF OLD.reconciled_at IS NOT NULL
       OR NEW.reconciled_at IS NULL
       OR (NEW.provider_message_id, NEW.error_code, NEW.provider_txn_id, NEW.recipient, NEW.provider_submit_at,
           NEW.provider_done_at, NEW.report_date, NEW.received_at)
          IS DISTINCT FROM
          (OLD.provider_message_id, OLD.error_code, OLD.provider_txn_id, OLD.recipient, OLD.provider_submit_at,
           OLD.provider_done_at, OLD.report_date, OLD.received_at) THEN
        RAISE EXCEPTION 'receipt push %: a stored push only gets its reconciled time, once', OLD.provider_message_id
              USING ERRCODE = 'check_violation', CONSTRAINT = 'receipt_push_inbox_guard',
                    TABLE = 'receipt_push_inbox', SCHEMA = 'dlr';
    END IF;
    RETURN NEW;
END;
$$;

CREATE OR REPLACE TRIGGER receipt_push_inbox_guard
    BEFORE UPDATE OR DELETE ON dlr.receipt_push_inbox
    FOR EACH ROW EXECUTE FUNCTION dlr.receipt_push_inbox_guard();

-- Retention: reconciled pushes older than p_before go (their receipt events
-- stay in dlr.delivery_receipts); returns how many.
CREATE OR REPLACE FUNCTION dlr.purge_receipt_push_inbox(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.receipt_push_inbox WHERE reconciled_at < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;

-- Retention: refused pushes received before p_before go (a person had the
-- orphans' 30 days to look; the provider retries a refused push for a day,
-- adding a row per try); returns how many.
CREATE OR REPLACE FUNCTION dlr.purge_receipt_push_rejects(p_before timestamptz) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    purged bigint;
BEGIN
    DELETE FROM dlr.receipt_push_rejects WHERE received_at < p_before;
    GET DIAGNOSTICS purged = ROW_COUNT;
    RETURN purged;
END;
$$;
