"""Planner prices a transaction sets for itself (``SET LOCAL``), shared by the stages that need them."""

from __future__ import annotations

import psycopg

from sms_pipeline.db import queries

# The planner's price of handing a row from a parallel worker to the leader
# (Postgres's default: 0.1). At 0.1 a statement that reads or writes a million
# rows through the leader never runs in parallel, however much each row costs
# to make; at this price such statements use the second core (docs/design.md
# "Work tables and the second core").
PARALLEL_TUPLE_COST = "0.001"


def use_second_core(conn: psycopg.Connection) -> None:
    """Price parallel plans as :data:`PARALLEL_TUPLE_COST` until this transaction ends."""
    queries.run(conn, "set_local_parallel_tuple_cost", cost=PARALLEL_TUPLE_COST)
