-- One row per recipient per billed attempt (seed 000), partitioned by month of
-- created_at (UTC). Global uniqueness of the business key and of the provider
-- msgId lives in registries (V5); the guards are in V4, the indexes in V6.

CREATE TABLE msg.outbound_message (
    -- identity
    id                      BIGINT GENERATED ALWAYS AS IDENTITY,
    business_key            TEXT        NOT NULL,
    attempt_key             UUID        NOT NULL DEFAULT gen_random_uuid(),
    replaces_id             BIGINT,     -- the superseded attempt this row replays

    -- routing
    tenant_id               TEXT        NOT NULL,
    channel                 msg.message_channel NOT NULL,
    message_class           TEXT        NOT NULL,
    recipient               TEXT        NOT NULL,   -- normalised, digits only, no plus
    sender_id               TEXT,

    -- content
    body                    TEXT        NOT NULL,   -- for OTP the template, never the code
    encoding                TEXT        NOT NULL,
    segments                SMALLINT    NOT NULL,
    template_id             TEXT,                   -- our template id (part of the business key)
    dlt_entity_id           TEXT,
    dlt_template_id         TEXT,

    -- state machine
    state                   msg.message_state NOT NULL DEFAULT 'pending',
    state_reason            TEXT,                   -- our classification
    attempt_count           SMALLINT    NOT NULL DEFAULT 0,

    -- provider identity: TEXT, nullable, never a placeholder
    provider_txn_id         TEXT,                   -- one per request
    provider_message_id     TEXT,                   -- one per recipient
    provider_campaign_id    TEXT,                   -- one per campaign
    provider_status_code    TEXT,
    provider_cause          TEXT,                   -- their words, verbatim
    final_status            TEXT,                   -- SMPP word of the applied final receipt
    conflicting_final_status TEXT,                  -- a later final that disagreed (kept, not applied)

    -- clocks (all UTC instants)
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    claimed_at              TIMESTAMPTZ,
    submitted_at            TIMESTAMPTZ,
    delivered_at            TIMESTAMPTZ,
    reconciled_at           TIMESTAMPTZ,
    scheduled_for           TIMESTAMPTZ,
    expires_at              TIMESTAMPTZ,

    -- money: written at submission, immutable afterwards (V4)
    billable_units          SMALLINT,
    cost                    NUMERIC(12,4),
    cost_currency           CHAR(3),

    -- correlation (three-valued) and the window it used
    correlation_result      msg.correlation_result,
    correlation_window_ms   INTEGER,

    -- audit
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now(),

    PRIMARY KEY (id, created_at),

    CONSTRAINT outbound_message_class_check
        CHECK (message_class IN ('otp', 'transactional', 'promotional')),
    CONSTRAINT outbound_message_encoding_check CHECK (encoding IN ('GSM7', 'UCS2')),
    CONSTRAINT outbound_message_segments_check CHECK (segments > 0),
    CONSTRAINT outbound_message_body_check CHECK (body <> ''),
    CONSTRAINT outbound_message_recipient_check CHECK (recipient <> ''),
    CONSTRAINT outbound_message_business_key_check CHECK (business_key <> ''),
    CONSTRAINT outbound_message_tenant_check CHECK (tenant_id <> ''),
    CONSTRAINT outbound_message_attempt_count_check CHECK (attempt_count >= 0),
    CONSTRAINT outbound_message_billable_units_check CHECK (billable_units >= 0),
    CONSTRAINT outbound_message_cost_check CHECK (cost >= 0),
    CONSTRAINT outbound_message_cost_currency_check CHECK (cost_currency ~ '^[A-Z]{3}$'),
    CONSTRAINT outbound_message_cost_has_currency_check CHECK ((cost IS NULL) = (cost_currency IS NULL)),
    CONSTRAINT outbound_message_correlation_window_check CHECK (correlation_window_ms >= 0),

    -- "0", "" and friends mean "absent": they are stored as NULL, never as ids
    CONSTRAINT outbound_message_provider_txn_id_clean CHECK (msg.is_clean_provider_id(provider_txn_id)),
    CONSTRAINT outbound_message_provider_message_id_clean CHECK (msg.is_clean_provider_id(provider_message_id)),
    CONSTRAINT outbound_message_provider_campaign_id_clean CHECK (msg.is_clean_provider_id(provider_campaign_id)),
    CONSTRAINT outbound_message_dlt_entity_id_clean CHECK (msg.is_clean_provider_id(dlt_entity_id)),
    CONSTRAINT outbound_message_dlt_template_id_clean CHECK (msg.is_clean_provider_id(dlt_template_id)),

    -- What the state machine guarantees about the clocks and the bill:
    -- a claim records when; a row that reached the provider records when and
    -- is billed at that moment (unknown -> failed by proof of non-submission
    -- never gets submitted_at, so it is not billed).
    CONSTRAINT outbound_message_claimed_at_check
        CHECK (state <> 'claimed' OR claimed_at IS NOT NULL),
    CONSTRAINT outbound_message_submitted_at_check
        CHECK (state NOT IN ('submitted', 'delivered') OR submitted_at IS NOT NULL),
    CONSTRAINT outbound_message_billed_at_submission_check
        CHECK (submitted_at IS NULL OR billable_units IS NOT NULL)
) PARTITION BY RANGE (created_at);

COMMENT ON TABLE msg.outbound_message IS
    'One row per recipient per billed attempt. Insert through this parent only; '
    'monthly partitions msg.outbound_message_YYYY_MM (UTC) come from msg.ensure_partitions.';


-- Create the monthly partition <schema of parent>.<prefix>_YYYY_MM covering
-- p_month (a first-of-month date, UTC) if it is missing; true when created.
-- Works for a DATE or TIMESTAMPTZ partition key (timestamptz bounds are
-- written with an explicit +00 so the session time zone cannot shift them).
CREATE FUNCTION msg.create_month_partition(p_parent regclass, p_prefix text, p_month date)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    parent_schema text;
    partition_name text := format('%s_%s', p_prefix, to_char(p_month, 'YYYY_MM'));
    key_type regtype;
    lower_bound text;
    upper_bound text;
BEGIN
    IF p_month <> date_trunc('month', p_month)::date THEN
        RAISE EXCEPTION 'create_month_partition: % is not the first day of a month', p_month;
    END IF;
    SELECT n.nspname, a.atttypid::regtype
      INTO parent_schema, key_type
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_partitioned_table pt ON pt.partrelid = c.oid
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = pt.partattrs[0]
     WHERE c.oid = p_parent;
    IF to_regclass(format('%I.%I', parent_schema, partition_name)) IS NOT NULL THEN
        RETURN false;
    END IF;
    IF key_type = 'timestamp with time zone'::regtype THEN
        lower_bound := p_month::text || ' 00:00:00+00';
        upper_bound := (p_month + interval '1 month')::date::text || ' 00:00:00+00';
    ELSIF key_type = 'date'::regtype THEN
        lower_bound := p_month::text;
        upper_bound := (p_month + interval '1 month')::date::text;
    ELSE
        RAISE EXCEPTION 'create_month_partition: unsupported partition key type % on %', key_type, p_parent;
    END IF;
    EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)',
                   parent_schema, partition_name, p_parent, lower_bound, upper_bound);
    RETURN true;
END;
$$;

-- Monthly partitions from p_from's month (UTC) through p_months_ahead months
-- later; returns how many were created (0 when all exist). Serialised per
-- parent so two upkeep runs at once cannot race on CREATE.
CREATE FUNCTION msg.ensure_month_partitions(
    p_parent regclass, p_prefix text, p_from timestamptz, p_months_ahead int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
    first_month date := date_trunc('month', p_from AT TIME ZONE 'UTC')::date;
    created int := 0;
BEGIN
    IF p_months_ahead < 0 THEN
        RAISE EXCEPTION 'ensure_month_partitions: months ahead must be >= 0, got %', p_months_ahead;
    END IF;
    PERFORM pg_advisory_xact_lock(p_parent::oid::bigint);
    FOR i IN 0 .. p_months_ahead LOOP
        IF msg.create_month_partition(p_parent, p_prefix, (first_month + make_interval(months => i))::date) THEN
            created := created + 1;
        END IF;
    END LOOP;
    RETURN created;
END;
$$;

-- Month partitions of p_parent named <prefix>_YYYY_MM, with their UTC month.
CREATE FUNCTION msg.month_partitions(p_parent regclass, p_prefix text)
RETURNS TABLE (partition regclass, month date)
LANGUAGE sql STABLE
AS $$
    SELECT i.inhrelid::regclass,
           to_date(substring(c.relname FROM '_(\d{4}_\d{2})$'), 'YYYY_MM')
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = p_parent
       AND c.relname ~ ('^' || p_prefix || '_\d{4}_\d{2}$')
     ORDER BY 2
$$;

CREATE FUNCTION msg.ensure_partitions(p_from timestamptz, p_months_ahead int DEFAULT 2)
RETURNS int
LANGUAGE sql
AS $$
    SELECT msg.ensure_month_partitions('msg.outbound_message', 'outbound_message', p_from, p_months_ahead)
$$;

SELECT msg.ensure_partitions(now());
