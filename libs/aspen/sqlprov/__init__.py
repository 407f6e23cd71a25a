"""Provenance of SQL over the lake: a read-only query parsed into a small relational algebra,
instrumented (PI-CS: every output row carries its witnesses' ids) as SQL that runs on Spark or
DuckDB, and each answer row's formula composed as a BDD over base-tuple variables
(docs/sql-provenance.md).

The instrumentation is optimized by default: provenance-aware rewrites of the algebra
(:mod:`aspen.sqlprov.pats`, over :mod:`aspen.sqlprov.properties`) and instrumentation choices
made by the engine's cost estimates (:mod:`aspen.sqlprov.optimize`, :mod:`aspen.sqlprov.choose`,
:mod:`aspen.sqlprov.cost`).

The front door is :func:`aspen.sqlprov.run.run_sql`; :func:`aspen.sqlprov.run.run_frames` runs
a query over frames in process (what the tests use).
"""

from __future__ import annotations
