"""The provider's error-code table (``/info/deliverycodes``), cached in ``dlr.delivery_codes``.

A receipt push has no status word, only an error code; reconciliation turns
the code into the word the provider's reports show through this cached copy
(docs/design.md#receipt-push). The hourly job refreshes it; ``reconcile
recent`` fetches it once when it is empty, so a fresh deployment maps codes
from its first pass.

A refresh is all or nothing: an empty answer, a code that is not a code, a
blank word or a code listed twice with different meanings is refused and
the stored table stays as it was. A code the provider stops listing is kept
with its last word (a push carrying it may still arrive: the provider
retries for a day) and counted, never dropped silently.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import psycopg

from sms_pipeline.core.clock import Clock
from sms_pipeline.db import queries
from sms_pipeline.errors import UserError
from sms_pipeline.provider.results import DeliveryCode

log = logging.getLogger(__name__)

_CODE = re.compile(r"[0-9A-Za-z]{1,16}")  # as dlr.delivery_codes_error_code_check


class DeliveryCodeSource(Protocol):
    """What this module needs from the provider client."""

    def delivery_codes(self) -> list[DeliveryCode]: ...


class DeliveryCodesRefused(UserError):
    """The provider's answer is not a usable code table: the stored one is kept."""


@dataclass(frozen=True)
class CodeTableRefresh:
    listed: int  # codes in the provider's answer (all written)
    added: int  # codes not stored before
    changed: int  # stored codes whose word or description changed
    kept_unlisted: int  # stored codes the answer no longer lists: kept with their last word


def _checked(codes: Sequence[DeliveryCode]) -> dict[str, tuple[str, str | None]]:
    """The answer by code, or DeliveryCodesRefused (one line; the stored table stays)."""
    if not codes:
        raise DeliveryCodesRefused("the provider's code table is empty: the stored one is kept")
    table: dict[str, tuple[str, str | None]] = {}
    for n, entry in enumerate(codes, start=1):
        code, word = (entry.code or "").strip(), (entry.status or "").strip()
        if not _CODE.fullmatch(code) or not word:
            raise DeliveryCodesRefused(
                f"the provider's code table has a malformed entry (#{n}): the stored one is kept")
        meaning = (word, (entry.description or "").strip() or None)
        if table.setdefault(code, meaning) != meaning:
            raise DeliveryCodesRefused(
                f"the provider's code table lists code {code} twice with different meanings: the stored one is kept")
    return table


def refresh_delivery_codes(conn: psycopg.Connection, client: DeliveryCodeSource, clock: Clock) -> CodeTableRefresh:
    """Fetch the provider's code table and write it over the stored one, in one transaction.

    ``conn`` must not be inside a transaction. Raises DeliveryCodesRefused (nothing written) for an
    unusable answer, the client's ProviderCallError when the call fails.
    """
    table = _checked(client.delivery_codes())
    with conn.transaction():
        done = queries.record(
            conn, "delivery_codes_replace", codes=list(table), words=[w for w, _ in table.values()],
            descriptions=[d for _, d in table.values()], now=clock.now(),
        )
    result = CodeTableRefresh(**done)
    if result.kept_unlisted:
        log.warning("delivery codes: %d stored code(s) no longer listed by the provider, kept with their last word",
                    result.kept_unlisted)
    return result


def stored_code_count(conn: psycopg.Connection) -> int:
    """How many codes the cached table holds (0: never fetched)."""
    return queries.scalar(conn, "delivery_codes_count")
