"""The network's health and a failure's impact in an operator's terms: routers and links, pairs
reachable, partitions, isolated routers, rerouted pairs and their added latency, per domain.

Pure functions over plain rows (links as ``(src, dst)`` or ``(src, dst, cost)``; view rows as
tuples), so the console, the CLI and tests share one answer. A *router* is a node named by a
link; a *pair* is an ordered pair of two different routers (a router reaching itself around a
cycle is not a pair). A router's *domain* is its id without the last dotted part (transit-stub
ids: ``s0.1.1.2`` is in stub domain ``s0.1.1``, ``t0.2`` in transit domain ``t0``).

>>> links = [("a", "b", 1.0), ("b", "a", 1.0), ("b", "c", 2.0), ("x", "y", 1.0)]
>>> parts = partitions(["a", "b", "c", "x", "y", "z"], [(s, d) for s, d, _ in links])
>>> parts
[('a', 'b', 'c'), ('x', 'y'), ('z',)]
>>> impact = failure_impact(
...     links, deleted={("b", "c")}, reachable_pairs=5,
...     lost_reachable=[("a", "c"), ("b", "c")], lost_min_cost=[("a", "c", 3.0), ("b", "c", 2.0)])
>>> impact.disconnected, impact.isolated, impact.share_text()
(2, ('c',), '2 of 5 pairs disconnected (40.0 %)')
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "DownLink",
    "NetworkHealth",
    "DomainImpact",
    "FailureImpact",
    "Reroute",
    "RegionChange",
    "domain_of",
    "failure_impact",
    "isolated_routers",
    "network_health",
    "pair_count",
    "partitions",
    "percent_text",
    "region_changes",
    "shortest_costs",
]


def domain_of(router: str) -> str:
    """The router's domain: its id without the last dotted part (the id itself without a dot).

    >>> domain_of("s0.1.1.2"), domain_of("t0.2"), domain_of("core")
    ('s0.1.1', 't0', 'core')
    """
    head, dot, _ = router.rpartition(".")
    return head if dot else router


def percent_text(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage with one decimal (``< 0.1 %`` for a sliver).

    >>> percent_text(1875, 10000), percent_text(3, 9900), percent_text(0, 0)
    ('18.8 %', '< 0.1 %', '0 %')
    """
    if not whole or not part:
        return "0 %"
    share = 100 * part / whole
    return "< 0.1 %" if share < 0.05 else f"{share:.1f} %"


def pair_count(pairs: Iterable[tuple[object, ...]]) -> int:
    """Distinct pairs of two different routers among ``pairs`` (a cycle's ``(x, x)`` is none).

    >>> pair_count([("a", "b"), ("a", "b"), ("b", "b"), ("b", "a")])
    2
    """
    return len({(str(p[0]), str(p[1])) for p in pairs if str(p[0]) != str(p[1])})


def partitions(routers: Iterable[str], links: Iterable[tuple[str, str]]) -> list[tuple[str, ...]]:
    """The weakly connected components of the ``links`` over ``routers`` (a router without a
    link is a component of its own), largest first, then by their first router; each sorted.

    >>> partitions(["a", "b", "c", "d"], [("a", "b"), ("c", "b")])
    [('a', 'b', 'c'), ('d',)]
    """
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]  # path halving
            node = parent[node]
        return node

    for router in routers:
        find(str(router))
    for src, dst in links:
        a, b = find(str(src)), find(str(dst))
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for node in parent:
        groups.setdefault(find(node), []).append(node)
    return sorted((tuple(sorted(g)) for g in groups.values()), key=lambda g: (-len(g), g))


def isolated_routers(routers: Iterable[str], links: Iterable[tuple[str, str]]) -> list[str]:
    """The ``routers`` on no link of ``links``, sorted.

    >>> isolated_routers(["a", "b", "c"], [("a", "b")])
    ['c']
    """
    linked = {str(n) for link in links for n in link[:2]}
    return sorted({str(r) for r in routers} - linked)


def shortest_costs(links: Iterable[tuple[str, str, float]], source: str,
                   targets: Collection[str]) -> dict[str, float]:
    """The least total cost from ``source`` to each of ``targets`` it reaches over ``links``
    (Dijkstra; costs ≥ 0; stops once every target is settled).

    >>> shortest_costs([("a", "b", 1.0), ("b", "c", 2.0), ("a", "c", 5.0)], "a", {"c", "z"})
    {'c': 3.0}
    """
    adjacent: dict[str, list[tuple[str, float]]] = {}
    for src, dst, cost in links:
        adjacent.setdefault(str(src), []).append((str(dst), float(cost)))
    best: dict[str, float] = {}
    heap = [(0.0, str(source))]
    wanted = set(targets)
    found: dict[str, float] = {}
    while heap and wanted - found.keys():
        cost, node = heapq.heappop(heap)
        if node in best:
            continue
        best[node] = cost
        if node in wanted and node != source:
            found[node] = cost
        for nxt, step in adjacent.get(node, ()):
            if nxt not in best:
                heapq.heappush(heap, (cost + step, nxt))
    return found


@dataclass(frozen=True)
class Reroute:
    """A pair that keeps a route but a costlier one: its least cost before and after."""

    src: str
    dst: str
    before: float
    after: float

    @property
    def added(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class DomainImpact:
    """One domain's share of a failure: its routers isolated, and the pairs from or to one of
    its routers that are disconnected or rerouted (a pair inside the domain counts once)."""

    domain: str
    isolated: int
    disconnected: int
    rerouted: int


@dataclass
class FailureImpact:
    """What deleting some links does to the network, one count per question."""

    #: pairs reachable before the deletion (the denominator of the shares)
    reachable_pairs: int
    #: pairs that lose every route
    disconnected: int
    #: pairs that keep a route but a costlier one, worst first
    reroutes: list[Reroute] = field(default_factory=list)
    #: routers with a live link before and none after
    isolated: tuple[str, ...] = ()
    #: pairs that lost their least-cost row but for which no route was found over the links
    #: left (the stored provenance and the links disagree: the views are behind the links)
    unexplained: int = 0
    domains: list[DomainImpact] = field(default_factory=list)

    def share_text(self) -> str:
        """``N of M pairs disconnected (P %)``."""
        return (f"{self.disconnected:,} of {self.reachable_pairs:,} pairs disconnected "
                f"({percent_text(self.disconnected, self.reachable_pairs)})")

    def added_median(self) -> float | None:
        """The median added cost of the rerouted pairs (None without any)."""
        return statistics.median(r.added for r in self.reroutes) if self.reroutes else None

    def added_worst(self) -> float | None:
        """The largest added cost of a rerouted pair (None without any)."""
        return max(r.added for r in self.reroutes) if self.reroutes else None


def failure_impact(links: Sequence[tuple[str, str, float]], deleted: Collection[tuple[str, str]],
                   reachable_pairs: int, lost_reachable: Iterable[tuple[object, ...]],
                   lost_min_cost: Iterable[tuple[object, ...]],
                   failed: Collection[str] = ()) -> FailureImpact:
    """The impact of deleting the ``deleted`` links ``(src, dst)`` from the live ``links``
    ``(src, dst, cost)``, given the rows the stored provenance says are lost: ``reachable``
    rows ``(src, dst)`` and ``min_cost`` rows ``(src, dst, cost)``. Routers that fail
    themselves (``failed``: every link of theirs is among ``deleted``) are not counted isolated.

    A pair whose ``reachable`` row is lost is disconnected; a pair whose ``min_cost`` row is lost
    while its ``reachable`` row survives is rerouted, its new cost a Dijkstra over the links
    left, for those pairs only (a pair whose ``min_cost`` row survives keeps its cost). Pairs of
    a router with itself are left out.

    >>> links = [("a", "b", 1.0), ("b", "c", 2.0), ("a", "c", 5.0)]
    >>> i = failure_impact(links, {("b", "c")}, 3, [("b", "c")], [("a", "c", 3.0), ("b", "c", 2.0)])
    >>> i.disconnected, [(r.src, r.dst, r.added) for r in i.reroutes], i.isolated
    (1, [('a', 'c', 2.0)], ())
    """
    gone = {(str(s), str(d)) for s, d in deleted}
    left = [(str(s), str(d), float(c)) for s, d, c in links if (str(s), str(d)) not in gone]
    before = {str(n) for link in links for n in link[:2]}
    isolated = tuple(r for r in isolated_routers(before, left) if r not in set(failed))
    cut = {(str(r[0]), str(r[1])) for r in lost_reachable if str(r[0]) != str(r[1])}
    costlier: dict[tuple[str, str], float] = {}
    for row in lost_min_cost:
        pair = (str(row[0]), str(row[1]))
        if pair[0] != pair[1] and pair not in cut:
            costlier[pair] = float(row[2])  # type: ignore[arg-type]
    by_source: dict[str, set[str]] = {}
    for src, dst in costlier:
        by_source.setdefault(src, set()).add(dst)
    reroutes: list[Reroute] = []
    unexplained = 0
    for src, targets in sorted(by_source.items()):
        found = shortest_costs(left, src, targets)
        for dst in sorted(targets):
            if dst in found:
                reroutes.append(Reroute(src, dst, costlier[(src, dst)], found[dst]))
            else:
                unexplained += 1
    reroutes.sort(key=lambda r: (-r.added, r.src, r.dst))
    return FailureImpact(reachable_pairs, len(cut), reroutes, isolated, unexplained,
                         _per_domain(isolated, cut, [(r.src, r.dst) for r in reroutes]))


def _per_domain(isolated: Iterable[str], cut: Iterable[tuple[str, str]],
                rerouted: Iterable[tuple[str, str]]) -> list[DomainImpact]:
    """Per domain touched: isolated routers, pairs disconnected and rerouted from or to it."""
    counts: dict[str, list[int]] = {}
    for router in isolated:
        counts.setdefault(domain_of(router), [0, 0, 0])[0] += 1
    for index, pairs in ((1, cut), (2, rerouted)):
        for src, dst in pairs:
            for domain in {domain_of(src), domain_of(dst)}:
                counts.setdefault(domain, [0, 0, 0])[index] += 1
    rows = [DomainImpact(d, *c) for d, c in counts.items()]
    return sorted(rows, key=lambda r: (-r.disconnected, -r.isolated, -r.rerouted, r.domain))


@dataclass(frozen=True)
class RegionChange:
    """A region of triggered sensors before and after a failure."""

    region: str
    size: int
    lost: tuple[str, ...]

    @property
    def kept(self) -> int:
        return self.size - len(self.lost)

    @property
    def gone(self) -> bool:
        return self.kept == 0


def region_changes(members: Iterable[tuple[object, ...]],
                   lost: Iterable[tuple[object, ...]]) -> list[RegionChange]:
    """Every region of the ``active_region`` rows ``members`` with the sensors it would lose
    (``lost``, rows of the same view), sorted by region; kept = members still present.

    >>> [(c.region, c.size, c.kept, c.gone) for c in region_changes(
    ...     [("r1", "a"), ("r1", "b"), ("r2", "c")], [("r2", "c")])]
    [('r1', 2, 2, False), ('r2', 1, 0, True)]
    """
    sizes: dict[str, set[str]] = {}
    for region, sensor, *_ in members:
        sizes.setdefault(str(region), set()).add(str(sensor))
    gone: dict[str, set[str]] = {}
    for region, sensor, *_ in lost:
        gone.setdefault(str(region), set()).add(str(sensor))
        sizes.setdefault(str(region), set()).add(str(sensor))
    return [RegionChange(r, len(s), tuple(sorted(gone.get(r, ())))) for r, s in sorted(
        sizes.items())]


@dataclass(frozen=True)
class DownLink:
    """A link with no live instance: how its last instance died, in which ingest batch."""

    src: str
    dst: str
    death: str
    batch: int


@dataclass
class NetworkHealth:
    """The network now: routers and links up and down, partitions, reachable pairs."""

    #: every router a link ever named
    routers: tuple[str, ...]
    #: distinct live directed links
    links_up: int
    #: links whose every instance died (deleted or expired), newest death first
    links_down: list[DownLink]
    #: the routers on no live link, each with the ingest batch its last link died (or None)
    isolated: list[tuple[str, int | None]]
    #: weakly connected components of the live links over :attr:`routers`, largest first
    partitions: list[tuple[str, ...]]
    #: pairs reachable now, and as of the previous maintained batch (None: unknown)
    reachable: int
    previous: int | None = None

    @property
    def routers_up(self) -> int:
        return len(self.routers) - len(self.isolated)

    @property
    def possible_pairs(self) -> int:
        """Ordered pairs of two different live routers."""
        return self.routers_up * (self.routers_up - 1)

    @property
    def split(self) -> bool:
        """Whether the routers that had links fall into more than one component."""
        return len(self.partitions) > 1

    @property
    def change(self) -> int | None:
        """Reachable pairs gained (> 0) or lost (< 0) since the previous maintained batch."""
        return None if self.previous is None else self.reachable - self.previous

    def reachable_text(self) -> str:
        """``N of M pairs reachable (P %)``.

        >>> NetworkHealth(("a", "b"), 1, [], [], [("a", "b")], 1).reachable_text()
        '1 of 2 pairs reachable (50.0 %)'
        """
        return (f"{self.reachable:,} of {self.possible_pairs:,} pairs reachable "
                f"({percent_text(self.reachable, self.possible_pairs)})")


def network_health(instances: Iterable[tuple[object, ...]], reachable_pairs: int,
                   previous_pairs: int | None = None) -> NetworkHealth:
    """The network's health from the link instances of the variable registry, one
    ``(src, dst, deleted_batch, death)`` each (``deleted_batch`` None while live), and the
    count of reachable pairs now and as of the previous maintained batch.

    >>> health = network_health([("a", "b", None, None), ("b", "a", None, None),
    ...     ("b", "c", 3, "deleted"), ("c", "b", 4, "expired"), ("a", "b", 2, "replaced")], 2, 6)
    >>> health.routers, health.links_up, health.isolated, health.partitions
    (('a', 'b', 'c'), 2, [('c', 4)], [('a', 'b'), ('c',)])
    >>> [(d.src, d.dst, d.death, d.batch) for d in health.links_down], health.split, health.change
    ([('c', 'b', 'expired', 4), ('b', 'c', 'deleted', 3)], True, -4)
    """
    live: set[tuple[str, str]] = set()
    last_death: dict[tuple[str, str], tuple[int, str]] = {}
    routers: set[str] = set()
    for src, dst, batch, death, *_ in instances:
        key = (str(src), str(dst))
        routers.update(key)
        if batch is None or batch != batch:  # None or NaN: live
            live.add(key)
        elif str(death or "deleted") in ("deleted", "expired"):
            known = last_death.get(key)
            if known is None or int(batch) >= known[0]:  # type: ignore[call-overload]
                last_death[key] = (int(batch), str(death or "deleted"))  # type: ignore[call-overload]
    down = sorted((DownLink(s, d, death, batch) for (s, d), (batch, death) in last_death.items()
                   if (s, d) not in live), key=lambda x: (-x.batch, x.src, x.dst))
    since: dict[str, int] = {}
    for link in down:
        for router in (link.src, link.dst):
            since[router] = max(since.get(router, link.batch), link.batch)
    isolated = [(r, since.get(r)) for r in isolated_routers(routers, live)]
    return NetworkHealth(tuple(sorted(routers)), len(live), down, isolated,
                         partitions(routers, live), reachable_pairs, previous_pairs)
