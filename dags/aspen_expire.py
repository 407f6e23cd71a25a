"""Aspen TTL sweep: instances whose TTL has passed become deletions (``jobs/expire.py``).

The next ``aspen_pipeline`` run maintains the views over them. Configuration: ``lake`` Param
(``ASPEN_LAKE``; a Param must be it or lie under ``ASPEN_ALLOWED_ROOTS``, else the task fails
with one line), schedule ``ASPEN_EXPIRE_SCHEDULE`` (default every 5 minutes; ``none`` for
manual runs). The sweep and the pipeline's ingest may overlap: each takes the lake's log writer
lease to hand out a batch number, so one waits for the other. While a follower
(``aspen maintain --follow``) holds the maintainer lease the task is skipped: the follower
sweeps TTLs itself (``--expire-every``).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import dag, get_current_context, task

from aspen.pipeline.launch import (
    dag_arguments,
    lake_param,
    run_spark_job,
    schedule_from_env,
    skip_while_followed,
)

DAG_ID = "aspen_expire"


@dag(**dag_arguments(DAG_ID, __doc__, schedule_from_env("ASPEN_EXPIRE_SCHEDULE", "*/5 * * * *"),
                     retries=2, retry_delay=timedelta(seconds=30)))
def aspen_expire() -> None:
    @task
    def expire() -> None:
        """Kill every live instance whose ``expires_at`` has passed (skipped while a follower
        maintains the lake: it sweeps itself)."""
        lake = lake_param(get_current_context()["params"])
        skip_while_followed(lake, "the follower sweeps TTLs itself (--expire-every)")
        run_spark_job("expire", "--lake", lake)

    expire()


aspen_expire()
