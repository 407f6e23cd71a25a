"""Provenance of SQL: plain vs instrumented run time, optimized vs unoptimized instrumentation,
the optimizer's own time — DuckDB in process.

    .venv/bin/python benchmarks/sql_provenance.py [--nodes 100 1000] [--tpch DIR]
        [--repeats 3] [--compose-cap 200000] [--all-plans] [--out FILE.json]

(a) lake-shaped tables built in memory per ``--nodes`` (links of ``topology(N, 2.4, 0)``,
sensors, ``reachable`` from scratch — with formulas from the in-process runtime up to
``--formula-nodes`` nodes); (b) with ``--tpch DIR``, TPC-H tables from ``DIR/<table>.parquet``
(e.g. ``tpchgen-cli parquet -s 1 --output-dir DIR``, offline) and the TPC-H queries the
dialect accepts. Prints one line per query (seconds; ratios) and writes every number as JSON
with ``--out``. What is measured: :mod:`aspen.bench.sql_provenance`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aspen.bench.sql_provenance import (
    LAKE_QUERIES,
    TPCH_QUERIES,
    TPCH_REFUSED,
    lake_tables,
    measure,
    table_lines,
    tpch_catalog,
    tpch_tables,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--formula-nodes", type=int, default=100,
                        help="build reachable's formulas up to this many nodes (default 100)")
    parser.add_argument("--tpch", type=Path, default=None, help="folder of TPC-H Parquet files")
    parser.add_argument("--tpch-queries", nargs="*", default=sorted(TPCH_QUERIES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compose-cap", type=int, default=200_000,
                        help="compose formulas when at most this many witness rows (0: never)")
    parser.add_argument("--all-plans", action="store_true", help="run every plan costed too")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    def say(line: str) -> None:
        print(f"... {line}", file=sys.stderr, flush=True)

    result: dict[str, object] = {}
    for nodes in args.nodes:
        frames, names = lake_tables(nodes, view_formulas=nodes <= args.formula_nodes)
        rows = measure(frames, LAKE_QUERIES, names=names, repeats=args.repeats,
                       compose=args.compose_cap > 0, compose_cap=args.compose_cap,
                       all_plans=args.all_plans, say=say)
        result[f"lake_{nodes}"] = rows
        print(f"== lake, {nodes} nodes ({len(frames['link'])} links, "
              f"{len(frames['reachable'])} reachable pairs); seconds")
        print("\n".join(table_lines(rows)))
    if args.tpch is not None:
        tables = tpch_tables(args.tpch)
        queries = tuple((q, TPCH_QUERIES[q]) for q in args.tpch_queries)
        rows = measure(tables, queries, tables=tpch_catalog(tables), repeats=args.repeats,
                       compose=args.compose_cap > 0, compose_cap=args.compose_cap,
                       all_plans=args.all_plans, say=say)
        result["tpch"] = rows
        print(f"== TPC-H ({len(tables['lineitem']):,} lineitem rows); seconds")
        print("\n".join(table_lines(rows)))
        print("not run: " + "; ".join(f"{k}: {v}" for k, v in TPCH_REFUSED.items()))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
