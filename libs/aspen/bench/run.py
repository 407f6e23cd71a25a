"""Run the bench suite in one of three modes and write the results folder.

* ``tiny`` — the test's reduced mode: the 22-node topology, no Spark, about a minute;
* ``quick`` (default of ``aspen bench``) — the 100-node topology at 2.4 link tuples per node,
  a subset of deletions, all four peers (Spark ones on the first batches only), the ladder's
  first two steps; under 3 minutes;
* ``full`` — adds the paper's dense density (4 tuples per node), all deletions, the whole ladder
  (100 / 1,000 / 10,000 nodes), 1,000-node peers and Aspen on Spark (``maintain --runtime
  spark``, 100 nodes, against DRed and a Spark recompute); each experiment cut off at 300 s (the
  peer comparisons and ladder steps at 900 s, Spark at 1,200 s, the 1,000-node peers at 1,800 s).

Every experiment runs in its own process (:func:`aspen.bench.worker.run_task`); ``jobs`` = 2 lets
one more run alongside (the quick mode overlaps the Spark peers with the rest).

>>> sorted(plan("tiny"))[:3]
['aggsel', 'deletions', 'density']
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aspen.bench.common import machine_info
from aspen.bench.ladder import DEGREES, LADDER_SIZES, ladder_tasks
from aspen.bench.repeats import summarize
from aspen.bench.report import write_report
from aspen.bench.targets import evaluate_targets
from aspen.bench.worker import run_task

__all__ = ["MODES", "plan", "run_bench"]

MODES = ("tiny", "quick", "full")
Task = tuple[str, dict[str, Any]]
_SETTINGS: dict[str, dict[str, Any]] = {
    "tiny": {"cutoff": 60.0, "size": {"tiny": True}, "deletions": 20, "updates": 6,
             "peers": ["networkx", "duckdb"], "ladder": (), "jobs": 1, "timeouts": {},
             "repeats": 2},
    "quick": {"cutoff": 20.0, "size": {"nodes": 100, "degree": 2.4}, "deletions": 120,
              "updates": 8, "peers": ["networkx", "duckdb", "spark_df", "spark_sql"],
              "ladder": (100, 1_000), "jobs": 2, "timeouts": {"peers": 150.0, "order": 60.0},
              "repeats": 1},
    "full": {"cutoff": 300.0, "size": {"nodes": 100, "degree": 2.4}, "deletions": None,
             "updates": 20, "peers": ["networkx", "duckdb", "spark_df", "spark_sql"],
             "ladder": LADDER_SIZES, "jobs": 1,
             "timeouts": {"peers": 900.0, "peers-1000": 1800.0, "ladder": 900.0,
                          "spark-runtime": 1200.0},
             "repeats": 10},
}
_SCHEMES = ("absorption-lazy", "absorption-eager", "dred", "relative")
#: the paper-size experiments, run ``repeats`` times for confidence intervals (the peers, the
#: ladder and Spark are big runs: once)
REPEATED = ("insertions", "deletions", "regions", "density", "scale-out", "aggsel", "order")


def plan(mode: str) -> dict[str, dict[str, Task]]:
    """Experiment group → case → (task, kwargs) for ``mode``."""
    cfg = _SETTINGS[mode]
    size = cfg["size"]
    tiny = {"tiny": True} if size.get("tiny") else {}
    groups: dict[str, dict[str, Task]] = {
        "insertions": {s: ("paper.insertions", {**size, "schemes": [s]}) for s in _SCHEMES},
        "deletions": {s: ("paper.deletions", {**size, "schemes": [s], "limit": cfg["deletions"]})
                      for s in _SCHEMES[:3]},
        "density": {f"{v}/{m}": ("paper.density", {**tiny, "variant": v, "mode": m})
                    for v in ("sparse", "dense") for m in ("lazy", "eager")},
        "aggsel": {f"{v}/{c}": ("paper.aggsel", {**tiny, "variant": v, "choice": c})
                   for v in ("sparse", "dense") for c in ("multi", "single", "none")},
        "regions": {s: ("paper.regions", {**tiny, "schemes": [s], "limit": cfg["deletions"]})
                    for s in _SCHEMES},
        "order": {"": ("order.variable_order", dict(size))},
        "peers": {"": ("peers.compare", {**size, "updates": cfg["updates"],
                                         "peers": cfg["peers"]})},
        "ladder": {case: (task, kw) for case, task, kw in ladder_tasks(cfg["ladder"])},
    }
    if mode == "full":
        groups["ladder-dense"] = {case: (task, kw) for case, task, kw in ladder_tasks(
            cfg["ladder"], degree=DEGREES["ladder-dense"])}
    if mode == "full":
        dense = {"nodes": 100, "degree": 4.0}
        groups["insertions"].update({f"paper-dense/{s}": ("paper.insertions",
                                                          {**dense, "schemes": [s]})
                                     for s in _SCHEMES})
        groups["deletions"].update({f"paper-dense/{s}": ("paper.deletions",
                                                         {**dense, "schemes": [s]})
                                    for s in _SCHEMES[:3]})
        # Fig. 11/12: the topology grows to 800 link tuples (200 nodes at the dense 4 per node),
        # and the query runs on 16 and 24 nodes besides the default 12
        groups["density"].update({f"{v}/{m}/n200": ("paper.density",
                                                    {"variant": v, "mode": m, "nodes": 200})
                                  for v in ("sparse", "dense") for m in ("lazy", "eager")})
        groups["scale-out"] = {f"{v}/{m}/p{p}": ("paper.density",
                                                 {"variant": v, "mode": m, "partitions": p})
                               for p in (16, 24) for v in ("sparse", "dense")
                               for m in ("lazy", "eager")}
        # the paper triggers half of the sensors (the demo 30 %, which keeps its regions local)
        groups["regions"].update({f"half/{s}": ("paper.regions",
                                                {"schemes": [s], "trigger_fraction": 0.5})
                                  for s in _SCHEMES})
        groups["peers-1000"] = {"": ("peers.compare", {"nodes": 1000, "degree": 2.4,
                                                       "updates": cfg["updates"],
                                                       "peers": cfg["peers"]})}
        # Aspen on Spark (maintain --runtime spark): benchmarks/spark_maintain.py has the ladder
        groups["spark-runtime"] = {"": ("spark_runtime.maintain_batches",
                                        {"nodes": 100, "partitions": 4, "sizes": [1, 10]})}
    return {name: cases for name, cases in groups.items() if cases}


def _notes(mode: str) -> list[str]:
    notes = [
        "Aspen runs in process (LocalRuntime, 12 logical nodes); messages count sends between "
        "logical nodes. DRed/relative are the set-based baselines in aspen.baselines; DRed in an "
        "insert-only run is plain set-semantics evaluation.",
        "Lazy mode leaves formulas partial (shipped only when needed); eager runs the MinShip "
        "timer until nothing is buffered (exact provenance).",
        "Peers recompute reachable from scratch after each batch; Aspen applies the batch "
        "incrementally. Spark SQL WITH RECURSIVE (4.1) rejects UNION in recursion, so it is run "
        "as a hop-bounded UNION ALL (walks of ≤ n−1 links, DISTINCT per level): n levels, slow.",
    ]
    if mode == "tiny":
        notes.append("tiny mode (the test): 22-node topology; Spark peers skipped (no "
                     "SparkSession is started); no scale ladder.")
    if mode == "quick":
        notes.append("quick mode: 100 nodes at 2.4 link tuples per node (the paper's dense 4.0 "
                     "does not finish with exact provenance), a subset of deletions; Spark "
                     "DataFrame peer on the first 3 batches, Spark SQL on the first batch only; "
                     "ladder 100 and 1,000 nodes within the cut-off; the Spark peers run "
                     "alongside the other experiments (2 processes).")
    return notes


def _run_plan(groups: dict[str, dict[str, Task]], cutoff: float, timeouts: dict[str, float],
              jobs: int, log: Any, repeats: int = 1) -> dict[str, Any]:
    flat = [(g, c, task, kw) for g, cases in groups.items() for c, (task, kw) in cases.items()]
    # the slowest (Spark) first, so that it overlaps the rest when jobs > 1
    flat.sort(key=lambda item: "spark_df" not in item[3].get("peers", []))

    unfinished: dict[str, str] = {}  # ladder group → its step that did not finish

    def one(item: tuple[str, str, str, dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
        group, case, task, kwargs = item
        if group in DEGREES and group in unfinished:  # a larger step of a series that stopped
            rec = {"task": task, "kwargs": kwargs, "status": "skipped", "seconds": 0.0,
                   "note": f"not run: the {unfinished[group]}-node step did not finish"}
            log(f"{group}/{case}: skipped — {rec['note']}")
            return group, case, rec
        timeout = timeouts.get(group, timeouts.get(group.split("-")[0], cutoff))
        rec = run_task(task, kwargs, timeout)
        if group in DEGREES and rec["status"] != "ok":
            unfinished[group] = case
        log(f"{group}{'/' + case if case else ''}: {rec['status']} in {rec['seconds']:.1f} s"
            f"{' — ' + rec['note'] if rec.get('note') else ''}")
        if rec["status"] == "ok" and repeats > 1 and group in REPEATED:
            # a run that finished once is repeated; a repeat that fails is left out, and counted
            more = [run_task(task, kwargs, timeout) for _ in range(repeats - 1)]
            done = [rec["result"]] + [r["result"] for r in more if r["status"] == "ok"]
            rec["repeats"] = summarize(done) | {"asked": repeats}
        return group, case, rec

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(one, flat))
    experiments: dict[str, Any] = {}
    for group, case, rec in done:
        if case:
            experiments.setdefault(group, {})[case] = rec
        else:
            experiments[group] = rec
    return experiments


def run_bench(mode: str = "quick", out: Path | str = "results/bench",
              log: Any = print, only: Sequence[str] | None = None) -> Path:
    """Run ``mode``'s experiments (those of the groups in ``only``, if given), write the
    results folder; return the summary's path."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    cfg = _SETTINGS[mode]
    groups = plan(mode)
    if only:
        groups = {name: cases for name, cases in groups.items() if name in only}
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    t0 = time.perf_counter()
    experiments = _run_plan(groups, cfg["cutoff"], cfg["timeouts"], cfg["jobs"], log,
                            cfg["repeats"])
    results = {"mode": mode, "started": started, "machine": machine_info(),
               "cutoff_s": cfg["cutoff"], "timeouts_s": cfg["timeouts"], "experiments": experiments,
               "targets": evaluate_targets(experiments),
               "notes": _notes(mode) + ([f"only the groups {', '.join(only)} were run"]
                                        if only else []),
               "total_s": time.perf_counter() - t0}
    return write_report(results, Path(out))
