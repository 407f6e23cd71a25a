"""A Volcano-style optimizer: top-down, a memo of OR nodes, branch-and-bound (Liu 2016, §2.2).

The search asks each OR node for its best plan *under a budget*: the cost the caller can still
afford. An AND node is pruned as soon as a lower bound of its cost — its local cost plus what is
known of its children — reaches the budget; a child is searched with the budget the AND node has
left for it. The first complete alternative lowers the budget for the others (an alternative
must be strictly cheaper to win), so alternatives are tried cheapest local cost first.

The memo keeps, per OR node, either its **exact** best cost and choice, or a **lower bound**: a
search under budget ``b`` that found no plan proves every plan costs at least the minimum of the
pruned alternatives' lower bounds (each ≥ ``b``). A later request with a budget at or below that
bound fails at once; a higher budget searches the node again (counted as recomputed). An OR
node never searched has the sum of its relations' scan costs as lower bound (every plan of it
scans each of them; local costs are not negative). Only exact costs are ever added into a
plan's cost, so the best cost is exactly the exhaustive optimum.

Counters per call: OR/AND *created* (searched / costed for the first time since
:meth:`~aspen.optimizer.from_scratch.FromScratch.optimize`), *recomputed* (again — a re-search
under a higher budget, or any visit in a later call), *pruned*: OR nodes left with a lower bound
only, AND nodes costed but cut by the bound and never completed.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
>>> r = Volcano(SearchSpace(q)).optimize(s)
>>> r.plan
{'join': 'broadcast_hash', 'left': {'scan': 'a'}, 'right': {'scan': 'b'}}
>>> r.counters.and_pruned > 0
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from aspen.optimizer.from_scratch import FromScratch, Tally
from aspen.optimizer.query import Expr
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["Volcano"]


@dataclass
class _Entry:
    """A memo entry: the exact best (``choice`` set) or a lower bound (``choice`` None)."""

    cost: float
    choice: AndNode | None = None

    @property
    def exact(self) -> bool:
        return self.choice is not None


class _Search:
    """One branch-and-bound search under fixed statistics."""

    def __init__(self, space: SearchSpace, stats: Stats, tally: Tally) -> None:
        self.space, self.stats, self.tally = space, stats, tally
        self.memo: dict[OrNode, _Entry] = {}
        self._local: dict[AndNode, float] = {}
        self._order: dict[OrNode, list[AndNode]] = {}
        self._floors: dict[Expr, float] = {}
        self.costed: set[AndNode] = set()
        self.completed: set[AndNode] = set()

    def local(self, alt: AndNode) -> float:
        cached = self._local.get(alt)
        if cached is None:
            cached = self._local[alt] = self.space.local_cost(alt, self.stats)
        return cached

    def floor(self, node: OrNode) -> float:
        """A lower bound of ``node``'s best cost: the memo's, else its relations' scans."""
        entry = self.memo.get(node)
        if entry is not None:
            return entry.cost
        expr = node.expr
        if expr not in self._floors:
            self._floors[expr] = sum(
                self.local(AndNode(OrNode(frozenset({a}), None), "scan", "scan")) for a in expr)
        return self._floors[expr]

    def alternatives(self, node: OrNode) -> list[AndNode]:
        """``node``'s AND nodes, cheapest local cost first (ties: split order)."""
        if node not in self._order:
            self._order[node] = sorted(self.space.split(node), key=self.local)
        return self._order[node]

    def best(self, node: OrNode, budget: float) -> tuple[float, bool]:
        """``(cost, True)``: the node's exact best cost (maybe ≥ budget when the memo knew it);
        ``(bound, False)``: no plan is cheaper than ``budget``, and none than ``bound``."""
        entry = self.memo.get(node)
        if entry is not None and (entry.exact or entry.cost >= budget):
            return entry.cost, entry.exact
        self.tally.or_visit(node)
        limit, choice = budget, None
        bound = math.inf  # the least lower bound among pruned alternatives
        for alt in self.alternatives(node):
            self.tally.and_visit(alt)
            self.costed.add(alt)
            total = self.local(alt)
            rest = sum(self.floor(c) for c in alt.children)
            complete = total + rest < limit
            for child in alt.children if complete else ():
                rest -= self.floor(child)
                value, exact = self.best(child, limit - total - rest)
                total += value
                if not exact or total + rest >= limit:
                    complete = False
                    break
            if complete:
                limit, choice = total, alt
                self.completed.add(alt)
            else:
                bound = min(bound, total + rest)
        if choice is not None:
            self.memo[node] = _Entry(limit, choice)
            return limit, True
        known = entry.cost if entry is not None else 0.0
        self.memo[node] = _Entry(max(bound, known))
        return self.memo[node].cost, False

    def plan(self, node: OrNode) -> dict[str, Any]:
        choices = {n: e.choice for n, e in self.memo.items() if e.choice is not None}
        return self.space.plan_json(choices[node], choices)


class Volcano(FromScratch):
    """Top-down memoized branch-and-bound over a :class:`SearchSpace` (bushy or left-linear
    per its options); :meth:`reoptimize` searches again from scratch."""

    name = "volcano"

    def _search(self, stats: Stats, tally: Tally) -> tuple[float, dict[str, Any]]:
        search = _Search(self.space, stats, tally)
        cost, exact = search.best(self.space.root, math.inf)
        assert exact, "an unbounded search always finds a plan"
        tally.counters.or_pruned = sum(1 for e in search.memo.values() if not e.exact)
        tally.counters.and_pruned = len(search.costed - search.completed)
        return cost, search.plan(self.space.root)
