"""Provenance per variable order on lakes the pipeline wrote: before (arrival) and after (DFS).

    .venv/bin/python benchmarks/provenance_order.py [--lakes demo,dense,n1000]
        [--orders arrival,bfs,dfs] [--root DIR] [--limit SECONDS] [--sift] [--reuse]
        [--engine-nodes N] [--out FILE.json]

Builds one lake per lake kind and order (the demo through Airflow and spark-submit; the dense
and 1,000-node lakes in process), measures each (bytes and BDD nodes per view, warm-up,
what-if, explain, maintain time per batch, the decode of one batch's changes), prints one line
per lake and order and the targets. What is measured: :mod:`aspen.bench.provenance_order`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from aspen.bench.provenance_order import (
    LAKES,
    engine_reachable,
    in_child,
    provenance_order,
    target_lines,
)
from aspen.settings import VARIABLE_ORDERS


def _names(text: str, allowed: tuple[str, ...] | list[str], what: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    wrong = [n for n in names if n not in allowed]
    if wrong or not names:
        raise SystemExit(f"--{what} takes a comma-separated list of {', '.join(allowed)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lakes", default="demo,dense,n1000")
    parser.add_argument("--orders", default=",".join(("arrival", "bfs", "dfs")))
    parser.add_argument("--root", type=Path, default=None, help="where the lakes are built")
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds per lake build")
    parser.add_argument("--sift", action="store_true", help="also count nodes after sifting")
    parser.add_argument("--engine-nodes", type=int, default=None,
                        help="also build reachable alone in process at this many nodes")
    parser.add_argument("--reuse", action="store_true",
                        help="measure the lakes an earlier run built under --root again")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    args = parser.parse_args(argv)
    lakes = _names(args.lakes, list(LAKES), "lakes")
    orders = _names(args.orders, VARIABLE_ORDERS, "orders")
    root = args.root or Path(tempfile.mkdtemp(prefix="aspen-provenance-order-"))
    result = provenance_order(root, lakes, orders, sift=args.sift, limit_s=args.limit,
                              reuse=args.reuse,
                              say=lambda line: print(f"... {line}", file=sys.stderr, flush=True))
    for line in target_lines(result):
        print(line)
    if args.engine_nodes:
        for order in orders:
            found = in_child(engine_reachable, (args.engine_nodes, order), args.limit, root)
            result.setdefault("engine", {})[order] = found
            print(f"reachable alone, {args.engine_nodes} nodes, {order}: {found}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
