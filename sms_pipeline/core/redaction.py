"""Masking of credentials in texts and log records.

The provider's GET-only endpoints take ``userid`` + ``password`` in the query
string, so any log line that prints a request URL (httpx's request log on
our side, uvicorn's access log in the simulator) would carry the password.
"""

from __future__ import annotations

import logging
import re

# A value runs to the next '&' or blank, or is libpq's quoted form ('s3 cret', with \' and \\ escapes; an
# unterminated quote runs to the end); libpq also allows blanks around '='.
_CREDENTIAL_IN_TEXT = re.compile(r"(?i)\b(password|apikey)\s*=\s*(?:'(?:[^'\\]|\\.)*'?|[^&\s\"']*)")


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


# scheme://user:password@rest: the password runs to the last '@' (an unencoded
# '@', '/', '?' or '#' in it makes the URL malformed, not the password public).
_URL_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:@/?#]*):(?P<password>.*)@(?P<tail>[^@]*)$",
                           re.DOTALL)


def mask_url_password(url: str) -> str:
    """``url`` with its password replaced by ``***``, even when the URL is malformed (a bad port, an
    unencoded character in the password), and ``password=`` parameters masked too."""
    masked, found = _URL_PASSWORD.subn(r"\g<head>:***@\g<tail>", url)
    prefix = _SCHEME_PREFIX.match(url)
    kept = prefix.group() if prefix else ""
    if not found and "@" in url:
        # Not even scheme://user:password@: everything before the last '@' may be a secret.
        if ":" in url.rpartition("@")[0][len(kept):]:  # a user alone is no secret
            masked = kept + "***@" + url.rpartition("@")[2]
    elif not found and (authority := _AUTHORITY.match(url)) and not _HOST_AND_PORT.fullmatch(authority.group(2)):
        # No '@' and not host[:port]: "user:secret" with the host forgotten; mask that part.
        masked = authority.group(1) + "***" + url[authority.end():]
    return mask_credentials(masked)


_SCHEME_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:/*")
_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)")
# What may stand as the authority of a URL without credentials: hosts, ports, a comma-separated list.
_HOST_AND_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.%]*\]|[A-Za-z0-9.\-%]*)(?::\d*)?"
                            r"(?:,(?:\[[0-9A-Fa-f:.%]*\]|[A-Za-z0-9.\-%]*)(?::\d*)?)*")
