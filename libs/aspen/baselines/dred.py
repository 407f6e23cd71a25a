"""DRed (delete and re-derive) for the recursive views, on hash-partitioned logical nodes.

The standard recursive-view maintenance baseline (Gupta, Mumick and Subrahmanian 1993, as cited
by Liu et al. 2008), run on the closure programs of :mod:`aspen.baselines.closure`:

1. **Over-delete**: every view tuple with *some* derivation through a deleted seed or edge
   goes, and so does everything derived from it (semi-naive, with the old edges for the
   deleted-edge term and the kept edges for the recursive term).
2. **Barrier**: every node waits until all over-deletions are done (counted in
   ``metrics.barriers``).
3. **Re-derive and insert**: over-deleted tuples with a derivation from what is left come back,
   together with the new seeds and edges, and everything new is propagated to fixpoint.

Every tuple crossing nodes is counted; receivers drop duplicates (set semantics).

>>> from aspen.engine.batch import BaseFact, Batch
>>> rt = DRedRuntime(views=("reachable",))
>>> _ = rt.apply(Batch(inserts=(BaseFact("link", ("a", "b", 1.0), "v1"),
...                             BaseFact("link", ("b", "c", 1.0), "v2"))))
>>> sorted(rt.view("reachable"))
[('a', 'b'), ('a', 'c'), ('b', 'c')]
>>> sorted(rt.apply(Batch(deletes=frozenset({"v2"})))["reachable"].deleted)
[('a', 'c'), ('b', 'c')]
"""

from __future__ import annotations

from aspen.baselines.closure import (
    ClosureMaintainer,
    ClosureProgram,
    ClosureRuntime,
    Pair,
    PairIndex,
    ViewChange,
)

__all__ = ["DRedMaintainer", "DRedRuntime"]


class DRedMaintainer(ClosureMaintainer):
    """DRed over one closure view."""

    def __init__(self, program: ClosureProgram) -> None:
        super().__init__(program)
        #: tuples over-deleted / re-derived by the last batch (for inspection and tests)
        self.last_overdeleted: set[Pair] = set()
        self.last_rederived: set[Pair] = set()

    def update(self, seeds: set[Pair], edges: set[Pair]) -> ViewChange:
        prog, net = self.program, self.net
        move = self.begin(seeds, edges)
        seeds_del, seeds_ins = move.seeds_del, move.seeds_ins
        edges_del, edges_ins = move.edges_del, move.edges_ins

        # -- phase 1: over-delete (against the old state) -----------------------------------
        over: set[Pair] = set()
        frontier: list[Pair] = []

        def over_delete(r: Pair) -> None:
            if r in self.tuples and r not in over:
                over.add(r)
                frontier.append(r)

        for s in seeds_del:
            over_delete(s)  # the base case is local to the seed's node
        old_index = self.tuples
        for e in edges_del:
            for t, r in prog.uses(e, old_index):
                net.ship(prog.join_node(t), prog.home(r), r)
                over_delete(r)
        net.end_round()
        for e in edges_del:
            self.edges.discard(e)  # now the kept edges only
        while frontier:
            current, frontier = frontier, []
            for t in current:
                net.ship(prog.home(t), prog.join_node(t), t)
                for _e, r in prog.step(t, self.edges):
                    net.ship(prog.join_node(t), prog.home(r), r)
                    over_delete(r)
            net.end_round()
        if over:
            net.metrics.barriers += 1
        remaining = PairIndex(move.old_tuples - over)

        # -- phase 2: re-derive over-deleted tuples with a derivation from what is left -------
        rederived: set[Pair] = set()
        for r in over:
            if r in seeds:
                rederived.add(r)  # local base case
                continue
            for t, _e in prog.producers(r, remaining, self.edges):
                net.ship(prog.join_node(t), prog.home(r), r)
                rederived.add(r)
        net.end_round()

        # -- phase 3: insert (re-derived, new seeds, new edges) to fixpoint -------------------
        before_inserts = PairIndex(remaining.pairs)  # inserted edges meet these; new ones via step
        self.tuples = remaining
        for e in edges_ins:
            self.edges.add(e)
        frontier = []

        def derive(r: Pair) -> None:
            if self.tuples.add(r):
                frontier.append(r)

        for r in sorted(rederived, key=repr):
            derive(r)
        for s in sorted(seeds_ins, key=repr):
            derive(s)
        for e in sorted(edges_ins, key=repr):
            for t, r in prog.uses(e, before_inserts):
                net.ship(prog.join_node(t), prog.home(r), r)
                derive(r)
        net.end_round()
        while frontier:
            current, frontier = frontier, []
            for t in current:
                net.ship(prog.home(t), prog.join_node(t), t)
                for _e, r in prog.step(t, self.edges):
                    net.ship(prog.join_node(t), prog.home(r), r)
                    derive(r)
            net.end_round()

        self.last_overdeleted = over
        self.last_rederived = over & self.tuples.pairs  # over-deleted, then back
        net.metrics.overdeleted += len(over)
        net.metrics.rederived += len(self.last_rederived)
        return self.finish(seeds, move)


class DRedRuntime(ClosureRuntime):
    """DRed on ``partitions`` logical nodes: ``apply(Batch)``, ``view(name)``, ``metrics``."""

    maintainer = DRedMaintainer
