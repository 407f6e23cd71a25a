"""The readings stream: triggering rules over the lake's ``readings``, on Spark Structured
Streaming, each decision explained down to its readings.

One streaming query per rule reads the append-only Delta table ``readings`` as a stream, groups it
by sensor and keeps each sensor's open windows and triggered state in Spark's state store
(``transformWithStateInPandas`` over RocksDB; a :class:`StreamState`, serialized as JSON). Each
micro-batch emits the windows it closed, the readings it dropped (late, duplicate, outlier) and
the decisions, and its ``foreachBatch`` sink writes them:

- ``reading_windows``: one row per closed window — rule, sensor, ``[window_start, window_end)``,
  count, sum,
  min, max, avg, the decision it made (``insert``, ``delete`` or none), the covering interval of
  its readings' ids (``ids_lo``, ``ids_hi``) and, in Reduced-Eager mode, the ids themselves
  (``provenance``, :mod:`aspen.streams.encoding`); in Replay-Lazy mode only the covering
  interval, the ids rebuilt on request by replaying the retained readings
  (:mod:`aspen.pipeline.reading_provenance`);
- ``reading_drops``: every reading the rule did not count, with its reason;
- the decisions as ``triggered`` updates, ingested into the update log as one file per
  micro-batch (``stream-<rule>-<batch>.jsonl``), so the region views maintain themselves.

Exactly once: the query's checkpoint (under the lake root, ``_checkpoints/readings-<rule>``)
holds the offsets and the state; a micro-batch rerun after a crash replaces its rows in both
tables (their ``stream_batch`` column) and its update file is recognized as already ingested
(same name, same content: the rule is deterministic).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aspen.errors import ConfigError
from aspen.lake import deltars, tables
from aspen.pipeline.faults import crash_point
from aspen.settings import Settings
from aspen.streams.encoding import ProvenanceEncoder, encode, read_header
from aspen.streams.rules import RuleStep, SensorState, TriggerRule
from aspen.streams.windows import SECOND_US, KeyWindows, Reading
from aspen.streams.zones import ZoneReading, ZoneRule, ZoneState

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "MODES", "READING_DROPS", "READING_RULES", "READING_WINDOWS", "StreamReport",
    "checkpoint_uri", "load_rule", "record_rule", "run_reading_stream", "step_frame",
    "write_micro_batch",
]

READING_WINDOWS = "reading_windows"
READING_DROPS = "reading_drops"
#: Every rule a stream ran, by name, with its definition (explanations replay with it).
READING_RULES = "reading_rules"
#: Reduced-Eager keeps every window's reading ids; Replay-Lazy only their covering interval;
#: ``none`` nothing (the same query without provenance, for comparison).
MODES = ("eager", "lazy", "none")
#: What a window keeps of its readings in each mode.
_KEEP = {"eager": "ids", "lazy": "covering", "none": "none"}

#: What the state function emits per sensor: windows, drops and decisions in one row type.
_OUTPUT_DDL = (
    "kind STRING, sensor STRING, start_us BIGINT, end_us BIGINT, count BIGINT, total DOUBLE, "
    "low DOUBLE, high DOUBLE, decision STRING, ids_lo BIGINT, ids_hi BIGINT, "
    "provenance BINARY, prov_base BIGINT, id BIGINT, ts_us BIGINT, value DOUBLE, reason STRING"
)
_STATE_DDL = "state STRING"


def checkpoint_uri(settings: Settings, rule: Rule) -> str:
    """Where rule ``rule``'s streaming query keeps its offsets and state (under the lake root).

    >>> checkpoint_uri(Settings(lake="s3://bucket/lake"), TriggerRule())
    's3://bucket/lake/_checkpoints/readings-avg_above'
    """
    return settings.table_uri(f"_checkpoints/readings-{rule.name}")


#: A rule of either kind: per-sensor windows, or Ariadne's zone alarm.
Rule = TriggerRule | ZoneRule


def _rule_json(rule: Rule) -> str:
    from dataclasses import asdict

    kind = "zone" if isinstance(rule, ZoneRule) else "window"
    return json.dumps({"kind": kind, **asdict(rule)}, sort_keys=True)


def rule_from_json(text: str) -> Rule:
    """A rule from its recorded definition.

    >>> rule_from_json(_rule_json(ZoneRule(count=5))) == ZoneRule(count=5)
    True
    """
    data = json.loads(text)
    kind = data.pop("kind", "window")
    return ZoneRule(**data) if kind == "zone" else TriggerRule(**data)


def load_rule(settings: Settings, name: str) -> tuple[Rule, str] | None:
    """The rule named ``name`` a stream of this lake ran, and its provenance mode (None: no
    such rule ran)."""
    if not deltars.table_exists(settings, READING_RULES):
        return None
    rules = deltars.read_table(settings, READING_RULES, ["name", "definition", "mode"])
    found = rules[rules["name"] == name]
    if found.empty:
        return None
    return rule_from_json(found["definition"].iloc[0]), str(found["mode"].iloc[0])


def record_rule(settings: Settings, rule: Rule, mode: str) -> None:
    """Record ``rule`` and ``mode`` under the rule's name; a name that ran with another
    definition or mode is refused (its checkpointed state and windows belong to that one)."""
    import pyarrow as pa

    known = load_rule(settings, rule.name)
    if known == (rule, mode):
        return
    if known is not None:
        raise ConfigError(
            f"rule '{rule.name}' already ran as: {known[0].describe()}, {known[1]} provenance; "
            "give this one another --rule name")
    deltars.append_table(settings, READING_RULES, pa.table({
        "name": pa.array([rule.name], pa.string()),
        "definition": pa.array([_rule_json(rule)], pa.string()),
        "mode": pa.array([mode], pa.string()),
        "recorded_at": pa.array([datetime.now(UTC)], pa.timestamp("us", tz="UTC")),
    }))


@dataclass
class StreamState:
    """What the state store keeps per sensor: the rule's state and, in Reduced-Eager mode, the
    provenance encoder's (the last full id set and the deltas sent since, with the window
    that carried that set)."""

    sensor: SensorState
    encoder: ProvenanceEncoder | None
    base_start_us: int | None = None

    @classmethod
    def fresh(cls, mode: str) -> StreamState:
        return cls(SensorState(KeyWindows(keep=_KEEP[mode])),
                   ProvenanceEncoder() if mode == "eager" else None)

    def to_json(self) -> str:
        """The state as JSON text.

        >>> StreamState.from_json(StreamState.fresh("eager").to_json()).encoder is not None
        True
        """
        return json.dumps({
            "sensor": self.sensor.to_json(),
            "encoder": None if self.encoder is None else self.encoder.to_state(),
            "base": self.base_start_us,
        })

    @classmethod
    def from_json(cls, text: str) -> StreamState:
        data = json.loads(text)
        encoder = None if data["encoder"] is None else ProvenanceEncoder.from_state(
            data["encoder"])
        return cls(SensorState.from_json(data["sensor"]), encoder, data["base"])


def step_frame(sensor: str, step: RuleStep, state: StreamState) -> pd.DataFrame:
    """One sensor's step as the rows the state function emits (columns of ``_OUTPUT_DDL``);
    in Reduced-Eager mode (``state.encoder``) each window's ids are encoded here, in window
    order, so a delta always follows the full set it is based on.

    >>> from aspen.streams.windows import SECOND_US
    >>> state = StreamState.fresh("lazy")
    >>> step = state.sensor.add_all(TriggerRule(), [Reading(1, 5 * SECOND_US, 95.0),
    ...                                              Reading(2, 100 * SECOND_US, 50.0)])
    >>> frame = step_frame("s1", step, state)
    >>> frame[["kind", "start_us", "decision", "ids_lo", "ids_hi"]].to_dict("records")
    [{'kind': 'window', 'start_us': 0, 'decision': 'insert', 'ids_lo': 1, 'ids_hi': 1}]
    """
    import pandas as pd

    decided = {decision.window.start_us: decision.op for decision in step.decisions}
    rows: list[dict[str, Any]] = []
    for window in step.closed:
        lo, hi = window.covering if window.first else (None, None)
        provenance = None
        if state.encoder is not None:
            provenance = state.encoder.encode(window.ids)
            if not read_header(provenance).delta:
                state.base_start_us = window.start_us
        rows.append({
            "kind": "window", "sensor": sensor, "start_us": window.start_us,
            "end_us": window.end_us, "count": window.count, "total": window.total,
            "low": window.low, "high": window.high, "decision": decided.get(window.start_us),
            "ids_lo": lo, "ids_hi": hi, "provenance": provenance,
            "prov_base": None if provenance is None else state.base_start_us,
        })
    for reading, reason in step.dropped:
        rows.append({"kind": "drop", "sensor": sensor, "id": reading.id, "ts_us": reading.ts_us,
                     "value": reading.value, "reason": reason})
    frame = pd.DataFrame(rows, columns=[column.split()[0] for column in _OUTPUT_DDL.split(", ")])
    return _typed(frame)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the pandas types Spark's Arrow conversion takes for ``_OUTPUT_DDL``:
    nullable integers, and text and bytes as objects with None (a column of NaN declared a
    string reaches Arrow chunked, which Spark's struct packing refuses)."""
    for column in _OUTPUT_DDL.split(", "):
        name, kind = column.split()
        if kind == "BIGINT":
            frame[name] = frame[name].astype("Int64")
        elif kind == "DOUBLE":
            frame[name] = frame[name].astype("float64")
        else:
            frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return frame


#: The state store ``transformWithStateInPandas`` needs.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _processor(rule: TriggerRule, mode: str) -> Any:
    """The stateful processor ``transformWithStateInPandas`` runs per sensor and micro-batch:
    the sensor's :class:`StreamState` in a value state, its readings in id order through the
    rule."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class SensorRule(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("sensor", _STATE_DDL)

        def handleInputRows(self, key: tuple[Any, ...], rows: Iterator[pd.DataFrame],  # noqa: N802
                            timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
            sensor = str(key[0])
            current = (StreamState.from_json(self.state.get()[0]) if self.state.exists()
                       else StreamState.fresh(mode))
            readings = [Reading(int(i), int(t), float(v)) for frame in rows for i, t, v in
                        zip(frame["id"], frame["ts_us"], frame["value"], strict=True)]
            step = current.sensor.add_all(rule, readings)
            out = step_frame(sensor, step, current)
            self.state.update((current.to_json(),))
            yield out

        def close(self) -> None:
            pass

    return SensorRule()


def zone_step_frame(rule: ZoneRule, zone: str, readings: list[ZoneReading],
                    state: ZoneState | None) -> pd.DataFrame:
    """One zone's micro-batch as output rows: each decision as a ``window`` row spanning the
    alarm's ``within_s`` before it, with the ids behind it encoded (Reduced-Eager; a full set
    each, no deltas: decisions of one zone belong to different sensors), and the drops. A zone
    of ``""`` holds the readings of sensors without a position: all dropped as
    ``unknown_sensor``.

    >>> rows = zone_step_frame(ZoneRule(count=1, sensors=1), "z0_0",
    ...                        [ZoneReading(1, "a", 0, 99.0)], ZoneState())
    >>> rows[["kind", "sensor", "decision", "ids_lo", "ids_hi"]].to_dict("records")
    [{'kind': 'window', 'sensor': 'a', 'decision': 'insert', 'ids_lo': 1, 'ids_hi': 1}]
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    if state is None:
        dropped = [(reading, "unknown_sensor") for reading in readings]
        decisions = []
    else:
        step = state.add_all(rule, readings)
        dropped, decisions = step.dropped, step.decisions
    span = round(rule.within_s * SECOND_US)
    for decision in decisions:
        provenance = min(encode(decision.ids), encode(decision.ids, interval=True), key=len)
        rows.append({
            "kind": "window", "sensor": decision.sensor, "start_us": decision.ts_us - span,
            "end_us": decision.ts_us, "count": len(decision.ids),
            "total": decision.avg * len(decision.ids), "low": decision.avg,
            "high": decision.avg, "decision": decision.op, "ids_lo": decision.ids[0],
            "ids_hi": decision.ids[-1], "provenance": provenance,
            "prov_base": decision.ts_us - span,
        })
    for reading, reason in dropped:
        rows.append({"kind": "drop", "sensor": reading.sensor, "id": reading.id,
                     "ts_us": reading.ts_us, "value": reading.value, "reason": reason})
    frame = pd.DataFrame(rows, columns=[column.split()[0] for column in _OUTPUT_DDL.split(", ")])
    return _typed(frame)


def _zone_processor(rule: ZoneRule) -> Any:
    """The stateful processor of a zone rule: per zone, a :class:`ZoneState` in a value
    state."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class ZoneAlarm(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("zone", _STATE_DDL)

        def handleInputRows(self, key: tuple[Any, ...], rows: Iterator[pd.DataFrame],  # noqa: N802
                            timerValues: Any) -> Iterator[pd.DataFrame]:  # noqa: N803
            zone = str(key[0])
            readings = [ZoneReading(int(i), str(s), int(t), float(v)) for frame in rows
                        for i, s, t, v in zip(frame["id"], frame["sensor"], frame["ts_us"],
                                              frame["value"], strict=True)]
            current = None
            if zone:
                current = (ZoneState.from_json(self.state.get()[0]) if self.state.exists()
                           else ZoneState())
            out = zone_step_frame(rule, zone, readings, current)
            if current is not None:
                self.state.update((current.to_json(),))
            yield out

        def close(self) -> None:
            pass

    return ZoneAlarm()


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


def _windows_arrow(rule: Rule, mode: str, frame: pd.DataFrame, stream_batch: int,
                   readings_version: int) -> pa.Table:
    """The ``reading_windows`` rows of one micro-batch."""
    import pyarrow as pa

    _TIME = pa.timestamp("us", tz="UTC")  # noqa: N806
    windows = frame[frame["kind"] == "window"].sort_values(["sensor", "start_us"])
    provenance = list(windows["provenance"]) if mode == "eager" else [None] * len(windows)
    bases = windows["prov_base"] if mode == "eager" else [None] * len(windows)
    return pa.table({
        "rule": pa.array([rule.name] * len(windows), pa.string()),
        "sensor": pa.array(windows["sensor"], pa.string()),
        "window_start": pa.array(windows["start_us"].astype("int64"), _TIME),
        "window_end": pa.array(windows["end_us"].astype("int64"), _TIME),
        "count": pa.array(windows["count"].astype("int64"), pa.int64()),
        "sum": pa.array(windows["total"].astype(float), pa.float64()),
        "min": pa.array(windows["low"].astype(float), pa.float64()),
        "max": pa.array(windows["high"].astype(float), pa.float64()),
        "avg": pa.array((windows["total"] / windows["count"]).astype(float), pa.float64()),
        "decision": pa.array(windows["decision"], pa.string()),
        "ids_lo": pa.array(windows["ids_lo"].astype("Int64"), pa.int64()),
        "ids_hi": pa.array(windows["ids_hi"].astype("Int64"), pa.int64()),
        "provenance": pa.array([None if p is None else bytes(p) for p in provenance],
                               pa.binary()),
        "prov_bytes": pa.array([0 if p is None else len(p) for p in provenance], pa.int64()),
        "prov_base": pa.array([None if b is None or b != b else int(b) for b in bases], _TIME),
        "mode": pa.array([mode] * len(windows), pa.string()),
        "stream_batch": pa.array([stream_batch] * len(windows), pa.int64()),
        "readings_version": pa.array([readings_version] * len(windows), pa.int64()),
    })


def _drops_arrow(rule: Rule, frame: pd.DataFrame, stream_batch: int) -> pa.Table:
    """The ``reading_drops`` rows of one micro-batch."""
    import pyarrow as pa

    drops = frame[frame["kind"] == "drop"].sort_values("id")
    return pa.table({
        "rule": pa.array([rule.name] * len(drops), pa.string()),
        "id": pa.array(drops["id"].astype("int64"), pa.int64()),
        "sensor": pa.array(drops["sensor"], pa.string()),
        "ts": pa.array(drops["ts_us"].astype("int64"), pa.timestamp("us", tz="UTC")),
        "value": pa.array(drops["value"].astype(float), pa.float64()),
        "reason": pa.array(drops["reason"], pa.string()),
        "stream_batch": pa.array([stream_batch] * len(drops), pa.int64()),
    })


def _replace_batch(settings: Settings, name: str, rows: pa.Table, stream_batch: int) -> None:
    """Replace micro-batch ``stream_batch``'s rows of ``name`` by ``rows`` (one commit; a
    rerun of the batch replaces what a crashed run wrote)."""
    from deltalake import write_deltalake

    if not deltars.table_exists(settings, name):
        if rows.num_rows == 0:
            return
        deltars.append_table(settings, name, rows)
        return
    write_deltalake(settings.table_uri(name), rows, mode="overwrite",
                    predicate=f"stream_batch = {int(stream_batch)} AND rule = '{rows_rule(rows)}'")


def rows_rule(rows: pa.Table) -> str:
    """The rule name of ``rows`` (a name is letters, digits and ``_``: safe in a predicate)."""
    names = set(rows.column("rule").to_pylist())
    return names.pop() if names else ""


def decision_lines(rule: Rule, frame: pd.DataFrame) -> bytes:
    """The micro-batch's decisions as ``triggered`` update records (JSON Lines), in a fixed
    order so that a rerun writes the same bytes.

    >>> import pandas as pd
    >>> frame = pd.DataFrame([{"kind": "window", "sensor": "s1", "decision": "insert",
    ...                        "end_us": 60_000_000, "start_us": 0}])
    >>> print(decision_lines(TriggerRule(), frame).decode(), end="")
    {"op": "insert", "relation": "triggered", "id": "s1", "event_time": "1970-01-01T00:01:00Z"}
    """
    decided = frame[(frame["kind"] == "window") & frame["decision"].notna()]
    lines = []
    for row in decided.sort_values(["end_us", "sensor"]).to_dict("records"):
        moment = datetime.fromtimestamp(int(row["end_us"]) / 1e6, UTC)
        lines.append(json.dumps({
            "op": row["decision"], "relation": "triggered", "id": row["sensor"],
            "event_time": moment.strftime("%Y-%m-%dT%H:%M:%S") + (
                f".{moment.microsecond:06d}Z" if moment.microsecond else "Z"),
        }, ensure_ascii=False))
    return "".join(line + "\n" for line in lines).encode()


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


def write_micro_batch(settings: Settings, rule: Rule, mode: str, frame: pd.DataFrame,
                      stream_batch: int, log_decisions: bool = True) -> tuple[int, int, int]:
    """Write micro-batch ``stream_batch`` of ``rule`` from ``frame`` (the rows the state
    function emits): its ``reading_windows`` and ``reading_drops`` rows, each replacing what a
    crashed run of the batch wrote, then (``log_decisions``) its decisions as one update file
    ``stream-<rule>-<batch>.jsonl``, which a rerun finds already ingested. Returns (windows,
    drops, decisions) written. The Spark sink and :mod:`aspen.pipeline.reading_sink_local`
    both write through this."""
    from aspen.lake.ingest import ingest_data

    if frame.empty:
        return 0, 0, 0
    version = (deltars.table_version(settings, tables.READINGS)
               if deltars.table_exists(settings, tables.READINGS) else -1)
    windows = _windows_arrow(rule, mode, frame, stream_batch, version)
    drops = _drops_arrow(rule, frame, stream_batch)
    _replace_batch(settings, READING_WINDOWS, windows, stream_batch)
    crash_point("stream:after-windows")
    _replace_batch(settings, READING_DROPS, drops, stream_batch)
    crash_point("stream:after-drops")
    lines = decision_lines(rule, frame) if log_decisions else b""
    if lines:
        ingest_data(settings, [(f"stream-{rule.name}-{stream_batch:08d}.jsonl", lines)])
    return windows.num_rows, drops.num_rows, lines.count(b"\n")


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
    if isinstance(rule, ZoneRule) and mode != "eager":
        raise ConfigError("a zone rule keeps Reduced-Eager provenance only (--provenance eager)")
    record_rule(settings, rule, mode)
    report = StreamReport(rule.name, mode)
    if isinstance(rule, ZoneRule):
        decided = (zone_frame(spark, settings, rule).groupBy("zone")
                   .transformWithStateInPandas(_zone_processor(rule), _OUTPUT_DDL, "Append",
                                               "None"))
    else:
        decided = (reading_frame(spark, settings).groupBy("sensor")
                   .transformWithStateInPandas(_processor(rule, mode), _OUTPUT_DDL, "Append",
                                               "None"))
    writer = (decided.writeStream.foreachBatch(_sink(settings, rule, mode, report))
              .option("checkpointLocation", checkpoint_uri(settings, rule))
              .queryName(f"readings_{rule.name}"))
    if every_s is None:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{every_s:g} seconds")
    from aspen.spark.session import temporary_conf

    with temporary_conf(spark, {"spark.sql.streaming.stateStore.providerClass":
                                ROCKSDB_PROVIDER}):
        query = writer.start()
    query.awaitTermination(timeout_s)
    if query.isActive:
        query.stop()
    if query.exception() is not None:
        raise query.exception()  # type: ignore[misc]
    return report
