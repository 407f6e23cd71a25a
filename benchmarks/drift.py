"""A continuous query under drifting statistics: the adaptive plan against static plans on Spark.

    python benchmarks/drift.py [--slices 8] [--scale 1.0] [--repeats 3] [--seed 0]
                               [--extra 1] [--executors N] [--out DIR] [--quick]
    python benchmarks/drift.py --incremental [--scale 1.0] [--repeats 3] [--seed 0]
                               [--threshold 0.2] [--out DIR]

The query, the drift and the three arms are described in :mod:`aspen.bench.drift`: per slice
the adaptive arm re-plans incrementally (declarative optimizer) from the lake's statistics and
the selectivities its previous run observed; the first-slice plan and the best static plan in
hindsight run unchanged. Every candidate plan is timed on every slice in one warm Spark session
(one warm-up, the median of ``--repeats``). Printed: per slice the adaptive plan, the arms'
seconds, the totals and the ratios adaptive / best static and adaptive / first-slice, the
re-optimization times and the machine's load. Written to ``--out`` (default results/drift):
``summary.md``, ``drift.csv`` (every slice × candidate plan), ``drift.json`` and, when
matplotlib is installed, ``drift.png``.

``--incremental`` runs the in-process arm instead (:mod:`aspen.bench.drift_incremental`, no
Spark): an incrementally maintained three-way join re-planned live after every batch from its
live statistics, against every static join order, over the same drifting batches; it prints
per batch the adaptive plan and each arm's CPU milliseconds, the totals and the ratios adaptive
/ best static and adaptive / worst static, and writes ``incremental.md`` and
``incremental.json`` to ``--out`` (``--scale`` scales the links per batch).

``--executors`` is the cost model's count of copies of a broadcast side; by default it is taken
from the Spark master (1 for ``local[…]``, where the driver is the only executor). ``--quick``
is a smoke run of a minute or two on an idle machine (3 slices, scale 0.02, one repeat, no
hindsight plan).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from aspen.bench.drift import (
    DRIFT_SQL,
    DriftParams,
    DriftRun,
    Summary,
    csv_rows,
    drift_shapes,
    executors_of,
    load_average,
    markdown,
    plan_id,
    plan_label,
    run_drift,
    summarize,
)


def _log(text: str) -> None:
    print(text, flush=True)


def _json(run: DriftRun, summary: Summary, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "meta": meta,
        "sql": DRIFT_SQL,
        "shapes": [{"index": s.index, "hot_sensors": s.hot_sensors, "triggered": s.triggered,
                    "expected_rows": s.expected_rows()} for s in run.shapes],
        "params": asdict(run.shapes[0].params),
        "adaptive": [{"slice": sp.index, "plan": sp.plan, "label": plan_label(sp.plan),
                      "cost": sp.cost, "stats_s": sp.stats_seconds,
                      "optimize_s": sp.optimize_seconds, "moved": sp.moved,
                      "incremental": sp.incremental, "counters": sp.counters,
                      "versions": sp.versions, "rows": sp.rows, "run_s": sp.run_seconds,
                      "matches": sp.matches, "stats": sp.stats.to_json()}
                     for sp in run.adaptive],
        "candidates": {plan_label(p): {"plan": p, "times_s": run.times[pid],
                                       "warmup_s": run.checks.get(pid),
                                       "estimated_cost": run.estimates.get(pid)}
                       for pid, p in run.candidates.items()},
        "summary": {"adaptive_s": summary.adaptive, "first_slice_s": summary.first_slice,
                    "best_static_s": summary.best_static,
                    "best_static_plan": plan_label(run.candidates[summary.best_static_plan]),
                    "first_slice_plan": plan_label(run.candidates[summary.first_plan]),
                    "totals_s": summary.totals, "ratios": summary.ratios,
                    "optimize_s": summary.optimize_seconds, "stats_s": summary.stats_seconds},
        "notes": run.notes,
    }


def _plot(summary: Summary, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    slices = range(1, len(summary.adaptive) + 1)
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, values in (("adaptive", summary.adaptive), ("first-slice plan", summary.first_slice),
                         ("best static plan", summary.best_static)):
        ax.plot(slices, values, marker="o", label=name)
    ax.set(xlabel="slice", ylabel="seconds (median)", title="query time as the statistics drift")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _incremental(args: argparse.Namespace) -> int:
    from aspen.bench.drift_incremental import (
        LiveDriftParams,
        live_markdown,
        run_live_drift,
        summary_json,
    )

    started = time.perf_counter()
    params = replace(LiveDriftParams.scaled(args.scale), seed=args.seed)
    _log(f"incremental drift: {params}; load average {load_average()}")
    run = run_live_drift(params, repeats=args.repeats, threshold=args.threshold, log=_log)
    lines = live_markdown(run, params)
    lines += ["", f"wall time {time.perf_counter() - started:.0f} s; load average at the end "
              f"{load_average()} (1, 5, 15 min)."]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "incremental.md").write_text("\n".join(lines) + "\n")
    (out / "incremental.json").write_text(json.dumps(summary_json(run, params), indent=1))
    print("\n".join(lines))
    print(f"written: {out}/incremental.md, incremental.json")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=8)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="sensors and hot sensors relative to aspen.bench.drift.DriftParams "
                             "(1: a million sensors, up to 4 million links)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per slice and plan")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--extra", type=int, default=1,
                        help="hindsight plans of least estimated total cost added as candidates")
    parser.add_argument("--executors", type=int, default=None,
                        help="the cost model's executors (default: from the Spark master)")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--out", default="results/drift")
    parser.add_argument("--lake", default=None,
                        help="an empty folder for the lake (default: a temporary one)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 3 slices, scale 0.02, one repeat, no extra plan")
    parser.add_argument("--incremental", action="store_true",
                        help="the in-process run: live re-planning of an incremental join "
                             "against static join orders (no Spark)")
    parser.add_argument("--threshold", type=float, default=0.2,
                        help="with --incremental: the fraction a statistic must move by")
    args = parser.parse_args(argv)
    if args.incremental:
        return _incremental(args)
    if args.quick:
        args.slices, args.scale, args.repeats, args.extra = 3, 0.02, 1, 0
    from aspen.settings import Settings
    from aspen.spark.session import get_spark

    started = time.perf_counter()
    spark = get_spark("aspen-drift", {"spark.driver.memory": args.driver_memory})
    master = spark.sparkContext.master
    executors = args.executors if args.executors is not None else executors_of(
        master, spark.conf.get("spark.executor.instances", None))
    params = DriftParams.scaled(args.scale)
    shapes = drift_shapes(args.slices, params)
    _log(f"{args.slices} slices, scale {args.scale}: {params}; master {master}, cost model "
         f"executors {executors}; load average {load_average()}")
    with tempfile.TemporaryDirectory(prefix="aspen-drift-") as scratch:
        settings = Settings(lake=args.lake or str(Path(scratch) / "lake"))
        run = run_drift(spark, settings, shapes, repeats=args.repeats, seed=args.seed,
                        params={"executors": float(executors)}, extra=args.extra, log=_log)
    summary = summarize(run.times, [plan_id(sp.plan) for sp in run.adaptive],
                        sum(sp.optimize_seconds for sp in run.adaptive[1:]),
                        sum(sp.stats_seconds for sp in run.adaptive))
    wall = time.perf_counter() - started
    meta = {"slices": args.slices, "scale": args.scale, "repeats": args.repeats,
            "seed": args.seed, "extra": args.extra, "executors": executors, "master": master,
            "driver_memory": args.driver_memory, "load_average_end": load_average(),
            "wall_s": wall}
    lines = markdown(run, summary)
    lines += ["", f"wall time {wall / 60:.1f} min; load average at the end {load_average()} "
              f"(1, 5, 15 min) on {master}, cost model executors {executors}."]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    rows = csv_rows(run)
    with open(out / "drift.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "drift.json").write_text(json.dumps(_json(run, summary, meta), indent=1,
                                               default=str))
    plotted = _plot(summary, out / "drift.png")
    print("\n".join(lines))
    print(f"written: {out}/summary.md, drift.csv, drift.json" + (", drift.png" if plotted else ""))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
