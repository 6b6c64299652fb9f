"""The send worker: intake, rate card, claiming, batching, outcomes, upkeep.

One row per recipient per billed attempt goes in through :mod:`intake`; the
loop (:mod:`loop`) claims the rows of its next request with ``FOR UPDATE
SKIP LOCKED`` (:mod:`claim`; requests are planned by :mod:`batching`), moves
them to ``sending`` in a committed statement just before the request, sends
outside any transaction and writes the answer back with statements that only
touch rows still ``sending`` (:mod:`outcomes`), so an answer applied twice
changes nothing the second time.
"""
