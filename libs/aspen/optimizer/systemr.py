"""A System-R-style optimizer: bottom-up dynamic programming by level (Liu 2016, §2.2).

Level ``k`` holds the connected sets of ``k`` relations (level ``k`` grown from level ``k − 1``
by one adjacent relation), each with the properties a parent can ask of it: none, and — when the
space keeps properties and sort-merge joins — every key class that joins it to a relation
outside (the *interesting orders*). Each such OR node is costed once, after everything below it,
from all of its AND nodes (:meth:`~aspen.optimizer.space.SearchSpace.split`, shared with the
other optimizers), and keeps only its best one. Plans are bushy by default; a space with
``SpaceOptions(left_linear=True)`` gives the classic left-deep System R.

Counters per call: every OR and AND node is visited once (*created* on the first call since
:meth:`~aspen.optimizer.from_scratch.FromScratch.optimize`, *recomputed* on later ones);
*pruned* AND nodes are the alternatives dropped as not the best of their OR node; no OR node is
pruned.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SpaceOptions
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u", "c": "v"},
...                      "joins": ["a.k = b.k", "b.j = c.j"]})
>>> [sorted(e) for e in levels(q)[2]]
[['a', 'b'], ['b', 'c']]
>>> r = SystemR(SearchSpace(q, SpaceOptions(methods=("shuffle_hash",)))).optimize(Stats())
>>> r.counters.or_created, r.counters.and_created
(6, 11)
"""

from __future__ import annotations

from typing import Any

from aspen.optimizer.from_scratch import FromScratch, Tally
from aspen.optimizer.query import Expr, Query
from aspen.optimizer.space import AndNode, OrNode, SearchSpace
from aspen.optimizer.stats import Stats

__all__ = ["SystemR", "interesting_nodes", "levels"]


def levels(query: Query) -> dict[int, list[Expr]]:
    """The connected sets of relations by size, each level grown from the one below.

    >>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
    >>> {k: [sorted(e) for e in v] for k, v in levels(q).items()}
    {1: [['a'], ['b']], 2: [['a', 'b']]}
    """
    neighbours: dict[str, set[str]] = {a: set() for a in query.aliases}
    for pred in query.joins:
        left, right = sorted(pred.aliases)
        neighbours[left].add(right)
        neighbours[right].add(left)
    out = {1: [frozenset({a}) for a in query.aliases]}
    for size in range(2, len(query.aliases) + 1):
        grown = {expr | {n} for expr in out[size - 1] for a in expr for n in neighbours[a] - expr}
        out[size] = sorted(grown, key=sorted)
    return out


def interesting_nodes(space: SearchSpace, expr: Expr) -> list[OrNode]:
    """The OR nodes of one set of relations a parent can ask for: any property first, then each
    key class joining it to a relation outside it (when sort-merge keys are properties)."""
    nodes = [OrNode(expr, None)]
    if space.options.properties and "sort_merge" in space.options.methods:
        outside = space.query.root - expr
        nodes += [OrNode(expr, key) for key in space.query.keys_between(expr, outside)]
    return nodes


class SystemR(FromScratch):
    """Bottom-up DP over the levels of the query's connected sets; :meth:`reoptimize` runs it
    again from scratch."""

    name = "systemr"

    def _search(self, stats: Stats, tally: Tally) -> tuple[float, dict[str, Any]]:
        space = self.space
        best: dict[OrNode, float] = {}
        choice: dict[OrNode, AndNode] = {}
        alternatives = 0
        for exprs in levels(space.query).values():  # level by level: children first
            for expr in exprs:
                for node in interesting_nodes(space, expr):  # None first: sorts read it
                    tally.or_visit(node)
                    for alt in space.split(node):
                        tally.and_visit(alt)
                        alternatives += 1
                        total = space.local_cost(alt, stats) + sum(best[c] for c in alt.children)
                        if node not in best or total < best[node]:
                            best[node], choice[node] = total, alt
        tally.counters.and_pruned = alternatives - len(best)
        root = space.root
        return best[root], space.plan_json(choice[root], choice)
