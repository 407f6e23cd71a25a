"""The declarative optimizer of Liu 2016, ch. 4, maintained incrementally.

The optimizer's rules (SearchSpace R1–R5, PlanCost R6–R8, BestCost and BestPlan R9–R10, the
bounds r1–r4) are relations of a push-based delta dataflow (:mod:`.dataflow`); its pruning
techniques (:class:`Pruning`) are predicates reading other relations' state; re-optimization
maintains the relations under a batch of statistic changes.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> from aspen.optimizer.exhaustive import best_plan
>>> space = SearchSpace(q)
>>> result = DeclarativeOptimizer(space, Pruning.none()).optimize(Stats())
>>> result.cost == best_plan(space, Stats())[0]
True
"""

from __future__ import annotations

from aspen.optimizer.declarative.optimizer import DeclarativeOptimizer
from aspen.optimizer.declarative.pruning import Pruning
from aspen.optimizer.declarative.snapshot import Snapshot

__all__ = ["DeclarativeOptimizer", "Pruning", "Snapshot"]
