"""Stream networks with provenance against the same networks without: throughput in process
along window size, slide and selectivity, retrieval of an output's readings, and Spark; see
:mod:`aspen.bench.networks`.

    .venv/bin/python benchmarks/networks.py                   # all three parts
    .venv/bin/python benchmarks/networks.py --no-spark --sensors 10 --seconds 60 --repeats 1
                                                              # a smoke run

Prints the tables and the targets as ratios measured in this run (Reduced-Eager overhead ≤ 30 %
and Replay-Lazy ≤ 10 % at the default window, one output's readings in < 1 s, ≥ 10,000
readings/s on Spark); writes ``networks.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from aspen.bench.common import machine_info
from aspen.bench.networks import network_cells, network_retrieval_cells, network_spark_cells
from aspen.bench.readings import sensor_stream


def _table(rows: list[dict], columns: list[str]) -> str:
    lines = [" | ".join(columns), " | ".join("---" for _ in columns)]
    lines += [" | ".join("" if row.get(c) is None else str(row[c]) for c in columns)
              for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sensors", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=600,
                        help="stream length, in-process and retrieval parts")
    parser.add_argument("--repeats", type=int, default=3, help="best of, in-process part")
    parser.add_argument("--batch", type=float, default=10,
                        help="seconds of readings per micro-batch, in-process part")
    parser.add_argument("--backlog", type=int, default=2400,
                        help="seconds of readings (of --sensors) in the Spark backlog")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--out", default="results/networks")
    args = parser.parse_args()

    started = time.perf_counter()
    stream = sensor_stream(sensors=args.sensors, seconds=args.seconds)
    result: dict = {"machine": machine_info(), "args": vars(args)}
    result["in_process"] = network_cells(stream, args.repeats, args.batch)
    cells = result["in_process"]
    print(f"in process: {len(stream)} readings of {args.sensors} sensors in "
          f"{cells[0]['micro_batches']} micro-batches of {args.batch:g} s, state through JSON "
          f"between them, best of {args.repeats}")
    print(_table(cells, ["axis", "network", "window_s", "slide_s", "selectivity", "outputs",
                         "none_per_s", "lazy_per_s", "eager_per_s", "lazy_overhead",
                         "eager_overhead"]))
    print("\nwhere the time goes: share of the eager run in the operators' step, the state's "
          "JSON, the output frame (none: its frame share); mean state per group (KB)")
    print(_table(cells, ["axis", "network", "window_s", "slide_s", "selectivity",
                         "eager_step", "eager_json", "eager_frame", "none_frame",
                         "none_state_kb", "lazy_state_kb", "eager_state_kb"]))

    with tempfile.TemporaryDirectory() as work:
        result["retrieval"] = network_retrieval_cells(stream, Path(work))
    print("\nretrieval: explain_output on a lake, per sampled output (s)")
    print(_table(result["retrieval"], ["network", "mode", "outputs", "run_s", "sampled",
                                       "p50_s", "max_s", "readings_per_output"]))

    default = next(c for c in cells if c["axis"] == "window" and c["window_s"] == 60)
    targets = [
        ("in process: Reduced-Eager overhead at the default window ≤ 30 %",
         default["eager_overhead"], default["eager_overhead"] <= 0.30),
        ("in process: Replay-Lazy overhead at the default window ≤ 10 %",
         default["lazy_overhead"], default["lazy_overhead"] <= 0.10),
    ]
    for label in sorted({c["network"] for c in result["retrieval"]}):
        worst = {c["mode"]: c["max_s"] for c in result["retrieval"] if c["network"] == label}
        empty = None in worst.values()
        targets.append((f"retrieval: one output's readings < 1 s, network {label} "
                        "(worst sampled, eager; lazy)",
                        "no outputs to retrieve" if empty else
                        f"{worst['eager']}; {worst['lazy']}",
                        not empty and max(worst.values()) < 1.0))
    if not args.no_spark:
        spark_started = time.perf_counter()
        with tempfile.TemporaryDirectory() as work:
            spark = network_spark_cells(Path(work), sensors=args.sensors,
                                        backlog_s=args.backlog)
        spark["part_s"] = round(time.perf_counter() - spark_started, 1)
        result["spark"] = spark
        print(f"\nSpark Structured Streaming (availableNow), network a, "
              f"{spark['backlog_readings']} readings of backlog, best of {spark['rounds']} "
              f"(the part took {spark['part_s']} s)")
        print(_table([{"mode": m, **c} for m, c in spark["modes"].items()],
                     ["mode", "seconds", "all_seconds", "readings_per_s", "overhead",
                      "outputs", "micro_batches"]))
        modes = spark["modes"]
        targets += [
            ("Spark: ≥ 10,000 readings/s (eager; lazy; none)",
             f"{modes['eager']['readings_per_s']}; {modes['lazy']['readings_per_s']}; "
             f"{modes['none']['readings_per_s']}",
             min(modes["eager"]["readings_per_s"], modes["lazy"]["readings_per_s"]) >= 10_000),
        ]
    print("\ntargets")
    for name, value, met in targets:
        print(f"  {name}: {value} → {'met' if met else 'missed'}")
    result["targets"] = [{"target": n, "measured": v, "met": m} for n, v, m in targets]
    result["total_s"] = round(time.perf_counter() - started, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "networks.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"\n{result['total_s']} s in all; wrote {out / 'networks.json'}")


if __name__ == "__main__":
    main()
