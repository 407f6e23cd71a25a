"""What the compiled core's conformance tests share: a runtime on each core over one BDD
manager, and the checks that they agree (rows, row changes, nodes, formulas) after a batch
and after a flush."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aspen.baselines import scratch
from aspen.engine.batch import BaseFact, Batch
from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime

__all__ = ["agree", "final", "pair", "run_instances"]


def pair(views: Sequence[str], partitions: int, mode: str) -> tuple[LocalRuntime, LocalRuntime]:
    """A runtime on the compiled core and one on the reference operators, one manager; the
    first runs every one of ``views`` natively, the second none."""
    manager = ProvenanceManager(backend="cudd")
    native = LocalRuntime(views=tuple(views), partitions=partitions, mode=mode,
                          manager=manager, core="native")
    reference = LocalRuntime(views=tuple(views), partitions=partitions, mode=mode,
                             manager=manager, core="reference")
    assert set(native.native) == set(views) and not reference.native
    return native, reference


def agree(native: LocalRuntime, reference: LocalRuntime, deltas: dict, ref_deltas: dict,
          views: Sequence[str], formulas: bool, placement: bool = False) -> None:
    """Same rows and row changes of every view (and the same formulas, the same node per row,
    when asked)."""
    for view in views:
        mine, theirs = native.view(view), reference.view(view)
        assert set(mine) == set(theirs), (view, sorted(set(mine) ^ set(theirs), key=repr))
        if formulas:
            assert mine == theirs, view
        if placement:
            assert native.view_placement(view) == reference.view_placement(view), view
        assert deltas[view].inserted == ref_deltas[view].inserted, view
        assert deltas[view].deleted == ref_deltas[view].deleted, view


def final(native: LocalRuntime, reference: LocalRuntime, views: Sequence[str]) -> None:
    """Both flushed: every formula is the same BDD."""
    native.flush()
    reference.flush()
    for view in views:
        assert native.view(view) == reference.view(view), view


def run_instances(views: Sequence[str], partitions: int, mode: str,
                  batches: Sequence[tuple[Sequence[tuple], Sequence[int]]],
                  fact: Callable[[tuple, str], BaseFact], placement: bool = False) -> None:
    """Apply ``batches`` of (new facts as tuples, indexes of live instances to delete) to both
    cores, ``fact`` making each tuple a fact with its fresh variable; after each batch the cores
    agree and equal the from-scratch evaluation of the live instances; at the end, flushed,
    they hold the same formulas."""
    native, reference = pair(views, partitions, mode)
    live: dict[str, BaseFact] = {}
    seq = 0
    for inserts, deletes in batches:
        names = sorted(live)
        dead = frozenset(names[i % len(names)] for i in deletes) if names else frozenset()
        facts = []
        for values in inserts:
            seq += 1
            facts.append(fact(values, f"v{seq}"))
        batch = Batch(inserts=tuple(facts), deletes=dead)
        deltas = native.apply(batch)
        ref_deltas = reference.apply(batch)
        for var in dead:
            del live[var]
        live.update((f.var, f) for f in facts)
        agree(native, reference, deltas, ref_deltas, views, formulas=mode == "eager",
              placement=placement)
        expected = scratch.evaluate_all(live.values(), views=views)
        for view in views:
            assert set(native.view(view)) == expected[view], view
    final(native, reference, views)
