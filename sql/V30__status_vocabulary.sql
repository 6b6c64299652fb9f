-- The status vocabulary of sms_pipeline.core.statuses, as tables, so that the
-- set-based receipt load can normalise a million status words with two hash
-- joins instead of a Python loop. A test keeps these rows equal to the
-- Python mappings (STATUS_OUTCOMES, STATUS_ALIASES): change both together,
-- in a new migration.

CREATE TABLE dlr.status_outcomes (
    status_word TEXT PRIMARY KEY,   -- canonical SMPP word
    outcome     TEXT NOT NULL,
    CONSTRAINT status_outcomes_outcome_check
        CHECK (outcome IN ('delivered', 'failed', 'expired', 'intermediate'))
);

CREATE TABLE dlr.status_aliases (
    alias       TEXT PRIMARY KEY,   -- another spelling, e.g. the by-transaction report's DELIVERED
    status_word TEXT NOT NULL REFERENCES dlr.status_outcomes
);

INSERT INTO dlr.status_outcomes (status_word, outcome) VALUES
    ('DELIVRD', 'delivered'),
    ('UNDELIV', 'failed'),
    ('REJECTD', 'failed'),
    ('DELETED', 'failed'),
    ('EXPIRED', 'expired'),
    ('ACCEPTD', 'intermediate'),
    ('ENROUTE', 'intermediate'),
    ('SUBMITTED', 'intermediate'),
    ('PENDING', 'intermediate');

INSERT INTO dlr.status_aliases (alias, status_word) VALUES
    ('DELIVERED', 'DELIVRD'),
    ('UNDELIVERED', 'UNDELIV'),
    ('REJECTED', 'REJECTD'),
    ('ACCEPTED', 'ACCEPTD'),
    ('SUBMITD', 'SUBMITTED');

-- The spelling-independent form of a raw status word, before the alias
-- lookup: surrounding whitespace dropped, upper case, blank = UNKNOWN (as
-- core.statuses.normalise_status). Whitespace inside a word, which the
-- Python side keeps, becomes "_": the receipt key refuses whitespace, and
-- one mangled word must not abort a whole day's load.
CREATE FUNCTION dlr.clean_status_word(p_raw text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(
    NULLIF(upper(regexp_replace(btrim(p_raw, E' \t\r\n\f\v'), '\s+', '_', 'g')), ''),
    'UNKNOWN');
