"""The System-R-style incremental re-optimizer: deltas propagated bottom-up (Liu 2016, §5.2).

:meth:`BottomUp.optimize` is bottom-up dynamic programming over the whole and-or graph (every
OR node after all of its children) that keeps its state: each OR node's BestCost and choice,
each AND node's LocalCost (and PlanCost under ``memoize="all"``), the reverse edges.

:meth:`BottomUp.reoptimize` starts from the change: the AND nodes whose local cost reads a moved
statistic (:meth:`~aspen.optimizer.space.SearchSpace.affected`) get their LocalCost again — the
change expanded into ΔLocalCost (§5.1) — and those whose LocalCost moved mark their OR node.
Marked OR nodes are visited level by level, smallest expressions first, so each is visited at
most once per call, after all of its children: its best is recomputed from the alternatives
that changed (:meth:`~aspen.optimizer.procedural.memo.Procedural._reselect`, with conditional
testing), and a changed BestCost marks the parent AND nodes — ΔBestCost flows up to the root.

Counters per call: ``or_recomputed`` the OR nodes visited, ``and_recomputed`` the AND nodes whose
PlanCost was recomputed (not the reads of a stored memoize-all PlanCost; the LocalCost of every
affected AND node is evaluated in any case); nothing is pruned. :meth:`optimize` creates every
node.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> opt = BottomUp(SearchSpace(q))
>>> opt.optimize(Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})).plan
{'join': 'broadcast_hash', 'left': {'scan': 'a'}, 'right': {'scan': 'b'}}
>>> r = opt.reoptimize({"rows": {"t": 10, "u": 1e6}})
>>> r.plan["right"], r.counters.or_recomputed  # (a), (b), (a)@k, (b)@k, (a,b)
({'scan': 'a'}, 5)
"""

from __future__ import annotations

import heapq

from aspen.optimizer.procedural.memo import Procedural
from aspen.optimizer.stats import StatKey

__all__ = ["BottomUp"]


class BottomUp(Procedural):
    """Incremental bottom-up re-optimization over the full and-or graph of ``space``.

    ``memoize``: ``"best"`` keeps BestCost per OR node only, ``"all"`` each AND node's PlanCost
    too; ``conditional``: conditional testing on the min (both give the same plans)."""

    name = "bottom-up"

    def _build(self) -> None:
        g = self.graph
        g.expand_all()
        self._grow()
        work = self.work
        work.or_created.update(range(len(g.nodes)))
        work.and_created.update(range(len(g.and_nodes)))
        for j in range(len(g.and_nodes)):
            self.local[j] = self._local_cost(j)
        if self._all:
            self.pending.update(range(len(g.and_nodes)))
        for i in sorted(range(len(g.nodes)), key=g.level.__getitem__):  # children first
            best, arg = float("inf"), -1
            alts = g.alts[i]
            assert alts is not None
            for j in alts:
                c = self._plan_cost(j)
                if c < best:
                    best, arg = c, j
            self.val[i], self.choice[i] = best, arg
            work.or_touched.add(i)

    def _apply(self, moved: set[StatKey]) -> None:
        g = self.graph
        events: dict[int, dict[int, bool]] = {}  # OR node → its changed alternatives
        queue: list[tuple[int, int]] = []  # (level, OR node): smallest expressions first

        def mark(j: int, decreased: bool) -> None:
            if self._all:
                self.pending.add(j)
            x = g.and_parent[j]
            found = events.get(x)
            if found is None:
                found = events[x] = {}
                heapq.heappush(queue, (g.level[x], x))
            found[j] = found.get(j, False) or decreased

        for j in g.affected(moved):  # ΔLocalCost of the affected AND nodes
            new = self._local_cost(j)
            old = self.local[j]
            if new != old:
                self.local[j] = new
                mark(j, new < old)
        while queue:
            _, x = heapq.heappop(queue)
            old = self.val[x]
            self._reselect(x, events.pop(x))
            self.work.or_touched.add(x)
            new = self.val[x]
            if new != old:  # ΔBestCost: the parents' PlanCost moves with it
                for j in g.parents[x]:
                    mark(j, new < old)
