"""The reference optimizer: every OR node's best cost by memoized recursion, no pruning.

It visits the whole search space, so it is the oracle the other optimizers are tested against
and the planner of last resort; it is not a baseline of the benchmarks (those are Volcano and
System-R, with their pruning).

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
>>> best_plan(SearchSpace(q), s)[1]
{'join': 'broadcast_hash', 'left': {'scan': 'a'}, 'right': {'scan': 'b'}}
>>> Exhaustive(SearchSpace(q)).optimize(s).counters.or_created
5
"""

from __future__ import annotations

from typing import Any

from aspen.optimizer.from_scratch import FromScratch, Tally
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["Exhaustive", "best_costs", "best_plan"]


def best_costs(space: SearchSpace, stats: Stats) -> tuple[dict[OrNode, float],
                                                            dict[OrNode, AndNode]]:
    """BestCost and the chosen AND node of every OR node reachable from the root (ties: the
    first alternative in :meth:`SearchSpace.split` order)."""
    cost: dict[OrNode, float] = {}
    choice: dict[OrNode, AndNode] = {}
    for node in space.or_nodes():  # smallest expressions first: children before parents
        for alt in space.split(node):
            total = space.local_cost(alt, stats) + sum(cost[c] for c in alt.children)
            if node not in cost or total < cost[node]:
                cost[node], choice[node] = total, alt
    return cost, choice


def best_plan(space: SearchSpace, stats: Stats) -> tuple[float, dict]:
    """The best plan's cost and its JSON tree."""
    cost, choice = best_costs(space, stats)
    return cost[space.root], space.plan_json(choice[space.root], choice)


class Exhaustive(FromScratch):
    """:func:`best_plan` as an optimizer: every OR and AND node visited, nothing pruned;
    :meth:`reoptimize` recomputes everything."""

    name = "exhaustive"

    def _search(self, stats: Stats, tally: Tally) -> tuple[float, dict[str, Any]]:
        for node in self.space.or_nodes():
            tally.or_visit(node)
            for alt in self.space.split(node):
                tally.and_visit(alt)
        cost, plan = best_plan(self.space, stats)
        return cost, plan
