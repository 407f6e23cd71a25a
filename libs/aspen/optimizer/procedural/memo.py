"""What both procedural re-optimizers keep and share: the cost tables, the memoization scheme,
conditional testing and plan extraction (Liu 2016, §5.1–5.2).

Per OR node: its BestCost (``val``) and chosen AND node (``choice``: the first alternative, in
split order, of least cost — the tie-break of :mod:`aspen.optimizer.exhaustive`). Per AND node:
its LocalCost and, under ``memoize="all"``, its PlanCost, brought up to date when one of its
inputs moved (ΔLocalCost, a child's ΔBestCost) and otherwise read as stored. Under
``memoize="best"`` no PlanCost is stored: it is recomputed through the children, LocalCost +
Σ BestCost, whenever it is needed. An updated PlanCost is computed as LocalCost' + Σ BestCost'
— the value PlanCost + ΔLocalCost + Σ ΔBestCost, without the rounding a running sum of deltas
gathers: exact ties (a sort-merge join and its mirror image always cost the same) then stay
exact, and both schemes choose the plans the exhaustive optimizer chooses, bit for bit.

**Conditional testing** (§5.2): when some alternatives of an OR node changed and the previous
choice did not get dearer, only the alternatives one of whose inputs (LocalCost, a child's
BestCost) decreased can become the new minimum, so only those are recomputed; otherwise every
alternative is (re)read. Either way the outcome is the minimum over all alternatives with the
same tie-break, so the option changes the work, never the plan.

>>> Work().counters().as_dict()["or_recomputed"]
0
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.procedural.graph import AndOrGraph
from aspen.optimizer.result import Counters, Result
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import StatKey, Stats

__all__ = ["MEMOIZE", "Procedural", "Work"]

#: The memoization schemes: keep each OR node's best only, or every AND node's PlanCost too.
MEMOIZE = ("best", "all")


class Work:
    """The nodes one call created (expanded first), touched (cost computed) and pruned, by id.
    A node created in the call is not also counted as recomputed. ``local_costs`` counts the
    LocalCost evaluations (the cost model's calls, which dominate the time)."""

    def __init__(self) -> None:
        self.local_costs = 0
        self.or_created: set[int] = set()
        self.and_created: set[int] = set()
        self.or_touched: set[int] = set()
        self.and_touched: set[int] = set()
        self.or_pruned: set[int] = set()
        self.and_pruned: set[int] = set()

    def counters(self) -> Counters:
        """The call's :class:`~aspen.optimizer.result.Counters` (distinct nodes)."""
        return Counters(or_created=len(self.or_created), and_created=len(self.and_created),
                        or_pruned=len(self.or_pruned), and_pruned=len(self.and_pruned),
                        or_recomputed=len(self.or_touched - self.or_created),
                        and_recomputed=len(self.and_touched - self.and_created))


class Procedural:
    """Base of :class:`~aspen.optimizer.procedural.BottomUp` and
    :class:`~aspen.optimizer.procedural.TopDown`: state, :meth:`optimize` / :meth:`reoptimize`
    (the :class:`~aspen.optimizer.result.Optimizer` protocol) around the subclass's
    ``_build`` (from scratch) and ``_apply`` (one batch of moved statistics)."""

    name = "procedural"

    def __init__(self, space: SearchSpace, memoize: str = "best",
                 conditional: bool = True) -> None:
        if memoize not in MEMOIZE:
            raise ConfigError(f"memoize={memoize!r}: expected one of {', '.join(MEMOIZE)}")
        self.space = space
        self.memoize = memoize
        self.conditional = bool(conditional)
        self.stats: Stats | None = None
        self._all = memoize == "all"
        self._reset()

    # -- the protocol ---------------------------------------------------------------------------

    def optimize(self, stats: Stats) -> Result:
        """Plan from scratch under ``stats``, building the state later calls maintain."""
        started = time.perf_counter()
        self._reset()
        self.stats = stats
        self._build()
        return self._result(started)

    def reoptimize(self, change: Mapping[str, Mapping[str, Any]]) -> Result:
        """Apply one batch of statistic changes (a C.jsonl line) incrementally."""
        if self.stats is None:
            raise ConfigError(f"{self.name}: reoptimize before optimize (no statistics yet)")
        started = time.perf_counter()
        self.stats, moved = self.stats.changed(change)
        self.work = Work()
        if moved:
            self._apply(moved)
        return self._result(started)

    def _build(self) -> None:
        raise NotImplementedError

    def _apply(self, moved: set[StatKey]) -> None:
        raise NotImplementedError

    # -- state ----------------------------------------------------------------------------------

    def _reset(self) -> None:
        self.graph = AndOrGraph(self.space)
        self.work = Work()
        self.val: list[float] = []
        self.choice: list[int] = []
        self.local: list[float] = []
        self.plan: list[float] = []  # memoize="all" only: PlanCost
        self.pending: set[int] = set()  # AND nodes whose stored PlanCost is behind its inputs
        self._grow()

    def _grow(self) -> None:
        """Size the tables to the graph (after an expansion)."""
        g = self.graph
        new_or = len(g.nodes) - len(self.val)
        self.val.extend([math.inf] * new_or)
        self.choice.extend([-1] * new_or)
        new_and = len(g.and_nodes) - len(self.local)
        self.local.extend([math.nan] * new_and)
        if self._all:
            self.plan.extend([math.nan] * new_and)

    def _value(self, i: int) -> float:
        """The cost OR node ``i`` contributes to its parents' PlanCost."""
        return self.val[i]

    def _local_cost(self, j: int) -> float:
        assert self.stats is not None
        self.work.local_costs += 1
        return self.space.local_cost(self.graph.and_nodes[j], self.stats)

    def _plan_cost(self, j: int) -> float:
        """AND node ``j``'s PlanCost under the current costs (counted as recomputed unless a
        stored memoize-all value is simply read)."""
        kids = self.graph.and_children[j]
        if self._all and j not in self.pending:
            return self.plan[j]
        self.work.and_touched.add(j)
        total = self.local[j] + sum(self._value(c) for c in kids)  # as exhaustive.py sums
        if self._all:
            self.pending.discard(j)
            self.plan[j] = total
        return total

    def _reselect(self, x: int, events: Mapping[int, bool]) -> None:
        """Recompute OR node ``x``'s best after its alternatives ``events`` changed (each
        flagged True when one of its inputs decreased), with conditional testing if on."""
        old, first = self.val[x], self.choice[x]
        if self.conditional and first >= 0:
            cost = self._plan_cost(first) if first in events or first in self.pending else old
            if cost <= old:  # the old best did not get dearer: only decreases can beat it
                best, arg = cost, first
                for j in sorted(events):
                    if j != first and events[j]:
                        c = self._plan_cost(j)
                        if c < best or (c == best and j < arg):
                            best, arg = c, j
                self.val[x], self.choice[x] = best, arg
                return
        best, arg = math.inf, -1
        alts = self.graph.alts[x]
        assert alts is not None
        for j in alts:
            c = self._plan_cost(j)
            if c < best:
                best, arg = c, j
        self.val[x], self.choice[x] = best, arg

    # -- output ---------------------------------------------------------------------------------

    def _result(self, started: float) -> Result:
        """The plan the choices give from the root, its cost and this call's counters."""
        g = self.graph
        chosen: dict[OrNode, AndNode] = {}
        todo = [g.root]
        while todo:
            i = todo.pop()
            if g.nodes[i] not in chosen:
                chosen[g.nodes[i]] = g.and_nodes[self.choice[i]]
                todo.extend(g.and_children[self.choice[i]])
        plan = self.space.plan_json(chosen[g.nodes[g.root]], chosen)
        return Result(plan, self.val[g.root], self.work.counters(),
                      time.perf_counter() - started)
