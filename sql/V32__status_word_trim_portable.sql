-- V30 trimmed with E'...\v', an escape Postgres only understands from
-- version 16: on 15 it means the letter "v", so 'undeliv ' lost its last
-- letter. The vertical tab is written as a hex escape, which every version
-- reads the same way.
CREATE OR REPLACE FUNCTION dlr.clean_status_word(p_raw text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN COALESCE(
    NULLIF(upper(regexp_replace(btrim(p_raw, E' \t\r\n\f\x0B'), '\s+', '_', 'g')), ''),
    'UNKNOWN');
