"""Aspen housekeeping: Delta OPTIMIZE and VACUUM of every lake table (``jobs/housekeeping.py``).

Configuration: ``lake`` Param (``ASPEN_LAKE``; a Param must be it or lie under
``ASPEN_ALLOWED_ROOTS``, else the task fails with one line); ``retain_hours`` Param
(``ASPEN_RETAIN_HOURS``, default 168): the time-travel window VACUUM keeps, which must exceed the
longest gap between two maintained batches (crash recovery restores to the last committed
versions); schedule ``ASPEN_HOUSEKEEPING_SCHEDULE`` (default daily). While a follower
(``aspen maintain --follow``) holds the maintainer lease the task is skipped: housekeeping waits
for a time without a follower, and the follower keeps the tables itself (``--housekeep-every``).
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import Param, dag, get_current_context, task

from aspen.lake.housekeeping import retain_hours_from_env
from aspen.pipeline.launch import (
    dag_arguments,
    lake_param,
    run_spark_job,
    schedule_from_env,
    skip_while_followed,
)

DAG_ID = "aspen_housekeeping"


@dag(**dag_arguments(
    DAG_ID, __doc__, schedule_from_env("ASPEN_HOUSEKEEPING_SCHEDULE", "@daily"),
    retries=1, retry_delay=timedelta(minutes=5),
    params={"retain_hours": Param(retain_hours_from_env(), type="number", minimum=0,
                                  description="history VACUUM keeps (time-travel window)")},
))
def aspen_housekeeping() -> None:
    @task
    def optimize_and_vacuum() -> None:
        """Compact small files, then delete files older than the retention window (skipped
        while a follower maintains the lake)."""
        params = get_current_context()["params"]
        lake = lake_param(params)
        skip_while_followed(lake, "housekeeping waits for a time without a follower (the "
                                  "follower keeps the tables itself, --housekeep-every)")
        run_spark_job("housekeeping", "--lake", lake, "--retain-hours", str(params["retain_hours"]))

    optimize_and_vacuum()


aspen_housekeeping()
