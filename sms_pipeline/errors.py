"""Errors a person can act on.

A ``UserError`` is printed by the CLI as one line (no traceback unless
``--verbose``); everything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A problem with input, configuration or environment, explained in one line."""


class SettingsError(UserError):
    """An SMS_PIPELINE_* / SMS_PROVIDER_* variable is unknown or malformed."""


class DatabaseUnavailable(UserError):
    """The configured database cannot be reached or started."""


class MigrationError(UserError):
    """The migration files and the database disagree."""
