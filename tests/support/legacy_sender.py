"""A naive legacy sender, as teams write one before adopting this project: the adoption tests' "old system".

It keeps its own ``sends`` table (``id, phone, message, sent, response, created_at``, and an ``event``
column that the adoption reads only when a mapping file names it) in another database, and sends a row
by POSTing ``/send`` to the real simulator over HTTP with a form it builds itself
(docs/provider-contract.md#send): no ProviderClient, no normalisation, the provider's raw answer written
into ``response``, one sending step at a time (the hooks below). Its habits are the seed's failure modes, one hook
each: an id stored after passing through a float, an answer lost after the provider took the request,
``sent`` set although the request never left, a row never sent. ``created_at`` is the virtual clock's
time, so a row's provider day is the day the test's clock was on when it was sent.

``Sent`` records what really happened (the simulator's own answer) beside what the table holds: the
tests' ground truth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum

import httpx
import psycopg

from sms_pipeline.core.clock import Clock

# The columns the seed names; ``event`` is the business-event column a mapping file may name.
CREATE_TABLE = """
CREATE TABLE sends (
    id bigserial PRIMARY KEY,
    phone text,
    message text,
    sent boolean NOT NULL DEFAULT false,
    response text,
    created_at timestamptz NOT NULL DEFAULT now(),
    event text
)"""


class Stored(Enum):
    """What the legacy code wrote into ``response`` after the provider answered."""

    ANSWER = "answer"  # the raw body, untouched
    FLOAT_JSON = "float_json"  # the body re-serialised after parsing: transactionId became a JSON float
    FLOAT_TEXT = "float_text"  # only the id, written str(float(id)): "6.305583318236811e+18"
    BIGINT_FROM_FLOAT = "bigint_from_float"  # only the id, int(float(id)): 19 digits, the last ones wrong
    NOTHING = "nothing"  # the answer was lost (a timeout, a crash) after the provider took the request: ""


@dataclass(frozen=True)
class Sent:
    """One legacy row as the simulator saw it: ``transaction_id`` is None when no request left."""

    legacy_id: int
    recipients: tuple[str, ...]  # as written in ``phone``
    message: str
    event: str | None
    transaction_id: str | None  # the provider's true id, digit for digit
    invalid: tuple[str, ...]  # the answer's invalidMobile list
    response: str | None  # what the row holds
    stored: Stored | None  # how the answer was written; None: the row was never marked sent


class LegacySender:
    """The old system: its table in ``legacy_url``, its sends to the simulator at ``base_url``."""

    def __init__(self, legacy_url: str, base_url: str, clock: Clock, *, sender_id: str,
                 userid: str = "demo", password: str = "demo") -> None:
        self.conn = psycopg.connect(legacy_url, autocommit=True)
        self.clock = clock
        self.sender_id = sender_id
        self._auth = {"userid": userid, "password": password}
        self._http = httpx.Client(base_url=base_url, timeout=10.0)
        self.log: list[Sent] = []

    def close(self) -> None:
        self._http.close()
        self.conn.close()

    def create_table(self) -> None:
        self.conn.execute(CREATE_TABLE)

    def _insert(self, recipients: tuple[str, ...], message: str, event: str | None) -> int:
        (legacy_id,) = self.conn.execute(
            "INSERT INTO sends (phone, message, created_at, event) VALUES (%s, %s, %s, %s) RETURNING id",
            (",".join(recipients), message, self.clock.now(), event)).fetchone()
        return legacy_id

    def _record(self, legacy_id: int, response: str | None) -> None:
        self.conn.execute("UPDATE sends SET sent = true, response = %s WHERE id = %s", (response, legacy_id))

    def send(self, recipients: list[str] | tuple[str, ...], message: str, *, event: str | None = None,
             stored: Stored = Stored.ANSWER, answer_later: bool = False) -> Sent:
        """Insert the row, POST it to ``/send``, then mark it sent with the answer as ``stored`` says.

        ``answer_later``: only ``sent`` is set now, in its own statement (code that flags the row first);
        :meth:`write_answer` writes the response."""
        recipients = tuple(recipients)
        legacy_id = self._insert(recipients, message, event)
        reply = self._http.post("/send", data={
            **self._auth, "senderid": self.sender_id, "sendMethod": "quick", "msgType": _msg_type(message),
            "msg": message, "mobile": ",".join(recipients), "duplicatecheck": "false", "output": "json"})
        reply.raise_for_status()
        answer = json.loads(reply.text)  # ids are strings in the answer: nothing lost yet
        if answer.get("status") != "success":
            raise AssertionError(f"the simulator refused a legacy send: {answer}")
        txn = answer["transactionId"]
        response = {
            Stored.ANSWER: reply.text,
            Stored.FLOAT_JSON: json.dumps({**answer, "transactionId": float(txn)}),
            Stored.FLOAT_TEXT: str(float(txn)),
            Stored.BIGINT_FROM_FLOAT: str(int(float(txn))),
            Stored.NOTHING: "",
        }[stored]
        if answer_later:
            self.conn.execute("UPDATE sends SET sent = true WHERE id = %s", (legacy_id,))
        else:
            self._record(legacy_id, response)
        sent = Sent(legacy_id, recipients, message, event, txn, _listed(answer["invalidMobile"]), response,
                    stored)
        self.log.append(sent)
        return sent

    def write_answer(self, sent: Sent) -> None:
        """The second statement of an ``answer_later`` send."""
        self._record(sent.legacy_id, sent.response)

    def mark_sent_without_sending(self, recipients: list[str] | tuple[str, ...], message: str, *,
                                  event: str | None = None) -> Sent:
        """The flag set before the call, and the process died before the request left: nothing billed."""
        recipients = tuple(recipients)
        legacy_id = self._insert(recipients, message, event)
        self._record(legacy_id, None)
        sent = Sent(legacy_id, recipients, message, event, None, (), None, Stored.NOTHING)
        self.log.append(sent)
        return sent

    def leave_unsent(self, recipients: list[str] | tuple[str, ...], message: str, *,
                     event: str | None = None) -> Sent:
        """A row the old system queued and never sent (``sent`` false)."""
        recipients = tuple(recipients)
        legacy_id = self._insert(recipients, message, event)
        sent = Sent(legacy_id, recipients, message, event, None, (), None, None)
        self.log.append(sent)
        return sent


def _msg_type(message: str) -> str:
    return "text" if message.isascii() else "unicode"


def _listed(numbers: str) -> tuple[str, ...]:
    return tuple(n for n in numbers.split(",") if n)
