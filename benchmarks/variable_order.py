"""Provenance BDD size under different variable orders (Liu 2016, §3.5): DFS vs BFS vs arrival.

For each graph, links arrive in a random order (as in Liu 2016, §3.7.4); every
link gets one variable. The order of the variables is taken from the link graph by:

* ``dfs``      — depth-first edge order from scratch (``dfs_edge_order``),
* ``dfs-inc``  — the incremental depth-first labeling after inserting the links one by one,
* ``bfs``      — breadth-first edge order (``bfs_edge_order``),
* ``arrival``  — the arrival order (the naive baseline).

Then ``reachable(x, y)`` provenance for **all pairs** is built as the OR over simple paths by a
plain per-destination worklist fixpoint (no engine): ``R_y[x] = OR over links (x,z) of
v(x,z) ∧ R_y[z]`` with ``R_y[y]`` seeded by the links into y; absorption removes the walks
that repeat a node. The script prints, per order: build time, nodes in the shared manager
(``mgr nodes*``: CUDD's count includes nodes not yet garbage-collected, so it is only a rough
indication), the sum over (sampled) tuples of per-tuple BDD nodes and encoded bytes (the
paper's per-tuple provenance overhead), and ratios against the DFS order. An order whose manager
grows past ``--max-nodes`` or past ``--max-seconds`` is stopped and reported as such (dense
random graphs have very many simple paths under any order).

Run: ``.venv/bin/python benchmarks/variable_order.py [--seed 1] [--backend cudd] [--quick]``
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import deque
from collections.abc import Hashable, Sequence

import networkx as nx

from aspen.provenance.bdd import ProvenanceManager, default_backend, encode
from aspen.provenance.ordering import (
    IncrementalDfsLabeling,
    arrival_order,
    bfs_edge_order,
    dfs_edge_order,
    order_variables,
)

Edge = tuple[Hashable, Hashable]


class TooBig(Exception):
    """The manager grew past the node budget."""


# -- graphs -------------------------------------------------------------------------------------
def bidirectional(graph: nx.Graph) -> list[Edge]:
    return [e for u, v in graph.edges() for e in ((u, v), (v, u))]


def transit_stub(seed: int, transit: int = 4, stubs_per_transit: int = 3,
                 stub_size: int = 8) -> list[Edge]:
    """A GT-ITM-like transit-stub topology (100 nodes with the defaults), links both ways.

    Transit nodes form a ring plus one chord; each stub is a random spanning tree plus two
    extra links, attached to its transit node by one link.
    """
    rnd = random.Random(seed)
    g = nx.Graph()
    ts = [f"t{i}" for i in range(transit)]
    for i in range(transit):
        g.add_edge(ts[i], ts[(i + 1) % transit])
    if transit > 3:
        g.add_edge(ts[0], ts[transit // 2])
    for i, t in enumerate(ts):
        for s in range(stubs_per_transit):
            nodes = [f"s{i}.{s}.{k}" for k in range(stub_size)]
            for k in range(1, stub_size):
                g.add_edge(nodes[k], nodes[rnd.randrange(k)])
            for _ in range(2):
                a, b = rnd.sample(nodes, 2)
                g.add_edge(a, b)
            g.add_edge(t, nodes[0])
    return bidirectional(g)


def random_digraph(n: int, m: int, seed: int) -> list[Edge]:
    g = nx.gnm_random_graph(n, m, seed=seed, directed=True)
    return [(f"n{u}", f"n{v}") for u, v in g.edges()]


def random_sparse_bidirectional(n: int, seed: int) -> list[Edge]:
    """A connected sparse graph: random tree plus n/8 chords, links both ways."""
    rnd = random.Random(seed)
    g = nx.Graph()
    for k in range(1, n):
        g.add_edge(f"n{k}", f"n{rnd.randrange(k)}")
    for _ in range(n // 8):
        a, b = rnd.sample(range(n), 2)
        g.add_edge(f"n{a}", f"n{b}")
    return bidirectional(g)


# -- provenance ---------------------------------------------------------------------------------
def build_all_pairs(
    m: ProvenanceManager,
    edges: Sequence[Edge],
    var: dict[Edge, str],
    max_nodes: int,
    max_seconds: float,
) -> dict[tuple, object]:
    """reachable(x, y) for all pairs by a per-destination worklist fixpoint."""
    deadline = time.perf_counter() + max_seconds
    steps = 0
    preds: dict[Hashable, list[Edge]] = {}
    outs: dict[Hashable, list[Edge]] = {}
    for e in edges:
        preds.setdefault(e[1], []).append(e)
        outs.setdefault(e[0], []).append(e)
    v = {e: m.var(var[e]) for e in edges}
    nodes = sorted({n for e in edges for n in e}, key=str)
    formulas: dict[tuple, object] = {}
    for y in nodes:
        reach: dict[Hashable, object] = {}
        work = deque(dict.fromkeys(x for x, _ in preds.get(y, ())))
        queued = set(work)
        while work:
            x = work.popleft()
            queued.discard(x)
            f = m.false
            for e in outs.get(x, ()):
                z = e[1]
                if z == y:
                    f = m.or_(f, v[e])
                elif z in reach:
                    f = m.or_(f, m.and_(v[e], reach[z]))
            if f != reach.get(x, m.false):
                reach[x] = f
                for p, _ in preds.get(x, ()):
                    if p not in queued:
                        queued.add(p)
                        work.append(p)
            steps += 1
            if steps % 512 == 0 and (len(m.bdd) > max_nodes or time.perf_counter() > deadline):
                raise TooBig  # len() of a CUDD manager is costly: checked now and then
        for x, f in reach.items():
            formulas[(x, y)] = f
    return formulas


def orders(edges_arrived: Sequence[Edge]) -> dict[str, list[Edge]]:
    lab = IncrementalDfsLabeling()
    for e in edges_arrived:
        lab.insert(e)
    return {
        "dfs": dfs_edge_order(edges_arrived),
        "dfs-inc": list(lab.edges),
        "bfs": bfs_edge_order(edges_arrived),
        "arrival": arrival_order(edges_arrived),
    }


def measure(name: str, edges: list[Edge], args: argparse.Namespace) -> None:
    rnd = random.Random(args.seed)
    arrived = list(edges)
    rnd.shuffle(arrived)
    var = {e: f"v{i}" for i, e in enumerate(arrived)}
    n_nodes = len({n for e in edges for n in e})
    print(f"\n## {name}: {n_nodes} nodes, {len(arrived)} link tuples, backend {args.backend}")
    print(f"{'order':8} {'build s':>8} {'tuples':>7} {'mgr nodes*':>10} {'sum nodes':>10} "
          f"{'sum bytes':>11} {'B/tuple':>8} {'x dfs nodes':>11} {'x dfs bytes':>11}")
    base: tuple[int, int] | None = None
    for label, order in orders(arrived).items():
        m = ProvenanceManager(backend=args.backend)
        order_variables(m, order, var)
        t0 = time.perf_counter()
        try:
            formulas = build_all_pairs(m, arrived, var, args.max_nodes, args.max_seconds)
        except TooBig:
            print(f"{label:8} stopped after {time.perf_counter() - t0:.1f} s with {len(m.bdd)} "
                  f"nodes (budget {args.max_nodes} nodes, {args.max_seconds:.0f} s)")
            continue
        build_s = time.perf_counter() - t0
        keys = sorted(formulas, key=str)
        if args.sample and len(keys) > args.sample:
            keys = random.Random(args.seed).sample(keys, args.sample)
        total_nodes = sum(m.node_count(formulas[k]) for k in keys)
        total_bytes = sum(len(encode(formulas[k])) for k in keys)
        if label == "dfs":
            base = (total_nodes, total_bytes)
        ratio_n = f"{total_nodes / base[0]:.2f}" if base else "-"
        ratio_b = f"{total_bytes / base[1]:.2f}" if base else "-"
        print(f"{label:8} {build_s:8.2f} {len(formulas):7d} {len(m.bdd):10d} {total_nodes:10d} "
              f"{total_bytes:11d} {total_bytes / max(len(keys), 1):8.1f} {ratio_n:>11} "
              f"{ratio_b:>11}")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", default=default_backend(), choices=["cudd", "python"])
    ap.add_argument("--max-nodes", type=int, default=3_000_000,
                    help="stop an order whose manager grows past this many nodes")
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="stop an order whose build takes longer than this")
    ap.add_argument("--sample", type=int, default=2000,
                    help="measure per-tuple sizes on this many pairs (0 = all)")
    ap.add_argument("--quick", action="store_true", help="small graphs only")
    args = ap.parse_args(argv)
    graphs = [
        ("random digraph n=20 m=40", random_digraph(20, 40, args.seed)),
        ("random sparse bidirectional n=40", random_sparse_bidirectional(40, args.seed)),
    ]
    if not args.quick:
        graphs.append(("transit-stub 100 nodes", transit_stub(args.seed)))
    for name, edges in graphs:
        measure(name, edges, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
