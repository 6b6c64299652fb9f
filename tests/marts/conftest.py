"""Fixtures of the marts tests (defined in marts_world, which tests import by its own name)."""

from marts_world import *  # noqa: F401,F403 - fixtures must be visible to pytest here
