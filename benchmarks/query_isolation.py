"""A one-link change's update-landed → views-committed latency through a local follower with 0
and with 200 registered trivial continuous queries; see :mod:`aspen.bench.query_isolation`.

    .venv/bin/python benchmarks/query_isolation.py
    .venv/bin/python benchmarks/query_isolation.py --queries 50 --changes 4

Prints both arms' latencies, their medians and the ratio; writes ``results/query_isolation.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aspen.bench.common import machine_info
from aspen.bench.query_isolation import query_isolation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--changes", type=int, default=6)
    parser.add_argument("--poll", type=float, default=0.2)
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    result = query_isolation(args.nodes, args.queries, args.changes, args.poll)
    result["machine"] = machine_info()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "query_isolation.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"{result['nodes']} nodes, {result['links']} links; {result['queries']} queries "
          f"registered in {result['register_s']:.1f} s")
    print("without queries: " + ", ".join(f"{s:.2f}" for s in result["without_s"]) + " s")
    print(f"with {result['queries']} queries: "
          + ", ".join(f"{s:.2f}" for s in result["with_s"]) + " s")
    print(f"median {result['median_without_s']:.2f} s → {result['median_with_s']:.2f} s: ratio "
          f"{result['ratio']:.2f} (target ≤ {result['target_ratio']:g}: "
          f"{'met' if result['met'] else 'missed'})")
    for line in result["worker_lines"]:
        print("  follower: " + line)


if __name__ == "__main__":
    main()
