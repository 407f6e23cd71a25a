"""The declarative optimizer's rules as relations kept current by deltas (Liu 2016, §4.1–4.3).

A push-based delta dataflow: a :class:`~.worklist.Worklist` of ``(delta, node)`` items, each
handler updating one relation's state, evaluating its predicates against the state of others
(sideways information passing) and emitting further deltas. How the rules are realized:

- **R1–R5, SearchSpace.** ``Expr(root)`` derives the root's AND nodes; an OR node's AND nodes
  (``Fn_split``, ``Fn_isleaf``, ``Fn_phyOp``: :meth:`SearchSpace.split`) are derived when a
  visible SearchSpace row first names it as a child (RefCount 0→1). Each AND node keeps a signed
  count (derived while its OR node is active, minus one while its PlanCost is suppressed) and is
  visible while the count is positive.
- **R6–R8, PlanCost** = LocalCost + Σ BestCost(children) — joined with the children's
  *BestCost*, not their PlanCost (the erratum). A child's BestCost is read once the child is
  *settled*: none of its visible AND nodes waits for a child of its own (a completeness count
  kept per OR node, so that a cost is never read before it is final, in any order). Until then
  the AND node carries a lower bound, *low* = LocalCost + Σ lower bounds of its children.
- **R9 BestCost** is a :class:`~.aggregates.MinAggregate` over every PlanCost row of the OR
  node, pruned rows included, so that the next best is at hand (§4.3.1, the four cases);
  **R10 BestPlan** is its argmin (ties: the first alternative in split order).
- **r1–r4, Bound.** ParentBound(child) = Bound(parent) − LocalCost − the sibling's lower bound,
  one row per visible parent AND node; MaxBound a :class:`~.aggregates.MaxAggregate` over them;
  Bound = min(BestCost, MaxBound); the root's MaxBound is +∞.

Pruning (§4.2), each technique switchable (:class:`~.pruning.Pruning`): *aggregate selection*
prunes an AND node whose (low, index) exceeds BestCost's (cost, index); *bounding* one whose low
exceeds Bound; *source suppression* turns a pruned PlanCost into a SearchSpace deletion (undone
when the predicate flips back); *reference counting* derives an OR node's AND nodes only while
its RefCount (visible parent AND nodes) is positive and prunes them all at 0, recursively.
Pruning on a lower bound is what makes it safe in any order: a plan is pruned only when no
completion of it can be cheaper.

Incremental maintenance (§4.3): a batch of statistic changes marks the AND nodes whose local
cost it moves (:meth:`SearchSpace.depends_on`); those of active OR nodes are re-keyed, and the
OR nodes above them un-settle and settle again, so update deltas flow through PlanCost, BestCost
and Bound; the predicates are re-evaluated on the ranges the thresholds moved over (a raised
bound re-inserts the plans with low in (b, b'], a lowered one prunes those in (b', b]); a moved
BestCost re-tests both sides of its new value (the unpruned past it, the pruned up to it within
the bound), since a predicate may have seen a best that came and went, so ties are broken by
split order after any change as from scratch. The stale-cost policy: every OR node keeps the
reverse index of all its parent AND nodes, live or suppressed, whose stored costs are refreshed
when it settles; an OR node pruned by reference counting is not maintained — the changes only
mark it stale, and it is recomputed in full when its RefCount goes 0→1. Until then its parents
carry a lower bound for it: the one it had, if the batch moved every cost up
(:mod:`.direction`), else its structural floor (:mod:`.floors`). After such an upward batch a
pruned AND node also keeps its old local cost as a lower bound, and is re-costed only when a
threshold rises past its low (the seed's lazy propagation of LocalCost increases, §4.3.3).

>>> from aspen.optimizer.query import Query
>>> from aspen.optimizer.space import SearchSpace
>>> from aspen.optimizer.stats import Stats
>>> from aspen.optimizer.declarative.pruning import Pruning
>>> q = Query.from_json({"relations": {"a": "t", "b": "u"}, "joins": ["a.k = b.k"]})
>>> from aspen.optimizer.exhaustive import best_plan
>>> space = SearchSpace(q)
>>> flow = Dataflow(space, Stats(), Pruning())
>>> flow.root.settled, flow.root.best == best_plan(space, Stats())[0]
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aspen.errors import AspenError
from aspen.optimizer.declarative.direction import change_direction
from aspen.optimizer.declarative.floors import structural_floor
from aspen.optimizer.declarative.pruning import Pruning
from aspen.optimizer.declarative.state import AndState, OrState
from aspen.optimizer.declarative.worklist import Worklist
from aspen.optimizer.space import OrNode, SearchSpace
from aspen.optimizer.stats import StatKey, Stats

__all__ = ["Dataflow", "DataflowError", "Tally"]

INF = float("inf")
#: Relative slack of the bound test: r1/r2 subtract costs, whose rounding must not prune the
#: optimal plan (the magnitude is that of the ancestor bound the subtraction started from).
BOUND_SLACK = 1e-9

# the deltas of the worklist
_KEY, _REF_UP, _REF_DOWN, _SETTLE, _PUBLISH, _BEST, _BOUND, _PRED = range(8)
# per OR node, which of its deltas are queued (one of each is enough: handlers read the state)
_Q_SETTLE, _Q_PUBLISH, _Q_BEST, _Q_BOUND = 1, 2, 4, 8


class DataflowError(AspenError):
    """The dataflow did not reach quiescence (a bug: the rules must converge)."""


class Tally:
    """The nodes one call created, pruned and recomputed (sets of node ids)."""

    def __init__(self) -> None:
        self.or_created: set[int] = set()
        self.and_created: set[int] = set()
        self.or_pruned: set[int] = set()
        self.and_pruned: set[int] = set()
        self.or_recomputed: set[int] = set()
        self.and_recomputed: set[int] = set()


class Dataflow:
    """The relations of one query's optimization under the current statistics."""

    def __init__(self, space: SearchSpace, stats: Stats, pruning: Pruning,
                 order: str = "lifo", seed: int = 0) -> None:
        self.space = space
        self.stats = stats
        self.version = 0
        self.pruning = pruning
        self.aggsel = pruning.aggregate_selection
        self.suppress = pruning.source_suppression
        self.refcount = pruning.reference_counting
        self.bounding = pruning.bounding
        self.work: Worklist[tuple[int, object]] = Worklist(order, seed)
        self.ors: dict[OrNode, OrState] = {}
        self.ands: list[AndState] = []
        # statistic → AND nodes reading it; built at the first change (optimize needs none)
        self.deps: dict[StatKey, list[AndState]] | None = None
        self._deps_of: dict[frozenset[str], frozenset[StatKey]] = {}
        self.tally = Tally()
        self.steps = 0          # deltas processed
        self._collect: list[OrState] = []   # settled OR nodes whose RefCount reached 0
        # the structural floor and the monotone directions are facts about the cost model of
        # aspen.optimizer.cost; a space with local costs of its own gets 0 and "mixed" (safe
        # for any non-negative local costs)
        self._model = type(space).local_cost is SearchSpace.local_cost
        self._wave = False      # inside a batch's invalidation: dormant ancestors go stale
        self._keep = True       # lower bounds known before the batch still hold
        self._bind_handlers()
        self.root = OrState(space.root, root=True)
        self.ors[space.root] = self.root
        self.root.refs = 1      # Expr(root): the fact that pins the root (R1)
        self._activate(self.root)
        self.run()

    def _bind_handlers(self) -> None:
        self._handlers = (self._on_key, self._on_ref_up, self._on_ref_down, self._on_settle,
                          self._on_publish, self._on_best, self._on_bound, self._on_pred)

    def __getstate__(self) -> dict[str, Any]:
        # the handlers are bound methods, rebuilt on loading: the saved state holds data only
        state = dict(self.__dict__)
        del state["_handlers"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind_handlers()

    # -- driving -------------------------------------------------------------------------------

    def run(self) -> None:
        """Process deltas until none is left."""
        work, handlers = self.work, self._handlers
        pop = work.pop
        # a guard against a bug, scaled by the AND nodes derived so far (the space grows while
        # it runs: a budget fixed at the start refused large queries that were converging)
        start, ands = self.steps, self.ands
        while True:
            while work:
                kind, node = pop()
                handlers[kind](node)
                self.steps += 1
                if self.steps - start > 400 * (len(ands) + 1000):
                    raise DataflowError("the optimizer's dataflow did not converge")
            if not self._collect:
                break
            o = self._collect.pop()
            if o.refs <= 0 and o.active:
                self._deactivate(o)
        if not self.root.settled:
            raise DataflowError("the optimizer's dataflow stopped before the root settled")

    def apply(self, stats: Stats, moved: Iterable[StatKey]) -> None:
        """Move to ``stats`` (``moved``: the keys that changed) and run to quiescence."""
        moved = set(moved)
        direction = change_direction(self.space, self.stats, stats) if self._model else "mixed"
        self.stats = stats
        self.version += 1
        affected = self._affected(moved)
        up = direction in ("up", "none")
        self._wave, self._keep = True, up
        try:
            # first every re-key is queued (its OR node cannot settle meanwhile), then the OR
            # nodes above un-settle: nothing settles on a half-updated set of alternatives
            for a in affected:
                a.dirty = True
                if not up:
                    a.low_valid = False
                if a.parent.active and not a.keyq:
                    if a.pruned and a.low_valid:
                        # lazy: costs only rose, so its old low still bounds it from below;
                        # its local cost is recomputed when a threshold rises past that low
                        self._drop_row(a)
                        continue
                    a.keyq = True
                    self.work.push((_KEY, a))
            for a in affected:
                if a.parent.active:
                    self._status(a)
                else:
                    self._stale(a.parent)
        finally:
            self._wave, self._keep = False, True
        self.run()

    def _affected(self, moved: set[StatKey]) -> list[AndState]:
        """The AND nodes whose local cost reads a moved statistic (every one for ``params``)."""
        if any(kind == "params" for kind, _name in moved):
            return list(self.ands)
        if self.deps is None:
            self.deps = {}
            for a in self.ands:
                self._index(a)
        out: dict[int, AndState] = {}
        for key in sorted(moved):
            for a in self.deps.get(key, ()):
                out[a.uid] = a
        return list(out.values())

    def _push_or(self, o: OrState, bit: int, kind: int) -> None:
        if not o.queued & bit:
            o.queued |= bit
            self.work.push((kind, o))

    # -- SearchSpace (R1–R5) and RefCount --------------------------------------------------------

    def _or(self, node: OrNode) -> OrState:
        state = self.ors.get(node)
        if state is None:
            state = self.ors[node] = OrState(node)
        return state

    def _enumerate(self, o: OrState) -> None:
        o.enumerated = True
        self.tally.or_created.add(id(o))
        for idx, alt in enumerate(self.space.split(o.node)):
            kids = tuple(self._or(child) for child in alt.children)
            a = AndState(alt, idx, len(self.ands), o, kids)
            self.ands.append(a)
            o.alts.append(a)
            for kid in kids:
                kid.parents.append(a)
            if self.deps is not None:
                self._index(a)
            self.tally.and_created.add(a.uid)

    def _index(self, a: AndState) -> None:
        """File ``a`` under the statistics its local cost reads (:meth:`SearchSpace.depends_on`,
        a function of the OR node's expression: computed once per expression)."""
        expr = a.parent.node.expr
        keys = self._deps_of.get(expr)
        if keys is None:
            keys = self._deps_of[expr] = self.space.depends_on(a.alt)
        deps = self.deps
        assert deps is not None
        for key in keys:
            deps.setdefault(key, []).append(a)

    def _activate(self, o: OrState) -> None:
        """Derive the AND nodes of ``o``: for the first time, again in full if it went stale,
        or (fresh) only re-test their predicates."""
        o.active = True
        if not o.enumerated:
            self._enumerate(o)
        recompute = not o.settled
        o.ub_seen = best = o.agg.best()
        retest: set[int] = set()  # fresh: the alternatives the thresholds moved past
        if self.bounding:
            o.bound, o.bound_mag = self._bound_value(o)
            if not recompute:
                threshold = self._threshold(o)
                retest.update(o.unpruned.ids_above(threshold), o.pruned.ids_upto(threshold))
        if self.aggsel and not recompute:
            retest.update(o.unpruned.ids_after(best), o.pruned.ids_through(best))
        for a in o.alts:
            a.count += 1
            a.waiting = sum(1 for kid in a.kids if not kid.settled)
            if a.dirty and a.pruned and a.low_valid:
                # its old low still bounds it: recomputed only if the predicate lets it in
                self._drop_row(a)
                self.work.push((_PRED, a))
            # a PlanCost row may be missing: its children settled while ``o`` was dormant
            elif recompute or (a.waiting == 0 and a.cost is None):
                if not a.keyq:
                    a.keyq = True
                    self.work.push((_KEY, a))
            elif a.idx in retest or a.low is None:
                self.work.push((_PRED, a))
            else:
                self._reconcile(a)
                continue
            self._status(a)
        if not o.settled and not o.pending:  # nothing to wait for (every alternative deferred)
            self._push_or(o, _Q_SETTLE, _SETTLE)

    def _deactivate(self, o: OrState) -> None:
        """RefCount 1→0: prune every AND node of ``o`` (their children lose a reference)."""
        o.active = False
        self.tally.or_pruned.add(id(o))
        for a in o.alts:
            a.count -= 1
            if a.shown:
                self.tally.and_pruned.add(a.uid)
            self._reconcile(a)
        if not o.settled:
            # its cost is unknown now: parents hold a lower bound for it (the least low of its
            # alternatives, if all have one), and no row built on it
            lows = [a.low if a.low_valid or not a.dirty else None for a in o.alts]
            if None not in lows:
                o.kept = max(o.kept, min(lows))  # type: ignore[type-var]
            for a in o.parents:
                if a.parent.active:
                    self._drop_row(a)
                    self._touch(a)

    def _on_ref_up(self, o: OrState) -> None:
        o.refs += 1
        if o.refs == 1 and not o.active:
            self._activate(o)

    def _on_ref_down(self, o: OrState) -> None:
        o.refs -= 1
        if o.refs == 0 and self.refcount and o.active and not o.root:
            if o.settled:
                # nothing left to explore below it: collect it once the worklist drains, so a
                # parent re-inserted meanwhile finds it still there
                self._collect.append(o)
            else:
                self._deactivate(o)  # stop exploring below it now

    def _reconcile(self, a: AndState) -> None:
        """Propagate a change of ``a``'s visibility: RefCount ±1 for its children (R2–R5) and
        its ParentBound rows (r1/r2)."""
        want = a.count > 0
        if want != a.shown:
            a.shown = want
            kind = _REF_UP if want else _REF_DOWN
            for kid in a.kids:
                self.work.push((kind, kid))
            if self.bounding:
                if want:
                    self._pb_rows(a)
                else:
                    self._pb_remove(a)
            if not want and a.waiting:
                self._drop_row(a)
        self._status(a)

    # -- settling: when a BestCost is final ------------------------------------------------------

    def _status(self, a: AndState) -> None:
        """Keep ``a`` counted in its OR node's ``pending`` while it is being re-keyed or is
        visible and waits for a child."""
        pend = a.keyq or (a.shown and a.waiting > 0)
        if pend == a.counted:
            return
        a.counted = pend
        o = a.parent
        if pend:
            o.pending += 1
            if o.settled and o.active:
                self._unsettle(o)
        else:
            o.pending -= 1
            if o.pending == 0 and o.active and not o.settled:
                self._push_or(o, _Q_SETTLE, _SETTLE)

    def _unsettle(self, o: OrState) -> None:
        o.settled = False
        o.kept = o.floor if self._keep else 0.0
        for a in o.parents:
            parent = a.parent
            if parent.active:
                a.waiting += 1
                if not a.shown:
                    self._drop_row(a)
                self._status(a)
            elif self._wave:
                self._stale(parent)

    def _stale(self, o: OrState) -> None:
        """A dormant OR node whose cost a change may have moved: it keeps a lower bound only."""
        was = o.settled
        if not was and (self._keep or o.kept == 0.0):
            return
        o.settled = False
        o.kept = (o.floor if was else o.kept) if self._keep else 0.0
        for a in o.parents:
            parent = a.parent
            if parent.active:
                if was:
                    a.waiting += 1
                self._drop_row(a)
                self._touch(a)
            else:
                self._stale(parent)

    def _on_settle(self, o: OrState) -> None:
        o.queued &= ~_Q_SETTLE
        if not o.active or o.settled or o.pending:
            return
        o.settled = True
        if o.ever_settled:
            self.tally.or_recomputed.add(id(o))
        o.ever_settled = True
        self._publish(o, settling=True)

    def _on_publish(self, o: OrState) -> None:
        o.queued &= ~_Q_PUBLISH
        if o.settled:  # dormant too: a change queued before it went dormant must still reach
            self._publish(o, settling=False)

    def _publish(self, o: OrState, settling: bool) -> None:
        """BestCost, BestPlan and the floor of a settled ``o``, to its parents (R7/R8)."""
        cost, idx = o.agg.best()
        alt = o.alts[idx] if idx >= 0 else None
        floor = cost
        for entries in (o.unpruned, o.pruned):
            first = entries.first()
            if first is not None and first[0] < floor:
                floor = first[0]
        changed = cost != o.best or alt is not o.best_alt or floor != o.floor
        o.best, o.best_alt, o.floor = cost, alt, floor
        for a in o.parents:
            parent = a.parent
            if parent.active:
                if settling:
                    a.waiting -= 1
                if settling or changed:
                    self._touch(a)
            elif changed:
                self._stale(parent)

    def _floor_of(self, o: OrState) -> float:
        """A lower bound on ``o``'s best cost: its published floor once settled."""
        if o.settled:
            return o.floor
        if o.lbs_version != self.version:
            o.lbs = structural_floor(self.space, self.stats, o.node) if self._model else 0.0
            o.lbs_version = self.version
        return o.kept if o.kept > o.lbs else o.lbs

    # -- PlanCost (R6–R8) and the pruning predicate ----------------------------------------------

    def _touch(self, a: AndState) -> None:
        """Re-key ``a``: queued if visible (its OR node waits for it), at once if not."""
        if a.shown:
            if not a.keyq:
                a.keyq = True
                self.work.push((_KEY, a))
                self._status(a)
        elif not a.keyq:
            self._key(a)

    def _on_key(self, a: AndState) -> None:
        a.keyq = False
        self._key(a)

    def _key(self, a: AndState, force: bool = False) -> None:
        """LocalCost (if the statistics moved it), low, and the PlanCost row once every child
        is settled; then the predicate. A pruned AND node whose old local cost still bounds
        the new one from below keeps it until the predicate would let it in (``force``)."""
        o = a.parent
        if not o.active:
            self._status(a)
            return
        tally = self.tally
        lazy = a.dirty and a.pruned and a.low_valid and not force
        if a.dirty and not lazy:
            if a.low is not None:
                tally.and_recomputed.add(a.uid)
            a.local = self.space.local_cost(a.alt, self.stats)
            a.dirty = False
            a.low_valid = True
        local = a.local
        assert local is not None
        kids = a.kids
        # the sums in the order the reference optimizer adds (local + (left + right))
        if len(kids) == 2:
            left, right = kids
            low = local + ((left.floor if left.settled else self._floor_of(left))
                           + (right.floor if right.settled else self._floor_of(right)))
        elif kids:
            low = local + self._floor_of(kids[0])
        else:
            low = local
        if lazy:
            self._drop_row(a)  # no PlanCost from a stale local cost
        elif a.waiting == 0:
            if a.cost is not None:
                tally.and_recomputed.add(a.uid)
            if len(kids) == 2:
                cost = local + (kids[0].best + kids[1].best)
            else:
                cost = local + kids[0].best if kids else local
            self._set_row(a, cost)
        elif a.cost is not None and (
                not a.shown or any(not k.settled and not k.active for k in kids)):
            self._drop_row(a)
        self._set_low(a, low)
        if a.shown and self.bounding:
            self._pb_rows(a)
        self._pred(a)

    def _set_row(self, a: AndState, cost: float) -> None:
        a.cost = cost
        o = a.parent
        if o.agg.upsert(a.idx, cost) is not None:
            self._push_or(o, _Q_BEST, _BEST)
            if o.settled:
                self._push_or(o, _Q_PUBLISH, _PUBLISH)

    def _drop_row(self, a: AndState) -> None:
        if a.cost is None:
            return
        a.cost = None
        o = a.parent
        if o.agg.delete(a.idx) is not None:
            self._push_or(o, _Q_BEST, _BEST)
            if o.settled:
                self._push_or(o, _Q_PUBLISH, _PUBLISH)

    def _set_low(self, a: AndState, low: float) -> None:
        old = a.low
        if old == low:
            return
        o = a.parent
        (o.pruned if a.pruned else o.unpruned).put(a.idx, low)
        a.low = low
        if o.settled and (low < o.floor or (old is not None and old <= o.floor)):
            self._push_or(o, _Q_PUBLISH, _PUBLISH)

    def _threshold(self, o: OrState) -> float:
        """The largest low that passes ``o``'s bound."""
        bound = o.bound
        if bound == INF or bound == -INF:
            return bound
        return bound + BOUND_SLACK * o.bound_mag

    def _prunable(self, a: AndState) -> bool:
        o = a.parent
        low = a.low
        assert low is not None
        if self.aggsel and (low, a.idx) > o.agg.best():
            return True
        return self.bounding and low > self._threshold(o)

    def _on_pred(self, a: AndState) -> None:
        self._pred(a)

    def _pred(self, a: AndState) -> None:
        """Evaluate the pruning predicate of ``a``; a flip suppresses its SearchSpace row or
        undoes the suppression."""
        o = a.parent
        if not o.active or a.low is None:
            self._status(a)
            return
        prune = self._prunable(a)
        if a.dirty and not prune:
            self._key(a, force=True)  # a deferred local cost: recompute it before letting it in
            return
        if prune != a.pruned:
            (o.pruned if a.pruned else o.unpruned).discard(a.idx)
            a.pruned = prune
            (o.pruned if prune else o.unpruned).put(a.idx, a.low)
            if prune:
                self.tally.and_pruned.add(a.uid)
            if self.suppress:
                a.count += -1 if prune else 1
        self._reconcile(a)

    def _on_best(self, o: OrState) -> None:
        """BestCost moved: aggregate selection re-tests the alternatives on the wrong side of it.

        Both sides, whichever way the best moved: the deltas of one OR node coalesce, and a
        predicate evaluated meanwhile saw a best that came and went. (Re-testing one side by
        the direction of the move left an alternative tied with a new best of lower index live
        when its own cost had risen against an intermediate best.)"""
        o.queued &= ~_Q_BEST
        if not o.active:
            return
        new = o.ub_seen = o.agg.best()
        if self.aggsel:
            # a pruned one above the bound stays pruned; a later rise of the bound re-tests it
            limit = min(new, (self._threshold(o), INF)) if self.bounding else new
            for idx in o.unpruned.ids_after(new) + o.pruned.ids_through(limit):
                self._pred(o.alts[idx])
        if self.bounding:
            self._push_or(o, _Q_BOUND, _BOUND)

    # -- Bound (r1–r4) -------------------------------------------------------------------------

    def _bound_value(self, o: OrState) -> tuple[float, float]:
        """(Bound, the magnitude its rounding is relative to) = min(BestCost, MaxBound)."""
        ub = o.agg.best()[0]
        ub_mag = abs(ub) if ub < INF else 0.0
        if o.root:
            return ub, ub_mag
        top, uid = o.maxb.best()
        if ub <= top:
            return ub, ub_mag
        if top == -INF:
            return top, 0.0
        return top, max(o.pb_mag.get(uid, 0.0), abs(top))

    def _pb_rows(self, a: AndState) -> None:
        """r1/r2: the bound ``a`` passes to each child (Bound − LocalCost − sibling's floor)."""
        kids = a.kids
        if not kids:
            return
        o = a.parent
        local = a.local
        assert local is not None
        base = o.bound - local
        if len(kids) == 1:
            self._pb_put(kids[0], a.uid, base, o.bound_mag)
        else:
            left, right = kids
            self._pb_put(left, a.uid, base - self._floor_of(right), o.bound_mag)
            self._pb_put(right, a.uid, base - self._floor_of(left), o.bound_mag)

    def _pb_put(self, kid: OrState, uid: int, value: float, mag: float) -> None:
        kid.pb_mag[uid] = mag
        if kid.maxb.upsert(uid, value) is not None or kid.maxb.best()[1] == uid:
            self._push_or(kid, _Q_BOUND, _BOUND)

    def _pb_remove(self, a: AndState) -> None:
        for kid in a.kids:
            kid.pb_mag.pop(a.uid, None)
            if kid.maxb.delete(a.uid) is not None:
                self._push_or(kid, _Q_BOUND, _BOUND)

    def _on_bound(self, o: OrState) -> None:
        """r3/r4: Bound moved; pass it down, and prune (b' < b) or re-insert (b' > b) the
        alternatives whose low lies between."""
        o.queued &= ~_Q_BOUND
        if not o.active:
            return
        new, mag = self._bound_value(o)
        if new == o.bound and mag == o.bound_mag:
            return
        # compare what passes, bound plus rounding slack: the slack shrinks when BestCost
        # (no subtraction behind it) takes over from a ParentBound of the same value
        old = self._threshold(o)
        o.bound, o.bound_mag = new, mag
        for a in self._shown(o):
            self._pb_rows(a)
        threshold = self._threshold(o)
        if threshold < old:
            ids = o.unpruned.ids_above(threshold)
        else:
            ids = o.pruned.ids_upto(threshold)
        for idx in ids:
            self._pred(o.alts[idx])

    def _shown(self, o: OrState) -> list[AndState]:
        if self.suppress:  # visible ⇒ not pruned: only the unpruned can be
            return [o.alts[idx] for _low, idx in o.unpruned if o.alts[idx].shown]
        return [a for a in o.alts if a.shown]
