"""The procedural incremental re-optimizers (Liu 2016, ch. 5) against optimization from scratch.

On TPC-H Q8's 8-way join graph (part–lineitem, supplier–lineitem, lineitem–orders,
orders–customer, customer–nation n1, n1–region, supplier–nation n2) with random statistics (the
TPC-H ones, each table's rows scaled by 2^U(−2, 2)), the script times, per variant of
:class:`~aspen.optimizer.procedural.BottomUp` and :class:`~aspen.optimizer.procedural.TopDown`
(memoize best / all × conditional testing on / off): the initial optimization (median of
``--repeat`` runs) and the median single-change re-optimization over ``--changes`` random
changes (rows, a selectivity, an ndv or a width scaled by 1/8–8, applied in sequence), next to
:func:`aspen.optimizer.exhaustive.best_plan` from scratch under the same statistics, and the
mean recompute ratios (OR / AND nodes created or recomputed per change, and LocalCost
evaluations, over the space's totals); ``speedup`` is the median over the changes of the
from-scratch time over the re-optimization time. Every re-optimization is checked against the
exhaustive optimum. The search space is enumerated once beforehand and shared, so no variant
pays for ``Fn_split``; the variants run round robin, so a change of load hits them alike.

Run: ``.venv/bin/python benchmarks/optimizer_procedural.py [--seed 1] [--changes 40]
[--no-properties] [--quick]``
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from typing import Any

from aspen.optimizer.exhaustive import best_plan
from aspen.optimizer.procedural import BottomUp, TopDown
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats
from aspen.optimizer.tpch import QUERIES, tpch_stats

VARIANTS = [(cls, memoize, conditional) for cls in (BottomUp, TopDown)
            for memoize in ("best", "all") for conditional in (True, False)]


def random_stats(rng: random.Random, query: Any) -> Stats:
    """TPC-H statistics with each table's rows scaled by 2^U(−2, 2)."""
    base = tpch_stats()
    tables = sorted(set(query.relations.values()))
    stats, _ = base.changed({"rows": {t: round(base.rows(t) * 2 ** rng.uniform(-2, 2))
                                      for t in tables}})
    return stats


def random_change(rng: random.Random, query: Any, stats: Stats) -> dict[str, dict[str, float]]:
    """One statistic scaled by 1/8–8: a table's rows or width, a selectivity or an ndv."""
    factor = 2 ** rng.uniform(-3, 3)
    kind = rng.choice(["rows", "rows", "selectivity", "ndv", "width"])
    if kind in ("rows", "width"):
        table = rng.choice(sorted(set(query.relations.values())))
        now = stats.rows(table) if kind == "rows" else stats.width(table)
        return {kind: {table: max(1.0, round(now * factor))}}
    if kind == "selectivity":
        names = [p.id for p in query.joins] + [f.id for f in query.filters]
        return {kind: {rng.choice(names): min(1.0, 10 ** rng.uniform(-6, -0.5))}}
    pred = rng.choice(query.joins)
    alias, column = rng.choice([pred.left, pred.right]).split(".", 1)
    table = query.relations[alias]
    return {kind: {f"{table}.{column}": max(1.0, round(stats.ndv(table, column) * factor))}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--changes", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-properties", action="store_true")
    parser.add_argument("--quick", action="store_true", help="10 changes, 2 repeats")
    args = parser.parse_args()
    if args.quick:
        args.changes, args.repeat = 10, 2
    rng = random.Random(args.seed)
    query = QUERIES["Q8"]
    space = SearchSpace(query, SpaceOptions(properties=not args.no_properties))
    n_or, n_and = len(space.or_nodes()), len(space.and_nodes())  # enumerates (and caches)
    stats = first = random_stats(rng, query)
    sequence = []
    for _ in range(args.changes):
        change = random_change(rng, query, stats)
        stats, _ = stats.changed(change)
        sequence.append((change, stats))

    optimizers = {v: v[0](space, memoize=v[1], conditional=v[2]) for v in VARIANTS}
    initial: dict[tuple, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(args.repeat):  # round robin, so a change of load hits every variant alike
        for variant, optimizer in optimizers.items():
            initial[variant].append(optimizer.optimize(first).seconds)
    scratch: list[float] = []
    times: dict[tuple, list[float]] = {v: [] for v in VARIANTS}
    ratios: dict[tuple, list[tuple[float, float, float]]] = {v: [] for v in VARIANTS}
    for change, after in sequence:
        started = time.perf_counter()
        cost, _ = best_plan(space, after)
        scratch.append(time.perf_counter() - started)
        for variant, optimizer in optimizers.items():
            result = optimizer.reoptimize(change)
            assert math.isclose(result.cost, cost, rel_tol=1e-9), (variant, result.cost, cost)
            c = result.counters
            times[variant].append(result.seconds)
            ratios[variant].append(((c.or_created + c.or_recomputed) / n_or,
                                    (c.and_created + c.and_recomputed) / n_and,
                                    optimizer.work.local_costs / n_and))
    scratch_median = statistics.median(scratch)
    print(f"Q8, {n_or} OR / {n_and} AND nodes (properties {not args.no_properties}), "
          f"{args.changes} single changes, seed {args.seed}")
    print(f"exhaustive.best_plan from scratch: median {scratch_median * 1e3:.2f} ms")
    print(f"{'variant':<22} {'initial ms':>10} {'reopt ms':>9} {'speedup':>8} "
          f"{'OR ratio':>9} {'AND ratio':>9} {'LocalCost':>9}")
    for variant in VARIANTS:
        cls, memoize, conditional = variant
        reopt = statistics.median(times[variant])
        speedup = statistics.median(s / t for s, t in zip(scratch, times[variant], strict=True))
        or_ratio, and_ratio, local_ratio = (statistics.mean(r[k] for r in ratios[variant])
                                            for k in range(3))
        name = f"{cls.name} {memoize} {'ct' if conditional else 'no-ct'}"
        print(f"{name:<22} {statistics.median(initial[variant]) * 1e3:10.2f} "
              f"{reopt * 1e3:9.2f} {speedup:8.1f} {or_ratio:9.3f} {and_ratio:9.3f} "
              f"{local_ratio:9.3f}")


if __name__ == "__main__":
    main()
