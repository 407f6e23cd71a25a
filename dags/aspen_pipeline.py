"""Aspen pipeline: keep the follower warm → ingest the inbox → run the triggering rule over
the new sensor readings → apply to the base tables → maintain the views → check the
expectations → publish.

With the ``follower`` Param on (the default), the first task makes sure a follower (``aspen
maintain --follow --inbox <inbox>``, :mod:`aspen.pipeline.supervise`) maintains the lake: it
reports the live one, or starts one detached (its output appended to
``<inbox>/../.aspen-follower.log``), and restarts one that died or stopped renewing its lease.
The follower ingests, applies and maintains each file landing in the inbox within about a
second (moving it to ``<inbox>/ingested/``), so ``ingest`` skips once the follower has ingested
the inbox's files and committed their batch, ``apply`` and ``maintain`` skip, and the
expectations and publish run. With the Param off the run does every step itself.

The other tasks launch one job of ``jobs/`` each through ``spark-submit`` (the one next to the
Python running Airflow, else the one on ``PATH``) with the Delta jars as ``--jars``. The Spark
master comes from ``SPARK_MASTER`` when it is set, otherwise from spark-submit's own defaults
(or ``spark-defaults.conf``). Nothing heavy is imported at parse time.

Configuration (Airflow Params win over the environment, read when the task runs):

- ``lake``: lake root, path or URI (``ASPEN_LAKE``, default ``./lakehouse``);
- ``inbox``: folder of update files to ingest (``ASPEN_INBOX``, default ``<lake>/../inbox``);
  a run moves the files it ingests to ``<inbox>/done/<run id>/`` and ingests them from there
  with its run id as delivery (a retry is a rerun, never a second send);
- a ``lake`` or ``inbox`` Param must be the configured one (``ASPEN_LAKE``, ``ASPEN_INBOX``) or
  lie under a root of ``ASPEN_ALLOWED_ROOTS`` (comma-separated paths or URIs), with no ``..``
  segment and no control characters; otherwise the task fails at once with one line;
- ``readings_provenance``: how the readings task's rule keeps its windows' provenance, ``eager``
  (the readings' ids, Reduced-Eager) or ``lazy`` (covering intervals, Replay-Lazy)
  (``ASPEN_READINGS_PROVENANCE``, default eager); the task skips a lake without readings;
- ``partitions`` / ``mode`` / ``runtime``: query nodes, MinShip mode and maintenance runtime
  (``ASPEN_PARTITIONS`` 4, ``ASPEN_MODE`` lazy, ``ASPEN_RUNTIME`` local);
- ``follower``: keep a warm follower (``ASPEN_FOLLOWER``, default on; ``0``/``false``/``off``
  turn it off). Whatever the Param, ``ingest`` skips while a live follower ingests this inbox,
  and ``apply`` and ``maintain`` while any follower holds the lake's maintainer lease (started
  by hand too); ``aspen maintain --stop`` stops it once the Param is off;
- schedule: ``ASPEN_PIPELINE_SCHEDULE`` (cron or preset, default every 5 minutes; ``none`` to
  trigger by hand only).

Jobs are idempotent per batch, so tasks may be retried.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from airflow.sdk import Asset, Param, dag, get_current_context, task

from aspen import catalog
from aspen.pipeline.launch import (
    check_run_path,
    dag_arguments,
    fail_task,
    lake_param,
    spark_submit_command,  # noqa: F401 - part of this DAG's API
)
from aspen.pipeline.launch import run_spark_job as _spark_submit
from aspen.settings import DEFAULT_LAKE, MAX_PARTITIONS, Settings

DAG_ID = "aspen_pipeline"
FOLLOWER_ENV = "ASPEN_FOLLOWER"
DEFAULT_SCHEDULE = "*/5 * * * *"
#: Update files the ingest job accepts (docs/architecture.md, "Update records").
INBOX_SUFFIXES = (".jsonl", ".json", ".ndjson", ".csv")


def _schedule() -> str | None:
    value = os.environ.get("ASPEN_PIPELINE_SCHEDULE", DEFAULT_SCHEDULE).strip()
    return None if value.lower() in ("", "none", "null") else value


def _follower_default() -> bool:
    """The ``follower`` Param's default: ``ASPEN_FOLLOWER``, on unless ``0``/``false``/``no``/
    ``off``."""
    return os.environ.get(FOLLOWER_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _asset(table: str) -> Asset:
    """The Airflow Asset of one Delta table under the lake named by ``ASPEN_LAKE`` at parse time."""
    settings = Settings(lake=os.environ.get("ASPEN_LAKE", DEFAULT_LAKE))
    return Asset(name=f"aspen.{table}", uri=settings.table_uri(table), group="aspen")


UPDATES, QUARANTINE = _asset("updates"), _asset("quarantine")
READING_OUTPUTS = [_asset(t) for t in ("reading_windows", "reading_drops")]
BASE_TABLES = [_asset(t) for t in ("link", "sensor", "triggered", "region_seed", "variables")]
APPLY_NOTES = _asset("apply_notes")
VIEWS = [_asset(t) for t in (*catalog.VIEWS, "ledger", "metrics")]
EXPECTATION_RESULTS = _asset("expectation_results")
SUMMARY = _asset("summary")


def _lake_and_inbox() -> tuple[str, Path]:
    """The lake root and inbox folder for this run: Params, then environment, then defaults.

    A Param must name the configured lake or inbox or lie under ``ASPEN_ALLOWED_ROOTS``
    (:func:`aspen.pipeline.launch.check_run_path`); otherwise the task fails with one line.
    """
    from aspen.errors import ConfigError

    params = get_current_context()["params"]
    try:
        lake_uri = lake_param(params)
        configured_inbox = os.environ.get("ASPEN_INBOX") or None
        if params.get("inbox") is not None:
            inbox_uri = check_run_path("inbox", params["inbox"], configured_inbox)
        elif configured_inbox:
            inbox_uri = Settings(lake=configured_inbox).lake_uri
        else:  # <lake>/../inbox
            if not lake_uri.startswith("file:"):
                raise ConfigError(f"the lake {lake_uri!r} is not local: set the 'inbox' param "
                                  "or ASPEN_INBOX")
            inbox_uri = Path(unquote(urlparse(lake_uri).path)).parent.joinpath("inbox").as_uri()
        if not inbox_uri.startswith("file:"):
            raise ConfigError(f"the inbox {inbox_uri!r} is not a local folder")
    except ConfigError as err:
        fail_task(err)
    return lake_uri, Path(unquote(urlparse(inbox_uri).path))


def _skip_if_followed(lake: str) -> None:
    """Skip the task when a follower (``aspen maintain --follow``) holds the lake's maintainer
    lease: it applies and maintains every ingested batch itself, and would refuse this task."""
    from aspen.lake.lease import live_follower

    follower = live_follower(Settings(lake=lake))
    if follower is not None:
        from airflow.sdk.exceptions import AirflowSkipException

        raise AirflowSkipException(f"a follower maintains this lake: {follower.describe()}")


def inbox_files(inbox: Path) -> list[Path]:
    """Update files directly in ``inbox`` (not in sub-folders such as ``done/``), sorted: regular
    files only (a symbolic link, a fifo or a device is never read).

    A missing inbox holds no files.
    """
    if not inbox.is_dir():
        return []
    return sorted(p for p in inbox.iterdir() if p.is_file() and not p.is_symlink()
                  and p.suffix.lower() in INBOX_SUFFIXES)


@dag(**dag_arguments(
    DAG_ID, __doc__, _schedule(), retries=2, retry_delay=timedelta(seconds=30),
    dagrun_timeout=timedelta(hours=1),
    params={
        "inbox": Param(None, type=["null", "string"], description="folder of update files"),
        "follower": Param(
            _follower_default(), type="boolean",
            description="keep a warm follower that ingests the inbox, applies and maintains "
                        "(the ingest, apply and maintain tasks then skip)",
        ),
        "readings_provenance": Param(
            os.environ.get("ASPEN_READINGS_PROVENANCE", "eager"), enum=["eager", "lazy"],
            description="the readings rule's provenance: eager (reading ids, Reduced-Eager) or "
                        "lazy (covering intervals, Replay-Lazy)",
        ),
        "partitions": Param(
            int(os.environ.get("ASPEN_PARTITIONS", "4")), type="integer", minimum=1,
            maximum=MAX_PARTITIONS,
            description="query nodes (partitions) of the maintenance runtime",
        ),
        "mode": Param(
            os.environ.get("ASPEN_MODE", "lazy"), enum=["lazy", "eager"], description="MinShip mode"
        ),
        "runtime": Param(
            os.environ.get("ASPEN_RUNTIME", "local"), enum=["local", "spark"],
            description="maintenance runtime: local (operators in the job's process) or spark "
                        "(partitions as query nodes)",
        ),
    },
))
def aspen_pipeline() -> None:
    @task
    def follower() -> dict[str, object]:
        """Report the lake's live follower, or start one that ingests the inbox (skipped with
        the ``follower`` Param off); a follower that cannot start fails the task in one line
        naming its log."""
        from airflow.sdk.exceptions import AirflowSkipException

        from aspen.pipeline.supervise import FollowerError, ensure_follower, follower_log_path

        lake, inbox = _lake_and_inbox()
        params = get_current_context()["params"]
        if not params.get("follower"):
            raise AirflowSkipException("the follower Param is off: this run ingests, applies and "
                                       "maintains itself")
        try:
            status = ensure_follower(Settings(lake=lake), inbox, str(params["runtime"]),
                                     int(params["partitions"]), str(params["mode"]),
                                     follower_log_path(inbox))
        except FollowerError as err:
            for line in err.tail:
                print(f"follower log: {line}")
            raise
        print(status.describe())
        return {"state": status.state, "pid": status.pid, "host": status.host}

    @task(outlets=[UPDATES, QUARANTINE], trigger_rule="none_failed")
    def ingest() -> list[str]:
        """Ingest the update files in the inbox (skipped while a follower ingests the inbox,
        once it has committed the inbox's files): they are first moved to
        ``<inbox>/done/<run id>/``, then ingested from there under the run id as delivery, so
        a retry of this task ingests the same files as a rerun, never a second send."""
        from aspen.pipeline.supervise import wait_for_inbox, watching_follower

        lake, inbox = _lake_and_inbox()
        if watching_follower(Settings(lake=lake), inbox) is not None:
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(wait_for_inbox(Settings(lake=lake), inbox))
        run_id = str(get_current_context().get("run_id", "manual"))
        done = inbox / "done" / run_id.replace(":", "_").replace("/", "_")
        for path in inbox_files(inbox):  # claimed by this run; one already there waits
            if not (done / path.name).exists():
                done.mkdir(parents=True, exist_ok=True)
                path.rename(done / path.name)
        files = inbox_files(done)
        if not files:
            print(f"ingest: no update files in {inbox}; nothing to do")
            return []
        _spark_submit("ingest", "--lake", lake, f"--delivery={run_id}", *map(str, files))
        return [p.name for p in files]

    @task(outlets=[*READING_OUTPUTS, UPDATES], trigger_rule="none_failed")
    def readings() -> None:
        """Run the triggering rule over the readings ingested since its last run (skipped on a
        lake without readings); its decisions are logged as ``triggered`` updates, which apply
        and maintain take next (or the follower)."""
        from aspen.lake.deltars import table_exists

        lake, _ = _lake_and_inbox()
        if not table_exists(Settings(lake=lake), "readings"):
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException("no sensor readings in this lake")
        params = get_current_context()["params"]
        _spark_submit("readings", "--lake", lake, "--provenance",
                      str(params["readings_provenance"]))

    @task(outlets=[*BASE_TABLES, APPLY_NOTES], trigger_rule="none_failed")
    def apply() -> None:
        """Apply every logged batch not yet applied to the base tables (skipped while a
        follower maintains the lake: it applies them itself)."""
        lake, _ = _lake_and_inbox()
        _skip_if_followed(lake)
        _spark_submit("apply", "--lake", lake)

    @task(outlets=VIEWS)
    def maintain() -> None:
        """Maintain the views over every applied batch since the last committed one (skipped
        while a follower maintains the lake)."""
        lake, _ = _lake_and_inbox()
        _skip_if_followed(lake)
        params = get_current_context()["params"]
        _spark_submit(
            "maintain", "--lake", lake, "--runtime", str(params["runtime"]),
            "--partitions", str(params["partitions"]), "--mode", str(params["mode"]),
        )

    @task(outlets=[EXPECTATION_RESULTS], trigger_rule="none_failed")
    def expectations() -> None:
        """Run the Great Expectations suites (also after a maintain left to a follower); a failed
        expectation fails the task (no publish)."""
        lake, _ = _lake_and_inbox()
        _spark_submit("expectations", "--lake", lake)

    @task(outlets=[SUMMARY])
    def publish() -> None:
        """Overwrite the ``summary`` table (one row per table of the lake)."""
        lake, _ = _lake_and_inbox()
        _spark_submit("publish", "--lake", lake)

    ingested = ingest()
    applied = apply()
    follower() >> ingested >> readings() >> applied >> maintain() >> expectations() >> publish()


aspen_pipeline()
