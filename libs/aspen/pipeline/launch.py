"""Launching a job of ``jobs/`` through ``spark-submit``, as the Airflow tasks do.

The ``spark-submit`` next to the Python running Airflow (else the one on ``PATH``), ``--master``
only when ``SPARK_MASTER`` is set (otherwise spark-submit's defaults or ``spark-defaults.conf``
decide), the Delta jars as ``--jars``, and the job file from ``ASPEN_JOBS_DIR`` or the checkout's
``jobs/``. Nothing heavy is imported here: DAG files import this at parse time.

>>> spark_submit_command("apply", "--lake", "lake")[-3:]  # doctest: +ELLIPSIS
['.../jobs/apply.py', '--lake', 'lake']
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

__all__ = ["dag_arguments", "lake_param", "run_spark_job", "schedule_from_env",
           "skip_while_followed", "spark_submit_command"]

REPO_ROOT = Path(__file__).resolve().parents[3]


def _delta_jars_option() -> list[str]:
    """``--jars A,B`` for the Delta jars: jars named in the session builder come too late for
    the driver's class path once spark-submit has started the JVM."""
    from aspen.errors import SetupError
    from aspen.spark.session import find_delta_jars

    try:
        return ["--jars", ",".join(find_delta_jars())]
    except SetupError as err:  # e.g. a cluster image with the jars baked in
        print(f"warning: {err}; launching without --jars", flush=True)
        return []


def spark_submit_command(job: str, *args: str) -> list[str]:
    """The ``spark-submit [--master M] [--jars …] jobs/<job>.py ARGS…`` command line."""
    import shutil
    import sys

    beside_python = Path(sys.executable).parent / "spark-submit"
    binary = str(beside_python) if beside_python.exists() else shutil.which("spark-submit")
    if binary is None:
        raise FileNotFoundError(
            "spark-submit not found beside the Python running Airflow nor on PATH"
        )
    jobs_dir = Path(os.environ.get("ASPEN_JOBS_DIR", REPO_ROOT / "jobs"))
    command = [binary]
    if os.environ.get("SPARK_MASTER"):
        command += ["--master", os.environ["SPARK_MASTER"]]
    command += _delta_jars_option()
    return [*command, str(jobs_dir / f"{job}.py"), *args]


def run_spark_job(job: str, *args: str) -> None:
    """Run :func:`spark_submit_command`, streaming its output into the task log."""
    import subprocess
    import sys

    command = spark_submit_command(job, *args)
    env = dict(os.environ)
    # The driver must be this interpreter (it has aspen, pyspark and delta installed).
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    print("running:", " ".join(command), flush=True)
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line.rstrip("\n"), flush=True)
        code = proc.wait()
    if code != 0:
        raise RuntimeError(f"spark-submit {job} exited with code {code}")




def lake_param(params: dict) -> str:
    """The lake root URI of a DAG run: its ``lake`` Param, else ``ASPEN_LAKE``, else the default.

    >>> lake_param({"lake": "memory-free/lake"}).startswith("file:")
    True
    """
    from aspen.settings import DEFAULT_LAKE, Settings

    lake = params.get("lake") or os.environ.get("ASPEN_LAKE") or DEFAULT_LAKE
    return Settings(lake=lake).lake_uri


def skip_while_followed(lake: str, why: str) -> None:
    """Skip the Airflow task (``AirflowSkipException``, its reason in the task log) while a
    follower holds the lake's maintainer lease: the task would be refused, and ``why`` says
    who does its work instead.

    >>> skip_while_followed("/nonexistent/lake", "the follower does it")  # no follower: returns
    """
    from aspen.lake.lease import live_follower
    from aspen.settings import Settings

    follower = live_follower(Settings(lake=lake))
    if follower is not None:
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"a follower holds the lake's maintainer lease "
                                   f"({follower.describe()}): {why}")


def schedule_from_env(variable: str, default: str) -> str | None:
    """A DAG schedule from environment ``variable`` (cron or preset); ``none`` or empty: manual.

    >>> schedule_from_env("ASPEN_UNSET_SCHEDULE_FOR_DOCTEST", "@daily")
    '@daily'
    """
    value = os.environ.get(variable, default).strip()
    return None if value.lower() in ("", "none", "null") else value


def dag_arguments(dag_id: str, doc: str, schedule: str | None, *, retries: int,
                  retry_delay: timedelta, params: dict[str, Any] | None = None,
                  **extra: Any) -> dict[str, Any]:
    """The ``@dag`` arguments every Aspen DAG shares: a fixed start date, no catch-up, one run at
    a time (one writer per table), the ``lake`` Param, the ``aspen`` tag and the module's doc.

    >>> args = dag_arguments("d", "doc", None, retries=1, retry_delay=timedelta(seconds=5))
    >>> args["catchup"], args["max_active_runs"], sorted(args["params"])
    (False, 1, ['lake'])
    """
    import pendulum
    from airflow.sdk import Param

    lake = Param(None, type=["null", "string"], description="lake root (path or URI)")
    return {"dag_id": dag_id, "schedule": schedule,
            "start_date": pendulum.datetime(2026, 1, 1, tz="UTC"), "catchup": False,
            "max_active_runs": 1,
            "default_args": {"retries": retries, "retry_delay": retry_delay},
            "params": {"lake": lake, **(params or {})}, "tags": ["aspen"], "doc_md": doc,
            **extra}
