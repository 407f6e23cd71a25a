"""Insert all links, then delete them one at a time: absorption (lazy, eager) against DRed.

On a transit-stub topology (100 nodes by default), build ``reachable`` with each scheme on the
same partitions, then delete every link tuple one at a time (each deletion one batch), recording
per deletion the messages shipped between nodes and the wall time. Prints per-scheme totals,
means, and the ratio DRed / absorption measured in this run; then the build with the CUDD
backend against the pure-Python one.

    .venv/bin/python benchmarks/deletions.py [--avg-degree 2.4] [--partitions 12] [--limit N]

The paper's dense default (4.0 link tuples per node, 400 tuples) is out of reach for all-pairs
BDD provenance (docs/architecture.md, "Limits"); ``--avg-degree 4`` tries it with a cut-off.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from aspen.baselines.dred import DRedRuntime
from aspen.engine.batch import BaseFact, Batch
from aspen.generators.topology import TransitStubParams, transit_stub
from aspen.runtime.local import LocalRuntime


def facts_of(avg_degree: float, seed: int) -> list[BaseFact]:
    topo = transit_stub(TransitStubParams(avg_degree=avg_degree), seed=seed)
    return [
        BaseFact("link", (link.src, link.dst, link.cost), f"v{i}")
        for i, link in enumerate(topo.links)
    ]


def run_scheme(name: str, make, facts: list[BaseFact], order: list[str], cutoff: float) -> dict:
    runtime = make()
    started = time.perf_counter()
    runtime.apply(Batch(inserts=tuple(facts)))
    if hasattr(runtime, "flush") and name == "absorption-eager":
        runtime.flush()
    build_s = time.perf_counter() - started
    build_msgs = runtime.metrics.total().messages
    per_msgs, per_time = [], []
    for var in order:
        before = runtime.metrics.total().messages
        t0 = time.perf_counter()
        runtime.apply(Batch(deletes=frozenset({var})))
        per_time.append(time.perf_counter() - t0)
        per_msgs.append(runtime.metrics.total().messages - before)
        if time.perf_counter() - started > cutoff:
            break
    return {
        "scheme": name,
        "build_s": build_s,
        "build_messages": build_msgs,
        "deletions": len(per_msgs),
        "del_messages": sum(per_msgs),
        "del_time_s": sum(per_time),
        "mean_msgs": statistics.mean(per_msgs) if per_msgs else 0.0,
        "mean_ms": 1000 * statistics.mean(per_time) if per_time else 0.0,
        "max_ms": 1000 * max(per_time) if per_time else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--avg-degree", type=float, default=2.4)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="delete at most N link tuples")
    parser.add_argument("--cutoff", type=float, default=300.0, help="seconds per scheme")
    args = parser.parse_args()

    facts = facts_of(args.avg_degree, args.seed)
    order = [f.var for f in facts]
    random.Random(args.seed).shuffle(order)
    order = order[: args.limit] if args.limit else order
    p = args.partitions
    print(f"{len(facts)} link tuples, {p} partitions, deleting {len(order)} one at a time")
    schemes = {
        "absorption-lazy": lambda: LocalRuntime(("reachable",), partitions=p, mode="lazy",
                                                measure_bytes=False),
        "absorption-eager": lambda: LocalRuntime(("reachable",), partitions=p, mode="eager",
                                                 measure_bytes=False),
        "dred": lambda: DRedRuntime(("reachable",), partitions=p),
    }
    results = {name: run_scheme(name, make, facts, order, args.cutoff)
               for name, make in schemes.items()}
    header = f"{'scheme':<18}{'build s':>9}{'build msgs':>12}{'deleted':>9}{'del msgs':>10}" \
             f"{'msgs/del':>10}{'ms/del':>9}{'max ms':>9}"
    print(header)
    for r in results.values():
        print(f"{r['scheme']:<18}{r['build_s']:>9.2f}{r['build_messages']:>12}{r['deletions']:>9}"
              f"{r['del_messages']:>10}{r['mean_msgs']:>10.1f}{r['mean_ms']:>9.1f}{r['max_ms']:>9.1f}")
    dred = results["dred"]
    for name in ("absorption-lazy", "absorption-eager"):
        r = results[name]
        if r["deletions"] == dred["deletions"] and r["del_messages"]:
            print(f"DRed / {name}: messages ×{dred['del_messages'] / r['del_messages']:.1f}, "
                  f"time ×{dred['del_time_s'] / max(r['del_time_s'], 1e-9):.1f}")
        else:
            print(f"DRed / {name}: not comparable "
                  "(different number of deletions within the cut-off)")

    print("build of reachable with exact provenance (lazy + flush), CUDD vs pure Python:")
    for backend in ("cudd", "python"):
        rt = LocalRuntime(("reachable",), partitions=p, mode="lazy", backend=backend,
                          measure_bytes=False)
        t0 = time.perf_counter()
        rt.apply(Batch(inserts=tuple(facts)))
        rt.flush()
        print(f"  {backend:<7} {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
