"""One-time passwords: intake fields, codes, the send strategy, verification.

- :mod:`requests`: the ``purpose`` / ``session_binding`` fields of intake,
  kept in ``msg.otp_request`` until the send;
- :mod:`codes`: codes made with ``secrets``, stored only as HMAC-SHA256;
- :mod:`send`: the worker's strategy for ``message_class = 'otp'`` (one
  recipient per ``/otp`` generate request, outcome and verification row in
  one transaction);
- :mod:`verify`: :func:`~sms_pipeline.otp.verify.verify_otp`, one atomic
  statement.
"""
