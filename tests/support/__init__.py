"""Helpers and fixtures shared by the test suite, each defined once.

Fixtures load through ``pytest_plugins`` in the root ``conftest.py``;
helpers are imported by name (``from tests.support.worker import enqueue``).
"""
