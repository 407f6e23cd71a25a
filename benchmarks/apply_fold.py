"""The apply's fold: one pandas group per key (the baseline) against many keys per Python call.

Ingests one batch of ``--links`` link insertions into a fresh lake — then, in the same batch,
deletes every tenth link and re-inserts every seventh with another cost (a replacement), so
some keys fold several updates — and folds the pending updates over the empty pre-state both
ways in one Spark application, alternating (ABBAAB for ``--repeats 3``):

- A, per key: ``groupBy(relation, key).applyInPandas(fold_key)`` (the apply's earlier form);
- B, per partition: :func:`aspen.lake.apply.fold_changes`, ``repartition(relation, key)``,
  sorted, ``mapInPandas(fold_sorted)`` (what ``apply_pending`` runs now).

Each arm's changes are materialized (``localCheckpoint``, then a count) and timed; the two
outputs are checked equal. Prints seconds per run and the ratio of the means, B / A.

    .venv/bin/python benchmarks/apply_fold.py [--links 2000] [--repeats 3] [--lake-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from aspen.generators.records import link_delete, link_insert
from aspen.generators.writers import write_jsonl
from aspen.lake.apply import fold_changes, fold_input
from aspen.lake.fold import FOLD_OUTPUT_DDL, fold_key
from aspen.lake.ingest import ingest_files
from aspen.settings import Settings
from aspen.spark.session import get_spark


def updates_file(folder: Path, links: int, seed: int) -> Path:
    """One batch: ``links`` insertions, then a delete of every tenth, a replacement of every
    seventh."""
    rng = random.Random(seed)
    nodes = max(50, int(links**0.5) * 2)
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < links:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            pairs.add((f"n{a}", f"n{b}"))
    ordered = sorted(pairs)
    records = [link_insert(s, d, 1.0) for s, d in ordered]
    records += [link_delete(s, d) for s, d in ordered[::10]]
    records += [link_insert(s, d, 2.0) for s, d in ordered[::7]]
    path = folder / "updates.jsonl"
    write_jsonl(records, path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lake-dir", default=None,
                        help="where the lake goes (default: a temp dir)")
    args = parser.parse_args()

    folder = Path(args.lake_dir or tempfile.mkdtemp(prefix="aspen-fold-"))
    folder.mkdir(parents=True, exist_ok=True)
    settings = Settings(lake=str(folder / "lake"))
    spark = get_spark("aspen-bench-apply-fold")
    report = ingest_files(settings, [updates_file(folder, args.links, args.seed)])
    rows = fold_input(spark, settings, 0, report.batch_id).localCheckpoint()
    print(f"{args.links} links, {rows.count()} fold input rows, "
          f"{spark.conf.get('spark.sql.shuffle.partitions')} shuffle partitions")

    arms = {
        "A per key": lambda: rows.groupBy("relation", "key").applyInPandas(fold_key,
                                                                            FOLD_OUTPUT_DDL),
        "B per partition": lambda: fold_changes(rows),
    }
    # ABBA ABBA …, cut at 2 × repeats runs: each arm goes first as often as the other
    order = [name for _ in range(args.repeats // 2 + 1) for name in (*arms, *reversed(arms))]
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    outputs: dict[str, list[tuple]] = {}
    for name in order[: 2 * args.repeats]:
        start = time.perf_counter()
        changes = arms[name]().localCheckpoint()
        count = changes.count()
        seconds[name].append(time.perf_counter() - start)
        print(f"{name}: {seconds[name][-1]:.2f} s, {count} change rows")
        outputs.setdefault(name, sorted(tuple(r) for r in changes.collect()))
    a, b = outputs.values()
    if a != b:
        raise SystemExit("the two folds' changes differ")
    print("outputs equal")
    means = {name: statistics.mean(values) for name, values in seconds.items()}
    print(json.dumps({"links": args.links, "seconds": seconds,
                      "B/A": round(means["B per partition"] / means["A per key"], 3)}))
    spark.stop()


if __name__ == "__main__":
    main()
