"""What the compiled core's conformance tests share: a runtime on each core over one BDD
manager, and the checks that they agree (rows, row changes, nodes, formulas) after a batch
and after a flush."""

from __future__ import annotations

from collections.abc import Sequence

from aspen.provenance import ProvenanceManager
from aspen.runtime.local import LocalRuntime

__all__ = ["agree", "final", "pair"]


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
