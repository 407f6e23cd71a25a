"""The apply of one batch, on Spark against in process.

Builds a lake whose registry holds ``--registry`` link instances (one ingest batch, applied),
then, alternating the two paths (ABBA… for ``--repeats``), ingests one more batch of
``--updates`` link insertions and applies it:

- A: :func:`aspen.lake.apply.apply_pending` with ``in_process=False`` — the pre-state query,
  the distributed fold and a Delta MERGE per table, in one warm Spark application;
- B: the same call with ``in_process=True`` — :func:`aspen.lake.apply_local.apply_in_process`,
  pandas and delta-rs in this process, no Spark job.

Both write the same lake, each its own batch. Prints seconds per apply and the ratio of the
means, A / B.

    .venv/bin/python benchmarks/apply_paths.py [--registry 2000] [--updates 1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from aspen.generators.records import link_insert
from aspen.generators.writers import write_jsonl
from aspen.lake.apply import apply_pending
from aspen.lake.ingest import ingest_files
from aspen.settings import Settings
from aspen.spark.session import get_spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registry", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lake-dir", default=None)
    args = parser.parse_args()

    folder = Path(args.lake_dir or tempfile.mkdtemp(prefix="aspen-apply-paths-"))
    lake = Settings(lake=str(folder / "lake"))
    spark = get_spark("aspen-apply-paths")
    base = folder / "base.jsonl"
    write_jsonl([link_insert(f"n{i}", f"m{i}", 1.0) for i in range(args.registry)], base)
    ingest_files(lake, [base])
    apply_pending(spark, lake, in_process=False)  # warms the Spark path's code and logs
    seconds: dict[str, list[float]] = {"spark": [], "in_process": []}
    order = [("spark", "in_process"), ("in_process", "spark")]
    batch = 0
    for repeat in range(args.repeats):
        for arm in order[repeat % 2]:
            batch += 1
            path = folder / f"batch-{batch}.jsonl"
            write_jsonl([link_insert(f"b{batch}", f"x{i}", 2.0) for i in range(args.updates)],
                        path)
            ingest_files(lake, [path])
            started = time.perf_counter()
            report = apply_pending(spark, lake, in_process=arm == "in_process")
            seconds[arm].append(time.perf_counter() - started)
            assert report.born == args.updates, report
    means = {arm: statistics.mean(values) for arm, values in seconds.items()}
    print(json.dumps({"registry": args.registry, "updates": args.updates, "seconds": seconds,
                      "mean": means, "spark / in_process": means["spark"] / means["in_process"]},
                     indent=1))


if __name__ == "__main__":
    main()
