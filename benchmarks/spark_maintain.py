"""The Spark runtime per batch against DRed and a Spark recompute.

For each (nodes, partitions) configuration, one process (the bench worker, cut off after
``--cutoff`` seconds and recorded "did not finish") builds a Delta lake with every link,
maintains ``reachable`` through ``maintain_spark``, then applies batches of 1, 10 and 100 link
deletions, each followed by the same links inserted back (see :mod:`aspen.bench.spark_runtime`).
Per batch it prints wall time (and the phases: Delta apply of the base tables, rounds, publish,
writes), rounds, Spark jobs, rows shipped over the shuffles (messages + kill notices) next to
DRed's messages on the same partitions and a Spark DataFrame recompute of ``reachable`` (without
provenance), and ``build/wall``: the build's wall time over the batch's, the build being the
recompute that writes what a batch writes (views with provenance, node states).
Results go to ``results/spark-runtime/results.json`` and ``summary.md``.

    .venv/bin/python benchmarks/spark_maintain.py                       # 100 (4, 12), 1,000, 10,000
    .venv/bin/python benchmarks/spark_maintain.py --nodes 100 --partitions 4 --sizes 1 10
    .venv/bin/python benchmarks/spark_maintain.py --nodes 1000 --partitions 12 --degree 2.0
    .venv/bin/python benchmarks/spark_maintain.py --nodes 1000 --partitions 12 --hosts 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aspen.bench.common import machine_info
from aspen.bench.worker import run_task


def _configs(args: argparse.Namespace) -> list[tuple[int, int]]:
    out = []
    for nodes in args.nodes:
        parts = args.partitions if nodes == min(args.nodes) else args.partitions[-1:]
        out += [(nodes, p) for p in parts]
    return out


def _line(row: dict[str, Any], build_s: float) -> str:
    ratio_rows = row.get("dred_messages", 0) / max(1.0, row.get("rows_shipped", 0.0))
    ratio_time = row.get("recompute_s", float("nan")) / row["wall_seconds"]
    ratio_lake = row.get("recompute_lake_s", float("nan")) / row["wall_seconds"]
    rows_text = f"{ratio_rows:.0f}" if ratio_rows >= 10 else f"{ratio_rows:.2f}"  # inserts: < 1
    return (f"| {row['kind']} | {row['size']} | {row['wall_seconds']:.1f} | "
            f"{row.get('apply_seconds', 0):.1f} | {row.get('rounds_seconds', 0):.1f} | "
            f"{row.get('publish_seconds', 0) + row.get('write_seconds', 0):.1f} | "
            f"{row['rounds']:.0f} | {row['spark_jobs']:.0f} | {row['rows_shipped']:.0f} | "
            f"{row['dred_messages']:.0f} | {rows_text}× | {row.get('dred_s', 0) * 1000:.0f} | "
            f"{row.get('recompute_s', float('nan')):.1f} | {ratio_time:.2f} | "
            f"{row.get('recompute_lake_s', float('nan')):.1f} | {ratio_lake:.2f} | "
            f"{build_s / row['wall_seconds']:.2f} |")


HEADER = ("| batch | links | wall s | apply s | rounds s | publish+write s | rounds | Spark jobs "
          "| rows shipped | DRed msgs | DRed/Aspen rows | DRed ms | Spark recompute s "
          "| recompute/wall | lake recompute s | lake recompute/wall | build/wall |\n|"
          + "---|" * 17)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--partitions", type=int, nargs="+", default=[4, 12],
                        help="partition counts of the smallest topology; larger ones use the last")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--degree", type=float, default=2.4,
                        help="link tuples per node (2.0: a spanning tree plus one link)")
    parser.add_argument("--hosts", type=int, default=None,
                        help="Spark tasks a round runs the nodes on (default: maintain_spark's, "
                             "a host per task slot)")
    parser.add_argument("--cutoff", type=float, default=900.0)
    parser.add_argument("--out", default="results/spark-runtime")
    args = parser.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    lines = ["# Spark runtime per batch", "",
             f"Machine: {json.dumps(machine_info())}", "",
             f"`reachable`, lazy MinShip, {args.degree} link tuples per node, `local[2]`; "
             f"cut-off {args.cutoff:.0f} s per configuration. Rows shipped = messages + kill "
             "notices over the round shuffles; DRed = in-process DRed on the same partitions "
             "(messages it would ship); Spark recompute = semi-naive DataFrame loop of "
             "`reachable` from the live links given in memory, collected; lake recompute = "
             "the batch's apply + the same loop from the Delta `link` table, written to Delta "
             "(what a recompute job does). Neither recompute has provenance; the build is the "
             "recompute that has it (every live link into an empty lake: the same view and "
             "provenance a batch leaves, give or take the batch's links), so build/wall is the "
             "batch's gain over recomputing the tables it writes.", ""]
    for nodes, partitions in _configs(args):
        kwargs = {"nodes": nodes, "partitions": partitions, "sizes": args.sizes,
                  "degree": args.degree, "hosts": args.hosts}
        rec = run_task("spark_runtime.maintain_batches", kwargs, args.cutoff)
        records.append(rec)
        result = rec.get("result") or rec.get("partial") or {}
        title = (f"## {result.get('nodes', nodes)} nodes, {result.get('link_tuples', '?')} link "
                 f"tuples, {partitions} partitions on {args.hosts or 'the default'} hosts — "
                 f"{rec['status']} in {rec['seconds']:.0f} s")
        lines += [title, "", rec.get("note", ""), "", HEADER]
        batches = result.get("batches", [])
        build_s = next((r["wall_seconds"] for r in batches if r["kind"] == "build"), float("nan"))
        lines += [_line(row, build_s) for row in batches]
        lines.append("")
        print("\n".join(lines[-(len(batches) + 5):]), flush=True)
        (out / "results.json").write_text(json.dumps(records, indent=1))
        (out / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
