"""Per-batch latency of a ``spark-submit`` per batch (the pipeline DAG) against a follower
(``aspen maintain --runtime spark --follow``); see :mod:`aspen.bench.follower`.

    .venv/bin/python benchmarks/follower_latency.py --nodes 100 --partitions 4
    .venv/bin/python benchmarks/follower_latency.py --nodes 1000 --partitions 12 --sizes 1 10

Prints the Markdown table and writes ``results/follower/<nodes>.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aspen.bench.common import machine_info
from aspen.bench.follower import follower_latency, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--degree", type=float, default=2.0)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--poll", type=float, default=0.5)
    parser.add_argument("--out", default="results/follower")
    args = parser.parse_args()
    result = follower_latency(args.nodes, args.degree, args.partitions, args.hosts,
                              tuple(args.sizes), driver_memory=args.driver_memory, poll=args.poll)
    result["machine"] = machine_info()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.nodes}.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"{result['nodes']} nodes, {result['links']} links, {args.partitions} partitions, "
          f"{args.hosts} hosts; build {result['build_s']:.1f} s (spark-submit), follower "
          f"started in {result['follower_start_s']:.1f} s")
    print(table(result))


if __name__ == "__main__":
    main()
