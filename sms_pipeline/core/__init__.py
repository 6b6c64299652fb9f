"""Pure domain core: no I/O, no database, no network.

Everything here is deterministic given its arguments (time comes from an
injected :class:`~sms_pipeline.core.clock.Clock`), so it is unit-tested
without any running service.
"""
