-- Whether a database of that name exists on the server (run on its
-- maintenance database). One row if it does, none otherwise.
-- Parameters: dbname.
SELECT 1 FROM pg_database WHERE datname = %(dbname)s
