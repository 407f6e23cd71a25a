"""Stream networks with and without provenance (Ariadne's experiments, Figs. 17–24).

Three parts, ratios from one run:

- **In process** (:func:`network_cells`): a generated stream (:func:`~aspen.bench.readings.
  sensor_stream`) cut into micro-batches of ``batch_s`` seconds of readings, each sensor's
  readings of a micro-batch through its :class:`~aspen.streams.incremental.NetworkState`, the
  state carried between micro-batches as JSON (``to_json``/``from_json``, as Spark's state
  store keeps it) and each step's rows made into the frame the stateful operator emits
  (:func:`~aspen.readings.network_tables.group_frame`, where Reduced-Eager encodes). Readings
  per second keeping nothing (the network without provenance), the covering intervals
  (Replay-Lazy) or the ids (Reduced-Eager), the modes interleaved, best of ``repeats``; along
  window size, slide and the selectivity of the selection below the window, and for a
  composite network (selection, projection with a function, union, count window, windowed
  join). Each cell also says where the Reduced-Eager run's time went (the operators' step,
  the state's JSON, the output frame).
- **Retrieval** (:func:`network_retrieval_cells`): on a temporary lake, a network run eager
  and lazy (:func:`~aspen.readings.network_tables.run_network_locally`), then the time of
  :func:`~aspen.readings.network_provenance.explain_output` for a sample of its outputs.
- **Spark** (:func:`network_spark_cells`): :func:`~aspen.readings.network_stream.
  run_network_stream` (``availableNow``) over a backlog of readings, per mode, on a fresh
  lake each, after a warm-up query; best of ``rounds`` rounds alternating the modes' order.

>>> spec = window_network("n", 60, 10)
>>> spec["query"]["window"], spec["query"]["aggregate"]["where"]
({'seconds': 60, 'slide': 10}, 'value IS NOT NULL')
>>> from aspen.bench.readings import sensor_stream
>>> batches = micro_batches(sensor_stream(sensors=2, seconds=30, seed=1), batch_s=10)
>>> len(batches), sorted(batches[0]), len(batches[0]["s0"])
(3, ['s0', 's1'], 10)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aspen.bench.readings import MODES, SensorReading, _write_readings, sensor_stream
from aspen.streams.algebra import Reading
from aspen.streams.networks import parse_network
from aspen.streams.windows import SECOND_US

__all__ = [
    "composite_network", "micro_batches", "network_cells", "network_retrieval_cells",
    "network_spark_cells", "selection_where", "window_network",
]

#: The selection below the window passing every reading.
EVERY = "value IS NOT NULL"


def window_network(name: str, size_s: float = 60, slide_s: float | None = None,
                   where: str = EVERY, lateness_s: float = 30) -> dict[str, Any]:
    """The default-like per-sensor network: avg over time windows of ``size_s`` seconds every
    ``slide_s`` (tumbling when None) over a selection ``where`` of the readings."""
    window = {"seconds": size_s} if slide_s is None or slide_s == size_s \
        else {"seconds": size_s, "slide": slide_s}
    return {"name": name, "lateness_s": lateness_s, "query": {
        "aggregate": {"select": {"stream": "readings"}, "where": where, "name": "kept"},
        "window": window, "functions": ["avg(value)"], "name": "avg_window"}}


def composite_network(name: str, lateness_s: float = 30) -> dict[str, Any]:
    """Selection, projection with a function, union, count window (10 rows, slide 2) and a
    windowed join, per sensor: each hot or cold reading joined with the smoothed Fahrenheit
    trend of the next 10 seconds."""
    fahrenheit = {"project": {"stream": "readings"}, "name": "fahrenheit", "columns": {
        "sensor": "sensor", "ts": "ts", "f": "round(value * 9 / 5 + 32, 1)"}}
    trend = {"aggregate": fahrenheit, "window": {"rows": 10, "slide": 2},
             "functions": ["avg(f) AS f"], "name": "trend"}
    extremes = {"union": [
        {"select": {"stream": "readings"}, "where": "value > 97", "name": "hot"},
        {"select": {"stream": "readings"}, "where": "value < 66.5", "name": "cold"}],
        "name": "extremes"}
    return {"name": name, "lateness_s": lateness_s, "query": {
        "join": [extremes, trend], "within_s": 10, "name": "flagged"}}


def selection_where(stream: Sequence[SensorReading], share: float) -> str:
    """A selection passing about ``share`` of the stream's readings (a value threshold at
    the stream's quantile)."""
    if share >= 1.0:
        return EVERY
    values = sorted(r.value for r in stream)
    return f"value > {values[min(len(values) - 1, int((1 - share) * len(values)))]:.6f}"


def micro_batches(stream: Sequence[SensorReading], batch_s: float = 10
                  ) -> list[dict[str, list[Reading]]]:
    """The stream cut into micro-batches of ``batch_s`` seconds of readings, each the
    readings per sensor in id order."""
    batches: dict[int, dict[str, list[Reading]]] = {}
    for r in sorted(stream, key=lambda r: r.id):
        batch = batches.setdefault(int(r.ts_us // (batch_s * SECOND_US)), {})
        batch.setdefault(r.sensor, []).append(Reading(r.id, r.sensor, r.ts_us / SECOND_US,
                                                      r.value))
    return [batches[key] for key in sorted(batches)]


def _run(spec: dict[str, Any], batches: list[dict[str, list[Reading]]],
         mode: str) -> dict[str, Any]:
    """One run of the network over the micro-batches in ``mode``: its seconds and their
    split (operators' step, state JSON in and out, output frame), outputs and state size."""
    from aspen.readings.modes import KEEP
    from aspen.readings.network_tables import group_frame
    from aspen.streams.incremental import NetworkState

    network = parse_network(spec)
    states: dict[str, str] = {}
    step_s = json_s = frame_s = 0.0
    outputs = state_bytes = steps = 0
    clock = time.perf_counter
    started = clock()
    for batch in batches:
        for group, readings in batch.items():
            t0 = clock()
            text = states.get(group)
            state = (NetworkState.from_json(network, text) if text is not None
                     else NetworkState(network, KEEP[mode]))
            t1 = clock()
            step = state.step(readings)
            t2 = clock()
            frame = group_frame(group, step, state.encoder)
            t3 = clock()
            states[group] = text = state.to_json()
            t4 = clock()
            json_s += (t1 - t0) + (t4 - t3)
            step_s += t2 - t1
            frame_s += t3 - t2
            outputs += int((frame["kind"] == "output").sum())
            state_bytes += len(text)
            steps += 1
    seconds = clock() - started
    return {"seconds": seconds, "step_s": step_s, "json_s": json_s, "frame_s": frame_s,
            "outputs": outputs, "state_kb": state_bytes / max(steps, 1) / 1024}


def _measure(spec: dict[str, Any], batches: list[dict[str, list[Reading]]],
             repeats: int) -> dict[str, dict[str, Any]]:
    """Best of ``repeats`` runs per mode, the modes interleaved (rotating their order), so a
    load beside the benchmark hits them alike."""
    order = list(MODES)
    best: dict[str, dict[str, Any]] = {}
    for repeat in range(repeats):
        for mode in order[repeat % 3:] + order[:repeat % 3]:
            run = _run(spec, batches, mode)
            if mode not in best or run["seconds"] < best[mode]["seconds"]:
                best[mode] = run
    return best


def network_cells(stream: Sequence[SensorReading], repeats: int = 3,
                  batch_s: float = 10) -> list[dict[str, Any]]:
    """Readings per second per mode and the overheads against no provenance: window size
    (tumbling 10, 60, 300 s), slide (60 s windows, tumbling and every 10 s: network b),
    selectivity of the selection (about 10, 50, 100 %, 60 s tumbling) and the composite
    network (c). Network (a) is the 60 s tumbling window over the selection passing all; a
    cell shared by two axes is measured once."""
    batches = micro_batches(stream, batch_s)
    cells: list[tuple[str, str, dict[str, Any], float | None, float | None, float | None]] = []
    cells += [("window", "a" if size == 60 else "a'", window_network("w", size), size, size,
               1.0) for size in (10, 60, 300)]
    cells += [("slide", "a" if slide == 60 else "b", window_network("w", 60, slide), 60, slide,
               1.0) for slide in (60, 10)]
    cells += [("selectivity", "a" if share == 1.0 else "a'",
               window_network("w", 60, where=selection_where(stream, share)), 60, 60, share)
              for share in (0.1, 0.5, 1.0)]
    cells += [("composite", "c", composite_network("c"), None, None, None)]
    for mode in MODES:  # warm-up: the first frames and states pay for imports and caches
        _run(cells[0][2], batches[:3], mode)
    measured: dict[str, dict[str, dict[str, Any]]] = {}
    out = []
    for axis, label, spec, size, slide, share in cells:
        key = repr(spec["query"])
        if key not in measured:
            measured[key] = _measure(spec, batches, repeats)
        best = measured[key]
        eager = best["eager"]
        out.append({
            "axis": axis, "network": label, "window_s": size, "slide_s": slide,
            "selectivity": share, "readings": len(stream), "micro_batches": len(batches),
            "outputs": best["none"]["outputs"],
            **{f"{mode}_per_s": round(len(stream) / run["seconds"])
               for mode, run in best.items()},
            "lazy_overhead": round(best["lazy"]["seconds"] / best["none"]["seconds"] - 1, 3),
            "eager_overhead": round(eager["seconds"] / best["none"]["seconds"] - 1, 3),
            **{f"{mode}_state_kb": round(run["state_kb"], 1) for mode, run in best.items()},
            "eager_step": round(eager["step_s"] / eager["seconds"], 2),
            "eager_json": round(eager["json_s"] / eager["seconds"], 2),
            "eager_frame": round(eager["frame_s"] / eager["seconds"], 2),
            "none_frame": round(best["none"]["frame_s"] / best["none"]["seconds"], 2),
            "spec": spec,
        })
    return out


def network_retrieval_cells(stream: Sequence[SensorReading], work: Path,
                            sample: int = 20) -> list[dict[str, Any]]:
    """On a temporary lake holding ``stream``: networks (a) and (c) run eager and lazy in
    process, then the readings of ``sample`` of their outputs (the same ones in both modes,
    spread over the outputs) retrieved one at a time; seconds per output."""
    from aspen.lake import deltars
    from aspen.lake.ingest import ingest_files
    from aspen.readings.network_provenance import explain_output
    from aspen.readings.network_tables import NETWORK_OUTPUTS, run_network_locally
    from aspen.settings import Settings

    lake = Settings(lake=str(work / "lake-retrieval"))
    ingest_files(lake, [_write_readings(work / "retrieval.jsonl", stream)])
    cells = []
    for label, spec in (("a", window_network("a")), ("c", composite_network("c"))):
        chosen: list[str] = []
        for mode in ("eager", "lazy"):
            name = f"bench_{label}_{mode}"
            started = time.perf_counter()
            written, _drops = run_network_locally(lake, parse_network({**spec, "name": name}),
                                                  mode)
            run_s = time.perf_counter() - started
            if not chosen and written:
                outputs = deltars.read_table(lake, NETWORK_OUTPUTS, ["network", "output", "ts"])
                outputs = outputs[outputs["network"] == name].sort_values(["ts", "output"])
                every = max(1, len(outputs) // sample)
                chosen = list(outputs["output"])[::every][:sample]
            seconds, counts = [], []
            for output in chosen:
                started = time.perf_counter()
                found = explain_output(lake, name, output)
                seconds.append(time.perf_counter() - started)
                counts.append(sum(len(rows) for rows in found.readings.values()))
            cells.append({
                "network": label, "mode": mode, "outputs": written, "run_s": round(run_s, 2),
                "sampled": len(chosen),
                "p50_s": round(statistics.median(seconds), 3) if seconds else None,
                "max_s": round(max(seconds), 3) if seconds else None,
                "readings_per_output": round(statistics.median(counts), 1) if counts else None,
            })
    return cells


def network_spark_cells(work: Path, sensors: int = 100, backlog_s: int = 2400,
                        rounds: int = 2) -> dict[str, Any]:
    """Network (a) as the Structured Streaming query over a backlog of ``backlog_s`` seconds
    of readings (``availableNow``), per mode, each on a fresh lake; a warm-up query runs
    first (the JVM's first streaming query compiles what the others reuse); best of
    ``rounds`` rounds, alternating the modes' order."""
    from aspen.lake.ingest import ingest_files
    from aspen.readings.network_stream import run_network_stream
    from aspen.settings import Settings
    from aspen.spark.session import get_spark

    spark = get_spark("aspen-bench-networks")
    backlog = sensor_stream(sensors=sensors, seconds=backlog_s)
    path = _write_readings(work / "backlog.jsonl", backlog)
    warm = _write_readings(work / "warm-up.jsonl", backlog[: len(backlog) // 10])

    def one(tag: str, mode: str, source: Path) -> dict[str, Any]:
        lake = Settings(lake=str(work / f"lake-{tag}-{mode}"))
        ingest_files(lake, [source])
        network = parse_network(window_network(f"bench_{mode}"))
        started = time.perf_counter()
        report = run_network_stream(spark, lake, network, mode)
        return {"seconds": time.perf_counter() - started, "outputs": report.outputs,
                "batches": report.batches}

    one("warm-up", "eager", warm)
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for round_ in range(rounds):
        order = list(MODES) if round_ % 2 == 0 else list(reversed(MODES))
        for mode in order:
            runs[mode].append(one(f"r{round_}", mode, path))
    out: dict[str, Any] = {"sensors": sensors, "backlog_s": backlog_s,
                           "backlog_readings": len(backlog), "rounds": rounds, "modes": {}}
    for mode, done in runs.items():
        best = min(done, key=lambda run: run["seconds"])
        out["modes"][mode] = {"seconds": round(best["seconds"], 2),
                              "readings_per_s": round(len(backlog) / best["seconds"]),
                              "outputs": best["outputs"], "micro_batches": best["batches"],
                              "all_seconds": [round(run["seconds"], 2) for run in done]}
    base = out["modes"]["none"]["seconds"]
    for mode in ("lazy", "eager"):
        out["modes"][mode]["overhead"] = round(out["modes"][mode]["seconds"] / base - 1, 3)
    out["modes"]["none"]["overhead"] = 0.0
    return out
