"""Aspen's per-update cost against Differential Dataflow and DuckDB on the same workloads.

Runs :func:`aspen.bench.engine_peers.run` (each scheme in a process of its own; one whose build,
or whose updates after it, take more than ``--budget-s`` is stopped and reported as "did not
finish"; the Differential Dataflow peer in
``benchmarks/dataflow_peer`` is built with cargo on first use), writes the JSON report and
prints a markdown table with the ratios to Differential Dataflow. Every scheme's view is
checked against Differential Dataflow's after every batch; a mismatch is printed as an
EQUALITY FAILURE and the script exits 1.

    .venv/bin/python benchmarks/engine_peers.py [--nodes 100,1000,3000] [--updates 20]
        [--workloads bridge,random] [--views reachable,min_cost]
        [--schemes native,reference,duckdb,dataflow] [--budget-s 600]
        [--out results/engine_peers.json]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aspen.bench.engine_peers import SCHEMES, VIEWS, markdown, run
from aspen.errors import AspenError


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,1000,3000", help="topology sizes, comma-separated")
    parser.add_argument("--updates", type=int, default=20, help="update batches after the build")
    parser.add_argument("--workloads", default="bridge,random")
    parser.add_argument("--views", default=",".join(VIEWS))
    parser.add_argument("--schemes", default=",".join(SCHEMES))
    parser.add_argument("--budget-s", type=float, default=600.0,
                        help="seconds a scheme may build one case, and again update it")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tiny", action="store_true", help="the 22-node topology instead")
    parser.add_argument("--out", type=Path, default=Path("results/engine_peers.json"))
    args = parser.parse_args(argv)
    try:
        report = run(nodes=[int(n) for n in _names(args.nodes)], updates=args.updates,
                     workloads=_names(args.workloads), views=_names(args.views),
                     schemes=_names(args.schemes), budget_s=args.budget_s, seed=args.seed,
                     tiny=args.tiny, out=args.out)
    except (AspenError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print()
    print(markdown(report))
    print(f"\nreport written to {args.out}")
    return 0 if report["all_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
