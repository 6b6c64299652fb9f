"""Databases cloned from a template for one test (or one module), dropped afterwards.

A plain module, imported by name: ``conftest`` itself is not importable
reliably (which directory's conftest an import finds depends on collection order).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from sms_pipeline.db import connection


def scratch_database(admin_url: str, template: str, prefix: str = "sms_test") -> Iterator[str]:
    """Yield the URL of a new database made from ``template``; drop it when the generator closes."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with connection.connect_url(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        yield connection.with_database(admin_url, name)
    finally:
        with connection.connect_url(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
