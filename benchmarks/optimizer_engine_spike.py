"""Spike: could the declarative optimizer run on Aspen's own incremental engine?

BestCost = min over PlanCost (rule R9) is the aggregate the optimizer maintains most. This
expresses it with the engine's aggregate selection (``AggSel`` with a MIN aggregate: per group
every tuple is kept, provenance BDDs per tuple, promotion of the next best on a deletion) and
with the dedicated dataflow's :class:`~aspen.optimizer.declarative.aggregates.MinAggregate`,
over the same groups, and times the deltas re-optimization sends it:

- insert a PlanCost that is not the best (pruned by aggregate selection);
- insert a new best (and retract it again);
- raise the cost of the current best (the engine has no update delta: a retraction of the old
  tuple, then an insertion of the new one);
- delete the current best by its base variable (the engine's restrict-to-false) or by key.

Then the whole re-optimization for scale: one change on TPC-H Q8Join with the dedicated
dataflow against one from-scratch Volcano run.

    .venv/bin/python benchmarks/optimizer_engine_spike.py [--groups 50] [--alternatives 300]

The numbers go into docs/decisions/0032-declarative-optimizer-dataflow.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from aspen.engine.operators.aggsel import Aggregate, AggSel
from aspen.engine.records import Update
from aspen.optimizer.declarative import DeclarativeOptimizer
from aspen.optimizer.declarative.aggregates import MinAggregate
from aspen.optimizer.space import SearchSpace
from aspen.optimizer.tpch import QUERIES, tpch_stats
from aspen.optimizer.volcano import Volcano
from aspen.provenance.bdd import ProvenanceManager

PLAN_COST = "plan_cost"


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _time_each(ops: list[Callable[[], object]]) -> list[float]:
    out = []
    for op in ops:
        start = time.perf_counter()
        op()
        out.append(time.perf_counter() - start)
    return out


def engine_spike(groups: int, alternatives: int, seed: int, backend: str | None
                 ) -> dict[str, float]:
    """Median µs per delta through AggSel (BestCost over PlanCost(expr, prop, index, cost))."""
    rng = random.Random(seed)
    m = ProvenanceManager(backend=backend)
    sel = AggSel(m, group=(0, 1), aggregates=(Aggregate("cost", "min", 3),),
                 relation=PLAN_COST)
    costs: dict[int, list[float]] = {}
    for g in range(groups):
        costs[g] = [rng.uniform(1.0, 2.0) for _ in range(alternatives)]
        for i, c in enumerate(costs[g]):
            sel.process("in", Update.ins(PLAN_COST, (g, None, i, c), m.var(f"v{g}_{i}")))
    out: dict[str, float] = {}

    def best_of(g: int) -> tuple[int, float]:
        i = min(range(alternatives), key=lambda j: costs[g][j])
        return i, costs[g][i]

    out["insert, not the best"] = _median_us(_time_each([
        (lambda g=g: sel.process("in", Update.ins(PLAN_COST, (g, None, alternatives, 3.0),
                                                  m.var(f"w{g}"))))
        for g in range(groups)]))
    out["insert a new best"] = _median_us(_time_each([
        (lambda g=g: sel.process("in", Update.ins(PLAN_COST, (g, None, alternatives + 1, 0.5),
                                                  m.var(f"x{g}"))))
        for g in range(groups)]))
    out["retract that best (next best promoted)"] = _median_us(_time_each([
        (lambda g=g: sel.process("in", Update.delete(PLAN_COST, (g, None, alternatives + 1, 0.5),
                                                     frozenset())))
        for g in range(groups)]))

    def raise_best(g: int) -> None:
        i, c = best_of(g)
        sel.process("in", Update.delete(PLAN_COST, (g, None, i, c), frozenset()))
        sel.process("in", Update.ins(PLAN_COST, (g, None, i, c + 5.0), m.var(f"y{g}")))
        costs[g][i] = c + 5.0

    out["raise the best (retract + insert)"] = _median_us(_time_each([
        (lambda g=g: raise_best(g)) for g in range(groups)]))

    def kill_best(g: int) -> None:
        i, _c = best_of(g)
        sel.delete_vars(frozenset({f"v{g}_{i}"}))
        costs[g][i] = float("inf")

    out["delete the best by its variable"] = _median_us(_time_each([
        (lambda g=g: kill_best(g)) for g in range(groups)]))
    return out


def dataflow_spike(groups: int, alternatives: int, seed: int) -> dict[str, float]:
    """The same deltas through the dedicated dataflow's min aggregate."""
    rng = random.Random(seed)
    aggs = [MinAggregate() for _ in range(groups)]
    for agg in aggs:
        for i in range(alternatives):
            agg.upsert(i, rng.uniform(1.0, 2.0))
    out: dict[str, float] = {}
    out["insert, not the best"] = _median_us(_time_each([
        (lambda a=a: a.upsert(alternatives, 3.0)) for a in aggs]))
    out["insert a new best"] = _median_us(_time_each([
        (lambda a=a: a.upsert(alternatives + 1, 0.5)) for a in aggs]))
    out["retract that best (next best promoted)"] = _median_us(_time_each([
        (lambda a=a: a.delete(alternatives + 1)) for a in aggs]))
    out["raise the best (retract + insert)"] = _median_us(_time_each([
        (lambda a=a: a.upsert(a.best()[1], a.best()[0] + 5.0)) for a in aggs]))
    out["delete the best by its variable"] = _median_us(_time_each([
        (lambda a=a: a.delete(a.best()[1])) for a in aggs]))
    return out


def whole_reoptimization(repeats: int) -> tuple[float, float]:
    """(median ms of one selectivity change re-optimized by the dedicated dataflow, median ms
    of one from-scratch Volcano run), on TPC-H Q8Join at SF 1."""
    space, stats = SearchSpace(QUERIES["Q8Join"]), tpch_stats()
    pred = "l.l_orderkey=o.o_orderkey"
    base = stats.selectivity(pred) or 1 / 1.5e6
    opt = DeclarativeOptimizer(space)
    opt.optimize(stats)
    incremental, scratch = [], []
    for k in range(repeats):
        factor = (1 / 8, 1 / 2, 2, 8)[k % 4]
        start = time.perf_counter()
        opt.reoptimize({"selectivity": {pred: base * factor}})
        incremental.append(time.perf_counter() - start)
        opt.reoptimize({"selectivity": {pred: base}})
        start = time.perf_counter()
        Volcano(space).optimize(opt.stats.changed({"selectivity": {pred: base * factor}})[0])
        scratch.append(time.perf_counter() - start)
    return statistics.median(incremental) * 1e3, statistics.median(scratch) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=50, help="OR nodes (aggregate groups)")
    parser.add_argument("--alternatives", type=int, default=300, help="PlanCost rows per group")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default=None, help="BDD backend (default: the fastest)")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    engine = engine_spike(args.groups, args.alternatives, args.seed, args.backend)
    mine = dataflow_spike(args.groups, args.alternatives, args.seed)
    backend = ProvenanceManager(backend=args.backend).backend
    print(f"BestCost = min PlanCost, {args.groups} groups × {args.alternatives} rows, BDD "
          f"backend {backend}: median µs per delta")
    print(f"{'delta':42} {'engine AggSel':>14} {'dataflow':>10} {'ratio':>8}")
    for name, engine_us in engine.items():
        print(f"{name:42} {engine_us:14.1f} {mine[name]:10.1f} {engine_us / mine[name]:7.0f}×")
    inc_ms, scratch_ms = whole_reoptimization(args.repeats)
    print(f"Q8Join, one join-selectivity change: dataflow re-optimization {inc_ms:.2f} ms "
          f"(median of {args.repeats}); Volcano from scratch {scratch_ms:.2f} ms")


if __name__ == "__main__":
    main()
