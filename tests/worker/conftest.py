"""Fixtures for the worker tests: a simulator on the test's clock and a real client for it."""

from simulated_provider import client, clock, simulator  # noqa: F401 - fixtures, used by name
