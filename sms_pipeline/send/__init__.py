"""The send worker: intake, rate card, claiming, batching, outcomes, upkeep.

One row per recipient per billed attempt goes in through :mod:`intake`; the
loop (:mod:`loop`) claims due rows with ``FOR UPDATE SKIP LOCKED``
(:mod:`claim`), groups them into provider requests (:mod:`batching`), sends
outside any transaction and writes the answer back with statements that only
touch rows still ``claimed`` (:mod:`outcomes`), so an answer applied twice
changes nothing the second time.
"""
