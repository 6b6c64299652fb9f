"""The test suite's shared fixtures live in ``tests/support`` and load here as plugins.

Every helper and fixture is defined once there; a directory's own
``conftest.py`` only overrides the small value fixtures (``reproducible``,
a start time, an account, a seed) that make its tests reproducible.
"""

from __future__ import annotations

import os

import pytest

from tests.support.environment import PARTITION_START, TEXT_HMAC_KEY

# Before any test module imports the pipeline (sms_pipeline.orchestration reads
# the first partition day when imported): the test deployment's fixed day, not
# one read from a database.
os.environ["SMS_PIPELINE_PARTITION_START"] = PARTITION_START
# Every test database is external to the process: the text fingerprint key is required with it.
os.environ["SMS_PIPELINE_TEXT_HMAC_KEY"] = TEXT_HMAC_KEY

pytest_plugins = [
    "tests.support.databases",
    "tests.support.provider",
    "tests.support.marts",
    "tests.support.reconcile",
    "tests.support.cli",
    "tests.support.dagster_instance",
]

_DB_FIXTURES = {"pg_admin_url", "template_db", "db_url", "second_db_url", "db", "blank_db", "settings"}


def _start_rank(item: pytest.Item) -> int:
    if item.get_closest_marker("e2e") or item.get_closest_marker("browser"):
        return 0
    return 1 if item.get_closest_marker("slow") else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that touches a real database, so CI can re-run them on another server.

    The longest tests go first (stable within each rank): started last, one of
    them would run alone on one worker after the other has finished.
    """
    for item in items:
        if _DB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.db)
    items.sort(key=_start_rank)
