"""GT-ITM-style transit-stub topologies, reproducible from a seed.

Shape (Liu et al. 2008, §7.1): ``transit_domains`` domains of ``nodes_per_transit`` transit
nodes; every transit node has ``stubs_per_transit_node`` stub domains of ``nodes_per_stub``
nodes. The paper's default (1 domain, 4 transit nodes, 3 stubs each, 8 nodes per stub) has
4 + 4·3·8 = **100 nodes**.

Construction:

1. A random spanning tree inside every transit domain and every stub, one link from each stub
   (a random stub node) to its own transit node, and a random tree over the transit domains
   (domains ``a`` and ``b`` are joined by the fixed pair ``t{a}.{b mod T} – t{b}.{a mod T}``,
   ``T`` = nodes per transit). Together these form a spanning tree: the graph is connected.
2. Extra links drawn uniformly, without replacement, from the candidate pairs not yet linked:
   pairs inside a transit domain, pairs inside a stub, and domain pairs (via the fixed pair).
   How many: by default enough to reach an **average of ``avg_degree`` directed link tuples per
   node** — ``dense`` = 4.0 (the paper's default: 100 nodes → 200 bidirectional links → exactly
   400 link tuples), ``sparse`` = 2.0 (half as many links; for connectivity never fewer than
   the spanning tree's ``n − 1`` links, so sparse is a tree plus about one link). With
   ``extra_edge_prob`` set instead, every candidate pair becomes a link independently with that
   probability (GT-ITM's pure random model over the tree).

Costs (latency in ms) by link kind: transit–transit 50, transit–stub 10, inside a stub 2.

Node ids: transit node ``t{d}.{i}`` (domain ``d``, transit node ``i``); stub node
``s{d}.{i}.{j}.{k}`` (node ``k`` of stub ``j`` hanging off ``t{d}.{i}``). Sensor ids (``s7``)
never contain a dot, so the two id spaces are easy to tell apart.

>>> topo = transit_stub(seed=7)
>>> len(topo.nodes), len(topo.links), topo.average_degree, topo.is_connected()
(100, 400, 4.0, True)
>>> topo.links[0].cost in (50.0, 10.0, 2.0)
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

from aspen.errors import ConfigError

__all__ = [
    "VARIANT_DEGREES",
    "LinkCosts",
    "Node",
    "Link",
    "Topology",
    "TransitStubParams",
    "transit_stub",
    "scaled_params",
]

NodeKind = Literal["transit", "stub"]
LinkKind = Literal["transit-transit", "transit-stub", "stub-stub"]

#: Average directed link tuples per node of each named variant.
VARIANT_DEGREES: dict[str, float] = {"dense": 4.0, "sparse": 2.0}


@dataclass(frozen=True)
class LinkCosts:
    """Latency (ms) of each link kind (defaults of Liu et al. 2008, §7.1)."""

    transit_transit: float = 50.0
    transit_stub: float = 10.0
    stub_stub: float = 2.0

    def of(self, kind: LinkKind) -> float:
        """The cost of a link of ``kind``.

        >>> LinkCosts().of("transit-stub")
        10.0
        """
        return {
            "transit-transit": self.transit_transit,
            "transit-stub": self.transit_stub,
            "stub-stub": self.stub_stub,
        }[kind]


@dataclass(frozen=True)
class Node:
    """A router: ``kind`` and its place in the hierarchy (``stub`` is ``None`` for transit)."""

    id: str
    kind: NodeKind
    domain: int
    transit: int
    stub: int | None = None


class Link(NamedTuple):
    """One directed link tuple ``link(src, dst, cost)``."""

    src: str
    dst: str
    cost: float


@dataclass(frozen=True)
class TransitStubParams:
    """Parameters of :func:`transit_stub`; invalid values raise :class:`ConfigError`."""

    transit_domains: int = 1
    nodes_per_transit: int = 4
    stubs_per_transit_node: int = 3
    nodes_per_stub: int = 8
    variant: str = "dense"
    avg_degree: float | None = None  # overrides the variant's degree
    extra_edge_prob: float | None = None  # instead of a degree target
    costs: LinkCosts = LinkCosts()

    def __post_init__(self) -> None:
        for name in ("transit_domains", "nodes_per_transit", "nodes_per_stub"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name.replace('_', '-')} must be an integer ≥ 1, got {value!r}")
        if not isinstance(self.stubs_per_transit_node, int) or self.stubs_per_transit_node < 0:
            raise ConfigError(
                "stubs-per-transit-node must be an integer ≥ 0, "
                f"got {self.stubs_per_transit_node!r}"
            )
        if self.variant not in VARIANT_DEGREES:
            raise ConfigError(
                f"unknown topology variant {self.variant!r}; known: {', '.join(VARIANT_DEGREES)}"
            )
        if self.avg_degree is not None and self.extra_edge_prob is not None:
            raise ConfigError("give either avg-degree or extra-edge-prob, not both")
        if self.avg_degree is not None and not (
            math.isfinite(self.avg_degree) and self.avg_degree > 0
        ):
            raise ConfigError(f"avg-degree must be a positive number, got {self.avg_degree!r}")
        if self.extra_edge_prob is not None and not 0.0 <= self.extra_edge_prob <= 1.0:
            raise ConfigError(f"extra-edge-prob must be in [0, 1], got {self.extra_edge_prob!r}")
        for name in ("transit_transit", "transit_stub", "stub_stub"):
            cost = getattr(self.costs, name)
            if not (isinstance(cost, int | float) and math.isfinite(cost) and cost >= 0):
                raise ConfigError(f"link cost {name} must be a finite number ≥ 0, got {cost!r}")

    @property
    def node_count(self) -> int:
        """Nodes the topology will have.

        >>> TransitStubParams().node_count
        100
        """
        per_transit = 1 + self.stubs_per_transit_node * self.nodes_per_stub
        return self.transit_domains * self.nodes_per_transit * per_transit

    @property
    def target_degree(self) -> float:
        """Average directed link tuples per node aimed at (ignored with ``extra_edge_prob``)."""
        return self.avg_degree if self.avg_degree is not None else VARIANT_DEGREES[self.variant]


@dataclass(frozen=True)
class Topology:
    """A generated network: nodes and directed links (every link present in both directions)."""

    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    params: TransitStubParams
    seed: int

    @property
    def node_ids(self) -> tuple[str, ...]:
        """Node ids in generation order."""
        return tuple(node.id for node in self.nodes)

    @property
    def average_degree(self) -> float:
        """Directed link tuples per node."""
        return len(self.links) / len(self.nodes)

    def undirected(self) -> list[tuple[str, str, float]]:
        """Each bidirectional link once, as ``(a, b, cost)`` in generation order."""
        return [(link.src, link.dst, link.cost) for link in self.links[::2]]

    def kind_of(self, node_id: str) -> NodeKind:
        """``"transit"`` or ``"stub"`` from the id's prefix.

        >>> transit_stub(seed=1).kind_of("t0.3")
        'transit'
        """
        return "transit" if node_id.startswith("t") else "stub"

    def link_kind(self, link: Link) -> LinkKind:
        """The kind of ``link`` from its endpoints."""
        kinds = sorted((self.kind_of(link.src), self.kind_of(link.dst)), reverse=True)
        return f"{kinds[0]}-{kinds[1]}"  # type: ignore[return-value]

    def adjacency(self) -> dict[str, list[str]]:
        """Out-neighbours of every node."""
        adjacent: dict[str, list[str]] = {node.id: [] for node in self.nodes}
        for link in self.links:
            adjacent[link.src].append(link.dst)
        return adjacent

    def is_connected(self) -> bool:
        """Whether every node reaches every other (links are symmetric)."""
        adjacent = self.adjacency()
        if not adjacent:
            return True
        start = self.nodes[0].id
        seen = {start}
        frontier = [start]
        while frontier:
            for nxt in adjacent[frontier.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        return len(seen) == len(adjacent)


class _Segment(NamedTuple):
    """A block of candidate pairs: all pairs of ``members`` (or of domains for ``top``)."""

    offset: int
    size: int
    members: tuple[str, ...]
    top: bool


def _decode_pair(index: int) -> tuple[int, int]:
    """The ``index``-th pair ``(i, j)``, ``i < j``, ordered by ``j`` then ``i``."""
    j = (1 + math.isqrt(1 + 8 * index)) // 2
    if j * (j - 1) // 2 > index:
        j -= 1
    return index - j * (j - 1) // 2, j


def _transit_id(domain: int, index: int) -> str:
    return f"t{domain}.{index}"


def _domain_pair_edge(a: int, b: int, per_domain: int) -> tuple[str, str]:
    return _transit_id(a, b % per_domain), _transit_id(b, a % per_domain)


class _Builder:
    def __init__(self, params: TransitStubParams, rng: random.Random) -> None:
        self.params = params
        self.rng = rng
        self.nodes: list[Node] = []
        self.edges: list[tuple[str, str, LinkKind]] = []
        self.edge_set: set[tuple[str, str]] = set()
        self.segments: list[_Segment] = []
        self.total_pairs = 0

    def add_edge(self, a: str, b: str, kind: LinkKind) -> bool:
        key = (a, b) if a < b else (b, a)
        if a == b or key in self.edge_set:
            return False
        self.edge_set.add(key)
        self.edges.append((a, b, kind))
        return True

    def add_segment(self, members: tuple[str, ...], top: bool = False) -> None:
        size = len(members) * (len(members) - 1) // 2
        if size:
            self.segments.append(_Segment(self.total_pairs, size, members, top))
            self.total_pairs += size

    def random_tree(self, members: tuple[str, ...], kind: LinkKind) -> None:
        order = list(members)
        self.rng.shuffle(order)
        for position in range(1, len(order)):
            self.add_edge(order[position], order[self.rng.randrange(position)], kind)

    def candidate(self, index: int) -> tuple[str, str, LinkKind]:
        lo, hi = 0, len(self.segments) - 1
        while lo < hi:  # last segment whose offset ≤ index
            mid = (lo + hi + 1) // 2
            if self.segments[mid].offset <= index:
                lo = mid
            else:
                hi = mid - 1
        segment = self.segments[lo]
        i, j = _decode_pair(index - segment.offset)
        if segment.top:
            a, b = _domain_pair_edge(i, j, self.params.nodes_per_transit)
            return a, b, "transit-transit"
        a, b = segment.members[i], segment.members[j]
        return a, b, "transit-transit" if a.startswith("t") else "stub-stub"

    def iter_candidates(self) -> Iterator[tuple[str, str, LinkKind]]:
        for index in range(self.total_pairs):
            yield self.candidate(index)

    def add_extras(self, count: int) -> None:
        in_pools = sum(1 for a, b, kind in self.edges if kind != "transit-stub")
        free = self.total_pairs - in_pools
        count = min(count, free)
        if count <= 0:
            return
        if 2 * count > free:  # dense request: enumerate the free pairs and sample them
            free_pairs = [c for c in self.iter_candidates() if not self._linked(c[0], c[1])]
            for a, b, kind in self.rng.sample(free_pairs, count):
                self.add_edge(a, b, kind)
            return
        added = 0
        while added < count:  # sparse request: rejection sampling, ≥ 1/2 acceptance
            a, b, kind = self.candidate(self.rng.randrange(self.total_pairs))
            added += self.add_edge(a, b, kind)

    def _linked(self, a: str, b: str) -> bool:
        return ((a, b) if a < b else (b, a)) in self.edge_set


def _binomial(rng: random.Random, trials: int, prob: float) -> int:
    if trials <= 200_000:
        return sum(1 for _ in range(trials) if rng.random() < prob)
    mean, spread = trials * prob, math.sqrt(trials * prob * (1 - prob))
    return max(0, min(trials, round(rng.gauss(mean, spread))))


def transit_stub(params: TransitStubParams | None = None, seed: int = 0) -> Topology:
    """Generate a transit-stub topology; the same ``params`` and ``seed`` give the same output.

    >>> sparse = transit_stub(TransitStubParams(variant="sparse"), seed=3)
    >>> len(sparse.links), sparse.is_connected()
    (200, True)
    """
    params = params or TransitStubParams()
    if not isinstance(seed, int):
        raise ConfigError(f"the seed must be an integer, got {seed!r}")
    rng = random.Random(seed)
    build = _Builder(params, rng)
    for d in range(params.transit_domains):
        transit_ids = tuple(_transit_id(d, i) for i in range(params.nodes_per_transit))
        build.nodes.extend(Node(t, "transit", d, i) for i, t in enumerate(transit_ids))
        build.add_segment(transit_ids)
        build.random_tree(transit_ids, "transit-transit")
        for i, transit in enumerate(transit_ids):
            for j in range(params.stubs_per_transit_node):
                stub_ids = tuple(f"s{d}.{i}.{j}.{k}" for k in range(params.nodes_per_stub))
                build.nodes.extend(Node(s, "stub", d, i, j) for s in stub_ids)
                build.add_segment(stub_ids)
                build.random_tree(stub_ids, "stub-stub")
                build.add_edge(transit, rng.choice(stub_ids), "transit-stub")
    domains = list(range(params.transit_domains))
    build.add_segment(tuple(str(d) for d in domains), top=True)
    rng.shuffle(domains)
    for position in range(1, len(domains)):
        a, b = domains[position], domains[rng.randrange(position)]
        build.add_edge(
            *_domain_pair_edge(min(a, b), max(a, b), params.nodes_per_transit), "transit-transit"
        )
    if params.extra_edge_prob is not None:
        in_pools = sum(1 for *_, kind in build.edges if kind != "transit-stub")
        build.add_extras(_binomial(rng, build.total_pairs - in_pools, params.extra_edge_prob))
    else:
        target = round(params.target_degree * len(build.nodes) / 2)
        build.add_extras(target - len(build.edges))
    links: list[Link] = []
    for a, b, kind in build.edges:
        cost = float(params.costs.of(kind))
        links.append(Link(a, b, cost))
        links.append(Link(b, a, cost))
    return Topology(tuple(build.nodes), tuple(links), params, seed)


def scaled_params(
    min_nodes: int,
    variant: str = "dense",
    *,
    nodes_per_transit: int = 4,
    stubs_per_transit_node: int = 3,
    nodes_per_stub: int = 8,
) -> TransitStubParams:
    """Parameters with enough transit domains for at least ``min_nodes`` nodes.

    The stub shape stays the paper's; the number of transit domains (hence transit nodes)
    grows, as in Liu et al. 2008, §7.3 ("increasing the average number of transit nodes").

    >>> scaled_params(10_000).transit_domains, scaled_params(10_000).node_count
    (100, 10000)
    """
    if not isinstance(min_nodes, int) or min_nodes < 1:
        raise ConfigError(f"the node count must be an integer ≥ 1, got {min_nodes!r}")
    shape = TransitStubParams(
        nodes_per_transit=nodes_per_transit,
        stubs_per_transit_node=stubs_per_transit_node,
        nodes_per_stub=nodes_per_stub,
        variant=variant,
    )
    domains = -(-min_nodes // shape.node_count)
    return TransitStubParams(
        transit_domains=domains,
        nodes_per_transit=nodes_per_transit,
        stubs_per_transit_node=stubs_per_transit_node,
        nodes_per_stub=nodes_per_stub,
        variant=variant,
    )
