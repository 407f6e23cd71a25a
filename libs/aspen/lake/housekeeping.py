"""Housekeeping of the lake's Delta tables: OPTIMIZE (compact small files) and VACUUM.

VACUUM keeps ``retain_hours`` of history, the time-travel window: it must stay longer than the
longest gap between two maintained batches, because a rerun after a crash restores tables to the
versions the last ledger row recorded (:func:`aspen.pipeline.ledger.restore_uncommitted`).
Neither operation changes a table's protocol, so delta-rs readers keep working.

Both write every table, so housekeeping holds the maintainer lease (refused at once while a
maintainer or a follower holds it; a follower runs it itself, in its own lease) and, while it
keeps the update log's tables, the log writer lease (an ingest waits meanwhile)
(:mod:`aspen.lake.lease`). The lease tables themselves
are only vacuumed, through delta-rs (whose commits are the compare-and-swap the leases rely
on), keeping at least an hour.

>>> known_tables()[:3]
('updates', 'quarantine', 'ingest_files')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.lake.deltars import commit_after, table_version
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_READINGS_RETENTION_HOURS", "DEFAULT_RETAIN_HOURS", "RETAIN_HOURS_VARIABLE",
           "HousekeepingReport", "housekeep", "known_tables", "purge_readings",
           "readings_retention_from_env", "retain_hours_from_env"]

#: The lease tables (one-row tables written by delta-rs; see :mod:`aspen.lake.lease`).
LEASE_TABLES = ("maintainer_lease", "log_writer_lease")
#: The update log's tables, kept while holding the log writer lease.
LOG_TABLES = ("updates", "quarantine", "ingest_files", "readings")
#: The tables of the readings stream and of stream networks.
STREAM_TABLES = ("reading_windows", "reading_drops", "reading_rules", "network_outputs",
                 "network_drops", "stream_networks")

#: How long readings are kept by default (a week): provenance requests reach back this far.
DEFAULT_READINGS_RETENTION_HOURS = 168.0
#: The environment variable of the readings' retention, in hours.
READINGS_RETENTION_VARIABLE = "ASPEN_READINGS_RETENTION_HOURS"

#: One week of time travel by default (Delta's own default retention).
DEFAULT_RETAIN_HOURS = 168.0
#: The environment variable of the history to keep (the housekeeping DAG's ``retain_hours``).
RETAIN_HOURS_VARIABLE = "ASPEN_RETAIN_HOURS"

#: Delta's safety check that refuses a VACUUM keeping less than 7 days.
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
#: Delta writes a VACUUM's counts (``VACUUM END``: ``numDeletedFiles``) to the table's history.
VACUUM_LOGGING = "spark.databricks.delta.vacuum.logging.enabled"


def retain_hours_from_env(environ: Mapping[str, str] | None = None) -> float:
    """The hours of history to keep: ``ASPEN_RETAIN_HOURS``, else :data:`DEFAULT_RETAIN_HOURS`
    (what the housekeeping DAG passes its job; a follower housekeeping keeps the same).

    >>> retain_hours_from_env({}), retain_hours_from_env({"ASPEN_RETAIN_HOURS": "24"})
    (168.0, 24.0)
    """
    text = (os.environ if environ is None else environ).get(RETAIN_HOURS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_RETAIN_HOURS
    try:
        hours = float(text)
    except ValueError:
        hours = -1.0
    if not hours >= 0:  # also NaN
        raise ConfigError(f"{RETAIN_HOURS_VARIABLE} must be a number of hours ≥ 0, not {text!r}")
    return hours


def readings_retention_from_env(environ: Mapping[str, str] | None = None) -> float:
    """Hours of readings to keep: ``ASPEN_READINGS_RETENTION_HOURS``, else a week.

    >>> readings_retention_from_env({}), readings_retention_from_env(
    ...     {"ASPEN_READINGS_RETENTION_HOURS": "2"})
    (168.0, 2.0)
    """
    text = (os.environ if environ is None else environ).get(READINGS_RETENTION_VARIABLE, "")
    if not text.strip():
        return DEFAULT_READINGS_RETENTION_HOURS
    try:
        hours = float(text)
    except ValueError:
        hours = -1.0
    if not hours >= 0:
        raise ConfigError(f"{READINGS_RETENTION_VARIABLE} must be a number of hours ≥ 0, not "
                          f"{text!r}")
    return hours


def purge_readings(settings: Settings, retention_hours: float,
                   now: datetime | None = None) -> int:
    """Delete the readings ingested more than ``retention_hours`` before ``now`` (a prefix by
    id, since ids follow ingest order); the rows deleted. The caller holds the log writer
    lease. A provenance request for a window whose readings are gone then says so
    (:class:`~aspen.errors.ProvenanceExpiredError`); the readings stream skips the deleting
    commit (its source reads with ``skipChangeCommits``).

    >>> purge_readings(Settings(lake="/nonexistent/lake"), 1.0)
    0
    """
    from aspen.lake.deltars import delete_where, table_exists

    if not table_exists(settings, "readings"):
        return 0
    cutoff = (now or datetime.now(UTC)) - timedelta(hours=retention_hours)
    return delete_where(settings, "readings",
                        f"ingested_at < '{cutoff.strftime('%Y-%m-%dT%H:%M:%S.%f')}Z'")


def known_tables() -> tuple[str, ...]:
    """Every table Aspen writes under a lake root."""
    from aspen.catalog import VIEWS
    from aspen.lake import tables
    from aspen.lake.view_log import VIEW_CHANGES

    pipeline = ("ledger", "metrics", "engine_state", "node_state", "variable_order", "summary",
                "expectation_results", VIEW_CHANGES, *STREAM_TABLES, *LEASE_TABLES)
    return (*tables.TABLE_DDL, *VIEWS, *pipeline)


@dataclass
class HousekeepingReport:
    """Per table: files compacted away and files vacuumed."""

    compacted: dict[str, int] = field(default_factory=dict)
    vacuumed: dict[str, int] = field(default_factory=dict)
    readings_purged: int = 0

    def lines(self) -> list[str]:
        if not self.compacted and not self.vacuumed:
            return ["no tables to keep"]
        purged = ([f"readings past their retention: {self.readings_purged} deleted"]
                  if self.readings_purged else [])
        return purged + [f"{name:<24} optimize: {self.compacted[name]} file(s) removed, "
                f"vacuum: {self.vacuumed.get(name, 0)} file(s) deleted"
                for name in sorted(self.compacted)] + [
            f"{name:<24} vacuum: {self.vacuumed[name]} file(s) deleted"
            for name in sorted(set(self.vacuumed) - set(self.compacted))]


def housekeep(spark: SparkSession, settings: Settings,
              retain_hours: float = DEFAULT_RETAIN_HOURS) -> HousekeepingReport:
    """OPTIMIZE then VACUUM every existing table of the lake, holding the maintainer lease."""
    from aspen.lake.lease import MaintainerLease
    from aspen.spark.session import temporary_conf

    if retain_hours < 0:
        raise ConfigError(f"--retain-hours must be ≥ 0, not {retain_hours}")
    # shorter than Delta's 7-day safety check is a deliberate choice here, not an accident; the
    # check is off for these VACUUMs only, the session gets its own setting back
    with MaintainerLease.reentrant(settings, "aspen housekeeping"), \
            temporary_conf(spark, {RETENTION_CHECK: "false", VACUUM_LOGGING: "true"}):
        return _keep_tables(spark, settings, retain_hours)


def _keep_tables(spark: SparkSession, settings: Settings,
                 retain_hours: float) -> HousekeepingReport:
    from aspen.lake.lease import LogWriterLease
    from aspen.lake.tables import table_exists

    report = HousekeepingReport()
    present = [name for name in known_tables() if table_exists(spark, settings, name)]
    for name in present:
        if name not in LOG_TABLES and name not in LEASE_TABLES:
            _keep_table(spark, settings, name, retain_hours, report)
    if any(name in LOG_TABLES for name in present):
        with LogWriterLease.reentrant(settings, "aspen housekeeping"):
            report.readings_purged = purge_readings(settings, readings_retention_from_env())
            for name in present:
                if name in LOG_TABLES:
                    _keep_table(spark, settings, name, retain_hours, report)
    for name in present:
        if name in LEASE_TABLES:
            report.vacuumed[name] = _vacuum_lease(settings, name, retain_hours)
    return report


def _keep_table(spark: SparkSession, settings: Settings, name: str, retain_hours: float,
                report: HousekeepingReport) -> None:
    """OPTIMIZE then VACUUM table ``name`` with Spark, counting into ``report``."""
    from delta.tables import DeltaTable

    table = DeltaTable.forPath(spark, settings.table_uri(name))
    metrics = table.optimize().executeCompaction().select("metrics.numFilesRemoved").first()
    report.compacted[name] = int(metrics[0] or 0) if metrics else 0
    before = table_version(settings, name)
    table.vacuum(retain_hours)
    report.vacuumed[name] = _files_deleted_by_vacuum(settings, name, before)


def _vacuum_lease(settings: Settings, name: str, retain_hours: float) -> int:
    """VACUUM the lease table ``name`` through delta-rs, keeping at least an hour (a lease row
    is never read from an older version); the files deleted."""
    import math

    from deltalake import DeltaTable

    hours = max(1, math.ceil(retain_hours))
    return len(DeltaTable(settings.table_uri(name)).vacuum(
        retention_hours=hours, dry_run=False, enforce_retention_duration=False))


def _files_deleted_by_vacuum(settings: Settings, name: str, before: int) -> int:
    """The data files deleted by the VACUUM run on version ``before`` of table ``name``, from
    its ``VACUUM END`` commit in the Delta log (the command itself returns no rows), past any
    other writer's commits since."""
    entry = commit_after(settings, name, before, "VACUUM END")
    metrics = (entry or {}).get("operationMetrics") or {}
    return int(metrics.get("numDeletedFiles", 0))
