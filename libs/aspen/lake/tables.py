"""Names and schemas (DDL strings) of the lake tables; every path comes from ``Settings.table_uri``.

Tables
------
``updates``        append-only log of valid update records (one ingest batch per ``aspen ingest``).
``quarantine``     invalid records: raw text, source, line, reason (and a short reason ``code``).
``ingest_files``   one row per ingested file (source name + sha256, the ``delivery`` that sent it);
                   the commit marker.
``link`` …         base tables: one row per LIVE insertion instance, with its variable ``var``.
``variables``      the variable registry: every instance ever born, with its death when it died.
``apply_notes``    non-fatal notes of apply (e.g. a delete of a tuple that is not live).
``apply_state``    one row per applied ingest batch; the last applied batch is the maximum.

>>> TABLE_DDL["ingest_files"].split(",")[0]
'source STRING'
>>> BASE_TABLES
('link', 'sensor', 'triggered', 'region_seed')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "UPDATES",
    "QUARANTINE",
    "INGEST_FILES",
    "READINGS",
    "VARIABLES",
    "APPLY_NOTES",
    "APPLY_STATE",
    "BASE_TABLES",
    "BASE_KEY_COLUMNS",
    "BASE_VALUE_COLUMNS",
    "TABLE_DDL",
    "ADDED_COLUMNS",
    "schema_of",
    "arrow_schema_of",
    "table_exists",
    "ensure_table",
    "read_table",
]

UPDATES = "updates"
QUARANTINE = "quarantine"
INGEST_FILES = "ingest_files"
READINGS = "readings"
VARIABLES = "variables"
APPLY_NOTES = "apply_notes"
APPLY_STATE = "apply_state"

#: Base relations, in the order of ``aspen.engine.batch.BASE_RELATIONS``.
BASE_TABLES: tuple[str, ...] = ("link", "sensor", "triggered", "region_seed")

#: The tuple key of each base relation (a delete names it; liveness is per key).
BASE_KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "link": ("src", "dst"),
    "sensor": ("id",),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
}

#: The tuple values of each base relation (``BaseFact.values``); key columns come first.
BASE_VALUE_COLUMNS: dict[str, tuple[str, ...]] = {
    "link": ("src", "dst", "cost"),
    "sensor": ("id", "x", "y"),
    "triggered": ("id",),
    "region_seed": ("region", "id"),
}

_INSTANCE_COLS = (
    "var STRING, inserted_at TIMESTAMP, expires_at TIMESTAMP, batch_id BIGINT, seq BIGINT"
)

TABLE_DDL: dict[str, str] = {
    UPDATES: (
        "batch_id BIGINT, seq BIGINT, source STRING, line BIGINT, op STRING, relation STRING, "
        "src STRING, dst STRING, cost DOUBLE, id STRING, x DOUBLE, y DOUBLE, region STRING, "
        "ttl_s DOUBLE, event_time TIMESTAMP, ingested_at TIMESTAMP"
    ),
    QUARANTINE: (
        "batch_id BIGINT, source STRING, line BIGINT, raw STRING, reason STRING, code STRING, "
        "ingested_at TIMESTAMP"
    ),
    INGEST_FILES: (
        "source STRING, sha256 STRING, path STRING, batch_id BIGINT, seq_start BIGINT, "
        "seq_end BIGINT, valid BIGINT, quarantined BIGINT, blank BIGINT, ingested_at TIMESTAMP"
    ),
    # sensor readings, append-only: ``id`` is unique and consecutive over the table, in the
    # order the readings were ingested
    READINGS: (
        "id BIGINT, batch_id BIGINT, source STRING, line BIGINT, sensor STRING, ts TIMESTAMP, "
        "value DOUBLE, ingested_at TIMESTAMP"
    ),
    "link": f"src STRING, dst STRING, cost DOUBLE, {_INSTANCE_COLS}",
    "sensor": f"id STRING, x DOUBLE, y DOUBLE, {_INSTANCE_COLS}",
    "triggered": f"id STRING, {_INSTANCE_COLS}",
    "region_seed": f"region STRING, id STRING, {_INSTANCE_COLS}",
    VARIABLES: (
        "var STRING, relation STRING, key STRING, `values` STRING, inserted_batch BIGINT, "
        "inserted_seq BIGINT, inserted_at TIMESTAMP, expires_at TIMESTAMP, deleted_batch BIGINT, "
        "deleted_seq BIGINT, deleted_at TIMESTAMP, death STRING"
    ),
    APPLY_NOTES: "batch_id BIGINT, seq BIGINT, relation STRING, key STRING, note STRING",
    APPLY_STATE: (
        "batch_id BIGINT, applied_at TIMESTAMP, updates BIGINT, born BIGINT, died BIGINT, "
        "notes BIGINT"
    ),
}

#: Nullable columns a table gained after lakes were made without them (DDL, per table). A writer
#: that sets one appends with a schema merge, so an older table gains it on that append; a
#: writer that does not know it leaves it out (Spark and :func:`aspen.lake.deltars.append_table`
#: fill null), so old and new tables take every writer's appends. ``ingest_files.delivery``: the
#: caller's token of the delivery that sent the file (:mod:`aspen.lake.ingest`), else null.
ADDED_COLUMNS: dict[str, str] = {
    INGEST_FILES: "delivery STRING",
}


def _ddl(name: str, added: bool) -> list[str]:
    columns = TABLE_DDL[name].split(",")
    if added and name in ADDED_COLUMNS:
        columns += ADDED_COLUMNS[name].split(",")
    return columns


def schema_of(name: str, added: bool = False) -> StructType:
    """The Spark schema of table ``name`` (parsed from :data:`TABLE_DDL`; with ``added``, its
    :data:`ADDED_COLUMNS` too).

    >>> schema_of("apply_notes").fieldNames()
    ['batch_id', 'seq', 'relation', 'key', 'note']
    """
    from pyspark.sql import types as T

    spark_types = {
        "STRING": T.StringType(),
        "BIGINT": T.LongType(),
        "DOUBLE": T.DoubleType(),
        "TIMESTAMP": T.TimestampType(),
    }
    fields = []
    for column in _ddl(name, added):
        column_name, type_name = column.split()
        fields.append(T.StructField(column_name.strip("`"), spark_types[type_name], True))
    return T.StructType(fields)


def arrow_schema_of(name: str, added: bool = False) -> pa.Schema:
    """The Arrow schema of table ``name`` (from :data:`TABLE_DDL`; with ``added``, its
    :data:`ADDED_COLUMNS` too), for writers without a JVM; timestamps are microseconds in UTC,
    as Spark's ``TIMESTAMP`` is in Delta.

    >>> arrow_schema_of("apply_notes").names
    ['batch_id', 'seq', 'relation', 'key', 'note']
    >>> str(arrow_schema_of("apply_state").field("applied_at").type)
    'timestamp[us, tz=UTC]'
    >>> arrow_schema_of("ingest_files", added=True).names[-1]
    'delivery'
    """
    import pyarrow as pa

    arrow_types = {
        "STRING": pa.string(),
        "BIGINT": pa.int64(),
        "DOUBLE": pa.float64(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    }
    fields = []
    for column in _ddl(name, added):
        column_name, type_name = column.split()
        fields.append(pa.field(column_name.strip("`"), arrow_types[type_name], nullable=True))
    return pa.schema(fields)


def table_exists(spark: SparkSession, settings: Settings, name: str) -> bool:
    """Whether the Delta table ``name`` exists under the lake root."""
    from delta.tables import DeltaTable

    return bool(DeltaTable.isDeltaTable(spark, settings.table_uri(name)))


def ensure_table(spark: SparkSession, settings: Settings, name: str) -> None:
    """Create the empty Delta table ``name`` if it does not exist (reader version 1)."""
    if table_exists(spark, settings, name):
        return
    empty = spark.createDataFrame([], schema_of(name))
    empty.write.format("delta").mode("append").save(settings.table_uri(name))


def read_table(spark: SparkSession, settings: Settings, name: str) -> DataFrame:
    """Table ``name`` as a DataFrame; an empty one with the right schema when it does not exist."""
    if not table_exists(spark, settings, name):
        return spark.createDataFrame([], schema_of(name))
    return spark.read.format("delta").load(settings.table_uri(name))
