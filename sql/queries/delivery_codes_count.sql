-- How many codes the cached copy of the provider's code table holds (0: never fetched).
-- Parameters: none.
SELECT count(*) FROM dlr.delivery_codes
