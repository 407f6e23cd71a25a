"""Provenance of SQL over the lake: a read-only query parsed into a small relational algebra,
instrumented (PI-CS: every output row carries its witnesses' ids) as SQL that runs on Spark or
DuckDB, and each answer row's formula composed as a BDD over base-tuple variables
(docs/sql-provenance.md).

The front door is :func:`aspen.sqlprov.run.run_sql`; :func:`aspen.sqlprov.run.run_frames` runs
a query over frames in process (what the tests use).
"""

from __future__ import annotations
