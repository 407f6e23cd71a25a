"""The procedural incremental re-optimizers of Liu 2016, ch. 5: bottom-up and top-down.

Both keep the state of their last run — a memo of the and-or graph of a
:class:`~aspen.optimizer.space.SearchSpace` — and, given one batch of statistic changes, redo
only the work the change can reach, with the same cost model and the same tie-break as every
other optimizer, so their plan is the exhaustive optimum after every change:

- :class:`BottomUp` (System-R style, §5.2): ΔLocalCost of the affected AND nodes, then ΔBestCost
  propagated level by level to the root, each OR node recomputed once;
- :class:`TopDown` (Volcano style, §5.2 with the bounds of §4.2.3): a memo with incrementally
  kept bounds; only the nodes within their bound are maintained, and a node whose predicate
  ``BestCost > Bound`` flips is re-introduced (searched again under its bound) or pruned.

Options of both: ``memoize="best"`` (store each OR node's best only; a PlanCost is recomputed
through the children) or ``"all"`` (store every AND node's PlanCost, updated by deltas), and
``conditional`` (conditional testing: after a change, test only the alternatives that may have
become the new minimum — or, for a bound, the new maximum). Neither changes the plan.

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> s = Stats.from_json({"tables": {"t": {"rows": 1e6}, "u": {"rows": 10}}})
>>> [type(o).__name__ for o in (BottomUp(SearchSpace(q)), TopDown(SearchSpace(q)))]
['BottomUp', 'TopDown']
>>> TopDown(SearchSpace(q), memoize="all").optimize(s).plan["right"]
{'scan': 'b'}
"""

from __future__ import annotations

from aspen.optimizer.procedural.bottomup import BottomUp
from aspen.optimizer.procedural.memo import MEMOIZE
from aspen.optimizer.procedural.topdown import TopDown

__all__ = ["MEMOIZE", "BottomUp", "TopDown"]
