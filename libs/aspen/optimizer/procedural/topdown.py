"""The Volcano-style incremental re-optimizer: a memo, bounds kept incrementally, pruned
subtrees re-introduced or pruned when their predicate flips (Liu 2016, §5.2; bounds §4.2.3).

Every OR node the search reached is in one of three states:

- **unexplored**: its AND nodes never enumerated; its cost is known only as a *floor*, the sum
  of its relations' scan costs (every plan scans each once; no local cost is negative);
- **active**: explored, its BestCost exact and within its bound — a node of the optimal plan or
  of a plan about as cheap; its costs are maintained by deltas, bottom-up, like
  :class:`~aspen.optimizer.procedural.BottomUp`;
- **pruned**: explored, but ``BestCost > Bound``: its cost (exact, or a lower bound when the
  search gave up under its budget) is kept but not maintained. A change that moves a statistic
  it reads makes it *stale*: its cost falls back to its floor until it is searched again.

The bounds are the relations r1–r4, kept for the nodes below active ones: through an AND node
``a`` of an active OR node ``P``, a child ``c`` receives ParentBound = Bound(P) − LocalCost(a) −
Σ BestCost(siblings) (r1/r2, a floor for a sibling not searched yet); MaxBound(c) is the max
over its active parents (r3; the root's is +∞); Bound(c) = min(BestCost(c), MaxBound(c)) (r4),
which for an active node is its BestCost. ``c`` is pruned iff its cost exceeds its MaxBound
(equivalently its Bound). Bounds carry a relative slack of :data:`TOL`, so floating-point
rounding never prunes a node of the optimal plan (a plan within 1e-9 of the best is kept).

A call settles two work lists until both are empty — costs up (smallest expressions first) and
bounds down (largest first): a changed BestCost of an active node updates its active parents'
alternatives (conditional testing on the min) and the bounds it passes to its children; a
changed ParentBound recomputes the child's MaxBound (conditional testing on the max: if the
parent that gave the max did not lower it, only the parents whose bound rose are read). When a
node's predicate flips to within its bound and its cost is not exact, the goal-directed search
is re-entered for it with that bound (Volcano's branch-and-bound below it, reusing every entry
the memo still holds): the **re-introduction**; a node whose cost now exceeds its bound is
**pruned**, and its children lose the bounds it gave them, which can prune them in turn.
Active nodes are exact, the root is always active: the plan is exactly the exhaustive optimum.

Counters per call: OR/AND nodes *created* (explored / enumerated first), *recomputed* (an OR
node re-searched or its best recomputed; an AND node's PlanCost recomputed), *pruned* (OR nodes
left over their bound, AND nodes cut by a search's budget).

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u", "c": "v"},
...                      "joins": ["a.k = b.k", "b.j = c.j"]})
>>> opt = TopDown(SearchSpace(q))
>>> r = opt.optimize(Stats.from_json({"tables": {"t": {"rows": 1e7}, "u": {"rows": 10},
...                                              "v": {"rows": 1e5}}}))
>>> r.counters.and_pruned > 0
True
>>> r2 = opt.reoptimize({"rows": {"u": 1e8}})
>>> r2.cost > r.cost
True
"""

from __future__ import annotations

import heapq
import math

from aspen.optimizer.procedural.memo import Procedural
from aspen.optimizer.space import AndNode, OrNode
from aspen.optimizer.stats import StatKey

__all__ = ["TOL", "TopDown"]

#: Relative slack of the bounds: a node is pruned only if its cost exceeds its bound by more.
TOL = 1e-9


class TopDown(Procedural):
    """Incremental top-down re-optimization over the part of ``space`` its search reaches.

    ``memoize``: ``"best"`` keeps BestCost per OR node only, ``"all"`` each AND node's PlanCost
    too; ``conditional``: conditional testing on the min and on the max bound."""

    name = "top-down"

    def _reset(self) -> None:
        self.fresh: list[bool] = []  # explored, and its LocalCosts current
        self.exact: list[bool] = []  # val is the BestCost (else a lower bound); if fresh
        self.active: list[bool] = []
        self.maxb: list[float] = []
        self.argmax: list[int] = []  # the parent AND node that gives the max bound
        self.floor: list[float] = []
        self._scan: dict[str, float] = {}
        self._up: list[tuple[int, int]] = []
        self._up_events: dict[int, dict[int, bool]] = {}
        self._down: list[tuple[int, int]] = []
        self._down_events: dict[int, dict[int, bool]] = {}
        self._over: set[int] = set()  # OR nodes found over their bound in this call
        super()._reset()
        self.maxb[self.graph.root] = math.inf

    def _grow(self) -> None:
        super()._grow()
        new = len(self.graph.nodes) - len(self.fresh)
        self.fresh.extend([False] * new)
        self.exact.extend([False] * new)
        self.active.extend([False] * new)
        self.maxb.extend([-math.inf] * new)
        self.argmax.extend([-1] * new)
        self.floor.extend(self._floor(i) for i in range(len(self.floor), len(self.graph.nodes)))

    def _floor(self, i: int) -> float:
        if not self._scan:
            return 0.0
        return sum(self._scan[a] for a in sorted(self.graph.nodes[i].expr))

    def _value(self, i: int) -> float:
        return self.val[i] if self.fresh[i] else self.floor[i]

    def _solved(self, i: int) -> bool:
        return self.fresh[i] and self.exact[i]

    # -- the calls ------------------------------------------------------------------------------

    def _build(self) -> None:
        self._rescan()
        self._down_event(self.graph.root)
        self._settle()

    def _apply(self, moved: set[StatKey]) -> None:
        g = self.graph
        before: dict[int, tuple[float, bool]] = {}  # nodes whose cost moves: (cost, exact)
        for i, old in self._rescan(moved).items():
            if not self.fresh[i]:
                before[i] = (old, False)
        by_parent: dict[int, list[int]] = {}
        for j in g.affected(moved):
            by_parent.setdefault(g.and_parent[j], []).append(j)
        for p, alts in by_parent.items():
            if not self.fresh[p]:
                continue  # stale already: searched afresh if it is needed again
            if not self.active[p]:
                before[p] = (self.val[p], self.exact[p])  # pruned: stale, back to its floor
                self.fresh[p] = self.exact[p] = False
                continue
            for j in alts:  # ΔLocalCost of an active node's alternative
                new, old = self._local_cost(j), self.local[j]
                if new != old:
                    self.local[j] = new
                    if self._all:
                        self.pending.add(j)
                    self._up_event(p, j, new < old)
                    for s in g.and_children[j]:
                        self._down_event(s, j, new < old)
        for i, (cost, exact) in before.items():
            self._changed(i, cost, exact)
        self._settle()

    def _rescan(self, moved: set[StatKey] | None = None) -> dict[int, float]:
        """Scan costs and floors under the current statistics; the old floors that moved. A
        scan reads its table's rows and width and the cost parameters only."""
        assert self.stats is not None
        if moved is not None and all(kind not in ("rows", "width", "params")
                                     for kind, _ in moved):
            return {}
        q = self.space.query
        scans = {a: self.space.local_cost(AndNode(OrNode(frozenset({a}), None), "scan", "scan"),
                                          self.stats) for a in q.aliases}
        changed = {a for a in q.aliases if scans[a] != self._scan.get(a)}
        self._scan = scans
        out: dict[int, float] = {}
        if changed:
            for i, node in enumerate(self.graph.nodes):
                if node.expr & changed:
                    out[i] = self.floor[i]
                    self.floor[i] = self._floor(i)
        return out

    # -- the two work lists -----------------------------------------------------------------------

    def _up_event(self, p: int, j: int, decreased: bool) -> None:
        found = self._up_events.get(p)
        if found is None:
            found = self._up_events[p] = {}
            heapq.heappush(self._up, (self.graph.level[p], p))
        found[j] = found.get(j, False) or decreased

    def _down_event(self, c: int, j: int = -1, increased: bool = False) -> None:
        found = self._down_events.get(c)
        if found is None:
            found = self._down_events[c] = {}
            heapq.heappush(self._down, (-self.graph.level[c], c))
        if j >= 0:
            found[j] = found.get(j, False) or increased

    def _settle(self) -> None:
        """Run both work lists dry: pending cost changes first (bounds read them), then the
        largest node whose bound or cost moved."""
        g = self.graph
        while self._up or self._down:
            if self._up:
                _, x = heapq.heappop(self._up)
                events = self._up_events.pop(x)
                if not (self.active[x] and self.fresh[x]):
                    continue  # a pruned node is not maintained
                old, was_exact = self.val[x], self.exact[x]
                self._reselect(x, events)
                self.work.or_touched.add(x)
                self.exact[x] = all(self._solved(c) for c in g.and_children[self.choice[x]])
                self._changed(x, old, was_exact)
            else:
                _, c = heapq.heappop(self._down)
                self._visit(c, self._down_events.pop(c))
        assert self._solved(g.root), "the root's best cost is exact once settled"
        self.work.or_pruned = {i for i in self._over if not self.active[i]}
        self._over = set()

    def _changed(self, i: int, old: float, was_exact: bool) -> None:
        """Node ``i``'s cost or exactness moved: tell its active parents (their PlanCost) and
        the siblings and children whose ParentBound reads it, and check its own predicate."""
        g = self.graph
        new = self._value(i)
        if new != old:
            down = new < old
            for j in g.parents[i]:
                if self._all:
                    self.pending.add(j)
                p = g.and_parent[j]
                if self.active[p]:
                    self._up_event(p, j, down)
                    for s in g.and_children[j]:
                        if s != i:
                            self._down_event(s, j, down)
            alts = g.alts[i]
            if self.active[i] and alts is not None:  # its Bound is its BestCost
                for j in alts:
                    for s in g.and_children[j]:
                        self._down_event(s, j, not down)
            self._down_event(i)
        elif self._solved(i) != was_exact:
            for j in g.parents[i]:
                p = g.and_parent[j]
                if self.active[p] and self.choice[p] == j:
                    self._up_event(p, j, False)
            self._down_event(i)

    def _visit(self, c: int, events: dict[int, bool]) -> None:
        """Recompute ``c``'s MaxBound if a ParentBound moved, then apply its predicate:
        re-introduce (search) it within the bound, or prune it."""
        g = self.graph
        if c != g.root and events:
            self._max_bound(c, events)
        ok = self._value(c) <= self.maxb[c]
        if ok and not self._solved(c):
            self._solve(c, self.maxb[c])
        ok = self._solved(c) and self._value(c) <= self.maxb[c]
        if not ok:
            self._over.add(c)
        if ok != self.active[c]:
            self.active[c] = ok
            alts = g.alts[c]
            for j in alts if alts is not None else ():  # its bounds appear / vanish
                for s in g.and_children[j]:
                    self._down_event(s, j, ok)

    def _parent_bound(self, j: int, c: int) -> float:
        """r1/r2: the budget AND node ``j`` of an active node leaves its child ``c``."""
        g = self.graph
        bound = self.val[g.and_parent[j]]
        rest = self.local[j]
        for s in g.and_children[j]:
            if s != c:
                rest += self._value(s)
        return bound - rest + TOL * bound

    def _max_bound(self, c: int, events: dict[int, bool]) -> None:
        """r3 with conditional testing: ``events`` are the parent AND nodes whose ParentBound
        moved, flagged True when it may have risen."""
        g = self.graph
        old, arg = self.maxb[c], self.argmax[c]
        if self.conditional and arg >= 0 and self.active[g.and_parent[arg]]:
            top = self._parent_bound(arg, c) if arg in events else old
            if top >= old:  # the max did not fall: only a rise can beat it
                for j in sorted(events):
                    if events[j] and j != arg and self.active[g.and_parent[j]]:
                        b = self._parent_bound(j, c)
                        if b > top:
                            top, arg = b, j
                self.maxb[c], self.argmax[c] = top, arg
                return
        top, arg = -math.inf, -1
        for j in g.parents[c]:
            if self.active[g.and_parent[j]]:
                b = self._parent_bound(j, c)
                if b > top:
                    top, arg = b, j
        self.maxb[c], self.argmax[c] = top, arg

    # -- the goal-directed search -----------------------------------------------------------------

    def _explore(self, i: int) -> None:
        """Enumerate OR node ``i``'s alternatives (the first time) and cost them afresh."""
        g = self.graph
        alts = g.alts[i]
        if alts is None:
            alts = g.expand(i)
            self._grow()
            self.work.or_created.add(i)
            self.work.and_created.update(alts)
        for j in alts:
            self.local[j] = self._local_cost(j)
        if self._all:
            self.pending.update(alts)
        self.fresh[i] = True

    def _solve(self, i: int, budget: float) -> None:
        """Volcano's branch-and-bound for ``i`` under ``budget``: afterwards ``i``'s cost is
        exact, or a lower bound above ``budget``. Alternatives in split order; one is cut as soon
        as its lower bound (LocalCost + the children's costs or floors) exceeds the budget left,
        the best complete alternative so far capping it."""
        if self._solved(i):
            return
        old = self._value(i)
        if old > budget:
            return  # its floor (or bound) is already over: pruned unexplored
        if not self.fresh[i]:
            self._explore(i)
        self.work.or_touched.add(i)
        g = self.graph
        alts = g.alts[i]
        assert alts is not None
        best = math.inf
        costs: list[float] = []
        cut: list[int] = []  # the alternatives cut, by position
        for j in alts:
            limit = budget if budget < best else best
            lower = self._plan_cost(j)
            complete = lower <= limit
            for c in g.and_children[j] if complete else ():
                if self._solved(c):
                    continue
                room = limit - (lower - self._value(c))
                self._solve(c, room + TOL * (limit + lower))
                lower = self._plan_cost(j)
                if not self._solved(c):
                    if lower > limit:
                        complete = False
                        break
                    self._solve(c, math.inf)  # within the limit only by rounding: finish it
                    lower = self._plan_cost(j)
            complete = complete and lower <= limit
            if complete:
                best = lower
            else:
                self.work.and_pruned.add(j)
                cut.append(len(costs))
            costs.append(lower)
        for k in cut:  # a later alternative may have searched a child they share: read again
            costs[k] = self._plan_cost(alts[k])
        cheapest = min(costs)
        choice = alts[costs.index(cheapest)]
        self.val[i], self.choice[i] = cheapest, choice
        self.exact[i] = all(self._solved(c) for c in g.and_children[choice])
        self._changed(i, old, False)
