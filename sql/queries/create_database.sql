-- Create a database on the server (outside any transaction: autocommit).
-- Identifiers: database.
-- Parameters: none.
CREATE DATABASE {database}
