-- Whether any of the demo's tenants has a message already (a finished, or
-- an interrupted, earlier demo).
-- Parameters: tenants (text array).
SELECT EXISTS (SELECT 1 FROM msg.business_key_registry WHERE tenant_id = ANY(%(tenants)s))
