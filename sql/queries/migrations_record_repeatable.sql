-- Record a repeatable migration as applied with this content, in the
-- transaction that applied it (a first application or a new one).
-- Parameters: name, checksum (SHA-256 of the file, hex).
INSERT INTO public.schema_repeatables (name, checksum) VALUES (%(name)s, %(checksum)s)
ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
