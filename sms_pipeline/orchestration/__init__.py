"""Dagster definitions: day-partitioned ingest, reconciliation and marts."""
