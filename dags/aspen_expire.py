"""Aspen TTL sweep: instances whose TTL has passed become deletions (``jobs/expire.py``).

The next ``aspen_pipeline`` run maintains the views over them. Configuration: ``lake`` Param
(``ASPEN_LAKE``), schedule ``ASPEN_EXPIRE_SCHEDULE`` (default every 5 minutes; ``none`` for
manual runs). The sweep allocates an ingest batch number like ingest does: do not let it overlap
the pipeline's ingest task (e.g. put both in a one-slot Airflow pool on a busy deployment).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, get_current_context, task

from aspen.pipeline.launch import lake_param, run_spark_job, schedule_from_env

DAG_ID = "aspen_expire"


@dag(
    dag_id=DAG_ID,
    schedule=schedule_from_env("ASPEN_EXPIRE_SCHEDULE", "*/5 * * * *"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    params={"lake": Param(None, type=["null", "string"], description="lake root (path or URI)")},
    tags=["aspen"],
    doc_md=__doc__,
)
def aspen_expire() -> None:
    @task
    def expire() -> None:
        """Kill every live instance whose ``expires_at`` has passed."""
        run_spark_job("expire", "--lake", lake_param(get_current_context()["params"]))

    expire()


aspen_expire()
