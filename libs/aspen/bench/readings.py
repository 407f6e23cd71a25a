"""The readings stream with and without provenance (Ariadne's experiments, Figs. 17–24).

Two parts, ratios from one run:

- **Operator** (in process, :func:`operator_cells`): the per-sensor triggering rule over a
  generated stream, with windows keeping nothing (the query without provenance), their covering
  interval (Replay-Lazy) or every id, encoded (Reduced-Eager), along the seed's axes: window
  size, slide, and selectivity (an outlier filter before the window passing a share of the
  readings); readings per second and the overhead against no provenance. Then the retrieval
  rate: generation plus retrieving the readings of a share of the windows, eagerly (decode) or
  lazily (replay of the covering interval), the seed's break-even.
- **Spark** (:func:`spark_cells`): the same rule as the Structured Streaming job over a lake,
  ``availableNow`` over a backlog (throughput), then single micro-batches of a few seconds of
  readings (latency from the file landing to the windows written), per mode; and the time to
  retrieve one alert's readings from the lake (``explain_triggered``) in both modes.

>>> stream = sensor_stream(sensors=3, seconds=120, seed=1)
>>> len(stream), sorted({r.sensor for r in stream})
(360, ['s0', 's1', 's2'])
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aspen.streams.encoding import ProvenanceEncoder, decode
from aspen.streams.rules import SensorState, TriggerRule
from aspen.streams.windows import SECOND_US, KeyWindows, Reading, WindowOutput, replay_window

__all__ = [
    "MODES", "SensorReading", "operator_cells", "retrieval_cells", "sensor_stream",
    "spark_cells",
]

#: Provenance modes: what a window keeps.
MODES = {"none": "none", "lazy": "covering", "eager": "ids"}


@dataclass(frozen=True)
class SensorReading:
    """A generated reading: its id, sensor, time (µs) and value."""

    id: int
    sensor: str
    ts_us: int
    value: float


def sensor_stream(sensors: int = 100, seconds: int = 600, every_s: float = 1.0,
                  hot_share: float = 0.2, seed: int = 0) -> list[SensorReading]:
    """Every sensor reads every ``every_s`` seconds for ``seconds``; a ``hot_share`` of the
    sensors alternate between minutes around 96 and minutes around 70, the others stay near
    70, so hot sensors trigger and un-trigger; ids in time order."""
    rng = random.Random(seed)
    hot = set(rng.sample(range(sensors), round(hot_share * sensors)))
    rows = []
    steps = int(seconds / every_s)
    for step in range(steps):
        t = step * every_s
        for sensor in range(sensors):
            level = 96.0 if sensor in hot and int(t // 60) % 2 == 0 else 70.0
            jitter = rng.uniform(0, every_s / 2)
            rows.append((t + jitter, f"s{sensor}", level + rng.uniform(-4, 4)))
    rows.sort()
    return [SensorReading(i, sensor, round(t * SECOND_US), value)
            for i, (t, sensor, value) in enumerate(rows, start=1)]


def _run(rule: TriggerRule, stream: Sequence[SensorReading], keep: str,
         passes: float) -> tuple[float, list[tuple[str, WindowOutput, bytes | None]]]:
    """Seconds to run ``rule`` over ``stream`` keeping ``keep``, with a filter before the
    window passing a ``passes`` share; the closed windows with their encoded ids (eager)."""
    states: dict[str, SensorState] = {}
    encoders: dict[str, ProvenanceEncoder] = {}
    closed: list[tuple[str, WindowOutput, bytes | None]] = []
    threshold = round(passes * 1000)
    started = time.perf_counter()
    for r in stream:
        if (r.id * 7919) % 1000 >= threshold:  # a deterministic selection of the readings
            continue
        state = states.get(r.sensor)
        if state is None:
            state = states[r.sensor] = SensorState(KeyWindows(keep=keep))
        step = state.add(rule, Reading(r.id, r.ts_us, r.value))
        for window in step.closed:
            encoded = None
            if keep == "ids":
                encoder = encoders.setdefault(r.sensor, ProvenanceEncoder())
                encoded = encoder.encode(window.ids)
            closed.append((r.sensor, window, encoded))
    return time.perf_counter() - started, closed


def _best_of(repeats: int, rule: TriggerRule, stream: Sequence[SensorReading], keep: str,
             passes: float) -> tuple[float, list]:
    runs = [_run(rule, stream, keep, passes) for _ in range(repeats)]
    return min(seconds for seconds, _ in runs), runs[0][1]


def operator_cells(stream: Sequence[SensorReading], repeats: int = 3) -> list[dict[str, Any]]:
    """Readings per second per mode, and the overhead against no provenance, along window size
    (tumbling), slide (60 s windows) and selectivity (60 s tumbling)."""
    axes: list[tuple[str, TriggerRule, float]] = []
    axes += [("window", TriggerRule(size_s=s, slide_s=s), 1.0) for s in (10, 60, 300)]
    axes += [("slide", TriggerRule(size_s=60, slide_s=s), 1.0) for s in (30, 10, 5)]
    axes += [("selectivity", TriggerRule(), p) for p in (0.5, 0.25)]
    cells = []
    for axis, rule, passes in axes:
        seconds = {mode: _best_of(repeats, rule, stream, keep, passes)[0]
                   for mode, keep in MODES.items()}
        cells.append({
            "axis": axis, "window_s": rule.size_s, "slide_s": rule.slide_s,
            "selectivity": passes, "readings": len(stream),
            **{f"{mode}_per_s": round(len(stream) / s) for mode, s in seconds.items()},
            "eager_overhead": round(seconds["eager"] / seconds["none"] - 1, 3),
            "lazy_overhead": round(seconds["lazy"] / seconds["none"] - 1, 3),
        })
    return cells


def _replayed(rule: TriggerRule, by_sensor: dict[str, list[SensorReading]], sensor: str,
              window: WindowOutput) -> tuple[int, ...]:
    """Replay-Lazy: the sensor's readings in the window's covering interval through the rule's
    windows from an empty state (a binary search finds the interval)."""
    import bisect

    rows = by_sensor[sensor]
    ids = [r.id for r in rows]
    low, high = bisect.bisect_left(ids, window.first), bisect.bisect_right(ids, window.last)
    ids = replay_window(rule.spec, [Reading(r.id, r.ts_us, r.value) for r in rows[low:high]],
                        window.start_us)
    assert ids is not None
    return ids


def retrieval_cells(stream: Sequence[SensorReading],
                    rates: Sequence[float] = (0.0, 0.01, 0.1, 1.0)) -> list[dict[str, Any]]:
    """Generation plus retrieval of a share of the windows' readings, eager against lazy (60 s
    tumbling windows): where the seed puts the break-even near 10 %."""
    rule = TriggerRule()
    eager_s, eager_windows = _run(rule, stream, "ids", 1.0)
    lazy_s, lazy_windows = _run(rule, stream, "covering", 1.0)
    by_sensor: dict[str, list[SensorReading]] = defaultdict(list)
    for r in stream:
        by_sensor[r.sensor].append(r)
    cells = []
    for rate in rates:
        every = 0 if rate == 0 else max(1, round(1 / rate))
        chosen = [] if every == 0 else list(range(0, len(eager_windows), every))
        started = time.perf_counter()
        full: dict[str, tuple[int, ...]] = {}
        for index in chosen:  # decode in stream order: a delta needs its sensor's full set
            sensor, window, encoded = eager_windows[index]
            assert encoded is not None
            ids = decode(encoded, last_full=full.get(sensor))
            if len(ids) == window.count:
                full[sensor] = ids
        eager_retrieve = time.perf_counter() - started
        started = time.perf_counter()
        for index in chosen:
            sensor, window, _ = lazy_windows[index]
            _replayed(rule, by_sensor, sensor, window)
        lazy_retrieve = time.perf_counter() - started
        cells.append({
            "rate": rate, "windows": len(chosen),
            "eager_s": round(eager_s + eager_retrieve, 4),
            "lazy_s": round(lazy_s + lazy_retrieve, 4),
            "lazy_over_eager": round((lazy_s + lazy_retrieve) / (eager_s + eager_retrieve), 3),
        })
    return cells


def _write_readings(path: Path, stream: Sequence[SensorReading]) -> Path:
    with path.open("w") as out:
        for r in stream:
            ts = datetime.fromtimestamp(r.ts_us / SECOND_US, UTC).isoformat()
            out.write(json.dumps({"op": "insert", "relation": "reading", "sensor": r.sensor,
                                  "ts": ts.replace("+00:00", "Z"),
                                  "value": round(r.value, 3)}) + "\n")
    return path


def _spark_mode(spark: Any, work: Path, tag: str, mode: str, backlog: Sequence[SensorReading],
                later: Sequence[SensorReading], backlog_s: int, batches: int,
                batch_s: int) -> dict[str, Any]:
    """One mode on a fresh lake: the backlog's time, then each small micro-batch's latency,
    then the time to retrieve one alert's readings."""
    from aspen.lake.deltars import read_table
    from aspen.lake.ingest import ingest_files
    from aspen.readings.rule_provenance import explain_triggered
    from aspen.readings.rule_stream import run_reading_stream
    from aspen.readings.rule_tables import READING_WINDOWS
    from aspen.settings import Settings

    lake = Settings(lake=str(work / f"lake-{tag}-{mode}"))
    ingest_files(lake, [_write_readings(work / f"backlog-{tag}-{mode}.jsonl", backlog)])
    rule = TriggerRule(name=f"bench_{mode}")
    started = time.perf_counter()
    run_reading_stream(spark, lake, rule, mode)
    seconds = time.perf_counter() - started
    latencies = []
    for index in range(batches):
        low = (backlog_s + index * batch_s) * SECOND_US
        part = [r for r in later if low <= r.ts_us < low + batch_s * SECOND_US]
        path = _write_readings(work / f"batch-{tag}-{mode}-{index}.jsonl", part)
        started = time.perf_counter()
        ingest_files(lake, [path])
        run_reading_stream(spark, lake, rule, mode)
        latencies.append(time.perf_counter() - started)
    cell: dict[str, Any] = {"backlog_s": seconds,
                            "batch_latency_median_s": statistics.median(latencies or [0.0])}
    if mode != "none":
        windows = read_table(lake, READING_WINDOWS)
        alert = windows[windows["decision"] == "insert"].iloc[0]
        started = time.perf_counter()
        explained = explain_triggered(lake, str(alert["sensor"]), rule,
                                      alert["window_end"].to_pydatetime())
        cell["retrieve_one_alert_s"] = time.perf_counter() - started
        cell["alert_readings"] = sum(len(w.readings) for w in explained.windows)
    return cell


def spark_cells(work: Path, sensors: int = 100, backlog_s: int = 1200,
                batches: int = 5, batch_s: int = 10, rounds: int = 2) -> dict[str, Any]:
    """Per mode: throughput over a backlog (``availableNow``), the latency of small
    micro-batches (``batch_s`` seconds of readings each, from landing to windows written), and
    the time to retrieve one alert's readings from the lake. A warm-up query runs first (the
    JVM's first streaming query compiles what the others reuse); the modes then run in
    ``rounds`` rounds, alternating their order, each on a fresh lake; the best of the rounds
    counts."""
    from aspen.spark.session import get_spark

    spark = get_spark("aspen-bench-readings")
    stream = sensor_stream(sensors=sensors, seconds=backlog_s + batches * batch_s)
    backlog = [r for r in stream if r.ts_us < backlog_s * SECOND_US]
    later = stream[len(backlog):]
    _spark_mode(spark, work, "warm-up", "eager", backlog[: len(backlog) // 10], later[:0],
                backlog_s, 0, batch_s)
    cells: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for round_ in range(rounds):
        order = list(MODES) if round_ % 2 == 0 else list(reversed(MODES))
        for mode in order:
            cells[mode].append(_spark_mode(spark, work, f"r{round_}", mode, backlog, later,
                                           backlog_s, batches, batch_s))
    out: dict[str, Any] = {"sensors": sensors, "backlog_readings": len(backlog),
                           "rounds": rounds, "modes": {}}
    for mode, runs in cells.items():
        best = {key: min(run[key] for run in runs) for key in runs[0]}
        out["modes"][mode] = {
            "backlog_s": round(best["backlog_s"], 2),
            "readings_per_s": round(len(backlog) / best["backlog_s"]),
            "batch_latency_median_s": round(best["batch_latency_median_s"], 2),
            **({"retrieve_one_alert_s": round(best["retrieve_one_alert_s"], 3),
                "alert_readings": runs[0]["alert_readings"]} if mode != "none" else {}),
        }
    base = out["modes"]["none"]["backlog_s"]
    for mode in ("eager", "lazy"):
        out["modes"][mode]["overhead"] = round(out["modes"][mode]["backlog_s"] / base - 1, 3)
    return out
