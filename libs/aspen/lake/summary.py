"""Publish a one-row-per-table ``summary`` of the lake for the dashboard.

The ``summary`` table holds, for every Delta table under the lake root (except ``summary``
itself), its latest Delta version, its row count and when the summary was published. It is
overwritten as a whole on each publish and kept at reader version 1 (no deletion vectors, no
column mapping) so that delta-rs can read it.

>>> SUMMARY_TABLE, SUMMARY_COLUMNS
('summary', ('name', 'version', 'row_count', 'published_at'))
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.catalog import VIEWS
from aspen.errors import LakeError
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = [
    "KNOWN_TABLES",
    "SUMMARY_COLUMNS",
    "SUMMARY_TABLE",
    "TableSummary",
    "discover_tables",
    "publish_summary",
    "summarize_tables",
]

SUMMARY_TABLE = "summary"
SUMMARY_COLUMNS: tuple[str, ...] = ("name", "version", "row_count", "published_at")

#: Tables the pipeline writes; used when the lake's file system cannot be listed.
KNOWN_TABLES: tuple[str, ...] = (
    "updates",
    "quarantine",
    "link",
    "sensor",
    "triggered",
    "region_seed",
    "variables",
    "apply_notes",
)

#: Table properties that keep the summary table readable by delta-rs (reader version 1).
_READER_V1_PROPERTIES = {
    "delta.enableDeletionVectors": "false",
    "delta.columnMapping.mode": "none",
}


@dataclass(frozen=True)
class TableSummary:
    """One row of the ``summary`` table.

    >>> TableSummary("link", 3, 12, dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)).as_row()[:3]
    ('link', 3, 12)
    """

    name: str
    version: int
    row_count: int
    published_at: dt.datetime

    def as_row(self) -> tuple[str, int, int, dt.datetime]:
        """The row in :data:`SUMMARY_COLUMNS` order."""
        return (self.name, self.version, self.row_count, self.published_at)


def _is_delta_table(spark: SparkSession, uri: str) -> bool:
    from delta.tables import DeltaTable

    return bool(DeltaTable.isDeltaTable(spark, uri))


def discover_tables(spark: SparkSession, lake_uri: str) -> list[str]:
    """Names of the Delta tables directly under ``lake_uri``, sorted; ``summary`` excluded.

    Lists the lake root through Hadoop's file system (any scheme Spark can read). When the
    JVM is not reachable (Spark Connect), falls back to probing :data:`KNOWN_TABLES`.
    A missing lake root gives an empty list.
    """
    jvm = getattr(spark, "_jvm", None)
    jsc = getattr(spark, "_jsc", None)
    if jvm is None or jsc is None:
        settings = Settings(lake=lake_uri)
        names = [n for n in KNOWN_TABLES if _is_delta_table(spark, settings.table_uri(n))]
        return sorted(n for n in names if n != SUMMARY_TABLE)
    hpath = jvm.org.apache.hadoop.fs.Path
    root = hpath(lake_uri)
    fs = root.getFileSystem(jsc.hadoopConfiguration())
    if not fs.exists(root):
        return []
    names: list[str] = []
    for status in fs.listStatus(root):
        if not status.isDirectory():
            continue
        child = status.getPath()
        name = child.getName()
        if name == SUMMARY_TABLE or name.startswith((".", "_")):
            continue
        if fs.exists(hpath(child, "_delta_log")):
            names.append(name)
    return sorted(names)


def summarize_tables(
    spark: SparkSession,
    lake_uri: str,
    names: Iterable[str],
    published_at: dt.datetime | None = None,
) -> list[TableSummary]:
    """Latest version and row count of each named table (names that are not tables are skipped)."""
    from delta.tables import DeltaTable

    when = published_at or dt.datetime.now(dt.UTC)
    settings = Settings(lake=lake_uri)
    rows: list[TableSummary] = []
    for name in names:
        uri = settings.table_uri(name)
        if not DeltaTable.isDeltaTable(spark, uri):
            continue
        if name in VIEWS:  # a view's rows: its snapshot with the change log applied
            rows.append(_view_summary(settings, name, when))
            continue
        table = DeltaTable.forPath(spark, uri)
        last = table.history(1).select("version").collect()
        version = int(last[0]["version"]) if last else 0
        # Read the version we report, so the count and the version agree under concurrent writes.
        count = spark.read.format("delta").option("versionAsOf", version).load(uri).count()
        rows.append(TableSummary(name, version, int(count), when))
    return rows


def _view_summary(settings: Settings, view: str, when: dt.datetime) -> TableSummary:
    """A view's summary row: its committed snapshot version and its current row count."""
    from aspen.lake.committed import committed_versions, read_committed

    versions = committed_versions(settings)
    if view not in versions:
        return TableSummary(view, 0, 0, when)
    count = len(read_committed(settings, view, ["batch_id"], versions))
    return TableSummary(view, versions[view], count, when)


def publish_summary(spark: SparkSession, settings: Settings) -> list[TableSummary]:
    """Overwrite the ``summary`` table with one row per table of the lake; return the rows.

    An empty or missing lake publishes an empty ``summary`` table (so readers can tell
    "published, nothing there" from "never published").
    """
    from pyspark.sql.types import (
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    lake_uri = settings.lake_uri
    try:
        rows = summarize_tables(spark, lake_uri, discover_tables(spark, lake_uri))
    except Exception as err:  # py4j / analysis errors carry no Aspen meaning
        raise LakeError(f"could not summarise the lake at {lake_uri}: {err}") from err
    schema = StructType(
        [
            StructField("name", StringType(), False),
            StructField("version", LongType(), False),
            StructField("row_count", LongType(), False),
            # TimestampType (with time zone), not TimestampNTZ: NTZ would raise the reader version.
            StructField("published_at", TimestampType(), False),
        ]
    )
    frame = spark.createDataFrame([r.as_row() for r in rows], schema=schema)
    writer = frame.coalesce(1).write.format("delta").mode("overwrite")
    writer = writer.option("overwriteSchema", "true")
    for key, value in _READER_V1_PROPERTIES.items():
        writer = writer.option(key, value)
    writer.save(settings.table_uri(SUMMARY_TABLE))
    return rows
