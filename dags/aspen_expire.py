"""Aspen TTL sweep: instances whose TTL has passed become deletions (``jobs/expire.py``).

The next ``aspen_pipeline`` run maintains the views over them. Configuration: ``lake`` Param
(``ASPEN_LAKE``), schedule ``ASPEN_EXPIRE_SCHEDULE`` (default every 5 minutes; ``none`` for
manual runs). The sweep allocates an ingest batch number like ingest does: do not let it overlap
the pipeline's ingest task (e.g. put both in a one-slot Airflow pool on a busy deployment).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag, get_current_context, task

from aspen.pipeline.launch import dag_arguments, lake_param, run_spark_job, schedule_from_env

DAG_ID = "aspen_expire"


@dag(**dag_arguments(DAG_ID, __doc__, schedule_from_env("ASPEN_EXPIRE_SCHEDULE", "*/5 * * * *"),
                     retries=2, retry_delay=timedelta(seconds=30)))
def aspen_expire() -> None:
    @task
    def expire() -> None:
        """Kill every live instance whose ``expires_at`` has passed."""
        run_spark_job("expire", "--lake", lake_param(get_current_context()["params"]))

    expire()


aspen_expire()
