-- The provider's code table as just fetched, written over the cached copy:
-- new codes added, a changed word or description replaced, every listed
-- code's refreshed_at set. A code the answer no longer lists is kept with
-- its last word (a push with it may still arrive: the provider retries for
-- a day) and counted, never deleted silently.
-- Parameters: codes, words, descriptions (text[] of equal length, codes
-- unique), now. Returns one row: listed, added, changed, kept_unlisted.
WITH answer AS (
    SELECT * FROM unnest(%(codes)s::text[], %(words)s::text[], %(descriptions)s::text[])
               AS a(error_code, status_word, description)
),
written AS (
    INSERT INTO dlr.delivery_codes (error_code, status_word, description, refreshed_at)
    SELECT error_code, status_word, description, %(now)s::timestamptz FROM answer
    ON CONFLICT (error_code) DO UPDATE
       SET status_word = EXCLUDED.status_word,
           description = EXCLUDED.description,
           refreshed_at = EXCLUDED.refreshed_at
    RETURNING error_code
)
SELECT (SELECT count(*) FROM written) AS listed,
       (SELECT count(*) FROM answer a
         WHERE NOT EXISTS (SELECT 1 FROM dlr.delivery_codes d WHERE d.error_code = a.error_code)) AS added,
       (SELECT count(*) FROM answer a JOIN dlr.delivery_codes d USING (error_code)
         WHERE (d.status_word, d.description) IS DISTINCT FROM (a.status_word, a.description)) AS changed,
       (SELECT count(*) FROM dlr.delivery_codes d
         WHERE NOT EXISTS (SELECT 1 FROM answer a WHERE a.error_code = d.error_code)) AS kept_unlisted
