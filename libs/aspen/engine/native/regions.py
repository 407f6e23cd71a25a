"""The region view ``active_region`` in the compiled core: sensor, triggered and seed facts in,
the regions' members with their absorption provenance out (decision 7).

``active_region(r, s) :- region_seed(r, s), sensor(s, ·), triggered(s)`` and
``active_region(r, y) :- active_region(r, x), sensor(x, px), sensor(y, py), triggered(y),
dist(px, py) < k``. A member's formula is the OR, over every walk from a seed, of the AND of
the edge formulas along it, which is a closure: the region ``r`` is a node, a **seed edge**
``r → s`` carries ``seed(r, s) ∧ triggered(s) ∧ ⋁ₚ sensor(s, p)`` and a **neighbour edge**
``x → y`` (x ≠ y) carries ``triggered(y) ∧ ⋁ sensor(x, p) ∧ sensor(y, q)`` over the positions
within ``k`` (an instance is its own variable; the instances of one key OR). The edges are
handed to :class:`~aspen.engine.native.NativeClosure` **reversed**, in its targets mode with the
region nodes as the only targets: the closure entry ``(s, r)`` is the row ``active_region(r, s)``
and nothing else is derived, so the kernel's work follows the rows, not every pair of sensors.
Its formulas are the reference operators' (the same walks, one manager: the same BDD node
after a flush); lazy mode is the closure's (a buffer per entry, decision 5).

The neighbour relation is found here, as the reference's ``neighbor.join`` finds it: a grid of
cells of size ``k``, each position probed against the nine cells around its own. A batch's new
instances name the edges they change; each such edge is given its whole formula over the live
instances, OR-ed into the kernel's (which holds the same formula restricted by the batch's
deaths, so the OR is the new formula). Deletions are the kernel's restriction (decision 1):
nothing is recomputed here.

>>> from aspen.provenance import ProvenanceManager
>>> m = ProvenanceManager(backend="cudd")
>>> regions = NativeRegions(m, k=20.0)
>>> regions.insert([BaseFact("sensor", ("a", 0.0, 0.0), "v1"),
...                 BaseFact("sensor", ("b", 10.0, 0.0), "v2"),
...                 BaseFact("triggered", ("a",), "v3"), BaseFact("triggered", ("b",), "v4"),
...                 BaseFact("region_seed", ("r", "a"), "v5")])
>>> _ = regions.run()
>>> rows = dict(regions.items())
>>> sorted(rows), rows[("r", "b")] == m.conj([m.var(f"v{i}") for i in range(1, 6)])
([('r', 'a'), ('r', 'b')], True)
>>> _ = regions.delete_vars(["v4"]); sorted(key for key, _f in regions.items())
[('r', 'a')]
>>> regions.close()
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from aspen.engine.batch import BaseFact
from aspen.engine.native.closure import ClosureBacked, NativeClosure
from aspen.provenance.bdd import Formula, ProvenanceManager

__all__ = ["REGION_RELATIONS", "NativeRegions"]

#: The base relations the region view reads.
REGION_RELATIONS = ("sensor", "triggered", "region_seed")

Position = tuple[Any, Any]
Cell = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Region:
    """A region as a node of the kernel (never equal to a sensor id)."""

    name: Any


class NativeRegions(ClosureBacked):
    """``active_region`` over the closure kernel in targets mode (one per runtime, one
    manager). ``k`` is the neighbour distance (strict), ``lazy`` the kernel's lazy mode."""

    def __init__(self, manager: ProvenanceManager, k: float = 20.0, lazy: bool = False) -> None:
        self.manager = manager
        self.k = float(k)
        self.closure = NativeClosure(manager, lazy=lazy)
        self.closure.add_targets(())  # targets mode: only the region nodes are destinations
        #: live instances: variable → (relation, values)
        self._facts: dict[str, tuple[str, tuple]] = {}
        self._positions: dict[Any, dict[Position, set[str]]] = {}
        self._triggered: dict[Any, set[str]] = {}
        self._seeds: dict[Any, dict[Any, set[str]]] = {}  # sensor → region → variables
        self._grid: dict[Cell, set[Any]] = {}  # cell → sensors with a position in it
        self._regions: set[Any] = set()

    # -- a batch ---------------------------------------------------------------------------
    def delete_vars(self, dead: Iterable[str]) -> int:
        """Restrict the dead variables to false in the kernel and forget their instances;
        returns the rows whose formula changed."""
        dead = [v for v in dead if v in self._facts]
        if not dead:
            return 0
        changed = self.closure.delete_vars(dead)
        for var in dead:
            relation, values = self._facts.pop(var)
            if relation == "sensor":
                sid, pos = values[0], (values[1], values[2])
                at = self._positions[sid]
                at[pos].discard(var)
                if not at[pos]:
                    del at[pos]
                    cell = self._cell(pos)
                    if not any(self._cell(p) == cell for p in at):
                        self._grid[cell].discard(sid)
                    if not at:
                        del self._positions[sid]
            elif relation == "triggered":
                _discard(self._triggered, values[0], var)
            else:
                by_region = self._seeds[values[1]]
                _discard(by_region, values[0], var)
                if not by_region:
                    del self._seeds[values[1]]
        return changed

    def insert(self, facts: Iterable[BaseFact]) -> None:
        """Take the new instances (their variables declared) and queue the edges they change."""
        new = [f for f in facts if f.relation in REGION_RELATIONS]
        if not new:
            return
        for fact in new:
            self._add(fact)
        seeds: set[tuple[Any, Any]] = set()  # (region, sensor)
        edges: set[tuple[Any, Any]] = set()  # neighbour (x, y): y joins x's regions
        for fact in new:
            relation, values = fact.relation, fact.values
            if relation == "region_seed":
                seeds.add((values[0], values[1]))
                continue
            sid = values[0]
            seeds.update((region, sid) for region in self._seeds.get(sid, ()))
            if relation == "sensor":  # an edge (x, y) needs y triggered: look only for them
                alone = sid not in self._triggered
                for other in self._near((values[1], values[2]), sid, triggered_only=alone):
                    edges.add((sid, other))
                    if not alone:
                        edges.add((other, sid))
            else:
                for pos in self._positions.get(sid, ()):
                    edges.update((other, sid) for other in self._near(pos, sid))
        self._queue(seeds, edges)

    def delta(self) -> tuple[set[tuple], set[tuple]]:
        """(inserted, deleted) rows since :meth:`track_membership`."""
        inserted: set[tuple] = set()
        deleted: set[tuple] = set()
        closure = self.closure
        for (sid, region), was in closure.membership_changes().items():
            now = (sid, region) in closure
            if now and not was:
                inserted.add((region.name, sid))
            elif was and not now:
                deleted.add((region.name, sid))
        return inserted, deleted

    # -- reading ---------------------------------------------------------------------------
    def items(self) -> Iterator[tuple[tuple, Formula]]:
        """Every (region, sensor) row with its formula."""
        return iter([((region.name, sid), f) for (sid, region), f in self.closure.items()])

    def keys(self) -> list[tuple]:
        """Every (region, sensor) row."""
        return [(region.name, sid) for sid, region in self.closure]

    def get(self, key: tuple) -> Formula | None:
        """The formula of row ``(region, sensor)``, or None when it is not in the view."""
        return self.closure.get((key[1], _Region(key[0])))

    def close(self) -> None:
        self.closure.close()

    # -- inside ----------------------------------------------------------------------------
    def _cell(self, pos: Position) -> Cell:
        return math.floor(pos[0] / self.k), math.floor(pos[1] / self.k)

    def _add(self, fact: BaseFact) -> None:
        values = fact.values
        self._facts[fact.var] = (fact.relation, tuple(values))
        if fact.relation == "sensor":
            pos = (values[1], values[2])
            self._positions.setdefault(values[0], {}).setdefault(pos, set()).add(fact.var)
            self._grid.setdefault(self._cell(pos), set()).add(values[0])
        elif fact.relation == "triggered":
            self._triggered.setdefault(values[0], set()).add(fact.var)
        else:
            region, sid = values
            self._seeds.setdefault(sid, {}).setdefault(region, set()).add(fact.var)

    def _near(self, pos: Position, sid: Any, triggered_only: bool = False) -> set[Any]:
        """The other sensors (only the triggered ones if asked) with a position within ``k``
        of ``pos``."""
        cx, cy = self._cell(pos)
        out: set[Any] = set()
        triggered = self._triggered
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for other in self._grid.get((cx + dx, cy + dy), ()):
                    if triggered_only and other not in triggered:
                        continue
                    if other != sid and other not in out and any(
                            math.dist(pos, q) < self.k for q in self._positions[other]):
                        out.add(other)
        return out

    def _queue(self, seeds: set[tuple[Any, Any]], edges: set[tuple[Any, Any]]) -> None:
        """Hand each changed edge, reversed, with its whole formula to the kernel."""
        m = self.manager
        ors: dict[Any, Formula] = {}

        def disj(variables: Iterable[str]) -> Formula:
            return m.disj([m.var(v) for v in sorted(variables)])

        def triggered(sid: Any) -> Formula:
            key = ("t", sid)
            f = ors.get(key)
            if f is None:
                f = ors[key] = disj(self._triggered[sid])
            return f

        def at(sid: Any, pos: Position) -> Formula:
            key = ("s", sid, pos)
            f = ors.get(key)
            if f is None:
                f = ors[key] = disj(self._positions[sid][pos])
            return f

        links: list[tuple[Any, Any, Formula]] = []
        new_regions = []
        for region, sid in seeds:
            if sid not in self._triggered or sid not in self._positions:
                continue
            variables = self._seeds.get(sid, {}).get(region)
            if not variables:
                continue
            placed = m.disj([at(sid, pos) for pos in self._positions[sid]])
            node = _Region(region)
            if region not in self._regions:
                self._regions.add(region)
                new_regions.append(node)
            links.append((sid, node, disj(variables) & triggered(sid) & placed))
        for x, y in edges:
            if y not in self._triggered:
                continue
            pairs = [at(x, p) & at(y, q) for p in self._positions[x] for q in self._positions[y]
                     if math.dist(p, q) < self.k]
            if pairs:
                links.append((y, x, m.disj(pairs) & triggered(y)))
        if new_regions:
            self.closure.add_targets(new_regions)
        self.closure.add_links(links)


def _discard(sets: dict[Any, set[str]], key: Any, var: str) -> None:
    held = sets[key]
    held.discard(var)
    if not held:
        del sets[key]
