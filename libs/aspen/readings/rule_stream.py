"""The readings stream: triggering rules over the lake's ``readings``, on Spark Structured
Streaming, each decision explained down to its readings.

One streaming query per rule reads the append-only Delta table ``readings`` as a stream (the
deleting commits of housekeeping skipped), groups it by sensor — or, for a zone rule, by the
zone of each reading's sensor, from a stream-static join with the ``sensor`` table — and keeps
one JSON value per key in Spark's state store (``transformWithStateInPandas`` over RocksDB;
:mod:`aspen.pipeline.reading_rows`). Its ``foreachBatch`` sink collects the micro-batch's rows
once and writes them with delta-rs (:func:`aspen.pipeline.reading_tables.write_micro_batch`).

Exactly once: the query's checkpoint (under the lake root, ``_checkpoints/readings-<rule>``)
holds the offsets and the state; a micro-batch rerun after a crash rewrites the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError
from aspen.lake import deltars, tables
from aspen.pipeline.reading_rows import (
    _OUTPUT_DDL,
    _STATE_DDL,
    Advance,
    _sensor_advance,
    _zone_advance,
)
from aspen.pipeline.reading_tables import MODES, Rule, record_rule, write_micro_batch
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule
from aspen.streams.zones import ZoneRule

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ROCKSDB_PROVIDER", "StreamReport", "checkpoint_uri", "reading_frame",
           "run_query", "run_reading_stream", "zone_frame"]

def checkpoint_uri(settings: Settings, rule: Rule) -> str:
    """Where rule ``rule``'s streaming query keeps its offsets and state (under the lake root).

    >>> checkpoint_uri(Settings(lake="s3://bucket/lake"), TriggerRule())
    's3://bucket/lake/_checkpoints/readings-avg_above'
    """
    return settings.table_uri(f"_checkpoints/readings-{rule.name}")


#: The state store ``transformWithStateInPandas`` needs.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _processor(name: str, advance: Advance) -> Any:
    """A stateful processor for ``transformWithStateInPandas`` keeping one JSON value per key
    (value state ``name``) and running ``advance`` on each key's rows of a micro-batch."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class KeyedRule(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState(name, _STATE_DDL)

        def handleInputRows(self, key: tuple[Any, ...], rows: Iterator[pd.DataFrame],  # noqa: N802
                            timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
            text = self.state.get()[0] if self.state.exists() else None
            out, text = advance(str(key[0]), list(rows), text)
            if text is not None:
                self.state.update((text,))
            yield out

        def close(self) -> None:
            pass

    return KeyedRule()


def zone_frame(spark: SparkSession, settings: Settings, rule: ZoneRule) -> DataFrame:
    """The readings stream with each reading's zone, from its sensor's position in the ``sensor``
    base table (a stream-static join: each micro-batch sees the table's latest version, so the
    positions applied so far); ``""`` for a sensor without one."""
    from pyspark.sql import functions as F

    readings = reading_frame(spark, settings)
    if not deltars.table_exists(settings, "sensor"):
        return readings.withColumn("zone", F.lit(""))
    positions = (spark.read.format("delta").load(settings.table_uri("sensor"))
                 .groupBy(F.col("id").alias("sensor"))
                 .agg(F.first("x").alias("x"), F.first("y").alias("y")))
    zone = F.concat(F.lit("z"), F.floor(F.col("x") / rule.zone_m).cast("string"), F.lit("_"),
                    F.floor(F.col("y") / rule.zone_m).cast("string"))
    return (readings.join(F.broadcast(positions), "sensor", "left")
            .withColumn("zone", F.coalesce(zone, F.lit("")))
            .select("id", "sensor", "ts_us", "value", "zone"))


@dataclass
class StreamReport:
    """What one run of the stream did: micro-batches, readings counted, windows, drops,
    decisions."""

    rule: str
    mode: str
    batches: int = 0
    windows: int = 0
    dropped: int = 0
    decisions: int = 0

    def line(self) -> str:
        return (f"rule {self.rule} ({self.mode}): {self.batches} micro-batch(es), "
                f"{self.windows} window(s) closed, {self.decisions} decision(s) logged, "
                f"{self.dropped} reading(s) dropped")


def _sink(settings: Settings, rule: Rule, mode: str, report: StreamReport):
    """The ``foreachBatch`` function: one collect, then delta-rs writes from the driver."""

    def write(batch: DataFrame, stream_batch: int) -> None:
        report.batches += 1
        windows, dropped, decisions = write_micro_batch(settings, rule, mode, batch.toPandas(),
                                                        stream_batch)
        report.windows += windows
        report.dropped += dropped
        report.decisions += decisions

    return write


def reading_frame(spark: SparkSession, settings: Settings) -> DataFrame:
    """The ``readings`` table as a stream of (id, sensor, ts_us, value)."""
    from pyspark.sql import functions as F

    # housekeeping deletes readings past their retention: the stream skips those commits
    return (spark.readStream.format("delta").option("skipChangeCommits", "true")
            .load(settings.table_uri(tables.READINGS))
            .select("id", "sensor", F.unix_micros("ts").alias("ts_us"), "value"))


def run_reading_stream(spark: SparkSession, settings: Settings, rule: Rule | None = None,
                       mode: str = "eager", every_s: float | None = None,
                       timeout_s: float | None = None) -> StreamReport:
    """Run rule ``rule``'s streaming query: with ``every_s`` None, everything new and then stop
    (``trigger(availableNow=True)``, as an Airflow task does); else a micro-batch every
    ``every_s`` seconds until ``timeout_s`` passes (a long-running maintainer)."""
    rule = rule or TriggerRule()
    if mode not in MODES:
        raise ConfigError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not deltars.table_exists(settings, tables.READINGS):
        raise ConfigError(f"no readings under {settings.lake_uri} yet: ingest some first")
    record_rule(settings, rule, mode)
    report = StreamReport(rule.name, mode)
    if isinstance(rule, ZoneRule):
        decided = (zone_frame(spark, settings, rule).groupBy("zone")
                   .transformWithStateInPandas(_processor("zone", _zone_advance(rule, mode)),
                                               _OUTPUT_DDL, "Append", "None"))
    else:
        decided = (reading_frame(spark, settings).groupBy("sensor")
                   .transformWithStateInPandas(_processor("sensor",
                                                          _sensor_advance(rule, mode)),
                                               _OUTPUT_DDL, "Append", "None"))
    writer = (decided.writeStream.foreachBatch(_sink(settings, rule, mode, report))
              .option("checkpointLocation", checkpoint_uri(settings, rule))
              .queryName(f"readings_{rule.name}"))
    run_query(spark, writer, every_s, timeout_s)
    return report


def run_query(spark: SparkSession, writer: Any, every_s: float | None,
              timeout_s: float | None) -> None:
    """Start a stateful streaming query from ``writer`` (a ``DataStreamWriter``) on RocksDB and
    wait: with ``every_s`` None until everything available is processed (``availableNow``),
    else a micro-batch every ``every_s`` seconds until ``timeout_s`` passes; a query's failure
    is raised here."""
    from aspen.spark.session import temporary_conf

    if every_s is None:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{every_s:g} seconds")
    with temporary_conf(spark, {"spark.sql.streaming.stateStore.providerClass":
                                ROCKSDB_PROVIDER}):
        query = writer.start()
    query.awaitTermination(timeout_s)
    if query.isActive:
        query.stop()
    if query.exception() is not None:
        raise query.exception()  # type: ignore[misc]
