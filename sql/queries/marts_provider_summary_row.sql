-- One sender's figures of the provider's day summary ('' for the rows the
-- provider gave without a sender id). Run once per sender.
-- Parameters: day, sender_id, total_messages, delivered, failed, pending, units.
INSERT INTO dlr.provider_summary (day, sender_id, total_messages, delivered, failed, pending, units)
VALUES (%(day)s, %(sender_id)s, %(total_messages)s, %(delivered)s, %(failed)s, %(pending)s, %(units)s)
