"""Soak: a follower under sustained churn for a while; do backlog, latency or memory grow?
See :mod:`aspen.bench.soak`.

    .venv/bin/python benchmarks/soak.py                      # 100 nodes, 5 updates/s, 30 min
    .venv/bin/python benchmarks/soak.py --minutes 3          # a short look

Prints the summary (latency p50/p95, backlog, resident memory, a verdict per quantity) and
writes ``soak.json``, ``samples.csv``, ``batches.csv`` and ``soak.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aspen.bench.common import machine_info
from aspen.bench.soak import soak, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--rate", type=float, default=5.0, help="updates per second")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--every", type=float, default=2.0, help="seconds between ingest files")
    parser.add_argument("--ttl-share", type=float, default=0.2,
                        help="share of insertions with a TTL (30–120 s)")
    parser.add_argument("--expire-every", type=float, default=60.0)
    parser.add_argument("--runtime", choices=("local", "spark"), default="local")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/soak")
    args = parser.parse_args()
    result = soak(args.nodes, args.rate, args.minutes, args.every, args.ttl_share,
                  expire_every=args.expire_every, runtime=args.runtime, seed=args.seed)
    summary = write_report(result, Path(args.out))
    summary["machine"] = machine_info()
    print(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
