"""What the DRed and relative-provenance baselines share.

Both recursive views are **linear closures** of pairs: seeds ``S`` (the base case) and edges
``E`` (the recursive join), partitioned over logical nodes by the first attribute.

* ``reachable(x,y) :- link(x,y).  reachable(x,y) :- link(x,z), reachable(z,y).`` Seeds = edges
  = live link pairs. A new ``reachable(z,y)`` meets the copies of ``link(x,z)`` kept at node
  ``owner(z)`` (links are re-partitioned on dst) and the result ``(x,y)`` ships to ``owner(x)``.
* ``active_region(r,y) :- active_region(r,x), near(x,y)`` with ``near(x,y)`` = both sensors
  triggered, ``x != y``, distance ``< k``; seeds = ``region_seed(r,s)`` with ``s`` a triggered
  sensor (decision 7). A new ``active_region(r,x)`` ships to ``owner(x)``, meets ``near(x,·)``
  there and the result ``(r,y)`` ships back to ``owner(r)``. ``near`` is computed from the
  sensor table where the sensor lives; its maintenance is not counted as communication.

Communication is counted the way the engine counts it (``aspen.engine.metrics``): every item
sent to another node is a message of its sender; ``tuples`` counts the view tuples among them
(base link copies are messages, not tuples); deliveries on the same node are free.

>>> net = Network(partitions=2, placement=lambda v: 0 if v == "a" else 1)
>>> net.ship(0, 1, ("a", "b")); net.ship(0, 0, ("a", "c")); net.ship(0, 1, "e", view_tuple=False)
>>> net.metrics.as_dict()["total"]
{'messages': 2, 'tuples': 1, 'received': 2, 'state_entries': 0}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from aspen.baselines.scratch import base_state
from aspen.catalog import check_view
from aspen.engine.batch import BaseFact, Batch
from aspen.engine.partitioning import owner
from aspen.errors import ConfigError, NotBuiltYetError, UnknownViewError

__all__ = [
    "CLOSURE_VIEWS",
    "BaselineMetrics",
    "ClosureMaintainer",
    "ClosureProgram",
    "ClosureRuntime",
    "FactStore",
    "Move",
    "Network",
    "NodeCounters",
    "PairIndex",
    "ReachableProgram",
    "RegionProgram",
    "ViewChange",
    "make_program",
]

Pair = tuple[Any, Any]
Placement = Callable[[Any], int]

#: The recursive views the baselines maintain.
CLOSURE_VIEWS: tuple[str, ...] = ("reachable", "active_region")


@dataclass
class ViewChange:
    """Net change of one view in one batch (same attribute names as the engine's ViewDelta)."""

    inserted: set[tuple] = field(default_factory=set)
    deleted: set[tuple] = field(default_factory=set)


@dataclass
class NodeCounters:
    """Counters of one logical node, sender side (the shape of the engine's NodeMetrics)."""

    messages: int = 0  # every item sent to another node (base copies and view tuples)
    tuples: int = 0  # the view tuples among them
    received: int = 0
    state_entries: int = 0  # view tuples, edge copies (and derivations, relative provenance)

    def as_dict(self) -> dict[str, int]:
        """Plain counters."""
        return asdict(self)


@dataclass
class BaselineMetrics:
    """Per-node counters plus run-wide counts (cumulative over batches)."""

    nodes: list[NodeCounters]
    batches: int = 0
    rounds: int = 0
    barriers: int = 0
    overdeleted: int = 0
    rederived: int = 0
    derivations: int = 0

    def total(self) -> NodeCounters:
        """Sum over nodes."""
        out = NodeCounters()
        for node in self.nodes:
            for f in fields(NodeCounters):
                setattr(out, f.name, getattr(out, f.name) + getattr(node, f.name))
        return out

    @property
    def tuples_shipped(self) -> int:
        """View tuples that crossed nodes, in total."""
        return self.total().tuples

    @property
    def messages(self) -> int:
        """Items (view tuples and base copies) that crossed nodes, in total."""
        return self.total().messages

    def as_dict(self) -> dict[str, Any]:
        """``nodes``, ``total`` (like the engine's metrics) and the run-wide counts."""
        return {
            "nodes": [n.as_dict() for n in self.nodes],
            "total": self.total().as_dict(),
            "batches": self.batches,
            "rounds": self.rounds,
            "barriers": self.barriers,
            "overdeleted": self.overdeleted,
            "rederived": self.rederived,
            "derivations": self.derivations,
        }


class Network:
    """Counts what crosses between logical nodes, round by round."""

    def __init__(self, partitions: int, placement: Placement | None = None) -> None:
        if partitions < 1:
            raise ConfigError(f"partitions must be >= 1, got {partitions}")
        self.partitions = partitions
        self.placement: Placement = placement or (lambda value: owner(value, partitions))
        self.metrics = BaselineMetrics(nodes=[NodeCounters() for _ in range(partitions)])
        self._shipped_this_round = False

    def node(self, value: Any) -> int:
        """The node owning ``value``."""
        node = self.placement(value)
        if not 0 <= node < self.partitions:
            raise ConfigError(
                f"placement put {value!r} on node {node}, not in 0..{self.partitions - 1}")
        return node

    def ship(self, sender: int, receiver: int, item: Any = None, view_tuple: bool = True) -> None:
        """One item from ``sender`` to ``receiver`` (free when they are the same node)."""
        if sender == receiver:
            return
        self.metrics.nodes[sender].messages += 1
        self.metrics.nodes[sender].tuples += int(view_tuple)
        self.metrics.nodes[receiver].received += 1
        self._shipped_this_round = True

    def end_round(self) -> None:
        """Close a round of communication (counted when something crossed nodes)."""
        if self._shipped_this_round:
            self.metrics.rounds += 1
        self._shipped_this_round = False


class PairIndex:
    """A set of pairs indexed by both attributes."""

    def __init__(self, pairs: Iterable[Pair] = ()) -> None:
        self.pairs: set[Pair] = set()
        self.by_first: dict[Any, set[Any]] = defaultdict(set)
        self.by_second: dict[Any, set[Any]] = defaultdict(set)
        for pair in pairs:
            self.add(pair)

    def __contains__(self, pair: object) -> bool:
        return pair in self.pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.pairs)

    def add(self, pair: Pair) -> bool:
        """Add; whether it was new."""
        if pair in self.pairs:
            return False
        self.pairs.add(pair)
        self.by_first[pair[0]].add(pair[1])
        self.by_second[pair[1]].add(pair[0])
        return True

    def discard(self, pair: Pair) -> None:
        """Remove if present."""
        if pair in self.pairs:
            self.pairs.discard(pair)
            self.by_first[pair[0]].discard(pair[1])
            self.by_second[pair[1]].discard(pair[0])

    def firsts_of(self, second: Any) -> set[Any]:
        """Every ``a`` with ``(a, second)`` present."""
        return self.by_second.get(second, set())

    def seconds_of(self, first: Any) -> set[Any]:
        """Every ``b`` with ``(first, b)`` present."""
        return self.by_first.get(first, set())


class ClosureProgram:
    """One linear closure: its seeds, edges, derivation steps and data placement."""

    name = ""

    def __init__(self, net: Network, k: float) -> None:
        self.net = net
        self.k = k

    # what the base facts define
    def seeds_and_edges(self, facts: Iterable[BaseFact]) -> tuple[set[Pair], set[Pair]]:
        """Seeds (base case) and edges (recursive join) over the live ``facts``."""
        raise NotImplementedError

    # derivations: (premise tuple, edge) → result
    def step(self, t: Pair, edges: PairIndex) -> Iterator[tuple[Pair, Pair]]:
        """(edge, result) for every derivation with ``t`` as the recursive premise."""
        raise NotImplementedError

    def uses(self, e: Pair, tuples: PairIndex) -> Iterator[tuple[Pair, Pair]]:
        """(premise, result) for every derivation that joins edge ``e`` with ``tuples``."""
        raise NotImplementedError

    def producers(
        self, r: Pair, tuples: PairIndex, edges: PairIndex
    ) -> Iterator[tuple[Pair, Pair]]:
        """(premise, edge) for every one-step derivation of ``r``."""
        raise NotImplementedError

    # placement
    def home(self, t: Pair) -> int:
        """Where the view tuple is stored: the owner of its first attribute."""
        return self.net.node(t[0])

    def join_node(self, t: Pair) -> int:
        """Where a view tuple meets the edges."""
        raise NotImplementedError

    def edge_home(self, e: Pair) -> int:
        """Where the base edge lives."""
        return self.net.node(e[0])

    def edge_node(self, e: Pair) -> int:
        """Where the edge waits for view tuples."""
        raise NotImplementedError


class ReachableProgram(ClosureProgram):
    """``reachable``: left-linear closure of links (see the module docstring)."""

    name = "reachable"

    def seeds_and_edges(self, facts: Iterable[BaseFact]) -> tuple[set[Pair], set[Pair]]:
        pairs = {(s, d) for s, d, _ in base_state(list(facts)).links}
        return pairs, set(pairs)

    def step(self, t: Pair, edges: PairIndex) -> Iterator[tuple[Pair, Pair]]:
        z, y = t
        for x in list(edges.firsts_of(z)):
            yield (x, z), (x, y)

    def uses(self, e: Pair, tuples: PairIndex) -> Iterator[tuple[Pair, Pair]]:
        x, z = e
        for y in list(tuples.seconds_of(z)):
            yield (z, y), (x, y)

    def producers(
        self, r: Pair, tuples: PairIndex, edges: PairIndex
    ) -> Iterator[tuple[Pair, Pair]]:
        x, y = r
        for z in list(edges.seconds_of(x)):
            if (z, y) in tuples:
                yield (z, y), (x, z)

    def join_node(self, t: Pair) -> int:
        return self.net.node(t[0])

    def edge_node(self, e: Pair) -> int:
        return self.net.node(e[1])


class RegionProgram(ClosureProgram):
    """``active_region``: right-linear closure over ``near`` (see the module docstring)."""

    name = "active_region"

    def seeds_and_edges(self, facts: Iterable[BaseFact]) -> tuple[set[Pair], set[Pair]]:
        state = base_state(list(facts))
        live = {s for s in state.triggered if s in state.sensors}
        seeds = {(r, s) for r, s in state.seeds if s in live}
        edges: set[Pair] = set()
        ordered = sorted(live, key=repr)
        for i, x in enumerate(ordered):
            for y in ordered[i + 1 :]:
                if any(
                    ((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2) ** 0.5 < self.k
                    for p in state.sensors[x]
                    for q in state.sensors[y]
                ):
                    edges.add((x, y))
                    edges.add((y, x))
        return seeds, edges

    def step(self, t: Pair, edges: PairIndex) -> Iterator[tuple[Pair, Pair]]:
        r, x = t
        for y in list(edges.seconds_of(x)):
            yield (x, y), (r, y)

    def uses(self, e: Pair, tuples: PairIndex) -> Iterator[tuple[Pair, Pair]]:
        x, y = e
        for r in list(tuples.firsts_of(x)):
            yield (r, x), (r, y)

    def producers(
        self, r: Pair, tuples: PairIndex, edges: PairIndex
    ) -> Iterator[tuple[Pair, Pair]]:
        region, y = r
        for x in list(edges.firsts_of(y)):
            if (region, x) in tuples:
                yield (region, x), (x, y)

    def join_node(self, t: Pair) -> int:
        return self.net.node(t[1])

    def edge_node(self, e: Pair) -> int:
        return self.net.node(e[0])


def make_program(view: str, net: Network, k: float) -> ClosureProgram:
    """The closure program of ``view`` (``reachable`` or ``active_region``)."""
    if view == "reachable":
        return ReachableProgram(net, k)
    if view == "active_region":
        return RegionProgram(net, k)
    check_view(view)
    raise NotBuiltYetError(
        f"the baselines maintain only {', '.join(CLOSURE_VIEWS)}; {view!r} is not one of them"
    )


class FactStore:
    """Live base facts by variable; a batch deletes variables, then inserts instances."""

    def __init__(self) -> None:
        self.facts: dict[str, BaseFact] = {}

    def apply(self, batch: Batch) -> None:
        """Deletes (unknown variables are ignored, as in Liu et al. 2008, §6) then inserts."""
        for var in batch.deletes:
            self.facts.pop(var, None)
        for fact in batch.inserts:
            self.facts[fact.var] = fact

    @property
    def live_vars(self) -> set[str]:
        """Variables of the live instances."""
        return set(self.facts)


@dataclass(frozen=True)
class Move:
    """What one :meth:`ClosureMaintainer.update` moves from and to: the view's tuples before,
    and the seeds and edges deleted and inserted."""

    old_tuples: set[Pair]
    seeds_del: set[Pair]
    seeds_ins: set[Pair]
    edges_del: set[Pair]
    edges_ins: set[Pair]


class ClosureMaintainer:
    """Keeps one closure view current; subclasses implement :meth:`update`."""

    def __init__(self, program: ClosureProgram) -> None:
        self.program = program
        self.net = program.net
        self.tuples = PairIndex()
        self.seeds: set[Pair] = set()
        self.edges = PairIndex()

    def update(self, seeds: set[Pair], edges: set[Pair]) -> ViewChange:
        """Move to the new seeds and edges; return the net change of the view."""
        raise NotImplementedError

    def begin(self, seeds: set[Pair], edges: set[Pair]) -> Move:
        """The move to ``seeds`` and ``edges``, its edge changes shipped to their join nodes."""
        old_edges = set(self.edges.pairs)
        move = Move(set(self.tuples.pairs), self.seeds - seeds, seeds - self.seeds,
                    old_edges - edges, edges - old_edges)
        self.ship_edge_changes(sorted(move.edges_del | move.edges_ins, key=repr))
        return move

    def finish(self, seeds: set[Pair], move: Move) -> ViewChange:
        """Take ``seeds`` as the current ones; the view's net change since ``move`` began."""
        self.seeds = set(seeds)
        return ViewChange(inserted=self.tuples.pairs - move.old_tuples,
                          deleted=move.old_tuples - self.tuples.pairs)

    def ship_edge_changes(self, changed: Iterable[Pair]) -> None:
        """Base edge inserts/deletes travel to the node where they join."""
        for e in changed:
            self.net.ship(self.program.edge_home(e), self.program.edge_node(e), e, view_tuple=False)
        self.net.end_round()

    def count_state(self) -> None:
        """Add this view's state to the per-node sizes (view tuples + edge copies)."""
        for t in self.tuples:
            self.net.metrics.nodes[self.program.home(t)].state_entries += 1
        for e in self.edges:
            self.net.metrics.nodes[self.program.edge_node(e)].state_entries += 1


class ClosureRuntime:
    """A baseline runtime: base facts in, closure views maintained, communication counted.

    ``placement`` (value → node) overrides the hash partitioning, e.g. to put the nodes of the
    paper's Fig. 3 on nodes of their own.
    """

    maintainer: type[ClosureMaintainer] = ClosureMaintainer

    def __init__(
        self,
        views: Iterable[str] = ("reachable",),
        partitions: int = 1,
        k: float = 20.0,
        placement: Placement | None = None,
    ) -> None:
        self.views = tuple(views)
        self.partitions = partitions
        self.k = k
        self.net = Network(partitions, placement)
        self.store = FactStore()
        self._maintainers = {
            view: self.maintainer(make_program(view, self.net, k)) for view in self.views
        }

    @property
    def metrics(self) -> BaselineMetrics:
        """Cumulative communication and state counters."""
        return self.net.metrics

    @property
    def live_vars(self) -> set[str]:
        """Variables of the live base instances."""
        return self.store.live_vars

    def apply(self, batch: Batch) -> dict[str, ViewChange]:
        """Apply one batch; the net change of every maintained view."""
        self.store.apply(batch)
        self.net.metrics.batches += 1
        facts = list(self.store.facts.values())
        out: dict[str, ViewChange] = {}
        for view, maintainer in self._maintainers.items():
            seeds, edges = maintainer.program.seeds_and_edges(facts)
            out[view] = maintainer.update(seeds, edges)
        for counters in self.net.metrics.nodes:
            counters.state_entries = 0
        for maintainer in self._maintainers.values():
            maintainer.count_state()
        return out

    def view(self, name: str) -> set[tuple]:
        """The current tuples of a maintained view."""
        if name not in self._maintainers:
            make_program(name, self.net, self.k)  # raises for unknown / unsupported views
            raise UnknownViewError(f"view {name!r} is not maintained here; views: {self.views}")
        return set(self._maintainers[name].tuples.pairs)
