"""The views the compiled core maintains inside the in-process runtime, and which core runs.

The in-process runtime runs a view either through the reference operators of
:mod:`aspen.engine.operators` (Python; what the Spark query nodes run) or, for the views the
compiled core implements, through one native kernel per view
(:class:`~aspen.engine.native.NativeClosure` for ``reachable``, decision 0053;
:class:`~aspen.engine.native.NativePaths` for the path family, one kernel serving every
requested path view, decision 0056, when the plan choices are the defaults;
:class:`~aspen.engine.native.NativeRegions` for the region family, one closure kernel in
targets mode serving ``active_region``, with ``region_sizes`` and ``largest_regions`` counted
from its rows, under every plan choice, decision 0057). The two agree exactly: same tuples
after every batch, and the same BDD per tuple after a flush (in lazy mode the kernel, like the
reference's lazy MinShips, buffers alternatives until a deletion needs them or a flush; in
eager mode its formulas are always complete).

``core`` is ``"native"`` (the compiled core where it implements a view; an error when it is not
built), ``"reference"`` (the Python operators only) or ``"auto"`` (native when the library is
built and the manager is CUDD, else reference).

>>> from aspen.provenance import ProvenanceManager
>>> resolve_core("auto", ProvenanceManager(backend="python"))
'reference'
>>> native_views(("reachable", "min_cost"), "reference")
()
>>> from aspen.engine.plan import PlanChoices
>>> native_views(("reachable", "min_cost"), "native", PlanChoices(aggsel=False))
('reachable',)
>>> native_views(("largest_regions",), "native", PlanChoices(mode="eager", k=5.0))
('largest_regions',)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from aspen.engine.batch import BaseFact
from aspen.engine.native import NativeClosure, NativePaths, NativeRegions, core_available
from aspen.engine.native.closure import ClosureBacked
from aspen.engine.native.paths import PATH_VIEW_NAMES, view_rows
from aspen.engine.operators.base import FormulaCodec
from aspen.engine.partitioning import owner
from aspen.engine.plan import PlanChoices
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager
from aspen.settings import ENGINE_CORES
from aspen.views.regions import REGION_VIEWS

__all__ = ["NATIVE_VIEWS", "REGION_VIEW_NAMES", "NativeFamilyView", "NativePathFamily",
           "NativePathView", "NativeReachable", "NativeRegionFamily", "NativeRegionView",
           "build_native", "native_views", "paths_native", "resolve_core"]

#: The region family: ``active_region`` and the two counts read from its rows.
REGION_VIEW_NAMES: tuple[str, ...] = REGION_VIEWS
#: The views the compiled core maintains; their reference operators are then not built.
NATIVE_VIEWS: tuple[str, ...] = ("reachable", *PATH_VIEW_NAMES, *REGION_VIEW_NAMES)


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


def paths_native(choices: PlanChoices | None) -> bool:
    """Whether the path family may run natively under ``choices``: the kernel implements the
    default plan (multi-aggregate AggSel at the receiver and the sender); other choices
    (``aggsel`` False or "single", ``aggsel_at_sender`` False) keep the reference."""
    return choices is None or (choices.aggsel in (True, "multi") and choices.aggsel_at_sender)


def native_views(views: Iterable[str], core: str,
                 choices: PlanChoices | None = None) -> tuple[str, ...]:
    """Those of ``views`` the (resolved) ``core`` runs natively under ``choices`` (the region
    family under every choice: ``k`` and the mode are the kernel's, while the MinShip batch
    size and the step placement change only when and where the reference ships)."""
    if core != "native":
        return ()
    paths = paths_native(choices)
    return tuple(v for v in views
                 if v in NATIVE_VIEWS and (paths or v not in PATH_VIEW_NAMES))


def build_native(views: Iterable[str], core: str, choices: PlanChoices,
                 manager: ProvenanceManager) -> tuple[dict[str, Any], list[Any]]:
    """The native views (view → reader) and their kernels (each once, for the batch steps:
    delete, insert, run, flush, index, tracking) of a runtime."""
    lazy = choices.mode == "lazy"
    readers: dict[str, Any] = {}
    kernels: list[Any] = []
    chosen = native_views(views, core, choices)
    paths = [v for v in chosen if v in PATH_VIEW_NAMES]
    regions = [v for v in chosen if v in REGION_VIEW_NAMES]
    if "reachable" in chosen:
        readers["reachable"] = NativeReachable(manager, lazy=lazy)
        kernels.append(readers["reachable"])
    if paths:
        family = NativePathFamily(manager, paths, lazy=lazy)
        kernels.append(family)
        for view in paths:
            readers[view] = NativePathView(family, view)
    if regions:
        region_family = NativeRegionFamily(manager, regions, k=choices.k, lazy=lazy)
        kernels.append(region_family)
        for view in regions:
            readers[view] = NativeRegionView(region_family, view)
    return readers, kernels


class NativeReachable(ClosureBacked):
    """``reachable`` in the compiled core, with what the runtime needs around it: the link
    facts in, the view's rows and membership changes out, and its part of the state."""

    view = "reachable"
    relation = "link"

    def __init__(self, manager: ProvenanceManager, lazy: bool = False) -> None:
        self.manager = manager
        self.closure = NativeClosure(manager, lazy=lazy)
        self._owners: dict[Any, int] = {}

    # -- a batch ---------------------------------------------------------------------------
    def insert(self, facts: Iterable[BaseFact]) -> None:
        """Queue the derivations of new link instances (their variables are declared)."""
        var = self.manager.var
        self.closure.add_links([(f.values[0], f.values[1], var(f.var))
                                for f in facts if f.relation == self.relation])

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


#: Per path-family view: which best tuples it reads (1 cheapest, 2 fewest hops, 3 both) and
#: whether it shows their paths.
_READS: dict[str, tuple[int, bool]] = {
    "min_cost": (1, False), "min_hops": (2, False), "cheapest_path": (1, True),
    "fewest_hops": (2, True), "shortest_cheapest_path": (3, True),
}


class NativePathFamily:
    """The path-family views in one compiled kernel (:class:`NativePaths`): the link facts in,
    per-view rows and row changes out. The kernel's state is not dumped: a load derives it
    again from the live link facts and flushes, so its formulas are the canonical ones
    (the reference's after a flush; an unflushed lazy reference holds fewer), whichever core
    wrote the state."""

    relation = "link"

    def __init__(self, manager: ProvenanceManager, views: Iterable[str],
                 lazy: bool = False) -> None:
        self.manager = manager
        self.views = tuple(views)
        self.paths = NativePaths(manager, lazy=lazy)
        self._deltas: dict[str, tuple[set[tuple], set[tuple]]] | None = None
        self._tracking = False
        self._derived = False
        self._owners: dict[Any, int] = {}
        self._with_paths = any(_READS[v][1] for v in self.views)

    # -- a batch ---------------------------------------------------------------------------
    def delete_vars(self, dead: Iterable[str]) -> int:
        return self.paths.delete_vars(dead)

    def insert(self, facts: Iterable[BaseFact]) -> None:
        """Queue the derivations of new link instances (their variables are declared)."""
        var = self.manager.var
        self.paths.add_links([(f.values[0], f.values[1], f.values[2], var(f.var))
                              for f in facts if f.relation == self.relation])

    def run(self) -> int:
        return self.paths.run()

    def flush(self) -> int:
        return self.paths.flush()

    def pending(self) -> int:
        return self.paths.pending_alternatives()

    def track_membership(self) -> None:
        self.paths.track_membership()
        self._tracking = True
        self._deltas = None

    def delta(self, view: str) -> tuple[set[tuple], set[tuple]]:
        """(inserted, deleted) rows of ``view`` since :meth:`track_membership` (the kernel's
        journal is read once for every view)."""
        if self._deltas is None:
            self._deltas = {}
            if self._tracking and not self._with_paths:  # the minima only: no row objects
                for name, (old, new) in self.paths.minimum_changes().items():
                    self._deltas[name] = (new - old, old - new)
            else:
                before, after = self.paths.changes() if self._tracking else ([], [])
                for name in self.views:
                    old = set(view_rows(name, before, formulas=False))
                    new = set(view_rows(name, after, formulas=False))
                    self._deltas[name] = (new - old, old - new)
            self._tracking = False
        return self._deltas.get(view, (set(), set()))

    def index(self) -> int:
        return self.paths.index()

    # -- reading ---------------------------------------------------------------------------
    def owner_of(self, key: tuple, partitions: int) -> int:
        """The node the reference runtime would hold ``key`` on (the owner of its source)."""
        src = key[0]
        node = self._owners.get(src)
        if node is None:
            node = self._owners[src] = owner(src, partitions)
        return node

    def rows(self, view: str, nodes: Iterable[int] | None,
             partitions: int) -> dict[tuple, Formula | None]:
        if view in ("min_cost", "min_hops"):  # the ORs built by the kernel
            rows: dict[tuple, Formula | None] = dict(self.paths.minima(view == "min_hops"))
        else:
            flags, with_paths = _READS[view]
            rows = view_rows(view, self.paths.bests(flags, with_paths))
        if nodes is None:
            return rows
        wanted = set(nodes)
        return {key: f for key, f in rows.items() if self.owner_of(key, partitions) in wanted}

    # -- state -----------------------------------------------------------------------------
    def derive(self, facts: Iterable[BaseFact]) -> None:
        """Fill the kernel from the live link facts (a state load: once), run and flush."""
        if self._derived:
            return
        self._derived = True
        self.insert(facts)
        self.paths.run()
        self.paths.flush()

    def close(self) -> None:
        self.paths.close()


class NativeFamilyView:
    """One view of a family kernel (:class:`NativePathFamily`, :class:`NativeRegionFamily`),
    with the reading and state calls the runtime makes per view (as :class:`NativeReachable`'s).
    The kernel's state is not dumped: :attr:`marker` stands for it, and a load derives the
    family again from the live facts."""

    #: what :meth:`dump` writes in place of the kernel's state
    marker: dict[str, str] = {}

    def __init__(self, family: Any, view: str) -> None:
        self.family = family
        self.view = view

    def delta(self) -> tuple[set[tuple], set[tuple]]:
        return self.family.delta(self.view)

    def owner_of(self, key: tuple, partitions: int) -> int:
        return self.family.owner_of(key, partitions)

    def rows(self, nodes: Iterable[int] | None, partitions: int) -> dict[tuple, Formula | None]:
        return self.family.rows(self.view, nodes, partitions)

    def formulas(self) -> Iterator[tuple[tuple, Formula | None]]:
        return iter(self.family.rows(self.view, None, 1).items())

    def dump(self, codec: FormulaCodec) -> Any:
        """Nothing but a marker: a load derives the kernel again from the live facts."""
        return dict(self.marker)

    def load(self, state: Any, codec: FormulaCodec, facts: Iterable[BaseFact]) -> None:
        self.family.derive(facts)

    def restore(self, rows: Iterable[tuple[tuple, Formula]], facts: Iterable[BaseFact]) -> None:
        """A state the reference operators wrote: derived again from the live facts."""
        self.family.derive(facts)

    @staticmethod
    def reference_rows(node_states: Iterable[dict[str, Any]],
                       codec: FormulaCodec) -> list[tuple[tuple, Formula]]:
        return []


class NativePathView(NativeFamilyView):
    """One path-family view of a :class:`NativePathFamily`."""

    relation = "link"
    marker = {"derive": "link"}


class NativeRegionFamily:
    """The region views in one compiled kernel (:class:`NativeRegions`): the sensor, triggered
    and seed facts in, per-view rows and row changes out. ``region_sizes`` and
    ``largest_regions`` carry no formula: they are counted here from the member rows, and
    their changes follow from ``active_region``'s. The kernel's state is not dumped: a load
    derives it again from the live facts and flushes (as :class:`NativePathFamily`)."""

    def __init__(self, manager: ProvenanceManager, views: Iterable[str], k: float = 20.0,
                 lazy: bool = False) -> None:
        self.manager = manager
        self.views = tuple(views)
        self.regions = NativeRegions(manager, k=k, lazy=lazy)
        self._sizes: Counter[Any] | None = None  # members per region (None: count again)
        self._before: Counter[Any] | None = None  # the sizes when tracking started
        self._deltas: dict[str, tuple[set[tuple], set[tuple]]] | None = None
        self._derived = False
        self._owners: dict[Any, int] = {}

    # -- a batch ---------------------------------------------------------------------------
    def delete_vars(self, dead: Iterable[str]) -> int:
        self._sizes = None
        return self.regions.delete_vars(dead)

    def insert(self, facts: Iterable[BaseFact]) -> None:
        self._sizes = None
        self.regions.insert(facts)

    def run(self) -> int:
        return self.regions.run()

    def flush(self) -> int:
        self._sizes = None  # counted again when read (a flush should add no member)
        return self.regions.flush()

    def pending(self) -> int:
        return self.regions.pending()

    def track_membership(self) -> None:
        self._before = Counter(self.sizes())
        self.regions.track_membership()
        self._deltas = None

    def delta(self, view: str) -> tuple[set[tuple], set[tuple]]:
        """(inserted, deleted) rows of ``view`` since :meth:`track_membership` (the kernel's
        journal is read once for the three views)."""
        if self._deltas is None:
            members = self.regions.delta() if self._before is not None else (set(), set())
            before = self._before or Counter()
            after = Counter(before)
            after.update(region for region, _sid in members[0])
            after.subtract(region for region, _sid in members[1])
            after = +after  # regions left without members are dropped
            self._sizes = after
            old, new = set(before.items()), set(after.items())
            self._deltas = {"active_region": members, "region_sizes": (new - old, old - new),
                            "largest_regions": (_largest(new) - _largest(old),
                                                _largest(old) - _largest(new))}
            self._before = None
        return self._deltas.get(view, (set(), set()))

    def index(self) -> int:
        return self.regions.index()

    # -- reading ---------------------------------------------------------------------------
    def sizes(self) -> Counter[Any]:
        """Members per region (counted from the kernel's rows when not known)."""
        if self._sizes is None:
            self._sizes = Counter(region for region, _sid in self.regions.keys())
        return self._sizes

    def owner_of(self, view: str, key: tuple, partitions: int) -> int:
        """The node the reference runtime would hold ``key`` on: the owner of its region
        (``largest_regions``: node 0, where its one selection runs)."""
        if view == "largest_regions":
            return 0
        region = key[0]
        node = self._owners.get(region)
        if node is None:
            node = self._owners[region] = owner(region, partitions)
        return node

    def rows(self, view: str, nodes: Iterable[int] | None,
             partitions: int) -> dict[tuple, Formula | None]:
        rows: dict[tuple, Formula | None]
        if view == "active_region":
            rows = dict(self.regions.items())
        elif view == "region_sizes":
            rows = dict.fromkeys(self.sizes().items())
        else:
            rows = dict.fromkeys(_largest(set(self.sizes().items())))
        if nodes is None:
            return rows
        wanted = set(nodes)
        return {key: f for key, f in rows.items()
                if self.owner_of(view, key, partitions) in wanted}

    # -- state -----------------------------------------------------------------------------
    def derive(self, facts: Iterable[BaseFact]) -> None:
        """Fill the kernel from the live facts (a state load: once), run and flush."""
        if self._derived:
            return
        self._derived = True
        self.insert(facts)
        self.regions.run()
        self.regions.flush()

    def close(self) -> None:
        self.regions.close()


def _largest(sizes: set[tuple]) -> set[tuple]:
    """The (region, size) rows of the largest size, ties kept."""
    if not sizes:
        return set()
    top = max(size for _region, size in sizes)
    return {row for row in sizes if row[1] == top}


class NativeRegionView(NativeFamilyView):
    """One region view of a :class:`NativeRegionFamily` (its rows' owners depend on the view)."""

    marker = {"derive": "regions"}

    def owner_of(self, key: tuple, partitions: int) -> int:
        return self.family.owner_of(self.view, key, partitions)
