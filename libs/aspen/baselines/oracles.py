"""The from-scratch evaluation of each view: the oracles the view registry names
(:mod:`aspen.views.registry`), and the live base state they read.

Set semantics, no provenance, plain Python. The input is the set of **live** base facts (several
live instances of one base tuple count once). The semantics follow the decisions of
docs/architecture.md:

* ``reachable(src,dst)``: transitive closure of ``link``; ``reachable(x,x)`` only via a cycle.
* ``min_cost(src,dst,cost)``: cheapest path cost; a path's cost is the link cost plus the cost
  of the rest (a right fold: ``c1 + (c2 + (… + cn))``), computed by a backward Dijkstra.
* ``min_hops(src,dst,hops)``: fewest links (``hops >= 1``).
* Paths are exactly what Query 2's rules derive (decision 7):
  ``path(x,y,[x,y],c,1) :- link(x,y,c)`` and ``path(x,y,[x]+p1,c1+c2,l1+1) :- link(x,z,c1),
  path(z,y,p1,c2,l1), x ∉ p1``. So a path is a simple path of ≥ 1 link, or (the base case has
  no guard) a simple path followed by a self-loop on its last node; ``src == dst`` only through
  a self-loop ``(x, x)``. ``min_cost`` / ``min_hops`` are the best values over those paths.
* ``cheapest_path(src,dst,path,cost)`` / ``fewest_hops(src,dst,path,hops)``: **all** paths
  (tuples of node ids, both ends included) that reach the best value; ties are kept.
* ``shortest_cheapest_path(src,dst,cheapest,cost,fewest,hops)``: the join of the two on (src,dst).
* ``active_region(region,sensor)`` (decision 7): a region's seed must be a sensor and triggered;
  a triggered sensor joins when its Euclidean distance to a member is ``< k`` (strict).
* ``region_sizes(region,size)``: member count (regions without members are absent);
  ``largest_regions(region,size)``: the regions whose size is the maximum.

Each oracle is ``oracle(scratch, found) -> set of tuples``: ``scratch`` the live base state with
``k``, ``found`` the views it needs, already evaluated (:func:`aspen.baselines.scratch.evaluate_all`
evaluates the views in the registry's order).

>>> scratch = Scratch(base_state({"link": [("a", "b", 1.0), ("b", "a", 2.0)]}))
>>> sorted(reachable(scratch, {}))
[('a', 'a'), ('a', 'b'), ('b', 'a'), ('b', 'b')]
>>> sorted(cheapest_path(scratch, {}))
[('a', 'b', ('a', 'b'), 1.0), ('b', 'a', ('b', 'a'), 2.0)]
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from aspen.engine.batch import BASE_RELATIONS, BaseFact
from aspen.errors import UnknownViewError

__all__ = [
    "BaseState", "Facts", "Oracle", "Scratch", "active_region", "base_state", "cheapest_path",
    "fewest_hops", "largest_regions", "min_cost", "min_hops", "reachable", "region_sizes",
    "shortest_cheapest_path",
]

#: Relative slack when pruning path enumeration by cost (final equality is exact).
_COST_SLACK = 1e-9

Facts = Iterable[BaseFact] | Mapping[str, Any]


@dataclass
class BaseState:
    """Live base tuples, deduplicated (set semantics), with adjacency helpers."""

    links: set[tuple[Any, Any, float]] = field(default_factory=set)
    sensors: dict[Any, set[tuple[float, float]]] = field(default_factory=dict)
    triggered: set[Any] = field(default_factory=set)
    seeds: set[tuple[Any, Any]] = field(default_factory=set)

    def successors(self) -> dict[Any, dict[Any, float]]:
        """src → {dst: cheapest live cost of a link src→dst}."""
        out: dict[Any, dict[Any, float]] = defaultdict(dict)
        for src, dst, cost in self.links:
            best = out[src].get(dst)
            if best is None or cost < best:
                out[src][dst] = cost
        return out

    def nodes(self) -> set[Any]:
        """Every node named by a live link."""
        return {s for s, _, _ in self.links} | {d for _, d, _ in self.links}


def base_state(facts: Facts) -> BaseState:
    """Collect live facts into a :class:`BaseState`.

    ``facts`` is an iterable of :class:`BaseFact`, a mapping ``var → BaseFact``, or a mapping
    ``relation → iterable of value tuples``.

    >>> base_state({"link": [("a", "b", 1.0)], "triggered": [("s1",)]}).triggered
    {'s1'}
    """
    state = BaseState()
    for relation, values in _iter_tuples(facts):
        if relation == "link":
            src, dst, cost = values
            state.links.add((src, dst, float(cost)))
        elif relation == "sensor":
            sid, x, y = values
            state.sensors.setdefault(sid, set()).add((float(x), float(y)))
        elif relation == "triggered":
            (sid,) = values
            state.triggered.add(sid)
        elif relation == "region_seed":
            region, sid = values
            state.seeds.add((region, sid))
        else:
            raise UnknownViewError(
                f"unknown base relation {relation!r}; known: {', '.join(BASE_RELATIONS)}"
            )
    return state


def _iter_tuples(facts: Facts) -> Iterable[tuple[str, tuple]]:
    if isinstance(facts, BaseState):
        raise TypeError("pass facts, not a BaseState")
    if isinstance(facts, Mapping):
        for key, value in facts.items():
            if isinstance(value, BaseFact):
                yield value.relation, tuple(value.values)
            else:  # relation → tuples
                for values in value:
                    yield key, tuple(values)
        return
    for fact in facts:
        yield fact.relation, tuple(fact.values)


# -- network views -----------------------------------------------------------------------------


def _reachable(succ: Mapping[Any, Mapping[Any, float]]) -> set[tuple]:
    out: set[tuple] = set()
    for src in list(succ):
        seen: set[Any] = set()
        queue = deque(succ[src])
        seen.update(succ[src])
        while queue:
            node = queue.popleft()
            for nxt in succ.get(node, {}):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        out.update((src, dst) for dst in seen)
    return out


def _predecessors(succ: Mapping[Any, Mapping[Any, float]]) -> dict[Any, dict[Any, float]]:
    pred: dict[Any, dict[Any, float]] = defaultdict(dict)
    for src, dsts in succ.items():
        for dst, cost in dsts.items():
            pred[dst][src] = cost
    return pred


def _cost_to(dst: Any, pred: Mapping[Any, Mapping[Any, float]]) -> dict[Any, float]:
    """Backward Dijkstra: node → min right-folded cost of a (≥0-link) path node→dst."""
    dist: dict[Any, float] = {dst: 0.0}
    heap: list[tuple[float, int, Any]] = [(0.0, 0, dst)]
    tie = 1
    while heap:
        d, _, node = heapq.heappop(heap)
        if d > dist.get(node, math.inf):
            continue
        for prev, cost in pred.get(node, {}).items():
            cand = cost + d  # right fold: the first link's cost + the rest
            if cand < dist.get(prev, math.inf):
                dist[prev] = cand
                heapq.heappush(heap, (cand, tie, prev))
                tie += 1
    return dist


def _hops_to(dst: Any, pred: Mapping[Any, Mapping[Any, float]]) -> dict[Any, int]:
    dist = {dst: 0}
    queue = deque([dst])
    while queue:
        node = queue.popleft()
        for prev in pred.get(node, {}):
            if prev not in dist:
                dist[prev] = dist[node] + 1
                queue.append(prev)
    return dist


def _best_from(
    src: Any, dst: Any, succ: Mapping[Any, Mapping[Any, float]], rest: Mapping[Any, float]
) -> float | None:
    """Best value of a path src→dst: the self-loop when ``src == dst``, else ``rest[src]``."""
    if src == dst:
        return succ.get(src, {}).get(src)
    return rest.get(src)


def _min_cost(succ: Mapping[Any, Mapping[Any, float]]) -> dict[tuple, float]:
    pred = _predecessors(succ)
    out: dict[tuple, float] = {}
    for dst in list(pred):
        dist = _cost_to(dst, pred)
        for src in list(succ):
            best = _best_from(src, dst, succ, dist)
            if best is not None:
                out[(src, dst)] = best
    return out


def _min_hops(succ: Mapping[Any, Mapping[Any, float]]) -> dict[tuple, int]:
    pred = _predecessors(succ)
    ones = {src: {dst: 1.0 for dst in dsts} for src, dsts in succ.items()}
    out: dict[tuple, int] = {}
    for dst in list(pred):
        dist = {n: float(h) for n, h in _hops_to(dst, pred).items()}
        for src in list(succ):
            best = _best_from(src, dst, ones, dist)
            if best is not None:
                out[(src, dst)] = int(best)
    return out


def _path_cost(path: tuple, succ: Mapping[Any, Mapping[Any, float]]) -> float:
    total = 0.0
    for a, b in reversed(list(zip(path, path[1:], strict=False))):
        total = succ[a][b] + total
    return total


def _tied_paths(
    src: Any,
    dst: Any,
    best: float,
    succ: Mapping[Any, Mapping[Any, float]],
    lower: Mapping[Any, float],
    weight: Any,
) -> list[tuple]:
    """Paths src→dst (see the module docstring) whose value is at most ``best`` (+ slack).

    ``lower[n]`` is a lower bound on the value n→dst; ``weight(a, b)`` the value of a link.
    Depth-first search over simple paths, pruned by ``prefix + weight + lower > best``.
    """
    slack = _COST_SLACK * max(1.0, abs(best))
    if src == dst:
        return [(src, src)] if src in succ.get(src, {}) else []
    loop = weight(dst, dst) if dst in succ.get(dst, {}) else None
    found: list[tuple] = []
    path = [src]
    on_path = {src}

    def dfs(node: Any, prefix: float) -> None:
        for nxt in succ.get(node, {}):
            w = weight(node, nxt)
            if nxt == dst:
                if prefix + w <= best + slack:
                    found.append((*path, nxt))
                    if loop is not None and prefix + w + loop <= best + slack:
                        found.append((*path, nxt, nxt))  # the unguarded base case: a self-loop
                continue  # the path ends at dst; it cannot pass through it
            if nxt in on_path or nxt not in lower:
                continue
            if prefix + w + lower[nxt] > best + slack:
                continue
            path.append(nxt)
            on_path.add(nxt)
            dfs(nxt, prefix + w)
            path.pop()
            on_path.discard(nxt)

    dfs(src, 0.0)
    return found


def _cheapest_paths(succ: Mapping[Any, Mapping[Any, float]]) -> set[tuple]:
    pred = _predecessors(succ)
    out: set[tuple] = set()
    for dst in list(pred):
        dist = _cost_to(dst, pred)
        for src in list(succ):
            best = _best_from(src, dst, succ, dist)
            if best is None:
                continue
            for path in _tied_paths(src, dst, best, succ, dist, lambda a, b: succ[a][b]):
                cost = _path_cost(path, succ)
                if cost == best:
                    out.add((src, dst, path, cost))
    return out


def _fewest_paths(succ: Mapping[Any, Mapping[Any, float]]) -> set[tuple]:
    pred = _predecessors(succ)
    out: set[tuple] = set()
    for dst in list(pred):
        hops_to = _hops_to(dst, pred)
        lower = {n: float(h) for n, h in hops_to.items()}
        for src in list(succ):
            best = _best_from(src, dst, {src: {n: 1.0 for n in succ[src]}}, lower)
            if best is None:
                continue
            for path in _tied_paths(src, dst, best, succ, lower, lambda a, b: 1.0):
                hops = len(path) - 1
                if hops == best:
                    out.add((src, dst, path, hops))
    return out


def _shortest_cheapest(cheapest: set[tuple], fewest: set[tuple]) -> set[tuple]:
    by_pair: dict[tuple, list[tuple]] = defaultdict(list)
    for src, dst, path, hops in fewest:
        by_pair[(src, dst)].append((path, hops))
    return {
        (src, dst, cpath, cost, fpath, hops)
        for src, dst, cpath, cost in cheapest
        for fpath, hops in by_pair.get((src, dst), ())
    }


# -- region views ------------------------------------------------------------------------------


def _near(a: set[tuple[float, float]], b: set[tuple[float, float]], k: float) -> bool:
    return any(math.dist(p, q) < k for p in a for q in b)


def _active_region(state: BaseState, k: float) -> set[tuple]:
    candidates = [s for s in state.triggered if s in state.sensors]
    seeds_by_region: dict[Any, set[Any]] = defaultdict(set)
    for region, sid in state.seeds:
        if sid in state.sensors and sid in state.triggered:
            seeds_by_region[region].add(sid)
    out: set[tuple] = set()
    for region, seeds in seeds_by_region.items():
        members = set(seeds)
        queue = deque(seeds)
        while queue:
            x = queue.popleft()
            for y in candidates:
                if y not in members and _near(state.sensors[x], state.sensors[y], k):
                    members.add(y)
                    queue.append(y)
        out.update((region, s) for s in members)
    return out


def _region_sizes(active: set[tuple]) -> set[tuple]:
    counts: dict[Any, int] = defaultdict(int)
    for region, _ in active:
        counts[region] += 1
    return set(counts.items())


def _largest(sizes: set[tuple]) -> set[tuple]:
    if not sizes:
        return set()
    top = max(size for _, size in sizes)
    return {(region, size) for region, size in sizes if size == top}


# -- the oracles, one per view ------------------------------------------------------------------


class Scratch:
    """What every oracle reads: the live base state, ``k`` and the successor map (built once)."""

    def __init__(self, state: BaseState, k: float = 20.0) -> None:
        self.state, self.k = state, k

    @cached_property
    def successors(self) -> dict[Any, dict[Any, float]]:
        return self.state.successors()


#: ``oracle(scratch, found)``: a view's tuples, given the views it needs in ``found``.
Oracle = Callable[[Scratch, Mapping[str, set[tuple]]], set[tuple]]


def reachable(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``reachable(src, dst)``: the transitive closure of ``link``."""
    return _reachable(scratch.successors)


def min_cost(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``min_cost(src, dst, cost)``: the cheapest cost of a path."""
    return {(s, d, c) for (s, d), c in _min_cost(scratch.successors).items()}


def min_hops(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``min_hops(src, dst, hops)``: the fewest links of a path."""
    return {(s, d, h) for (s, d), h in _min_hops(scratch.successors).items()}


def cheapest_path(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``cheapest_path(src, dst, path, cost)``: every path of least cost."""
    return _cheapest_paths(scratch.successors)


def fewest_hops(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``fewest_hops(src, dst, path, hops)``: every path of fewest links."""
    return _fewest_paths(scratch.successors)


def shortest_cheapest_path(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """The join of ``cheapest_path`` and ``fewest_hops`` on ``(src, dst)`` (needs both)."""
    return _shortest_cheapest(found["cheapest_path"], found["fewest_hops"])


def active_region(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``active_region(region, sensor)``: the regions grown from their seeds."""
    return _active_region(scratch.state, scratch.k)


def region_sizes(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``region_sizes(region, size)``: members per region (needs ``active_region``)."""
    return _region_sizes(found["active_region"])


def largest_regions(scratch: Scratch, found: Mapping[str, set[tuple]]) -> set[tuple]:
    """``largest_regions(region, size)``: the regions of the largest size (needs
    ``region_sizes``)."""
    return _largest(found["region_sizes"])
