"""Adoption of a legacy sends table (docs/adoption.md): its rows become outbound rows, never ``pending``.

:mod:`mapping` names its columns, :mod:`responses` reads what its sender
stored, :mod:`legacy` reads it (read only), :mod:`inspect` classifies it,
:mod:`backfill` writes the rows (``adopt_legacy_rows``, also the dual
write's insertion).
"""
