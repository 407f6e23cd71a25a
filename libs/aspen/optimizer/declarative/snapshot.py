"""A read-only view of the declarative optimizer's relations, for inspection and the
invariants of Liu 2016, §4.2 (reference counts, bounds, garbage collection).

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> from aspen.optimizer.declarative import DeclarativeOptimizer
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> opt = DeclarativeOptimizer(SearchSpace(q))
>>> _ = opt.optimize(Stats())
>>> snap = opt.snapshot()
>>> len(snap.live), snap.bound[snap.root] == snap.best[snap.root]
(3, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aspen.optimizer.declarative.dataflow import BOUND_SLACK, Dataflow
from aspen.optimizer.space import AndNode, OrNode

__all__ = ["Snapshot", "snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """The relations at one moment. ``live``: SearchSpace rows whose PlanCost is not pruned;
    ``bound_slack``: how far above its Bound rounding lets a plan stay (see
    :data:`~.dataflow.BOUND_SLACK`)."""

    root: OrNode
    active: frozenset[OrNode]             # OR nodes whose AND nodes are derived
    visible: frozenset[AndNode]           # SearchSpace rows
    live: frozenset[AndNode]
    refs: Mapping[OrNode, int]            # RefCount of every enumerated OR node
    best: Mapping[OrNode, float]          # BestCost of the settled active OR nodes
    best_plan: Mapping[OrNode, AndNode]   # BestPlan of the same
    floor: Mapping[OrNode, float]         # their lower bounds
    bound: Mapping[OrNode, float]         # Bound of the active OR nodes (bounding on)
    bound_slack: Mapping[OrNode, float]
    plan_cost: Mapping[AndNode, float]    # every PlanCost row the aggregates keep
    local: Mapping[AndNode, float]        # LocalCost of the AND nodes of active OR nodes


def snapshot(flow: Dataflow) -> Snapshot:
    """The relations of ``flow`` (best read at quiescence)."""
    ors = [o for o in flow.ors.values() if o.enumerated]
    active = [o for o in ors if o.active]
    settled = [o for o in active if o.settled and o.best_alt is not None]
    alts = [a for o in ors for a in o.alts]
    return Snapshot(
        root=flow.root.node,
        active=frozenset(o.node for o in active),
        visible=frozenset(a.alt for a in alts if a.shown),
        live=frozenset(a.alt for a in alts if a.shown and not a.pruned),
        refs={o.node: o.refs for o in ors},
        best={o.node: o.best for o in settled},
        best_plan={o.node: o.best_alt.alt for o in settled if o.best_alt is not None},
        floor={o.node: o.floor for o in settled},
        bound={o.node: o.bound for o in active} if flow.bounding else {},
        bound_slack={o.node: BOUND_SLACK * o.bound_mag for o in active},
        plan_cost={a.alt: a.cost for a in alts if a.cost is not None},
        local={a.alt: a.local for a in alts
               if a.parent.active and a.local is not None and not a.dirty},
    )
