"""Masking of credentials in texts and log records.

The provider's GET-only endpoints take ``userid`` + ``password`` in the query
string, so any log line that prints a request URL (httpx's request log on
our side, uvicorn's access log in the simulator) would carry the password.
"""

from __future__ import annotations

import logging
import re

_CREDENTIAL_IN_TEXT = re.compile(r"(?i)\b(password|apikey)=[^&\s\"']*")


def mask_credentials(text: str) -> str:
    """``password=...`` / ``apiKey=...`` values replaced by ``***``."""
    return _CREDENTIAL_IN_TEXT.sub(r"\1=***", text)


class MaskCredentials(logging.Filter):
    """A log filter that masks credentials in the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_credentials(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


_FILTER = MaskCredentials()


def mask_in_loggers(*names: str) -> None:
    """Attach the filter to the named loggers (once each)."""
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
