"""Aspen re-optimization: at each split point, re-optimize the continuous queries incrementally
from the lake's statistics and adopt changed plans (``jobs/reoptimize.py``).

Each run: find the due queries → one Spark job reads their tables' statistics (row counts from
the Delta log, distinct values and filter hits in one aggregation per table, the join
selectivities their runs observed), diffs them against the statistics each query's saved
optimizer is at, re-optimizes with only those changes, records every plan that changed in the
``plans`` table and stores it for the query's next run (after the next maintained batch).
See docs/queries.md.

Configuration: ``lake`` Param (``ASPEN_LAKE``; a Param must be it or lie under
``ASPEN_ALLOWED_ROOTS``); ``method`` Param (``ASPEN_REOPTIMIZE_METHOD``, default
declarative); schedule ``ASPEN_REOPTIMIZE_SCHEDULE`` (default every 15 minutes; ``none`` for
manual runs) — every scheduled run is a split point and re-optimizes every query.

Aspen's extension (not in the seed): with ``threshold`` (``ASPEN_REOPTIMIZE_THRESHOLD``, a
fraction such as 0.5) the DAG runs on ``ASPEN_REOPTIMIZE_CHECK_SCHEDULE`` (default every
minute) and a cheap check reading Delta logs only lets through the queries last re-optimized
``ASPEN_REOPTIMIZE_EVERY_MINUTES`` (15) or more ago, or whose tables' row counts moved by more
than the threshold since; a run with none due stops there.

Query commands take no lease (docs/queries.md): the run goes ahead while a follower maintains
the lake.
"""

from __future__ import annotations

import os
from datetime import timedelta

from airflow.sdk import Param, dag, get_current_context, task

from aspen.optimizer.methods import METHODS as OPTIMIZER_METHODS
from aspen.pipeline.launch import dag_arguments, fail_task, lake_param, run_spark_job

DAG_ID = "aspen_reoptimize"
METHODS = list(OPTIMIZER_METHODS)


def _threshold() -> float | None:
    text = os.environ.get("ASPEN_REOPTIMIZE_THRESHOLD", "").strip()
    return float(text) if text else None


def _schedule() -> str | None:
    if _threshold() is not None:
        default = os.environ.get("ASPEN_REOPTIMIZE_CHECK_SCHEDULE", "* * * * *")
    else:
        default = os.environ.get("ASPEN_REOPTIMIZE_SCHEDULE", "*/15 * * * *")
    value = default.strip()
    return None if value.lower() in ("", "none", "null") else value


@dag(**dag_arguments(
    DAG_ID, __doc__, _schedule(), retries=1, retry_delay=timedelta(minutes=1),
    params={
        "method": Param(os.environ.get("ASPEN_REOPTIMIZE_METHOD", "declarative"), enum=METHODS,
                        description="the incremental re-optimizer (or a from-scratch baseline)"),
        "threshold": Param(_threshold(), type=["null", "number"], minimum=0,
                           description="re-optimize a query early when a table's row count "
                                       "moved by more than this fraction (Aspen's extension)"),
    },
))
def aspen_reoptimize() -> None:
    @task.short_circuit
    def due_queries() -> list[str]:
        """The queries due at this split point (none: the run stops here)."""
        from aspen.errors import AspenError
        from aspen.queries.reoptimize import DEFAULT_EVERY, due
        from aspen.settings import Settings

        params = get_current_context()["params"]
        lake = lake_param(params)
        minutes = os.environ.get("ASPEN_REOPTIMIZE_EVERY_MINUTES")
        every = timedelta(minutes=float(minutes)) if minutes else DEFAULT_EVERY
        try:
            found = due(Settings(lake=lake), params.get("threshold"), every)
        except AspenError as err:
            fail_task(err)
        for name, reason in sorted(found.items()):
            print(f"{name}: {reason}")
        if not found:
            print("no query is due")
        return sorted(found)

    @task
    def reoptimize(names: list[str]) -> None:
        """Re-optimize the due queries and adopt changed plans (one Spark application)."""
        params = get_current_context()["params"]
        run_spark_job("reoptimize", "--lake", lake_param(params), "--method",
                      str(params["method"]), *names)

    reoptimize(due_queries())


aspen_reoptimize()
