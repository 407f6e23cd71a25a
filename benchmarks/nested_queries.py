"""A nested continuous query maintained as stages against DuckDB recomputing it per one-change
batch; see :mod:`aspen.bench.nested_queries`.

    .venv/bin/python benchmarks/nested_queries.py
    .venv/bin/python benchmarks/nested_queries.py --pairs 2000 --batches 10

Prints the median in-memory step and DuckDB recompute (ms), their ratio, the stages and the
state's rows; writes ``results/nested_queries.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aspen.bench.common import machine_info
from aspen.bench.nested_queries import nested_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    result = nested_queries(pairs=args.pairs, batches=args.batches, seed=args.seed)
    result["machine"] = machine_info()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "nested_queries.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}))


if __name__ == "__main__":
    main()
