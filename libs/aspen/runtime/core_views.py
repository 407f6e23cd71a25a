"""The views the compiled core maintains inside the in-process runtime, and which core runs.

The in-process runtime runs a view either through the reference operators of
:mod:`aspen.engine.operators` (Python; what the Spark query nodes run) or, for the views the
compiled core implements, through one native kernel per view
(:class:`~aspen.engine.native.NativeClosure` for ``reachable``; decision 0053). The two agree
exactly: same tuples after every batch, and the same BDD per tuple after a flush (in lazy
mode the kernel, like the reference's lazy MinShips, buffers alternatives until a deletion
needs them or a flush; in eager mode its formulas are always complete).

``core`` is ``"native"`` (the compiled core where it implements a view; an error when it is not
built), ``"reference"`` (the Python operators only) or ``"auto"`` (native when the library is
built and the manager is CUDD, else reference).

>>> from aspen.provenance import ProvenanceManager
>>> resolve_core("auto", ProvenanceManager(backend="python"))
'reference'
>>> native_views(("reachable", "min_cost"), "reference")
()
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from aspen.engine.batch import BaseFact
from aspen.engine.native import NativeClosure, core_available
from aspen.engine.operators.base import FormulaCodec
from aspen.engine.partitioning import owner
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.settings import ENGINE_CORES

__all__ = ["NATIVE_VIEWS", "NativeReachable", "native_views", "resolve_core"]

#: The views the compiled core maintains; their reference operators are then not built.
NATIVE_VIEWS: tuple[str, ...] = ("reachable",)


def resolve_core(core: str, manager: ProvenanceManager) -> str:
    """The core that runs: ``native`` or ``reference`` (``auto`` picks native when it can)."""
    if core not in ENGINE_CORES:
        raise EngineError(f"the engine core must be one of {', '.join(ENGINE_CORES)}, "
                          f"not {core!r}")
    if core == "reference":
        return core
    available = core_available(manager)
    if core == "native" and not available:
        raise EngineError("the compiled engine core is not available (it needs the CUDD backend "
                          "and the library `make setup` builds); use the reference core")
    return "native" if available else "reference"


def native_views(views: Iterable[str], core: str) -> tuple[str, ...]:
    """Those of ``views`` the (resolved) ``core`` runs natively."""
    return tuple(v for v in views if core == "native" and v in NATIVE_VIEWS)


class NativeReachable:
    """``reachable`` in the compiled core, with what the runtime needs around it: the link
    facts in, the view's rows and membership changes out, and its part of the state."""

    view = "reachable"
    relation = "link"

    def __init__(self, manager: ProvenanceManager, lazy: bool = False) -> None:
        self.manager = manager
        self.closure = NativeClosure(manager, lazy=lazy)
        self._owners: dict[Any, int] = {}

    # -- a batch ---------------------------------------------------------------------------
    def delete_vars(self, dead: Iterable[str]) -> int:
        return self.closure.delete_vars(dead)

    def insert(self, facts: Iterable[BaseFact]) -> None:
        """Queue the derivations of new link instances (their variables are declared)."""
        var = self.manager.var
        self.closure.add_links([(f.values[0], f.values[1], var(f.var))
                                for f in facts if f.relation == self.relation])

    def run(self) -> int:
        return self.closure.run()

    def flush(self) -> int:
        """Ship every buffered alternative and run eagerly (the full provenance)."""
        return self.closure.flush()

    def pending(self) -> int:
        """Entries holding a buffered alternative (lazy mode)."""
        return self.closure.pending_alternatives()

    def track_membership(self) -> None:
        self.closure.track_membership()

    def delta(self) -> tuple[set[tuple], set[tuple]]:
        """(inserted, deleted) tuples since :meth:`track_membership`."""
        inserted: set[tuple] = set()
        deleted: set[tuple] = set()
        closure = self.closure
        for key, was in closure.membership_changes().items():
            now = key in closure
            if now and not was:
                inserted.add(key)
            elif was and not now:
                deleted.add(key)
        return inserted, deleted

    def index(self) -> int:
        return self.closure.index()

    # -- reading ---------------------------------------------------------------------------
    def owner_of(self, key: tuple, partitions: int) -> int:
        """The node the reference runtime would hold ``key`` on (the owner of its source)."""
        src = key[0]
        node = self._owners.get(src)
        if node is None:
            node = self._owners[src] = owner(src, partitions)
        return node

    def rows(self, nodes: Iterable[int] | None, partitions: int) -> dict[tuple, Formula]:
        """The view's rows (those owned by ``nodes`` when given)."""
        if nodes is None:
            return dict(self.closure.items())
        wanted = set(nodes)
        return {key: f for key, f in self.closure.items()
                if self.owner_of(key, partitions) in wanted}

    def formulas(self) -> Iterator[tuple[tuple, Formula]]:
        return self.closure.items()

    # -- state -----------------------------------------------------------------------------
    def dump(self, codec: FormulaCodec) -> Any:
        """The rows with F ∨ B each: a restored kernel may hold more complete formulas than
        this one (buffers become propagated formulas), membership is the same."""
        rows = dict(self.closure.items())
        for key, buffered in self.closure.buffered_items():
            rows[key] = rows[key] | buffered
        return codec.dump_map(rows.items())

    def load(self, state: Any, codec: FormulaCodec, facts: Iterable[BaseFact]) -> None:
        """Restore the closure from :meth:`dump` output; the links come from the live facts."""
        self.restore(codec.load_map(state), facts)

    def restore(self, rows: Iterable[tuple[tuple, Formula]], facts: Iterable[BaseFact]) -> None:
        """Restore closure rows and the live link facts (their derivations are already in the
        rows: the links are set, nothing is derived again)."""
        var = self.manager.var
        self.closure.set_links([(f.values[0], f.values[1], var(f.var))
                                for f in facts if f.relation == self.relation])
        merged: dict[tuple, Formula] = {}
        for key, formula in rows:
            old = merged.get(key)
            merged[key] = formula if old is None else old | formula
        self.closure.set_many(merged.items())

    @staticmethod
    def reference_rows(node_states: Iterable[dict[str, Any]],
                       codec: FormulaCodec) -> list[tuple[tuple, Formula]]:
        """The closure rows of a state the reference operators wrote: their Fixpoints, and the
        alternatives their lazy MinShips held (a row may come several times: OR them)."""
        rows: list[tuple[tuple, Formula]] = []
        for states in node_states:
            state = states.get("reachable.fix")
            if state is not None:
                rows.extend(codec.load_map(state))
            ship = states.get("reachable.ship")
            if ship is not None:  # alternatives a lazy MinShip still held: derivations too
                rows.extend(codec.load_map(ship["buffered"]))
        return rows

    def close(self) -> None:
        self.closure.close()
