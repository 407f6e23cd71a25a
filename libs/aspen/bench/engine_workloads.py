"""The engine benchmark's workloads: a build, then single-link updates that each change
``reachable``.

Batch 0 inserts every link of the topology (both directions, shuffled by the seed). Then:

* ``bridge`` — delete a bridge of the undirected topology (both directions: its two sides no
  longer reach each other), insert it back, and so on; the bridges (networkx ``bridges``) are
  taken in an order shuffled by the seed, one delete/insert pair each, round robin.
* ``random`` — each update is one directed link. With an RNG seeded by ``seed``: when no link
  is deleted the update deletes one; else it deletes or inserts back with a fair coin. A
  deletion takes the first live link, in an order shuffled afresh per update, whose removal
  changes ``reachable`` (its source no longer reaches its destination without it); an insertion
  takes a deleted link, chosen at random among those whose return changes ``reachable`` (its
  source does not reach its destination now). When one kind has no candidate the other is
  done. On a topology whose links all come in both directions the deletable links are the
  directions of bridges; as deletions accumulate the graph stops being symmetric.

Updates are :func:`aspen.generators.records.link_insert` / ``link_delete`` records, fed to Aspen
through :class:`aspen.bench.common.FactStream` as :func:`aspen.bench.peers.compare` does.

>>> from aspen.bench.common import topology
>>> topo = topology(tiny=True)
>>> [len(b) for b in bridge_updates(topo, 4)][1:], [len(b) for b in random_updates(topo, 3)][1:]
([2, 2, 2, 2], [1, 1, 1])
"""

from __future__ import annotations

import random
from collections.abc import Callable

import networkx as nx

from aspen.errors import ConfigError
from aspen.generators.records import Record, link_delete, link_insert
from aspen.generators.topology import Topology
from aspen.generators.workloads import link_inserts

__all__ = ["WORKLOADS", "bridge_updates", "random_updates", "workload"]


def bridge_updates(topo: Topology, updates: int, seed: int = 0) -> list[list[Record]]:
    """Batch 0 inserts every link; then ``updates`` batches alternately delete a bridge (both
    directions) and insert it back.

    >>> from aspen.bench.common import topology
    >>> batches = bridge_updates(topology(tiny=True), 2)
    >>> [r["op"] for r in batches[1]], [r["op"] for r in batches[2]]
    (['delete', 'delete'], ['insert', 'insert'])
    """
    graph = nx.Graph()
    cost = {}
    for a, b, c in topo.undirected():
        graph.add_edge(a, b)
        cost[(a, b)] = cost[(b, a)] = c
    bridges = sorted(tuple(sorted(edge)) for edge in nx.bridges(graph))
    if not bridges:
        raise ConfigError("the topology has no bridge: choose the workload 'random' instead")
    random.Random(seed).shuffle(bridges)
    batches: list[list[Record]] = [link_inserts(topo, seed=seed)]
    for i in range(updates):
        a, b = bridges[(i // 2) % len(bridges)]
        if i % 2 == 0:
            batches.append([link_delete(a, b), link_delete(b, a)])
        else:
            batches.append([link_insert(a, b, cost[(a, b)]), link_insert(b, a, cost[(b, a)])])
    return batches


def _changes_reachable(graph: nx.DiGraph, src: str, dst: str) -> bool:
    """Whether the link src→dst matters to ``reachable`` in ``graph`` (which holds it or not):
    without it, ``src`` does not reach ``dst``."""
    present = graph.has_edge(src, dst)
    if present:
        graph.remove_edge(src, dst)
    try:
        return not (src in graph and dst in graph and nx.has_path(graph, src, dst))
    finally:
        if present:
            graph.add_edge(src, dst)


def random_updates(topo: Topology, updates: int, seed: int = 0) -> list[list[Record]]:
    """Batch 0 inserts every link; then ``updates`` single directed-link deletions or
    re-insertions, each changing ``reachable`` (the module says how they are picked).

    >>> from aspen.bench.common import topology
    >>> batches = random_updates(topology(tiny=True), 4, seed=3)
    >>> batches[1][0]["op"], all(len(b) == 1 for b in batches[1:])
    ('delete', True)
    """
    rng = random.Random(seed)
    graph = nx.DiGraph()
    cost: dict[tuple[str, str], float] = {}
    for link in topo.links:
        graph.add_edge(link.src, link.dst)
        cost[(link.src, link.dst)] = link.cost
    deleted: list[tuple[str, str]] = []
    batches: list[list[Record]] = [link_inserts(topo, seed=seed)]
    for _ in range(updates):
        delete = not deleted or rng.random() < 0.5
        pick = _pick_deletion(graph, rng) if delete else _pick_insertion(graph, deleted, rng)
        if pick is None:  # none of this kind changes reachable: the other kind
            delete = not delete
            pick = _pick_deletion(graph, rng) if delete else _pick_insertion(graph, deleted, rng)
        if pick is None:
            raise ConfigError("no single-link update changes reachable on this topology")
        src, dst = pick
        if delete:
            graph.remove_edge(src, dst)
            deleted.append(pick)
            batches.append([link_delete(src, dst)])
        else:
            graph.add_edge(src, dst)
            deleted.remove(pick)
            batches.append([link_insert(src, dst, cost[pick])])
    return batches


def _pick_deletion(graph: nx.DiGraph, rng: random.Random) -> tuple[str, str] | None:
    """The first live link, in a fresh random order, whose removal changes reachable."""
    live = sorted(graph.edges())
    rng.shuffle(live)
    return next((e for e in live if _changes_reachable(graph, *e)), None)


def _pick_insertion(graph: nx.DiGraph, deleted: list[tuple[str, str]],
                    rng: random.Random) -> tuple[str, str] | None:
    """A deleted link, at random among those whose return changes reachable."""
    candidates = [e for e in deleted if _changes_reachable(graph, *e)]
    return rng.choice(candidates) if candidates else None


#: workload name → generator ``(topology, updates, seed) -> batches``.
WORKLOADS: dict[str, Callable[[Topology, int, int], list[list[Record]]]] = {
    "bridge": bridge_updates, "random": random_updates}


def workload(name: str, topo: Topology, updates: int, seed: int = 0) -> list[list[Record]]:
    """The batches of workload ``name`` (a one-line ConfigError for an unknown name).

    >>> from aspen.bench.common import topology
    >>> len(workload("bridge", topology(tiny=True), 3))
    4
    """
    if name not in WORKLOADS:
        raise ConfigError(f"unknown workload {name!r}; choose among {', '.join(WORKLOADS)}")
    return WORKLOADS[name](topo, updates, seed)
