"""The readings stream: triggering rules over the lake's ``readings``, on Spark Structured
Streaming, each decision explained down to its readings.

One streaming query per rule reads the append-only Delta table ``readings`` as a stream (the
deleting commits of housekeeping skipped), groups it by sensor — or, for a zone rule, by the
zone of each reading's sensor, from a stream-static join with the ``sensor`` table — and keeps
one JSON value per key in Spark's state store (``transformWithStateInPandas`` over RocksDB;
:mod:`aspen.readings.rule_rows`, run by :mod:`aspen.readings.driver`). Its ``foreachBatch``
sink collects the micro-batch's rows once and writes them with delta-rs
(:func:`aspen.readings.rule_tables.write_micro_batch`).

Exactly once: the query's checkpoint (under the lake root, ``_checkpoints/readings-<rule>``)
holds the offsets and the state; a micro-batch rerun after a crash rewrites the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.lake import deltars
from aspen.readings.driver import (
    check_mode,
    reading_frame,
    require_readings,
    run_keyed_stream,
)
from aspen.readings.rule_rows import OUTPUT_DDL, sensor_advance, zone_advance
from aspen.readings.rule_tables import Rule, record_rule, write_micro_batch
from aspen.settings import Settings
from aspen.streams.rules import TriggerRule
from aspen.streams.zones import ZoneRule

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["StreamReport", "checkpoint_uri", "run_reading_stream", "zone_frame"]


def checkpoint_uri(settings: Settings, rule: Rule) -> str:
    """Where rule ``rule``'s streaming query keeps its offsets and state (under the lake root).

    >>> checkpoint_uri(Settings(lake="s3://bucket/lake"), TriggerRule())
    's3://bucket/lake/_checkpoints/readings-avg_above'
    """
    return settings.table_uri(f"_checkpoints/readings-{rule.name}")


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


def run_reading_stream(spark: SparkSession, settings: Settings, rule: Rule | None = None,
                       mode: str = "eager", every_s: float | None = None,
                       timeout_s: float | None = None) -> StreamReport:
    """Run rule ``rule``'s streaming query: with ``every_s`` None, everything new and then stop
    (``trigger(availableNow=True)``, as an Airflow task does); else a micro-batch every
    ``every_s`` seconds until ``timeout_s`` passes (a long-running maintainer)."""
    rule = rule or TriggerRule()
    check_mode(mode)
    require_readings(settings)
    record_rule(settings, rule, mode)
    report = StreamReport(rule.name, mode)
    if isinstance(rule, ZoneRule):
        keyed, key = zone_frame(spark, settings, rule), "zone"
        advance = zone_advance(rule, mode)
    else:
        keyed, key = reading_frame(spark, settings), "sensor"
        advance = sensor_advance(rule, mode)
    run_keyed_stream(spark, keyed, key, state=key, advance=advance, output_ddl=OUTPUT_DDL,
                     sink=_sink(settings, rule, mode, report),
                     checkpoint=checkpoint_uri(settings, rule), name=f"readings_{rule.name}",
                     every_s=every_s, timeout_s=timeout_s)
    return report
