-- For the rest of the transaction applying a repeatable migration: function
-- bodies are not checked when created, so an R file may define a function
-- that calls one a later R file (in name order) defines. SQL-standard bodies
-- (RETURN ..., BEGIN ATOMIC), views and triggers are still resolved.
-- Parameters: none.
SET LOCAL check_function_bodies = off
