"""The path family in the compiled core: links in, the best paths of every (src, dst) with
their absorption provenance out.

``path(x, z, [x, z], c, 1) :- link(x, z, c)`` and ``path(x, y, [x]+p1, c1+c2, l1+1) :-
link(x, z, c1), path(z, y, p1, c2, l1), x ∉ p1`` (decision 7) with AggSel in front of the
fixpoint (min cost and min hops per (src, dst), every tie kept, decision 6), fused into one
kernel (``libs/aspen_core/src/paths.rs``) with the semantics of the reference operators
(:mod:`aspen.engine.operators.aggsel`, ``fixpoint``, ``join``): a derivation is stored unless
absorbed, forwarded iff its tuple is or ties a best; a deletion restricts the dead variables
to false (decision 1) and promotes the next bests with their whole formula. Costs are f64,
summed as the reference does (``c1 + c2``, link cost first), ties by exact equality.

The kernel keeps every group's best tuples (:meth:`NativePaths.bests`); the five views are
read from them by :func:`view_rows`. It has no lazy mode: ``lazy=True`` is accepted and runs
eagerly (the rows are the same; the formulas are the reference's after its flush), see
docs/decisions/0056-compiled-path-family.md.

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="cudd")
>>> paths = NativePaths(m)
>>> paths.add_links([("a", "b", 1.0, m.var("v1")), ("b", "c", 1.0, m.var("v2")),
...                  ("a", "c", 5.0, m.var("v3"))])
3
>>> paths.run() > 0
True
>>> rows = view_rows("min_cost", paths.bests())
>>> sorted(rows), rows[("a", "c", 2.0)] == m.var("v1") & m.var("v2")
([('a', 'b', 1.0), ('a', 'c', 2.0), ('b', 'c', 1.0)], True)
>>> sorted(view_rows("fewest_hops", paths.bests(), formulas=False))[1]
('a', 'c', ('a', 'c'), 1)
>>> paths.delete_vars(["v2"]) > 0, paths.run() >= 0
(True, True)
>>> sorted(view_rows("min_cost", paths.bests(), formulas=False))
[('a', 'b', 1.0), ('a', 'c', 5.0)]
>>> paths.minima() == view_rows("min_cost", paths.bests())
True
>>> paths.close()
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from aspen.engine.native.kernel import NativeKernel
from aspen.errors import EngineError
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["PATH_STATS", "PATH_VIEW_NAMES", "BestRow", "NativePaths", "view_rows"]

#: The counters :meth:`NativePaths.stats` reports, in the core's order.
PATH_STATS = ("derivations", "absorbed", "restricted", "groups", "tuples", "links",
              "links_restricted", "indexed", "pending", "failed", "promoted", "cells")
#: The views :func:`view_rows` reads from the best tuples.
PATH_VIEW_NAMES = ("min_cost", "min_hops", "cheapest_path", "fewest_hops",
                   "shortest_cheapest_path")

_LOW = 0xFFFFFFFF
_NIL = 0xFFFFFFFF
_ALL, _BEFORE, _AFTER = 0, 1, 2
_LEN_CELLS = 2


class BestRow(NamedTuple):
    """A tuple tied at the best cost and/or the best hops of its (src, dst)."""

    src: Any
    dst: Any
    path: tuple
    cost: float
    hops: int
    cost_best: bool
    hops_best: bool
    formula: Formula | None


def view_rows(view: str, bests: Iterable[BestRow],
              formulas: bool = True) -> dict[tuple, Formula | None]:
    """The rows of path-family ``view`` from best tuples, as the reference's readers build
    them: ``min_cost``/``min_hops`` the OR of the tied bests' formulas, ``cheapest_path`` /
    ``fewest_hops`` one row per tied path (a row met twice ORs), ``shortest_cheapest_path``
    the pairs with the AND. ``formulas=False`` gives None for every formula.

    >>> row = BestRow("a", "b", ("a", "b"), 2.0, 1, True, True, None)
    >>> view_rows("shortest_cheapest_path", [row], formulas=False)
    {('a', 'b', ('a', 'b'), 2.0, ('a', 'b'), 1): None}
    """
    if view not in PATH_VIEW_NAMES:
        raise EngineError(f"{view!r} is not a path-family view; known: {list(PATH_VIEW_NAMES)}")
    out: dict[tuple, Formula | None] = {}

    def put(key: tuple, formula: Formula | None) -> None:
        if not formulas:
            out[key] = None
            return
        old = out.get(key)
        out[key] = formula if old is None else old | formula

    if view == "shortest_cheapest_path":
        groups: dict[tuple, list[BestRow]] = {}
        for row in bests:
            groups.setdefault((row.src, row.dst), []).append(row)
        for rows in groups.values():
            cheap = [r for r in rows if r.cost_best]
            few = [r for r in rows if r.hops_best]
            for c in cheap:
                for f in few:
                    key = (c.src, c.dst, c.path, c.cost, f.path, f.hops)
                    put(key, c.formula & f.formula if formulas else None)  # type: ignore[operator]
        return out
    for row in bests:
        if view == "min_cost" and row.cost_best:
            put((row.src, row.dst, row.cost), row.formula)
        elif view == "min_hops" and row.hops_best:
            put((row.src, row.dst, row.hops), row.formula)
        elif view == "cheapest_path" and row.cost_best:
            put((row.src, row.dst, row.path, row.cost), row.formula)
        elif view == "fewest_hops" and row.hops_best:
            put((row.src, row.dst, row.path, row.hops), row.formula)
    return out


class NativePaths(NativeKernel):
    """The AggSel-pruned path fixpoint over links with absorption provenance, in the compiled
    core (one per runtime, one manager: formulas in and out belong to ``manager``)."""

    new_function = "aspen_paths_new"
    free_function = "aspen_paths_free"

    def __init__(self, manager: ProvenanceManager, lazy: bool = False) -> None:
        self.lazy = lazy  # accepted; the kernel runs eagerly in both modes
        self._heads: list[int] = []
        self._tails: list[int] = []
        self._decoded: dict[int, tuple] = {}
        super().__init__(manager)

    # -- ids and paths -----------------------------------------------------------------------
    def _sync_cells(self) -> None:
        """Fetch the path cells interned since the last call (cells are never freed)."""
        handle = self._live()
        total = self._check(self._lib.aspen_paths_len(handle, _LEN_CELLS))
        start = len(self._heads)
        if total <= start:
            return
        count = total - start
        heads = (ctypes.c_uint32 * count)()
        tails = (ctypes.c_uint32 * count)()
        written = self._check(self._lib.aspen_paths_cells(handle, start, heads, tails, count))
        self._heads.extend(heads[:written])
        self._tails.extend(tails[:written])

    def _path(self, cell: int) -> tuple:
        """The node names of path ``cell`` (memoised: tails are shared)."""
        done = self._decoded.get(cell)
        if done is not None:
            return done
        chain = []
        at = cell
        while at != _NIL and at not in self._decoded:
            chain.append(at)
            at = self._tails[at]
        tail = () if at == _NIL else self._decoded[at]
        for c in reversed(chain):
            tail = (self._names[self._heads[c]], *tail)
            self._decoded[c] = tail
        return tail

    # -- updates -----------------------------------------------------------------------------
    def add_links(self, links: Iterable[tuple[Any, Any, float, Formula]]) -> int:
        """OR each formula into its link (src, dst, cost) and queue the derivations for
        :meth:`run`; returns the links that changed."""
        handle = self._live()
        bdd = self.manager.bdd
        ident = self._id
        srcs: list[int] = []
        dsts: list[int] = []
        costs: list[float] = []
        held: list[Formula] = []  # referenced during the call
        for src, dst, cost, formula in links:
            if formula.bdd is not bdd:
                raise EngineError(f"link ({src!r}, {dst!r}): a formula of another BDD manager")
            srcs.append(ident(src))
            dsts.append(ident(dst))
            costs.append(float(cost))
            held.append(formula)
        if not held:
            return 0
        n = len(held)
        nodes = (ctypes.c_void_p * n)(*[int(f) - 2 for f in held])
        return self._check(self._lib.aspen_paths_add_links(
            handle, n, (ctypes.c_uint32 * n)(*srcs), (ctypes.c_uint32 * n)(*dsts),
            (ctypes.c_double * n)(*costs), nodes))

    def delete_vars(self, dead: Iterable[str]) -> int:
        """Set the ``dead`` variables to false in every link, tuple and pending derivation,
        promoting the next bests (names the manager never declared are ignored); returns how
        many tuples changed. The promoted tuples propagate at the next :meth:`run`."""
        return self._delete("aspen_paths_delete", dead)

    def run(self) -> int:
        """Derive to quiescence and index what changed; returns derivations processed."""
        return self._check(self._lib.aspen_paths_run(self._live()))

    def flush(self) -> int:
        """Run to quiescence (nothing is buffered: the kernel is eager in both modes)."""
        return self.run()

    def pending_alternatives(self) -> int:
        """Buffered alternatives: always 0 (no lazy mode)."""
        self._live()
        return 0

    def index(self) -> int:
        """Bring the deletion index up to date; returns the entries indexed."""
        return self._check(self._lib.aspen_paths_index(self._live()))

    # -- reads -------------------------------------------------------------------------------
    def bests(self, flags: int = 3, paths: bool = True) -> list[BestRow]:
        """Every group's best tuples with their formulas: those tied at the best cost
        (``flags`` bit 1), at the fewest hops (bit 2) or either (3, the default); without
        ``paths`` their path is ``()`` (faster when a view does not show it)."""
        return self._rows(_ALL, flags, paths)

    def _fetch(self, which: int) -> tuple[np.ndarray, ...] | None:
        """The rows ``which`` as arrays (pairs, path cells, costs, hops, flags, node pointers;
        the pointers not referenced: wrap them before another CUDD call), None when empty."""
        handle = self._live()
        count = self._check(self._lib.aspen_paths_len(handle, 4 + which))
        if not count:
            return None
        arrays = [(ctype * count)() for ctype in (ctypes.c_uint64, ctypes.c_uint32,
                                                  ctypes.c_double, ctypes.c_uint32,
                                                  ctypes.c_uint8, ctypes.c_uint64)]
        written = self._check(self._lib.aspen_paths_rows(handle, which, *arrays, count))
        return tuple(np.frombuffer(array, dtype=dtype, count=written) for array, dtype in zip(
            arrays, (np.uint64, np.uint32, np.float64, np.uint32, np.uint8, np.uint64),
            strict=True))

    def _rows(self, which: int, mask: int = 3, with_paths: bool = True,
              with_formulas: bool = True) -> list[BestRow]:
        fetched = self._fetch(which)
        if fetched is None:
            return []
        pairs, paths, costs, hops, flags, nodes = fetched
        keep = np.flatnonzero(flags & mask)
        # wrapped before any other CUDD call: the core's references keep them alive until then
        if with_formulas:
            pointers = nodes[keep].tolist()
            wrap = self._wrap
            formulas = [wrap(p + 2) if p else None for p in pointers]
        else:
            formulas = [None] * len(keep)
        keys = pairs[keep]
        names = self._names
        srcs = (keys >> np.uint64(32)).astype(np.int64).tolist()
        dsts = (keys & np.uint64(_LOW)).astype(np.int64).tolist()
        cells = paths[keep].tolist()
        if with_paths:
            self._sync_cells()
            path = self._path
            decoded = [path(c) for c in cells]
        else:
            decoded = [()] * len(cells)
        return [BestRow(names[s], names[d], p, c, h, bool(f & 1), bool(f & 2), formula)
                for s, d, p, c, h, f, formula in zip(
                    srcs, dsts, decoded,
                    costs[keep].tolist(), hops[keep].tolist(), flags[keep].tolist(),
                    formulas, strict=True)]

    def _minimum_keys(self, which: int) -> tuple[set[tuple], set[tuple]]:
        """The ``min_cost`` and ``min_hops`` rows (no formulas) of the rows ``which``."""
        fetched = self._fetch(which)
        if fetched is None:
            return set(), set()
        keys, _paths, costs, hops, flags, _nodes = fetched
        names = self._names
        srcs = [names[i] for i in (keys >> np.uint64(32)).astype(np.int64).tolist()]
        dsts = [names[i] for i in (keys & np.uint64(_LOW)).astype(np.int64).tolist()]
        marks, found_costs, found_hops = flags.tolist(), costs.tolist(), hops.tolist()
        cheapest = {(s, d, c) for s, d, c, f in zip(srcs, dsts, found_costs, marks, strict=True)
                    if f & 1}
        fewest = {(s, d, h) for s, d, h, f in zip(srcs, dsts, found_hops, marks, strict=True)
                  if f & 2}
        return cheapest, fewest

    def minimum_changes(self) -> dict[str, tuple[set[tuple], set[tuple]]]:
        """Stop tracking; the ``min_cost`` and ``min_hops`` rows of the groups touched
        meanwhile, (as they were, as they are now) — :meth:`changes` without the paths."""
        before = self._minimum_keys(_BEFORE)
        after = self._minimum_keys(_AFTER)
        self._check(self._lib.aspen_paths_track(self._live(), 0))
        return {"min_cost": (before[0], after[0]), "min_hops": (before[1], after[1])}

    def minima(self, hops: bool = False) -> dict[tuple, Formula]:
        """The ``min_cost`` rows (``hops``: ``min_hops``) with their formulas (the OR of the
        tied bests', built by the kernel and kept until the group changes): what
        :func:`view_rows` gives, faster."""
        handle = self._live()
        count = self._check(self._lib.aspen_paths_len(handle, 0))
        if not count:
            return {}
        pairs = (ctypes.c_uint64 * count)()
        values = (ctypes.c_double * count)()
        nodes = (ctypes.c_uint64 * count)()
        written = self._check(self._lib.aspen_paths_minima(handle, int(hops), pairs, values,
                                                           nodes, count))
        # wrapped before any other CUDD call: the kernel's references keep them alive until then
        formulas = [self._wrap(p + 2) for p in
                    np.frombuffer(nodes, dtype=np.uint64, count=written).tolist()]
        keys = np.frombuffer(pairs, dtype=np.uint64, count=written)
        names = self._names
        srcs = (keys >> np.uint64(32)).astype(np.int64).tolist()
        dsts = (keys & np.uint64(_LOW)).astype(np.int64).tolist()
        found = np.frombuffer(values, dtype=np.float64, count=written)
        found_values = found.astype(np.int64).tolist() if hops else found.tolist()
        return {(names[s], names[d], v): f
                for s, d, v, f in zip(srcs, dsts, found_values, formulas, strict=True)}

    def link_items(self) -> list[tuple[tuple[Any, Any, float], Formula]]:
        """Every live link (src, dst, cost) with its formula (the OR of its instances)."""
        handle = self._live()
        count = self._check(self._lib.aspen_paths_len(handle, 1))
        if not count:
            return []
        srcs = (ctypes.c_uint32 * count)()
        dsts = (ctypes.c_uint32 * count)()
        costs = (ctypes.c_double * count)()
        nodes = (ctypes.c_uint64 * count)()
        written = self._check(self._lib.aspen_paths_links(handle, srcs, dsts, costs, nodes,
                                                          count))
        formulas = [self._wrap(p + 2) for p in nodes[:written]]
        names = self._names
        return [((names[s], names[d], c), f) for s, d, c, f in zip(
            srcs[:written], dsts[:written], costs[:written], formulas, strict=True)]

    # -- change tracking ---------------------------------------------------------------------
    def track_membership(self) -> None:
        """Start recording the groups whose best tuples may change."""
        self._check(self._lib.aspen_paths_track(self._live(), 1))

    def changes(self, paths: bool = True) -> tuple[list[BestRow], list[BestRow]]:
        """Stop tracking; return the best tuples of the groups touched meanwhile, as they were
        when tracking started and as they are now, without formulas (``paths`` as in
        :meth:`bests`)."""
        before = self._rows(_BEFORE, 3, paths, with_formulas=False)
        after = self._rows(_AFTER, 3, paths, with_formulas=False)
        self._check(self._lib.aspen_paths_track(self._live(), 0))
        return before, after

    # -- counters and lifetime ---------------------------------------------------------------
    def stats(self) -> dict[str, int]:
        """The kernel's counters (:data:`PATH_STATS`)."""
        out = (ctypes.c_int64 * len(PATH_STATS))()
        written = self._check(self._lib.aspen_paths_stats(self._live(), out, len(PATH_STATS)))
        return dict(zip(PATH_STATS[:written], out[:written], strict=True))
