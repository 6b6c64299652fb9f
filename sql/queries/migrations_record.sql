-- Record a versioned migration as applied, in the transaction that applied it.
-- Parameters: version, name, checksum (SHA-256 of the file, hex).
INSERT INTO public.schema_migrations (version, name, checksum) VALUES (%(version)s, %(name)s, %(checksum)s)
