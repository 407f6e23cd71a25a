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
from typing import Any, NoReturn

__all__ = ["ALLOWED_ROOTS_ENV", "allowed_roots", "check_run_path", "dag_arguments", "fail_task",
           "lake_param", "run_spark_job", "schedule_from_env", "skip_while_followed",
           "spark_submit_command"]

REPO_ROOT = Path(__file__).resolve().parents[3]
#: Comma-separated folders or URIs under which a run's ``lake`` and ``inbox`` Params may lie.
ALLOWED_ROOTS_ENV = "ASPEN_ALLOWED_ROOTS"


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
    """The ``spark-submit [--master M] [--jars …] [--conf log options] jobs/<job>.py ARGS…``
    command line; the log options keep Spark's log out of the task's output but its errors
    (:func:`aspen.spark.session.log4j2_java_options`)."""
    import shutil
    import sys

    from aspen.spark.session import LOG_OPTIONS_CONF, log4j2_java_options

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
    log_options = log4j2_java_options()
    if log_options:
        command += ["--conf", f"{LOG_OPTIONS_CONF}={log_options}"]
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




def allowed_roots() -> list[str]:
    """The roots of :data:`ALLOWED_ROOTS_ENV` as URIs (empty when it is unset), normalised as a
    lake root is (:func:`aspen.settings.normal_uri`: symbolic links and ``..`` of a local root
    resolved), so a run's path and a root compare in one form.

    >>> os.environ[ALLOWED_ROOTS_ENV] = "s3a://bucket/lakes/, /srv/aspen"
    >>> allowed_roots()
    ['s3a://bucket/lakes', 'file:///srv/aspen']
    >>> del os.environ[ALLOWED_ROOTS_ENV]
    """
    from aspen.settings import normal_uri

    text = os.environ.get(ALLOWED_ROOTS_ENV, "")
    return [normal_uri(part.strip(), f"the {ALLOWED_ROOTS_ENV} root")
            for part in text.split(",") if part.strip()]


def _under(uri: str, root: str) -> bool:
    return uri == root or uri.startswith(root.rstrip("/") + "/")


def check_run_path(name: str, value: object, configured: str | None) -> str:
    """``value`` of the run Param ``name`` (``lake`` or ``inbox``) as a URI, if the run may use
    it; else :class:`~aspen.errors.ConfigError` in one line.

    Anyone who may trigger a DAG may set its Params, and a task writes to the lake and moves the
    inbox's files, so a Param is a string that names a path or URI (not empty, no control
    characters, no ``..`` segment even percent-encoded, no query, fragment or parameters in a
    URI), and it must be the ``configured`` one (``ASPEN_LAKE``, ``ASPEN_INBOX``) or lie under a
    root of ``ASPEN_ALLOWED_ROOTS``. The Param, the configured path and the roots are compared
    in their normal form (:func:`aspen.settings.normal_uri`): a local path or ``file://`` URI
    with its symbolic links resolved, so a link out of a root is outside it.

    >>> check_run_path("lake", "/srv/lake", "/srv/lake")
    'file:///srv/lake'
    >>> check_run_path("lake", "/srv/lake/../etc", "/srv/lake")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: the run's 'lake' Param '/srv/lake/../etc' has a '..' segment
    """
    from urllib.parse import unquote

    from aspen.errors import ConfigError
    from aspen.settings import check_lake_text, normal_uri

    if not isinstance(value, str):
        raise ConfigError(f"the run's {name!r} Param must be a string, not {value!r}")
    try:
        check_lake_text(value)
    except ConfigError:
        raise ConfigError(f"the run's {name!r} Param {value!r} is empty or has control "
                          "characters") from None
    # the whole text, not only a URI's path: '/x?/../..' hides its '..' from a URI's path
    if ".." in unquote(value).replace("\\", "/").split("/"):
        raise ConfigError(f"the run's {name!r} Param {value!r} has a '..' segment")
    uri = normal_uri(value, f"the run's {name!r} Param")
    if configured and uri == normal_uri(configured, f"the configured {name}"):
        return uri
    roots = allowed_roots()
    if any(_under(uri, root) for root in roots):
        return uri
    allowed = f"only the configured {configured!r}" if configured else "none configured"
    where = (f" or a path under {', '.join(roots)}" if roots
             else f" (set {ALLOWED_ROOTS_ENV} to allow others)")
    raise ConfigError(f"the run's {name!r} Param {value!r} is not allowed: {allowed}{where}")


def fail_task(err: Exception) -> NoReturn:
    """Fail the Airflow task at once (no retry can help) with ``err``'s one line."""
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException(str(err)) from None


def lake_param(params: dict) -> str:
    """The lake root URI of a DAG run: its ``lake`` Param (checked, :func:`check_run_path`),
    else ``ASPEN_LAKE``, else the default; a Param the run may not use fails the task.

    >>> lake_param({"lake": None}).startswith("file:")
    True
    """
    from aspen.errors import ConfigError
    from aspen.settings import DEFAULT_LAKE, Settings

    configured = os.environ.get("ASPEN_LAKE") or DEFAULT_LAKE
    try:
        if params.get("lake") is not None:
            return check_run_path("lake", params["lake"], configured)
        return Settings(lake=configured).lake_uri
    except ConfigError as err:
        fail_task(err)


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
