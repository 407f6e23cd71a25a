"""What the two reading streams share: the checks before a run, the ``readings`` table as a
stream, the keyed stateful processor, and starting the query and waiting for it.

A triggering rule (:mod:`aspen.readings.rule_stream`) and a stream network
(:mod:`aspen.readings.network_stream`) run the same way: the readings, keyed (a sensor, a zone,
a network's group), go through ``transformWithStateInPandas`` over RocksDB with one JSON value
per key, and a ``foreachBatch`` sink writes each micro-batch with delta-rs. Only what keys the
readings, each key's step and the sink differ; :func:`run_keyed_stream` is the rest.

>>> check_mode("lazy")
>>> check_mode("full")
Traceback (most recent call last):
...
aspen.errors.ConfigError: --provenance must be one of eager, lazy, none, got 'full'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError
from aspen.lake import deltars, tables
from aspen.readings.modes import MODES
from aspen.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterator

    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["ROCKSDB_PROVIDER", "STATE_DDL", "Advance", "check_mode", "keyed_processor",
           "reading_frame", "require_readings", "run_keyed_stream", "run_query"]

#: The state store ``transformWithStateInPandas`` needs.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: What a key keeps in the state store: one JSON text.
STATE_DDL = "state STRING"

#: A key's step: (key, its rows of the micro-batch, its state's JSON or None) → (output rows,
#: the state's new JSON, or None to keep none).
Advance = Callable[[str, list["pd.DataFrame"], "str | None"], tuple["pd.DataFrame", "str | None"]]


def check_mode(mode: str) -> None:
    """Refuse a provenance mode that is not one of :data:`~aspen.readings.modes.MODES`, naming
    the ``aspen stream`` flag that sets it."""
    if mode not in MODES:
        raise ConfigError(f"--provenance must be one of {', '.join(MODES)}, got {mode!r}")


def require_readings(settings: Settings) -> None:
    """Refuse a lake without a ``readings`` table: there is nothing to stream."""
    if not deltars.table_exists(settings, tables.READINGS):
        raise ConfigError(f"no readings under {settings.lake_uri} yet: ingest some first")


def reading_frame(spark: SparkSession, settings: Settings) -> DataFrame:
    """The ``readings`` table as a stream of (id, sensor, ts_us, value)."""
    from pyspark.sql import functions as F

    # housekeeping deletes readings past their retention: the stream skips those commits
    return (spark.readStream.format("delta").option("skipChangeCommits", "true")
            .load(settings.table_uri(tables.READINGS))
            .select("id", "sensor", F.unix_micros("ts").alias("ts_us"), "value"))


def keyed_processor(name: str, advance: Advance) -> Any:
    """A stateful processor for ``transformWithStateInPandas`` keeping one JSON value per key
    (value state ``name``) and running ``advance`` on each key's rows of a micro-batch."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class KeyedRule(StatefulProcessor):  # the name earlier checkpoints were written with
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState(name, STATE_DDL)

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


def run_keyed_stream(spark: SparkSession, keyed: DataFrame, key: str, *, state: str,
                     advance: Advance, output_ddl: str,
                     sink: Callable[[DataFrame, int], None], checkpoint: str, name: str,
                     every_s: float | None, timeout_s: float | None) -> None:
    """Run ``advance`` per value of column ``key`` of the stream ``keyed`` (value state
    ``state``, rows of ``output_ddl``), each micro-batch's rows to ``sink``, with its offsets
    and state under ``checkpoint``, as query ``name`` (:func:`run_query` says how long)."""
    emitted = (keyed.groupBy(key)
               .transformWithStateInPandas(keyed_processor(state, advance), output_ddl,
                                           "Append", "None"))
    writer = (emitted.writeStream.foreachBatch(sink)
              .option("checkpointLocation", checkpoint).queryName(name))
    run_query(spark, writer, every_s, timeout_s)


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
