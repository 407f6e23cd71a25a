"""The declarative optimizer (Liu 2016, ch. 4): optimization as a dataflow, re-optimization as
the maintenance of its relations under changed statistics.

:meth:`DeclarativeOptimizer.optimize` builds the dataflow (:mod:`.dataflow`) under the given
statistics; :meth:`~DeclarativeOptimizer.reoptimize` applies one batch of changes to the same
dataflow, which re-derives only what the changes reach. The counters of a call: OR and AND nodes
*created* (first enumerated), *pruned* (dropped by a pruning technique during the call) and
*recomputed* (a cost computed again: an AND node's local cost or PlanCost, an OR node's
BestCost settled again).

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u", "c": "v"},
...                      "joins": ["a.k = b.k", "b.j = c.j"]})
>>> opt = DeclarativeOptimizer(SearchSpace(q))
>>> first = opt.optimize(Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}}))
>>> again = opt.reoptimize({"rows": {"u": 1e7}})
>>> again.counters.and_recomputed < first.counters.and_created
True
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.declarative.dataflow import Dataflow, Tally
from aspen.optimizer.declarative.pruning import Pruning
from aspen.optimizer.declarative.snapshot import Snapshot, snapshot
from aspen.optimizer.declarative.worklist import ORDERS
from aspen.optimizer.result import Counters, Result
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["DeclarativeOptimizer"]


class DeclarativeOptimizer:
    """The declarative optimizer over ``space``, with ``pruning`` and a worklist ``order``
    (``fifo``, ``lifo`` — depth-first, the default — or ``random`` with ``seed``)."""

    name = "declarative"

    def __init__(self, space: SearchSpace, pruning: Pruning | None = None,
                 order: str = "lifo", seed: int = 0) -> None:
        if order not in ORDERS:
            raise ConfigError(f"unknown worklist order {order!r}; known: {', '.join(ORDERS)}")
        self.space = space
        self.pruning = pruning or Pruning()
        self.order = order
        self.seed = seed
        self.stats: Stats | None = None
        self.flow: Dataflow | None = None

    def optimize(self, stats: Stats) -> Result:
        """Optimize from scratch under ``stats`` (a new dataflow)."""
        start = time.perf_counter()
        self.stats = stats
        self.flow = Dataflow(self.space, stats, self.pruning, self.order, self.seed)
        return self._result(self.flow.tally, time.perf_counter() - start)

    def reoptimize(self, change: Mapping[str, Mapping[str, Any]]) -> Result:
        """Apply one batch of statistic changes (a C.jsonl line) incrementally."""
        if self.flow is None or self.stats is None:
            raise ConfigError(f"{self.name}: reoptimize before optimize (no statistics yet)")
        start = time.perf_counter()
        stats, moved = self.stats.changed(change)
        self.stats = stats
        flow = self.flow
        flow.tally = Tally()
        if moved:
            flow.apply(stats, moved)
        return self._result(flow.tally, time.perf_counter() - start)

    def _result(self, tally: Tally, seconds: float) -> Result:
        flow = self.flow
        assert flow is not None
        counters = Counters(
            or_created=len(tally.or_created), and_created=len(tally.and_created),
            or_pruned=len(tally.or_pruned), and_pruned=len(tally.and_pruned),
            or_recomputed=len(tally.or_recomputed), and_recomputed=len(tally.and_recomputed))
        return Result(self.best_plan(), flow.root.best, counters, seconds)

    def best_plan(self) -> dict[str, Any]:
        """The plan tree BestPlan gives at the root (:meth:`SearchSpace.plan_json`)."""
        flow = self._flow()
        choice: dict[OrNode, AndNode] = {}
        todo = [flow.root]
        while todo:
            o = todo.pop()
            a = o.best_alt
            if a is None:
                raise ConfigError(f"{self.name}: no plan for {o.node.label()}")
            choice[o.node] = a.alt
            todo.extend(a.kids)
        return self.space.plan_json(choice[flow.root.node], choice)

    def state_size(self) -> dict[str, int]:
        """Rows the optimizer holds, per relation, and their ``total``: visible SearchSpace
        rows, propagated PlanCost rows (not pruned), every row the BestCost aggregates keep,
        BestCost and Bound rows (active OR nodes), ParentBound rows, non-zero RefCounts."""
        flow = self._flow()
        ors = [o for o in flow.ors.values() if o.enumerated]
        sizes = {
            "search_space": sum(1 for a in flow.ands if a.shown),
            "plan_cost": sum(1 for a in flow.ands if a.cost is not None and not a.pruned
                             and a.parent.active),
            "aggregated": sum(len(o.agg) for o in ors),
            "best_cost": sum(1 for o in ors if o.active and o.settled),
            "bound": sum(1 for o in ors if o.active) if self.pruning.bounding else 0,
            "parent_bound": sum(len(o.maxb) for o in ors),
            "ref_count": sum(1 for o in ors if o.refs),
        }
        sizes["total"] = sum(sizes.values())
        return sizes

    def snapshot(self) -> Snapshot:
        """The relations as they stand (:class:`~.snapshot.Snapshot`)."""
        return snapshot(self._flow())

    def _flow(self) -> Dataflow:
        if self.flow is None:
            raise ConfigError(f"{self.name}: optimize first (no dataflow yet)")
        return self.flow
