"""Where each base variable sits in the BDD order while updates arrive: the ideal and placed orders.

A BDD's size depends on its variable order. Declared in arrival order, the formulas of a
maintained view grow with the order the updates happened to arrive in (on the demo lake,
``active_region`` holds 1.37 M nodes where one sifting pass finds 1,018). A
:class:`VariablePlacement` keeps two orders of the live variables:

* the **ideal order**, derived from the data. First the link variables, by the depth-first edge
  order of the live link keys, kept up to date by incremental DFS labelling
  (:class:`~aspen.provenance.ordering.IncrementalDfsLabeling`, Liu 2016, Alg. 3); the instances
  of one key are consecutive, oldest first. Then the **sensor field**: one slot per sensor id,
  the slots in an order that follows the field's adjacency (neighbours are sensors at distance
  ``< k``), so that a contiguous region is contiguous in the order (:func:`sensor_field_order`,
  strategies in :data:`SENSOR_ORDERS`). A slot holds the id's ``region_seed`` variables, then
  its ``sensor`` instances, then its ``triggered`` instances; the slots of ids with no live
  ``sensor`` fact (no position) come at the end of the block. Variables of any other relation
  come last, in arrival order.
* the **placed order**, the one the BDD managers hold. :meth:`VariablePlacement.apply` never
  moves a live variable: a new one goes right after its nearest predecessor in the ideal order
  that is already placed (first if none), and a dead one leaves. So every stored formula's
  node list stays consistent with the placed order (a reader decodes all of them in one pass),
  and a batch re-encodes nothing. Moving an existing variable would re-encode every formula
  that mentions it — most of ``reachable`` per batch on a 1,000-node network — so variables move
  only on :meth:`VariablePlacement.relabel` (placed := ideal), whose place is where whole views
  are rewritten anyway: when the change log is compacted.

:meth:`VariablePlacement.drift` says how far placed is from ideal: the share of live variables
outside a longest increasing subsequence of their ideal positions read in placed order — the
fewest variables that :meth:`~VariablePlacement.relabel` must move.

>>> p = VariablePlacement(k=20.0)
>>> p.apply([("v1", "link", ("a", "b", 1.0)), ("v2", "link", ("e", "f", 1.0)),
...          ("v3", "link", ("c", "d", 1.0))])
>>> p.apply([("v4", "link", ("b", "c", 1.0))])   # b→c pulls c's tree in after it
>>> p.ideal(), p.order                            # v2 stays where it was until a relabel
(['v1', 'v4', 'v3', 'v2'], ['v1', 'v4', 'v2', 'v3'])
>>> p.drift(), p.relabel(), p.order
(0.25, ['v2'], ['v1', 'v4', 'v3', 'v2'])
>>> p.apply([], deletes=["v4"]); p.order
['v1', 'v3', 'v2']
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Hashable, Iterable, Mapping, Sequence

from aspen.errors import ProvenanceError
from aspen.provenance.ordering import (
    Edge,
    IncrementalDfsLabeling,
    bfs_edge_order,
    dfs_edge_order,
)

__all__ = [
    "DEFAULT_SENSOR_ORDER", "SENSOR_ORDERS", "STRATEGIES", "VariablePlacement",
    "sensor_field_order",
]

#: The orders a placement keeps (Liu 2016, §3.5, Fig. 17): ``dfs``, the ideal of the module
#: docstring; ``bfs``, the links in breadth-first edge order instead; ``arrival``, every variable
#: in the order it arrived (what maintenance did before it kept an order; for comparison).
STRATEGIES: tuple[str, ...] = ("dfs", "bfs", "arrival")

#: The sensor-field strategies of :func:`sensor_field_order`.
SENSOR_ORDERS: tuple[str, ...] = ("dfs", "sweep", "hilbert")

#: The strategy a :class:`VariablePlacement` uses unless told otherwise: on the generated grids
#: "sweep" and "dfs" give about the same BDDs, on jittered ones "sweep" the smallest.
DEFAULT_SENSOR_ORDER = "sweep"

#: Link keys changed in one batch above which the DFS order is re-traversed once (O(links))
#: instead of labelled incrementally (O(links) per key).
INCREMENTAL_LINK_CHANGES = 8

Fact = tuple[str, str, Sequence]  # (variable, relation, values)


def sensor_field_order(positions: Mapping[Hashable, tuple[float, float]], k: float,
                       strategy: str = DEFAULT_SENSOR_ORDER) -> list[Hashable]:
    """The sensor ids of ``positions`` (id → (x, y)) in an order following the field's adjacency.

    * ``"dfs"``: depth-first visit order over the neighbour graph (sensors at distance ``< k``),
      neighbours taken nearest first, each new tree at the unvisited sensor of lowest (x, y).
    * ``"sweep"``: a line across the field's shorter side swept along its longer side: by the
      position along the longer side, then across. The sensors between two neighbours in the
      order are those within k of the line, about two columns of the field. (Lines of grid
      cells of size k, sorted inside by position, measured larger on jittered grids.)
    * ``"hilbert"``: the Hilbert-curve index of the cell of size k, then (x, y).

    Ties are broken by (x, y, id), so the order is a function of the positions.

    >>> grid = {f"s{i}": (5.0 + 10 * (i % 3), 5.0 + 10 * (i // 3)) for i in range(6)}
    >>> sensor_field_order(grid, k=15.0, strategy="dfs")
    ['s0', 's3', 's4', 's1', 's2', 's5']
    >>> sensor_field_order(grid, k=15.0, strategy="sweep")
    ['s0', 's3', 's1', 's4', 's2', 's5']
    """
    if strategy not in SENSOR_ORDERS:
        raise ProvenanceError(f"unknown sensor order {strategy!r}; choose one of "
                              f"{', '.join(SENSOR_ORDERS)}")
    if not positions:
        return []
    if strategy == "dfs":
        return _dfs_field(positions, k)
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    x0, y0 = min(xs), min(ys)
    if strategy == "sweep":
        along_x = max(xs) - x0 >= max(ys) - y0  # the line runs across the shorter side

        def sweep_key(item: tuple[Hashable, tuple[float, float]]) -> tuple:
            sid, (x, y) = item
            return (x, y, str(sid)) if along_x else (y, x, str(sid))

        return [sid for sid, _p in sorted(positions.items(), key=sweep_key)]

    def cell(p: tuple[float, float]) -> tuple[int, int]:
        return int((p[0] - x0) // k), int((p[1] - y0) // k)

    side = 1
    while side <= max(max(cell(p)) for p in positions.values()):
        side *= 2

    def hilbert_key(item: tuple[Hashable, tuple[float, float]]) -> tuple:
        sid, p = item
        return (_hilbert_index(side, *cell(p)), p[0], p[1], str(sid))

    return [sid for sid, _p in sorted(positions.items(), key=hilbert_key)]


def _hilbert_index(side: int, x: int, y: int) -> int:
    """The position of cell (x, y) along the Hilbert curve of a ``side``×``side`` grid."""
    d = 0
    s = side // 2
    while s > 0:
        rx = 1 if x & s else 0
        ry = 1 if y & s else 0
        d += s * s * ((3 * rx) ^ ry)
        if ry == 0:  # rotate the quadrant
            if rx == 1:
                x, y = s - 1 - x, s - 1 - y
            x, y = y, x
        s //= 2
    return d


def _dfs_field(positions: Mapping[Hashable, tuple[float, float]], k: float) -> list[Hashable]:
    """Depth-first visit order of the neighbour graph (see :func:`sensor_field_order`)."""
    cells: dict[tuple[int, int], list[Hashable]] = {}
    for sid, (x, y) in positions.items():
        cells.setdefault((math.floor(x / k), math.floor(y / k)), []).append(sid)

    def neighbours(sid: Hashable) -> list[Hashable]:
        x, y = positions[sid]
        cx, cy = math.floor(x / k), math.floor(y / k)
        found = []
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for other in cells.get((cx + dx, cy + dy), ()):
                    if other == sid:
                        continue
                    ox, oy = positions[other]
                    dist = math.dist((x, y), (ox, oy))
                    if dist < k:
                        found.append((dist, ox, oy, str(other), other))
        found.sort(key=lambda t: t[:4])
        return [t[4] for t in found]

    starts = sorted(positions, key=lambda sid: (positions[sid][0], positions[sid][1], str(sid)))
    visited: set[Hashable] = set()
    out: list[Hashable] = []
    for root in starts:
        if root in visited:
            continue
        visited.add(root)
        out.append(root)
        stack = [iter(neighbours(root))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
            elif nxt not in visited:
                visited.add(nxt)
                out.append(nxt)
                stack.append(iter(neighbours(nxt)))
    return out


def _increasing_core(sequence: Sequence[int]) -> set[int]:
    """Indexes of one longest strictly increasing subsequence of ``sequence`` (O(n log n))."""
    tails: list[int] = []       # smallest tail value of an increasing run of each length
    tail_at: list[int] = []     # the index holding it
    before = [-1] * len(sequence)
    for i, value in enumerate(sequence):
        j = bisect_left(tails, value)
        if j == len(tails):
            tails.append(value)
            tail_at.append(i)
        else:
            tails[j] = value
            tail_at[j] = i
        before[i] = tail_at[j - 1] if j else -1
    core: set[int] = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        core.add(i)
        i = before[i]
    return core


class VariablePlacement:
    """The ideal and placed orders of the live base variables (see the module docstring).

    Facts are ``(variable, relation, values)`` triples with the values of
    :data:`aspen.engine.batch.BASE_RELATIONS` (``link(src, dst, cost)``, ``sensor(id, x, y)``,
    ``triggered(id)``, ``region_seed(region, id)``); other relations are kept in arrival order.
    Plain attributes only: it pickles with the runtime state.

    >>> p = VariablePlacement.build([
    ...     ("t1", "triggered", ("s2",)), ("s1", "sensor", ("s1", 0.0, 0.0)),
    ...     ("s2", "sensor", ("s2", 30.0, 0.0)), ("r1", "region_seed", ("r", "s1")),
    ...     ("t0", "triggered", ("s1",)), ("t9", "triggered", ("s9",))])
    >>> p.order
    ['r1', 's1', 't0', 's2', 't1', 't9']
    """

    def __init__(self, k: float = 20.0, sensor_order: str = DEFAULT_SENSOR_ORDER,
                 strategy: str = "dfs") -> None:
        if strategy not in STRATEGIES:
            raise ProvenanceError(f"unknown variable order {strategy!r}; choose one of "
                                  f"{', '.join(STRATEGIES)}")
        if not k > 0 or math.isinf(k):
            raise ProvenanceError(f"the sensor distance k must be positive and finite, not {k}")
        if sensor_order not in SENSOR_ORDERS:
            raise ProvenanceError(f"unknown sensor order {sensor_order!r}; choose one of "
                                  f"{', '.join(SENSOR_ORDERS)}")
        self.k = float(k)
        self.sensor_order = sensor_order
        self.strategy = strategy
        self._seq = 0
        self._facts: dict[str, tuple[str, tuple]] = {}  # live variable → (relation, values)
        self._born: dict[str, int] = {}                  # live variable → arrival number
        self._links: dict[Edge, list[str]] = {}          # link key → instances, oldest first
        self._labeling = IncrementalDfsLabeling()        # DFS edge order of the live link keys
        self._sensors: dict[Hashable, list[str]] = {}    # sensor id → sensor instances
        self._triggered: dict[Hashable, list[str]] = {}
        self._seeds: dict[Hashable, list[str]] = {}      # sensor id → region_seed instances
        self._other: dict[str, None] = {}                # other relations, arrival order
        self._field: list[Hashable] | None = None        # sensor_field_order, None when stale
        self._placed: list[str] = []

    # -- building ----------------------------------------------------------------------------
    @classmethod
    def build(cls, facts: Iterable[Fact], k: float = 20.0,
              sensor_order: str = DEFAULT_SENSOR_ORDER,
              strategy: str = "dfs") -> VariablePlacement:
        """A placement of the live ``facts`` (in arrival order), with placed = ideal; O(V log V).

        >>> facts = [("v2", "link", ("b", "c", 1)), ("v1", "link", ("a", "b", 1))]
        >>> VariablePlacement.build(facts).order
        ['v1', 'v2']
        """
        placement = cls(k, sensor_order, strategy)
        for var, relation, values in facts:
            placement._add(var, relation, tuple(values))
        placement._labeling = IncrementalDfsLabeling.from_dfs_order(
            dfs_edge_order(list(placement._links)))
        placement._placed = placement.ideal()
        return placement

    # -- the orders ----------------------------------------------------------------------------
    @property
    def order(self) -> list[str]:
        """The placed order of the live variables, top first (what the managers hold)."""
        return list(self._placed)

    def ideal(self) -> list[str]:
        """The ideal order of the live variables, top first (see the module docstring)."""
        born = self._born
        if self.strategy == "arrival":
            return sorted(self._facts, key=born.__getitem__)
        out: list[str] = []
        links = self._links
        keys = self._labeling.edges if self.strategy == "dfs" else bfs_edge_order(
            sorted(links, key=lambda key: born[links[key][0]]))
        for key in keys:
            out.extend(links[key])
        if self._field is None:
            positions = {sid: self._position(sid) for sid in self._sensors}
            self._field = sensor_field_order(positions, self.k, self.sensor_order)
        for sid in self._field:
            self._slot(sid, out)
        homeless = {sid for group in (self._seeds, self._triggered) for sid in group
                    if sid not in self._sensors}
        for sid in sorted(homeless, key=lambda s: min(born[v] for v in self._slot(s, []))):
            self._slot(sid, out)
        out.extend(self._other)
        return out

    def drift(self) -> float:
        """How far placed is from ideal, in [0, 1]: the share of live variables outside a
        longest increasing subsequence of their ideal positions read in placed order (the
        fewest that :meth:`relabel` must move); 0 when they agree.

        >>> VariablePlacement().drift()
        0.0
        """
        if not self._placed:
            return 0.0
        return len(self._out_of_place()) / len(self._placed)

    def relabel(self) -> list[str]:
        """Set placed := ideal; returns the variables that moved (in ideal order): the fewest
        whose moving turns the old placed order into the ideal one."""
        moved = self._out_of_place()
        ideal = self.ideal()
        self._placed = ideal
        return [v for v in ideal if v in moved]

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, var: object) -> bool:
        return var in self._facts

    # -- changes -------------------------------------------------------------------------------
    def apply(self, inserts: Iterable[Fact], deletes: Iterable[str] = ()) -> None:
        """Deletions first (unknown variables are ignored), then insertions; each new variable is
        placed right after its nearest placed predecessor in the ideal order (first if none).
        Live variables keep their relative order. O(V + m log m) for m changes, plus the link
        labelling (:data:`INCREMENTAL_LINK_CHANGES`)."""
        links_before: dict[Edge, bool] = {}
        gone = False
        for var in deletes:
            if var in self._facts:
                self._remove(var, links_before)
                gone = True
        new: list[str] = []
        for var, relation, values in inserts:
            if var in self._facts:
                raise ProvenanceError(f"variable {var!r} is already placed; every insertion "
                                      "instance needs a fresh variable")
            self._add(var, relation, tuple(values), links_before)
            new.append(var)
        self._relabel_links(links_before)
        if not new:
            if gone:
                self._placed = [v for v in self._placed if v in self._facts]
            return
        fresh = set(new)
        kept = [v for v in self._placed if v in self._facts and v not in fresh]
        after: dict[str | None, list[str]] = {}
        anchor: str | None = None
        for var in self.ideal():
            if var in fresh:
                after.setdefault(anchor, []).append(var)
            else:
                anchor = var
        placed = after.get(None, [])
        for var in kept:
            placed.append(var)
            placed.extend(after.get(var, ()))
        self._placed = placed

    # -- internals -----------------------------------------------------------------------------
    def _position(self, sid: Hashable) -> tuple[float, float]:
        """The position of a sensor id with live instances: its oldest instance's."""
        values = self._facts[self._sensors[sid][0]][1]
        return float(values[1]), float(values[2])

    def _slot(self, sid: Hashable, out: list[str]) -> list[str]:
        """Append sensor id ``sid``'s slot to ``out``: seeds, sensor instances, triggered."""
        for group in (self._seeds, self._sensors, self._triggered):
            out.extend(group.get(sid, ()))
        return out

    def _add(self, var: str, relation: str, values: tuple,
             links_before: dict[Edge, bool] | None = None) -> None:
        self._facts[var] = (relation, values)
        self._born[var] = self._seq
        self._seq += 1
        if relation == "link":
            key = (values[0], values[1])
            if links_before is not None and key not in links_before:
                links_before[key] = key in self._links
            self._links.setdefault(key, []).append(var)
        elif relation == "sensor":
            instances = self._sensors.setdefault(values[0], [])
            if not instances:
                self._field = None  # a new position
            instances.append(var)
        elif relation == "triggered":
            self._triggered.setdefault(values[0], []).append(var)
        elif relation == "region_seed":
            self._seeds.setdefault(values[1], []).append(var)
        else:
            self._other[var] = None

    def _remove(self, var: str, links_before: dict[Edge, bool]) -> None:
        relation, values = self._facts.pop(var)
        del self._born[var]
        if relation == "link":
            key = (values[0], values[1])
            links_before.setdefault(key, True)
            _drop(self._links, key, var)
        elif relation == "sensor":
            if self._sensors[values[0]][0] == var:
                self._field = None  # the oldest instance gives the position
            _drop(self._sensors, values[0], var)
        elif relation == "triggered":
            _drop(self._triggered, values[0], var)
        elif relation == "region_seed":
            _drop(self._seeds, values[1], var)
        else:
            del self._other[var]

    def _relabel_links(self, links_before: dict[Edge, bool]) -> None:
        """Bring the DFS labelling to the live link keys: the keys that came or went."""
        came = [key for key, was in links_before.items() if not was and key in self._links]
        went = [key for key, was in links_before.items() if was and key not in self._links]
        if not came and not went or self.strategy != "dfs":
            return
        labeling = self._labeling
        if len(came) + len(went) <= INCREMENTAL_LINK_CHANGES:
            for key in went:
                labeling.delete(key)
            for key in came:
                labeling.insert(key)
            return
        # many changes: one re-traversal preferring the current order (roots in its visit
        # order, each node's out-edges in vector order, new keys last in arrival order)
        dead = set(went)
        old = labeling.edges
        vector = [key for key in old if key not in dead] + came
        roots = list(dict.fromkeys(node for key in old for node in key))
        self._labeling = IncrementalDfsLabeling.from_dfs_order(dfs_edge_order(vector, roots))

    def _out_of_place(self) -> set[str]:
        """The placed variables outside one longest run in ideal order."""
        position = {v: i for i, v in enumerate(self.ideal())}
        sequence = [position[v] for v in self._placed]
        core = _increasing_core(sequence)
        return {v for i, v in enumerate(self._placed) if i not in core}


def _drop(groups: dict, key: Hashable, var: str) -> None:
    """Remove ``var`` from ``groups[key]``, and the key once it is empty."""
    instances = groups[key]
    instances.remove(var)
    if not instances:
        del groups[key]
