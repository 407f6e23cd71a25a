"""Housekeeping of the lake's Delta tables: OPTIMIZE (compact small files) and VACUUM.

VACUUM keeps ``retain_hours`` of history, the time-travel window: it must stay longer than the
longest gap between two maintained batches, because a rerun after a crash restores tables to the
versions the last ledger row recorded (:func:`aspen.pipeline.ledger.restore_uncommitted`).
Neither operation changes a table's protocol, so delta-rs readers keep working.

>>> known_tables()[:3]
('updates', 'quarantine', 'ingest_files')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.lake.deltars import commit_after, table_version
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_RETAIN_HOURS", "HousekeepingReport", "housekeep", "known_tables"]

#: One week of time travel by default (Delta's own default retention).
DEFAULT_RETAIN_HOURS = 168.0

#: Delta's safety check that refuses a VACUUM keeping less than 7 days.
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
#: Delta writes a VACUUM's counts (``VACUUM END``: ``numDeletedFiles``) to the table's history.
VACUUM_LOGGING = "spark.databricks.delta.vacuum.logging.enabled"


def known_tables() -> tuple[str, ...]:
    """Every table Aspen writes under a lake root."""
    from aspen.lake import tables
    from aspen.pipeline.view_tables import VIEW_NAMES

    pipeline = ("ledger", "metrics", "engine_state", "node_state", "summary",
                "expectation_results", "maintainer_lease")
    return (*tables.TABLE_DDL, *VIEW_NAMES, *pipeline)


@dataclass
class HousekeepingReport:
    """Per table: files compacted away and files vacuumed."""

    compacted: dict[str, int] = field(default_factory=dict)
    vacuumed: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        if not self.compacted:
            return ["no tables to keep"]
        return [f"{name:<24} optimize: {self.compacted[name]} file(s) removed, "
                f"vacuum: {self.vacuumed.get(name, 0)} file(s) deleted"
                for name in sorted(self.compacted)]


def housekeep(spark: SparkSession, settings: Settings,
              retain_hours: float = DEFAULT_RETAIN_HOURS) -> HousekeepingReport:
    """OPTIMIZE then VACUUM every existing table of the lake."""
    from aspen.spark.session import temporary_conf

    if retain_hours < 0:
        raise ConfigError(f"--retain-hours must be ≥ 0, not {retain_hours}")
    # shorter than Delta's 7-day safety check is a deliberate choice here, not an accident; the
    # check is off for these VACUUMs only, the session gets its own setting back
    with temporary_conf(spark, {RETENTION_CHECK: "false", VACUUM_LOGGING: "true"}):
        return _keep_tables(spark, settings, retain_hours)


def _keep_tables(spark: SparkSession, settings: Settings,
                 retain_hours: float) -> HousekeepingReport:
    from delta.tables import DeltaTable

    from aspen.lake.tables import table_exists

    report = HousekeepingReport()
    for name in known_tables():
        if not table_exists(spark, settings, name):
            continue
        table = DeltaTable.forPath(spark, settings.table_uri(name))
        metrics = table.optimize().executeCompaction().select("metrics.numFilesRemoved").first()
        report.compacted[name] = int(metrics[0] or 0) if metrics else 0
        before = table_version(settings, name)
        table.vacuum(retain_hours)
        report.vacuumed[name] = _files_deleted_by_vacuum(settings, name, before)
    return report


def _files_deleted_by_vacuum(settings: Settings, name: str, before: int) -> int:
    """The data files deleted by the VACUUM run on version ``before`` of table ``name``, from
    its ``VACUUM END`` commit in the Delta log (the command itself returns no rows), past any
    other writer's commits since."""
    entry = commit_after(settings, name, before, "VACUUM END")
    metrics = (entry or {}).get("operationMetrics") or {}
    return int(metrics.get("numDeletedFiles", 0))
