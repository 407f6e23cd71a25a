"""A stream network (:mod:`aspen.streams.networks`) on Spark Structured Streaming.

The query reads ``readings`` as a Delta stream, groups it by the network's partition (each
sensor, or one group), and runs the network's operators incrementally per group inside Spark's
state store (``transformWithStateInPandas`` over RocksDB, one JSON
:class:`~aspen.streams.incremental.NetworkState` per group; :mod:`aspen.readings.driver`). Its
``foreachBatch`` sink collects the micro-batch's rows once and writes them with delta-rs
(:func:`aspen.readings.network_tables.write_network_batch`), replacing that micro-batch's rows
of the network, so a rerun after a crash writes the same rows. The checkpoint is
``_checkpoints/network-<name>`` under the lake root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aspen.readings.driver import (
    check_mode,
    reading_frame,
    require_readings,
    run_keyed_stream,
)
from aspen.readings.modes import KEEP
from aspen.readings.network_tables import (
    OUTPUT_DDL,
    group_frame,
    readings_of,
    record_network,
    recorded_networks,
    write_network_batch,
)
from aspen.settings import Settings
from aspen.streams.incremental import NetworkState
from aspen.streams.networks import StreamNetwork, load_network

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["NetworkReport", "network_checkpoint_uri", "run_network_stream",
           "run_recorded_networks"]


def network_checkpoint_uri(settings: Settings, network: StreamNetwork) -> str:
    """Where network ``network``'s query keeps its offsets and state (under the lake root)."""
    return settings.table_uri(f"_checkpoints/network-{network.name}")


@dataclass
class NetworkReport:
    """What one run of a network's stream did."""

    network: str
    mode: str
    batches: int = 0
    outputs: int = 0
    dropped: int = 0

    def line(self) -> str:
        return (f"network {self.network} ({self.mode}): {self.batches} micro-batch(es), "
                f"{self.outputs} output(s), {self.dropped} reading(s) dropped")


def _advance(definition: str, mode: str):
    """A group's step for :func:`~aspen.readings.driver.keyed_processor`: its readings of
    the micro-batch through the network, from and back to its JSON state. The network is
    rebuilt from its definition on the worker (compiled expressions are not shipped)."""
    built: list[StreamNetwork] = []

    def advance(group: str, frames: list[pd.DataFrame],
                text: str | None) -> tuple[pd.DataFrame, str | None]:
        if not built:
            built.append(load_network(definition))
        network = built[0]
        state = (NetworkState.from_json(network, text) if text
                 else NetworkState(network, KEEP[mode]))
        readings = [r for frame in frames for r in readings_of(frame)]
        return group_frame(group, state.step(readings), state.encoder), state.to_json()

    return advance


def _sink(settings: Settings, network: StreamNetwork, mode: str, report: NetworkReport):
    def write(batch: DataFrame, stream_batch: int) -> None:
        report.batches += 1
        outputs, dropped = write_network_batch(settings, network, mode, batch.toPandas(),
                                               stream_batch)
        report.outputs += outputs
        report.dropped += dropped

    return write


def run_network_stream(spark: SparkSession, settings: Settings, network: StreamNetwork,
                       mode: str = "eager", every_s: float | None = None,
                       timeout_s: float | None = None) -> NetworkReport:
    """Run ``network``'s streaming query: with ``every_s`` None everything new and then stop
    (``availableNow``), else a micro-batch every ``every_s`` seconds until ``timeout_s``."""
    from pyspark.sql import functions as F

    check_mode(mode)
    require_readings(settings)
    record_network(settings, network, mode)
    report = NetworkReport(network.name, mode)
    group = F.col("sensor") if network.partition else F.lit("")
    keyed = reading_frame(spark, settings).withColumn("grp", group)
    run_keyed_stream(spark, keyed, "grp", state="network",
                     advance=_advance(network.canonical(), mode), output_ddl=OUTPUT_DDL,
                     sink=_sink(settings, network, mode, report),
                     checkpoint=network_checkpoint_uri(settings, network),
                     name=f"network_{network.name}", every_s=every_s, timeout_s=timeout_s)
    return report


def run_recorded_networks(spark: SparkSession, settings: Settings) -> list[NetworkReport]:
    """Run every network this lake has run before (``stream_networks``), each in its recorded
    mode, over what is new (``availableNow``): a network started once with ``aspen stream
    --network`` keeps up with every run of the pipeline's readings task."""
    return [run_network_stream(spark, settings, network, mode)
            for network, mode in recorded_networks(settings)]
