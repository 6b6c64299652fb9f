"""Dagster: the pipeline's assets, checks, jobs and schedules, defined at module level per domain."""

import warnings

# The project pins Dagster, so "currently in beta" notes (on day assets'
# backfill policy, code references, the queue's observation...) speak of future
# versions: in the webserver, the daemon and every run they would say nothing to
# a person. Dagster's other warnings (deprecations among them) still show.
warnings.filterwarnings("ignore", message=r".* is currently in beta")
