"""Which channels a message can be sent on today.

:class:`~sms_pipeline.core.states.Channel` names every channel the model
knows (the database enum has them all); only some have a send strategy. This
set mirrors the worker's strategies (``sms_pipeline.send``: the bulk SMS
strategy and the OTP one, both ``sms``): when a strategy for another channel
is added there, its channel is added here, and not before. Intake refuses a
request on any other channel, which would otherwise wait in ``pending`` for
ever.
"""

from __future__ import annotations

from sms_pipeline.core.states import Channel

SENDABLE_CHANNELS: frozenset[Channel] = frozenset({Channel.sms})
