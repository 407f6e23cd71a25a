"""Relative provenance: a derivation graph plus a derivability traversal after deletions.

The baseline of Liu et al. 2008 from Green et al. 2007 (update exchange): every
view tuple stores **all** its immediate derivations (the seed, or a premise view tuple joined
with an edge). Insertions record every new derivation. After a deletion the derivations through
dead seeds/edges are dropped, every tuple that depends on them is *affected*, and an affected
tuple stays only if it is re-proved from live base data by a least-fixpoint traversal (cyclic
support does not count). Tuples that cannot be re-proved are removed.

Messages: each derivation produced crosses from its join node to its result's node; during
the traversal each dependency edge followed between nodes counts once.

>>> from aspen.engine.batch import BaseFact, Batch
>>> rt = RelativeRuntime(views=("reachable",))
>>> links = [("a", "b", "v1"), ("b", "a", "v2"), ("b", "c", "v3")]
>>> _ = rt.apply(Batch(inserts=tuple(BaseFact("link", (s, d, 1.0), v) for s, d, v in links)))
>>> sorted(rt.apply(Batch(deletes=frozenset({"v1"})))["reachable"].deleted)
[('a', 'a'), ('a', 'b'), ('a', 'c'), ('b', 'b')]
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from aspen.baselines.closure import (
    ClosureMaintainer,
    ClosureProgram,
    ClosureRuntime,
    Pair,
    PairIndex,
    ViewChange,
)

__all__ = ["RelativeMaintainer", "RelativeRuntime"]

#: The derivation of a tuple by the base case.
SEED: Any = ("<seed>",)


class RelativeMaintainer(ClosureMaintainer):
    """Relative provenance over one closure view."""

    def __init__(self, program: ClosureProgram) -> None:
        super().__init__(program)
        #: tuple → its derivations: SEED or (premise tuple, edge)
        self.derivations: dict[Pair, set[Any]] = defaultdict(set)
        self.dependents: dict[Pair, set[Pair]] = defaultdict(set)  # premise → results
        self.edge_users: dict[Pair, set[Pair]] = defaultdict(set)  # edge → results
        self.last_affected: set[Pair] = set()

    # -- derivation graph ---------------------------------------------------------------------
    def _add(self, r: Pair, derivation: Any, frontier: list[Pair]) -> None:
        if derivation in self.derivations[r]:
            return
        self.derivations[r].add(derivation)
        self.net.metrics.derivations += 1
        if derivation is not SEED:
            t, e = derivation
            self.dependents[t].add(r)
            self.edge_users[e].add(r)
        if self.tuples.add(r):
            frontier.append(r)

    def _drop(self, r: Pair, derivation: Any) -> None:
        self.derivations[r].discard(derivation)
        if derivation is not SEED:
            t, e = derivation
            self.dependents[t].discard(r)
            self.edge_users[e].discard(r)

    # -- maintenance --------------------------------------------------------------------------
    def update(self, seeds: set[Pair], edges: set[Pair]) -> ViewChange:
        prog, net = self.program, self.net
        move = self.begin(seeds, edges)
        seeds_del, seeds_ins = move.seeds_del, move.seeds_ins
        edges_del, edges_ins = move.edges_del, move.edges_ins

        # -- deletions: drop dead derivations, find the affected tuples ----------------------
        lost: set[Pair] = set()
        for s in seeds_del:
            if SEED in self.derivations.get(s, ()):
                self._drop(s, SEED)
                lost.add(s)
        for e in edges_del:
            for r in list(self.edge_users.get(e, ())):
                for d in [d for d in self.derivations[r] if d is not SEED and d[1] == e]:
                    net.ship(prog.edge_node(e), prog.home(r), r)
                    self._drop(r, d)
                lost.add(r)
            self.edges.discard(e)
            self.edge_users.pop(e, None)
        net.end_round()
        affected = set(lost)
        wave = list(lost)
        while wave:
            nxt: list[Pair] = []
            for t in wave:
                for r in self.dependents.get(t, ()):
                    net.ship(prog.home(t), prog.home(r), r)
                    if r not in affected:
                        affected.add(r)
                        nxt.append(r)
            net.end_round()
            wave = nxt

        # -- derivability: least fixpoint from live base data and unaffected tuples -----------
        def supported(r: Pair) -> bool:
            return any(
                d is SEED or d[0] not in affected or d[0] in proven for d in self.derivations[r]
            )

        proven: set[Pair] = set()
        wave = [r for r in affected if supported(r)]
        proven.update(wave)
        while wave:
            nxt = []
            for t in wave:
                for r in self.dependents.get(t, ()):
                    if r in affected and r not in proven:
                        net.ship(prog.home(t), prog.home(r), r)
                        proven.add(r)  # derivation (t, e) with t proven supports r
                        nxt.append(r)
            net.end_round()
            wave = nxt
        dead = affected - proven
        for r in dead:
            for d in list(self.derivations.get(r, ())):
                self._drop(r, d)
            self.derivations.pop(r, None)
            self.tuples.discard(r)
        for t in dead:
            for r in list(self.dependents.get(t, ())):
                for d in [d for d in self.derivations[r] if d is not SEED and d[0] == t]:
                    self._drop(r, d)
            self.dependents.pop(t, None)
        self.last_affected = affected

        # -- insertions: record every new derivation, propagate new tuples -------------------
        before_inserts = PairIndex(self.tuples.pairs)
        for e in edges_ins:
            self.edges.add(e)
        frontier: list[Pair] = []
        for s in sorted(seeds_ins, key=repr):
            self._add(s, SEED, frontier)
        for e in sorted(edges_ins, key=repr):
            for t, r in prog.uses(e, before_inserts):
                net.ship(prog.join_node(t), prog.home(r), r)
                self._add(r, (t, e), frontier)
        net.end_round()
        while frontier:
            current, frontier = frontier, []
            for t in current:
                net.ship(prog.home(t), prog.join_node(t), t)
                for e, r in prog.step(t, self.edges):
                    net.ship(prog.join_node(t), prog.home(r), r)
                    self._add(r, (t, e), frontier)
            net.end_round()

        return self.finish(seeds, move)

    def count_state(self) -> None:
        """View tuples, edge copies and stored derivations, per node."""
        super().count_state()
        for r, derivations in self.derivations.items():
            self.net.metrics.nodes[self.program.home(r)].state_entries += len(derivations)


class RelativeRuntime(ClosureRuntime):
    """Relative provenance on ``partitions`` nodes: ``apply``, ``view``, ``metrics``."""

    maintainer = RelativeMaintainer
