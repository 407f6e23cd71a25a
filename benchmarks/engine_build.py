"""Build ``reachable`` over a transit-stub-like graph, then delete links one at a time.

Prints build time, messages and BDD size for each backend (CUDD vs pure Python) and mode, then the
per-deletion convergence time and messages. No assertions: this is a measurement script.

    .venv/bin/python benchmarks/engine_build.py [--links 110] [--deletions 20] [--backends cudd python]

Measured (2 shared cores, CUDD, dynamic reordering off, 12 partitions, 100 nodes): 204 link tuples
lazy build 0.4 s + flush to exact provenance 1.1 s (pure Python 4.1x slower); 220 tuples lazy
0.4 s + 5.9 s flush, eager 7.2 s; 240 tuples about 67 s; the dense default of the paper
(``--links 200``, 400 tuples, stubs with ~15 links among 8 nodes) did not finish in 10 minutes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import networkx as nx

from aspen.engine.batch import BaseFact, Batch
from aspen.engine.runtime import LocalRuntime


def transit_stub(transits: int = 4, stubs_per_transit: int = 3, stub_size: int = 8,
                 links: int = 200, seed: int = 7) -> list[tuple[str, str, float]]:
    """An undirected transit-stub-like topology as directed (src, dst, latency) link tuples:
    50 ms transit-transit, 10 ms transit-stub, 2 ms within a stub (000 §6.2)."""
    rng = random.Random(seed)
    edges: dict[frozenset, float] = {}
    tnodes = [f"t{i}" for i in range(transits)]
    for i in range(transits):  # a ring plus one chord per node
        edges[frozenset((tnodes[i], tnodes[(i + 1) % transits]))] = 50.0
    for i in range(transits):
        edges[frozenset((tnodes[i], tnodes[(i + 2) % transits]))] = 50.0
    stubs: list[list[str]] = []
    for i, t in enumerate(tnodes):
        for j in range(stubs_per_transit):
            nodes = [f"s{i}_{j}_{n}" for n in range(stub_size)]
            stubs.append(nodes)
            edges[frozenset((t, nodes[0]))] = 10.0
            for a, b in nx.random_labeled_tree(stub_size, seed=rng.randrange(10**6)).edges():
                edges[frozenset((nodes[a], nodes[b]))] = 2.0
    while len(edges) < links:
        nodes = rng.choice(stubs)
        a, b = rng.sample(nodes, 2)
        edges[frozenset((a, b))] = 2.0
    out = []
    for pair, cost in sorted(edges.items(), key=lambda kv: sorted(kv[0])):
        a, b = sorted(pair)
        out += [(a, b, cost), (b, a, cost)]
    return out


def build(links, backend: str, mode: str, partitions: int, measure_bytes: bool):
    rt = LocalRuntime(views=("reachable",), partitions=partitions, mode=mode, backend=backend,
                      measure_bytes=measure_bytes)
    facts = tuple(BaseFact("link", link, f"v{i}") for i, link in enumerate(links))
    start = time.perf_counter()
    rt.apply(Batch(inserts=facts))
    built = time.perf_counter() - start
    start = time.perf_counter()
    rt.flush()
    flushed = time.perf_counter() - start
    return rt, built, flushed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--links", type=int, default=110, help="undirected links (x2 tuples)")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--deletions", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["cudd", "python"])
    parser.add_argument("--modes", nargs="+", default=["lazy", "eager"])
    parser.add_argument("--measure-bytes", action="store_true")
    args = parser.parse_args()
    links = transit_stub(links=args.links)
    nodes = {s for s, _d, _c in links}
    print(f"graph: {len(nodes)} nodes, {len(links)} link tuples, {args.partitions} partitions")
    timings: dict[tuple[str, str], float] = {}
    for backend in args.backends:
        for mode in args.modes:
            rt, built, flushed = build(links, backend, mode, args.partitions, args.measure_bytes)
            total = rt.metrics.total()
            view = rt.view("reachable")
            size = sum(rt.manager.node_count(f) for f in list(view.values())[:200])
            timings[(backend, mode)] = built
            print(f"[{backend:6s} {mode:5s}] build {built:7.2f} s  flush {flushed:6.2f} s  "
                  f"tuples {len(view)}  messages {total.messages}  processed {total.processed}  "
                  f"prov bytes {total.prov_bytes}  nodes(first 200 formulas) {size}")
            if args.deletions and backend == args.backends[0]:
                rng = random.Random(1)
                victims = rng.sample(sorted(rt.live_vars, key=lambda v: int(v[1:])), args.deletions)
                times, msgs, removed = [], [], 0
                for var in victims:
                    before = rt.metrics.total().messages
                    start = time.perf_counter()
                    delta = rt.apply(Batch(deletes=frozenset({var})))
                    times.append(time.perf_counter() - start)
                    msgs.append(rt.metrics.total().messages - before)
                    removed += len(delta["reachable"].deleted)
                print(f"    {args.deletions} deletions: mean {statistics.mean(times) * 1e3:.1f} ms, "
                      f"max {max(times) * 1e3:.1f} ms, mean messages {statistics.mean(msgs):.1f}, "
                      f"tuples removed {removed}")
    for mode in args.modes:
        if ("cudd", mode) in timings and ("python", mode) in timings:
            ratio = timings[("python", mode)] / timings[("cudd", mode)]
            print(f"{mode}: python/cudd build time ratio {ratio:.1f}x")


if __name__ == "__main__":
    main()
