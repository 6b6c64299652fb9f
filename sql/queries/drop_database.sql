-- Drop a database if it exists, ending the sessions connected to it
-- (outside any transaction: autocommit).
-- Identifiers: database.
-- Parameters: none.
DROP DATABASE IF EXISTS {database} WITH (FORCE)
