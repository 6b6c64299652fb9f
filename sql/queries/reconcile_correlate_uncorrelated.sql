-- Every provider msgId that has uncorrelated receipt events: the day's new
-- events (reconcile_work.reconcile_new_events, not stored yet) and stored ones still
-- waiting (orphans, earlier ambiguous or not-found ones: all are tried
-- again on every run), reduced to one row: correlation works per msgId, not per
-- event, so the ACCEPTD and the DELIVRD of one message count as one
-- candidate. Transaction id, recipient and sender are the same on every
-- event of one msgId, and so is the text: its fingerprint counts only when
-- every known one agrees (a disagreement is no evidence). A waiting event may
-- lack what the day's rows of its msgId know: one stored before fingerprints
-- has no fingerprint, a push (stored first when it came before the day
-- report) has no sender and no text. Those rows lend their fingerprint and
-- sender (nothing else: a push carries its own transaction and recipient), so a
-- reloaded day can still tell apart the rows an old receipt was ambiguous
-- between, and a pushed receipt of a row whose send answer was lost is
-- matched by reconstruction as the day report's own row would be.
-- The submit time: getDlr's millisecond epoch when there is one (exact);
-- otherwise the reading of a provider-local wall-clock time, which is a
-- guess inside the repeated hour of a DST fall-back. For those, the other
-- instant with the same local time is kept as alt_submit_at, so that
-- reconstruction can try both readings instead of missing by an hour.
-- Finding them takes up to four time-zone conversions per msgId, so only the
-- times near a fall-back are checked: fall_backs covers them, found once per
-- run on the hours the events span (an hour whose end reads less than an hour
-- after its start on the local clock holds a fall-back; each is widened by an
-- hour both ways, which covers every time sharing its local time with
-- another). A zone without DST has none, and no msgId is checked.
-- every_waiting: true in the day's run (every waiting event is tried);
-- false in a pass over new pushes, which tries only the waiting events of
-- the msgIds it read, so its cost follows the pushes, not the backlog
-- (the hourly and daily runs still try every one).
-- Parameters: time_zone (the provider's), every_waiting (boolean).
-- Creates the work table reconcile_work.reconcile_uncorrelated.
CREATE UNLOGGED TABLE reconcile_work.reconcile_uncorrelated AS
WITH waiting AS (
    SELECT provider_message_id, provider_txn_id, recipient, sender_name, provider_submit_at, source,
           message_fingerprint
      FROM dlr.delivery_receipts
     WHERE message_id IS NULL
       AND (%(every_waiting)s OR provider_message_id IN (SELECT msg_id FROM reconcile_work.reconcile_source_rows))
),
per_id AS (
    SELECT provider_message_id AS msg_id,
           min(provider_txn_id) AS txn_id,
           min(recipient) AS recipient,
           min(sender_name) AS sender_name,
           COALESCE(min(provider_submit_at) FILTER (WHERE source = 'getdlr'), min(provider_submit_at)) AS submit_at,
           bool_or(source = 'getdlr') AS exact_submit,
           CASE WHEN count(DISTINCT message_fingerprint) = 1  -- (min() has no bytea form before Postgres 17)
                THEN (array_agg(message_fingerprint) FILTER (WHERE message_fingerprint IS NOT NULL))[1] END AS fingerprint
      FROM (SELECT * FROM waiting
            UNION ALL
            SELECT msg_id, txn_id, recipient, sender_name, provider_submit_at, source, message_fingerprint
              FROM reconcile_work.reconcile_new_events
            UNION ALL
            -- text and sender only (every other column NULL: no other aggregate above changes)
            SELECT msg_id, NULL, NULL, sender_name, NULL, NULL, message_fingerprint
              FROM reconcile_work.reconcile_source_rows
             WHERE msg_id IN (SELECT provider_message_id FROM waiting)) AS events
     GROUP BY provider_message_id
),
span AS (
    SELECT min(lo) AS lo, max(hi) AS hi
      FROM (SELECT min(provider_submit_at) AS lo, max(provider_submit_at) AS hi FROM waiting
            UNION ALL
            SELECT min(provider_submit_at), max(provider_submit_at) FROM reconcile_work.reconcile_new_events) AS bounds
),
fall_backs AS (
    SELECT COALESCE(range_agg(tstzrange(h - interval '1 hour', h + interval '2 hours', '[]')),
                    '{}'::tstzmultirange) AS instants
      FROM span,
           generate_series(date_trunc('hour', span.lo) - interval '2 hours', span.hi + interval '2 hours',
                           interval '1 hour') AS h
     WHERE (h + interval '1 hour') AT TIME ZONE %(time_zone)s - h AT TIME ZONE %(time_zone)s < interval '1 hour'
)
SELECT msg_id, txn_id, recipient, sender_name, submit_at, fingerprint,
       CASE WHEN exact_submit OR NOT (SELECT instants FROM fall_backs) @> submit_at THEN NULL
            WHEN (submit_at - interval '1 hour') AT TIME ZONE %(time_zone)s = submit_at AT TIME ZONE %(time_zone)s
                THEN submit_at - interval '1 hour'
            WHEN (submit_at + interval '1 hour') AT TIME ZONE %(time_zone)s = submit_at AT TIME ZONE %(time_zone)s
                THEN submit_at + interval '1 hour'
       END AS alt_submit_at
  FROM per_id
