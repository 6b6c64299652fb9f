-- The live definition of the status word normalisation of the set-based
-- receipt load.
--
-- Repeatable migration: applied after every V file, again whenever this file
-- changes, and again after any upgrade that applied a V file
-- (sms_pipeline.db.migrate). Change a body here, never in a new V file; the
-- tables and types these functions use are made by V files.

-- The spelling-independent form of a raw status word, before the alias
-- lookup (dlr.status_aliases): surrounding whitespace dropped, upper case,
-- blank = UNKNOWN (as sms_pipeline.core.statuses.normalise_status).
-- Whitespace inside a word, which the Python side keeps, becomes "_": the
-- receipt key refuses whitespace, and one mangled word must not abort a whole
-- day's load. The vertical tab is written as a hex escape (\x0B): E'\v' is
-- only understood from PostgreSQL 16 on; on 15 it means the letter "v".
CREATE OR REPLACE FUNCTION dlr.clean_status_word(p_raw text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(
    NULLIF(upper(regexp_replace(btrim(p_raw, E' \t\r\n\f\x0B'), '\s+', '_', 'g')), ''),
    'UNKNOWN');
