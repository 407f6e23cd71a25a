"""Decoding proportional to the question and to the batch: a fresh what-if, and one batch's
re-decode, on an existing lake (read only; nothing is written).

1. A fresh what-if, as ``aspen what-if`` runs it in process (``LakeProvenance`` opened, the
   live instances looked up, ``what_if``), for each ``--delete`` reference, ``--repeats`` times:
   seconds, and the rows decoded against the rows the views hold.
2. When the ledger has two committed batches or more: the reading of the batch before the last,
   warmed (every row decoded), then advanced to the last batch (``LakeProvenance.advance``) and
   warmed again — the console's work after a batch — against a fresh full decode of the last
   batch. The registry is read at its latest version by both readings.

Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/decode_follow.py --lake LAKE \
        --delete link:s0.3.2.3:s0.3.2.4 --delete sensor:s44 [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from aspen.bench.provenance_order import previous_versions
from aspen.catalog import VIEWS
from aspen.lake.deltars import table_exists
from aspen.pipeline.lake_provenance import (
    LakeProvenance,
    parse_base_ref,
    provenance_versions,
)
from aspen.settings import Settings


def fresh_what_if(settings: Settings, ref: str) -> tuple[float, int, int, int]:
    """Seconds, rows lost, rows decoded and rows held of one fresh what-if on ``ref``."""
    started = time.perf_counter()
    reading = LakeProvenance(settings)
    lost = reading.what_if(reading.live_vars_of(*parse_base_ref(ref)))
    seconds = time.perf_counter() - started
    held = [v for v in VIEWS if table_exists(settings, v)]
    return (seconds, sum(len(t) for t in lost.values()),
            sum(reading.decoded_count(v) for v in held),
            sum(len(reading.tuples(v)) for v in held))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", required=True)
    parser.add_argument("--delete", action="append", default=[], metavar="RELATION:KEY")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    settings = Settings(lake=args.lake)
    for ref in args.delete:
        runs = [fresh_what_if(settings, ref) for _ in range(args.repeats)]
        seconds = [run[0] for run in runs]
        _, lost, decoded, held = runs[-1]
        print(f"fresh what-if {ref}: median {statistics.median(seconds):.2f} s "
              f"(min {min(seconds):.2f}, max {max(seconds):.2f}); {lost} rows lost, "
              f"{decoded} of {held} rows decoded")
    before = previous_versions(settings)
    if before is None:
        print("one committed batch: no batch to follow")
        return
    earlier = LakeProvenance(settings, versions=before)
    started = time.perf_counter()
    earlier.warm()
    print(f"batch {earlier.batch}: full decode {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    later = earlier.advance(provenance_versions(settings))
    advanced = time.perf_counter() - started
    started = time.perf_counter()
    later.warm()
    warmed = time.perf_counter() - started
    print(f"batch {later.batch} derived: advance {advanced:.2f} s + decode of the changed rows "
          f"{warmed:.2f} s; {later.followed}")
    started = time.perf_counter()
    LakeProvenance(settings).warm()
    print(f"batch {later.batch} decoded afresh: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
