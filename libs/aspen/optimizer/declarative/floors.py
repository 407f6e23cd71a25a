"""A lower bound on an OR node's best cost that needs no search: its structural floor.

The dataflow prunes an AND node before its children are costed when even a lower bound on its
cost cannot beat the threshold of its OR node (a cheaper equivalent plan, or the bound its
parents give it). A child not yet costed — or pruned earlier and now stale — contributes this
floor, which holds for every plan under the cost model of :mod:`aspen.optimizer.cost`: local
costs are never negative, every plan of ``(expr, prop)`` scans each relation of ``expr`` exactly
once, and the top operator of a plan of two or more relations is a join (or a sort above one)
that emits ``card(expr)`` rows at ``cpu_row`` each at least.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import OrNode, SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> from aspen.optimizer.exhaustive import best_costs
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> space, stats = SearchSpace(q), Stats()
>>> root = OrNode(frozenset({"a", "b"}), None)
>>> structural_floor(space, stats, root) <= best_costs(space, stats)[0][root]
True
"""

from __future__ import annotations

from aspen.optimizer import cost as costs
from aspen.optimizer.space import OrNode, SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["structural_floor"]


def structural_floor(space: SearchSpace, stats: Stats, node: OrNode) -> float:
    """Σ scan costs of ``node``'s relations, plus its output rows at ``cpu_row`` for a join.

    >>> from aspen.optimizer.query import Query
    >>> q = Query.from_json({"relations": {"a": "t"}, "joins": []})
    >>> s = Stats.from_json({"tables": {"t": {"rows": 1000, "width": 100}}})
    >>> round(structural_floor(SearchSpace(q), s, OrNode(frozenset({"a"}), None)), 9)
    0.0002
    """
    query = space.query
    floor = sum(costs.scan_cost(query, stats, alias) for alias in node.expr)
    if len(node.expr) > 1:
        cpu_row = stats.param("cpu_row", costs.DEFAULT_PARAMS["cpu_row"])
        floor += costs.card(query, stats, node.expr) * cpu_row
    return floor
