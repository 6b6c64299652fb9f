-- The receiver keeps a push it refused (4xx) for a person to see (sms_pipeline/receiver/app.py).
-- Parameters: reason (why, naming the parameter, never a value), fields (JSON object:
-- parameter name -> redacted value, see sms_pipeline/receiver/pushes.py).
INSERT INTO dlr.receipt_push_rejects (reason, fields)
VALUES (%(reason)s, %(fields)s)
