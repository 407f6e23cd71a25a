"""Continuous SQL queries over the lake's tables, planned by the cost-based optimizer.

A query is registered by name (:mod:`aspen.queries.registry`), parsed into a join graph and an
execution spec (:mod:`aspen.queries.sql`), planned from statistics of the lake
(:mod:`aspen.queries.stats`, :mod:`aspen.queries.planner`), and run on Spark following its plan
(:mod:`aspen.queries.execute`): its result is the Delta table ``q_<name>``, each run's operators
with estimated and observed rows go to ``query_runs``. What a query may contain and how big it may
be is checked at registration and before every run (:mod:`aspen.queries.limits`).
:func:`aspen.queries.runner.run_registered` runs every registered query, each within a time
limit (:mod:`aspen.queries.guard`), recording each outcome (:mod:`aspen.queries.status`); the
query worker (:mod:`aspen.queries.worker`) runs it after maintained batches, off the
maintainer's lease; an incrementally maintained join is re-planned there from its live
statistics (:mod:`aspen.queries.follow`). Docs: docs/queries.md.
"""

from __future__ import annotations

__all__: list[str] = []
