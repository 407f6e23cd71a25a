"""Incremental re-optimization against from-scratch optimization, on TPC-H join graphs.

    python benchmarks/reoptimization.py [--queries Q3 Q5 ...] [--repeats 3] [--skew 0.5]
                                        [--methods declarative bottom-up top-down] [--out DIR]

For each query (TPC-H SF 1 statistics from the specification, ``aspen.optimizer.tpch``):

1. the initial optimization time of every method against Volcano (target: declarative ≤ 1.5×);
2. what the declarative optimizer's pruning dropped (OR / AND nodes pruned of those created;
   Liu 2016 reports 35–80 % and 55–75 %);
3. every join predicate's selectivity scaled by 1/8 … 8, one change at a time: the median
   incremental re-optimization time of each incremental method, against Volcano from scratch
   under the same statistics (target: ≥ 10× on Q5 and Q8Join, median < 20 ms on Q8Join), the
   re-optimizations per second, and the share of OR / AND nodes each change recomputed;
   each change is undone (its inverse applied, untimed) before the next;
4. every incremental result is checked against the exhaustive optimizer's best cost;
5. across runs, as the re-optimization DAG pays it: the saved state's size, and the median of
   load (the restricted unpickler of ``aspen.queries.optimizer_state``) + re-optimize + save
   (pickle) per change, against Volcano from scratch (the Delta commit of the state is not
   included: it costs the same whatever the method).

Ratios come from one run on one machine; results go to ``--out`` (default results/reopt) as JSON
and a Markdown summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.methods import make_optimizer
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.stats import Stats
from aspen.optimizer.tpch import QUERIES, tpch_stats

FACTORS = (0.125, 0.25, 0.5, 2.0, 4.0, 8.0)
BASELINES = ("volcano", "systemr")


def _timed(fn) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _selectivity(space: SearchSpace, stats: Stats, pred) -> float:
    from aspen.optimizer.cost import join_selectivity

    return join_selectivity(space.query, stats, pred)


def bench_query(name: str, stats: Stats, methods: list[str], repeats: int) -> dict[str, Any]:
    """Every measurement of one query."""
    query = QUERIES[name]
    space = SearchSpace(query)
    ors, ands = space.counts()
    out: dict[str, Any] = {"query": name, "relations": len(query.relations), "or_nodes": ors,
                           "join_and_nodes": ands, "initial_s": {}, "pruning": {},
                           "change_ms": {}, "recomputed": {}, "mismatches": 0}
    for method in (*BASELINES, *methods):
        times = []
        for _ in range(repeats):
            optimizer = make_optimizer(method, SearchSpace(query))
            result, seconds = _timed(lambda o=optimizer: o.optimize(stats))
            times.append(seconds)
        out["initial_s"][method] = min(times)
        if method == "declarative":
            c = result.counters
            out["pruning"] = {"or": c.or_pruned / max(1, c.or_created),
                              "and": c.and_pruned / max(1, c.and_created)}
    changes = []
    for pred in query.joins:
        base = _selectivity(space, stats, pred)
        for factor in FACTORS:
            changes.append(({"selectivity": {pred.id: min(1.0, base * factor)}},
                            {"selectivity": {pred.id: base}}))
    scratch_ms = []
    for forward, _ in changes:
        changed, _ = stats.changed(forward)
        # from scratch: enumeration included, as a cold optimizer would pay it
        _, seconds = _timed(lambda s=changed: make_optimizer("volcano",
                                                             SearchSpace(query)).optimize(s))
        scratch_ms.append(seconds * 1000)
    out["change_ms"]["volcano (from scratch)"] = statistics.median(scratch_ms)
    for method in methods:
        optimizer = make_optimizer(method, SearchSpace(query))
        optimizer.optimize(stats)
        per_change, or_share, and_share = [], [], []
        for forward, backward in changes:
            result, seconds = _timed(lambda f=forward, o=optimizer: o.reoptimize(f))
            per_change.append(seconds * 1000)
            want = best_plan(space, stats.changed(forward)[0])[0]
            if abs(result.cost - want) > 1e-9 * max(1.0, want):
                out["mismatches"] += 1
            or_share.append(result.counters.or_recomputed / ors)
            and_share.append(result.counters.and_recomputed / max(1, len(space.and_nodes())))
            optimizer.reoptimize(backward)
        out["change_ms"][method] = statistics.median(per_change)
        out["recomputed"][method] = {"or": statistics.mean(or_share),
                                     "and": statistics.mean(and_share)}
        out.setdefault("across_runs", {})[method] = _across_runs(optimizer, changes)
    return out


def _across_runs(optimizer: Any, changes: list[tuple[dict, dict]]) -> dict[str, float]:
    """State size, and load + re-optimize + save per change (median ms)."""
    import io
    import pickle

    from aspen.queries.optimizer_state import _StateUnpickler

    blob = pickle.dumps(optimizer, protocol=pickle.HIGHEST_PROTOCOL)
    per_change = []
    for forward, _ in changes:
        start = time.perf_counter()
        loaded = _StateUnpickler(io.BytesIO(blob)).load()
        loaded.reoptimize(forward)
        pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL)
        per_change.append((time.perf_counter() - start) * 1000)
    return {"state_kb": len(blob) / 1024, "run_ms": statistics.median(per_change)}


def summary(rows: list[dict[str, Any]], methods: list[str]) -> list[str]:
    """The Markdown tables of the run."""
    lines = ["| query | rels | OR | AND | " + " | ".join(f"{m} init s" for m in
                                                       (*BASELINES, *methods))
             + " | declarative ÷ volcano | pruned OR / AND |",
             "|---" * (5 + len(BASELINES) + len(methods) + 1) + "|"]
    for r in rows:
        init = r["initial_s"]
        ratio = init.get("declarative", float("nan")) / init["volcano"]
        pruned = r["pruning"]
        lines.append(
            f"| {r['query']} | {r['relations']} | {r['or_nodes']} | {r['join_and_nodes']} | "
            + " | ".join(f"{init[m]:.4f}" for m in (*BASELINES, *methods))
            + f" | {ratio:.2f}× | "
            + (f"{pruned['or']:.0%} / {pruned['and']:.0%} |" if pruned else "– |"))
    lines += ["", "| query | volcano from scratch ms | "
              + " | ".join(f"{m} ms (speed-up, re-opt/s, OR/AND recomputed)" for m in methods)
              + " | mismatches |", "|---" * (3 + len(methods)) + "|"]
    for r in rows:
        scratch = r["change_ms"]["volcano (from scratch)"]
        cells = []
        for m in methods:
            ms = r["change_ms"][m]
            rec = r["recomputed"][m]
            cells.append(f"{ms:.2f} (×{scratch / ms:.1f}, {1000 / ms:.0f}/s, "
                         f"{rec['or']:.0%}/{rec['and']:.0%})")
        lines.append(f"| {r['query']} | {scratch:.2f} | " + " | ".join(cells)
                     + f" | {r['mismatches']} |")
    lines += ["", "| query | volcano from scratch ms | "
              + " | ".join(f"{m}: state KB, load + re-opt + save ms (speed-up)" for m in methods)
              + " |", "|---" * (2 + len(methods)) + "|"]
    for r in rows:
        scratch = r["change_ms"]["volcano (from scratch)"]
        cells = [f"{a['state_kb']:.0f}, {a['run_ms']:.2f} (×{scratch / a['run_ms']:.1f})"
                 for a in (r["across_runs"][m] for m in methods)]
        lines.append(f"| {r['query']} | {scratch:.2f} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", nargs="+", default=["Q3", "Q5", "Q10", "Q5S", "Q8Join"])
    parser.add_argument("--methods", nargs="+", default=["declarative", "bottom-up", "top-down"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skew", type=float, default=None)
    parser.add_argument("--out", default="results/reopt")
    args = parser.parse_args(argv)
    stats = tpch_stats(1.0, skew=args.skew)
    rows = []
    for name in args.queries:
        rows.append(bench_query(name, stats, args.methods, args.repeats))
        print(f"{name}: done", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reoptimization.json").write_text(json.dumps(rows, indent=1))
    text = "\n".join(summary(rows, args.methods))
    (out / "summary.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
