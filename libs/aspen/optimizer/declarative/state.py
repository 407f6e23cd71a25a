"""The dataflow's per-node state: one :class:`OrState` per OR node, one :class:`AndState` per
AND node (a SearchSpace row with its PlanCost), holding what the relations of the rules keep.

An AND node's *low* is a lower bound on its PlanCost (its local cost plus its children's lower
bounds), *cost* its PlanCost once every child is settled (local plus the children's BestCost).
An OR node is *settled* when none of its visible AND nodes waits for a child: its BestCost is
then the minimum over the PlanCost rows it holds, and its *floor* a lower bound on the best cost
of any plan of it (what parents prune with). Signed counts follow Liu 2016, §4.3: ``count`` is
the SearchSpace count of an AND node (derived while its OR node is active, deleted while its
PlanCost is pruned and suppression is on) and the row is visible while it is positive; ``refs``
is the OR node's reference count.

>>> from aspen.optimizer.space import OrNode
>>> o = OrState(OrNode(frozenset({"a"}), None), root=True)
>>> o.settled, o.best, o.refs
(False, inf, 0)
"""

from __future__ import annotations

from aspen.optimizer.declarative.aggregates import MaxAggregate, MinAggregate, SortedEntries
from aspen.optimizer.space import AndNode, OrNode

__all__ = ["AndState", "OrState"]

INF = float("inf")


class OrState:
    """An OR node ``(expr, prop)``: reference count, aggregates and bounds."""

    __slots__ = (
        "agg", "alts", "best", "best_alt", "bound", "bound_mag", "enumerated", "ever_settled",
        "floor", "kept", "lbs", "lbs_version", "maxb", "node", "parents",
        "pb_mag", "pending", "pruned", "queued", "refs", "active", "root", "settled", "ub_seen",
        "unpruned",
    )

    def __init__(self, node: OrNode, root: bool = False) -> None:
        self.node = node
        self.root = root
        self.alts: list[AndState] = []      # Fn_split, in split order (index = tie-break)
        self.parents: list[AndState] = []   # every AND node reading this one, live or not
        self.refs = 0                       # RefCount: visible parent AND nodes (root pinned)
        self.active = False                 # its AND nodes are derived (referenced, or never GC'd)
        self.enumerated = False
        self.settled = False
        self.ever_settled = False
        self.pending = 0                    # visible AND nodes waiting + AND nodes being re-keyed
        self.agg = MinAggregate()           # PlanCost rows by alternative index (all kept)
        self.unpruned = SortedEntries()     # lows of the alternatives not pruned
        self.pruned = SortedEntries()       # lows of the pruned alternatives
        self.best = INF                     # BestCost as published to parents
        self.best_alt: AndState | None = None
        self.floor = 0.0                    # lower bound on its best cost, as published
        self.kept = 0.0                     # a lower bound carried while not settled
        self.lbs = 0.0                      # structural floor, cached per statistics version
        self.lbs_version = -1
        self.maxb = MaxAggregate()          # MaxBound over ParentBound rows by parent AND uid
        self.pb_mag: dict[int, float] = {}  # magnitude behind each ParentBound row (rounding)
        self.bound = INF                    # Bound = min(BestCost, MaxBound)
        self.bound_mag = 0.0
        self.ub_seen = (INF, -1)            # the BestCost entry aggregate selection last used
        self.queued = 0                     # bit set of the deltas queued for it (deduplication)


class AndState:
    """One alternative of an OR node: a SearchSpace row, its local cost and its PlanCost."""

    __slots__ = (
        "alt", "cost", "count", "counted", "dirty", "idx", "keyq", "kids", "local", "low",
        "low_valid", "parent", "pruned", "shown", "uid", "waiting",
    )

    def __init__(self, alt: AndNode, idx: int, uid: int, parent: OrState,
                 kids: tuple[OrState, ...]) -> None:
        self.alt = alt
        self.idx = idx
        self.uid = uid
        self.parent = parent
        self.kids = kids
        self.local: float | None = None     # LocalCost (Fn_scancost / Fn_nonscancost)
        self.dirty = True                   # the local cost must be (re)computed
        self.low: float | None = None       # lower bound on its PlanCost
        self.low_valid = True               # low bounds the PlanCost even if ``dirty``
        self.cost: float | None = None      # its PlanCost row in the parent's aggregate
        self.count = 0                      # SearchSpace signed count; visible while > 0
        self.shown = False                  # visibility as last propagated to the children
        self.pruned = False                 # its PlanCost fails the pruning predicate
        self.waiting = 0                    # children not settled
        self.keyq = False                   # a re-key is queued (the parent cannot settle)
        self.counted = False                # counted in the parent's ``pending``
