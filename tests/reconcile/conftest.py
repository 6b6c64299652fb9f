"""Fixtures of the reconciliation tests (defined in reconcile_world, which tests import by its own name)."""

from reconcile_world import *  # noqa: F401,F403 - fixtures must be visible to pytest here
