"""The Spark runtime's round protocol on the 100-node topology: rows shipped per deletion against
DRed on the same partitions, and where a round's time goes.

``maintain --runtime spark`` ships exactly the outboxes of :func:`aspen.runtime.rounds.step_node`
through Spark's shuffle; this script runs the same protocol in-process (``RoundRuntime``, the
``reachable`` view) so that the rows a batch would ship are counted without Spark's per-round
overhead (≈0.5 s and two Spark jobs per round on ``local[2]``, measured in the README). It builds
``reachable``, then deletes ``--deletions`` link tuples one batch each, and prints per deletion the
rows shipped and rounds, next to DRed's messages (same partitions, same deletions), and the round
protocol's time with and without the per-worker node cache (a cache hit skips decoding a state).

    .venv/bin/python benchmarks/spark_rounds.py [--partitions 4] [--deletions 10]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from aspen.baselines.dred import DRedRuntime
from aspen.engine.batch import BaseFact, Batch
from aspen.generators.topology import TransitStubParams, transit_stub
from aspen.runtime.rounds import NodeCache, RoundRuntime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--avg-degree", type=float, default=2.4)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--deletions", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    topo = transit_stub(TransitStubParams(avg_degree=args.avg_degree), seed=args.seed)
    facts = [BaseFact("link", (ln.src, ln.dst, ln.cost), f"v{i}")
             for i, ln in enumerate(topo.links)]
    victims = random.Random(args.seed).sample([f.var for f in facts], args.deletions)
    print(f"{len(topo.node_ids)} nodes, {len(facts)} link tuples, {args.partitions} partitions, "
          f"{args.deletions} single-link deletions")

    results = {}
    for label, cache in (("rounds+cache", NodeCache()), ("rounds", None)):
        rt = RoundRuntime(views=("reachable",), partitions=args.partitions, cache=cache)
        started = time.perf_counter()
        rt.apply(Batch(inserts=tuple(facts)))
        build = (time.perf_counter() - started, rt.rounds, rt.shipped)
        rows, rounds, seconds = [], [], []
        for var in victims:
            r0, s0, t0 = rt.rounds, rt.shipped, time.perf_counter()
            rt.apply(Batch(deletes=frozenset({var})))
            seconds.append(time.perf_counter() - t0)
            rounds.append(rt.rounds - r0)
            rows.append(rt.shipped - s0)
        results[label] = (build, rows, rounds, seconds)
        print(f"{label:>13}: build {build[0]:.1f} s, {build[1]} rounds, {build[2]} rows shipped; "
              f"per deletion: {statistics.mean(rows):.1f} rows, {statistics.mean(rounds):.1f} "
              f"rounds, {statistics.mean(seconds):.2f} s")

    dred = DRedRuntime(("reachable",), partitions=args.partitions)
    dred.apply(Batch(inserts=tuple(facts)))
    dred_msgs = []
    for var in victims:
        before = dred.metrics.total().messages
        dred.apply(Batch(deletes=frozenset({var})))
        dred_msgs.append(dred.metrics.total().messages - before)
    rows = results["rounds+cache"][1]
    print(f"{'DRed':>13}: per deletion {statistics.mean(dred_msgs):.1f} messages")
    print(f"ratio DRed messages / absorption rows shipped: "
          f"{sum(dred_msgs) / max(1, sum(rows)):.1f}x (measured in this run)")
    cached, plain = results["rounds+cache"], results["rounds"]
    print(f"node cache: build {plain[0][0] / cached[0][0]:.1f}x faster, deletions "
          f"{sum(plain[3]) / sum(cached[3]):.1f}x faster (same rows shipped: "
          f"{plain[1] == cached[1]})")


if __name__ == "__main__":
    main()
