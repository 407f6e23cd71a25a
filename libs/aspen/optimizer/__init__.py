"""Cost-based join optimization, from scratch and incrementally (Liu 2016, ch. 4–5).

A :class:`~aspen.optimizer.query.Query` (a join graph) and
:class:`~aspen.optimizer.stats.Stats` (statistics as explicit values) define an and-or
:class:`~aspen.optimizer.space.SearchSpace`; every optimizer searches it with the same cost
model (:mod:`aspen.optimizer.cost`), so they can differ only in search order and pruning.
Queries beyond :data:`MAX_RELATIONS` relations (or too densely joined) are refused up front
(:mod:`aspen.optimizer.limits`).
"""

from __future__ import annotations

from aspen.optimizer.cost import JOIN_METHODS, cost_of
from aspen.optimizer.limits import MAX_RELATIONS
from aspen.optimizer.query import Query
from aspen.optimizer.space import SearchSpace, SpaceOptions
from aspen.optimizer.stats import Stats

__all__ = ["JOIN_METHODS", "MAX_RELATIONS", "Query", "SearchSpace", "SpaceOptions", "Stats",
           "cost_of"]
