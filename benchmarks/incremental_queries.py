"""Incremental continuous queries against recomputation per one-change batch (1,000-node link
table, 50 batches); see :mod:`aspen.bench.incremental_queries`.

    .venv/bin/python benchmarks/incremental_queries.py
    .venv/bin/python benchmarks/incremental_queries.py --nodes 200 --batches 10

Prints per query the median times (in memory, with the Delta writes, DuckDB recompute), the
ratio and the state's size; writes ``results/incremental_queries.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aspen.bench.common import machine_info
from aspen.bench.incremental_queries import incremental_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    result = incremental_queries(args.nodes, args.batches, args.seed)
    result["machine"] = machine_info()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "incremental_queries.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"{result['nodes']} nodes, {result['links']} links, {result['batches']} one-change "
          f"batches; mismatches with recompute: {result['mismatches']}")
    for name, q in result["queries"].items():
        print(f"{name}: {q['sql']}")
        print(f"  build from scratch (in process) {q['build_s'] * 1000:.1f} ms")
        print(f"  median per batch: incremental {q['median_incremental_s'] * 1000:.3f} ms, "
              f"incremental + Delta writes {q['median_incremental_delta_s'] * 1000:.1f} ms, "
              f"DuckDB recompute {q['median_recompute_s'] * 1000:.1f} ms")
        print(f"  ratio recompute / incremental: {q['ratio']:g}x in memory, "
              f"{q['ratio_with_delta']:g}x with the Delta writes")
        print(f"  state rows per batch: {q['state_rows_min']:,} – {q['state_rows_max']:,}")


if __name__ == "__main__":
    main()
