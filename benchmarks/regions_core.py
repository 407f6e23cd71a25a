"""The region family on the compiled core against the reference operators, same sensor field.

A field of N sensors on a 10 m grid (``aspen.generators.sensors.sensor_grid``, 5 spread seeds,
k = 20 m) goes through ``aspen.generators.workloads.sensor_batches``: the setup batch (sensors,
seeds, the seeds triggered) and one batch triggering ``--fraction`` of the other sensors are
the **build** (then a flush, as every maintained batch ends); then ``--changes`` batches of
**trigger changes**, each un-triggering ``--size`` triggered sensors and triggering as many
others, each applied and flushed. ``LocalRuntime`` with the three region views, lazy, 12 query
nodes, on ``--core native`` (decision 0057) or ``reference``; each (N, core) runs in a process
of its own (its peak RSS is its own). Every batch's rows of the three views are checksummed,
and the cores' checksums must agree. No assertions on time: this is a measurement script.

    .venv/bin/python benchmarks/regions_core.py [--sensors 1000 3000] [--cores native reference]
        [--fraction 0.3] [--changes 5] [--size 20] [--budget-s 600]

Numbers: docs/performance.md, "The compiled core against Differential Dataflow", "Regions".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

from aspen.bench.common import FactStream
from aspen.generators.records import triggered_delete, triggered_insert
from aspen.generators.sensors import sensor_grid
from aspen.generators.workloads import sensor_batches
from aspen.runtime.local import LocalRuntime

VIEWS = ("active_region", "region_sizes", "largest_regions")
#: grid columns × rows of 10 m cells per field size
SHAPES = {1000: (40, 25), 3000: (60, 50)}


def _checksum(rt: LocalRuntime) -> str:
    digest = hashlib.sha256()
    for view in VIEWS:
        digest.update(repr(sorted(rt.view(view), key=repr)).encode())
    return digest.hexdigest()[:16]


def one(sensors: int, core: str, fraction: float, changes: int, size: int) -> dict[str, Any]:
    """Build and change one field on one core; times in seconds."""
    columns, rows = SHAPES.get(sensors, (sensors, 1))
    grid = sensor_grid(width=10.0 * columns, height=10.0 * rows, seed=0)
    setup, trigger, _ = sensor_batches(grid, seed=0, trigger_fraction=fraction)
    stream = FactStream()
    rt = LocalRuntime(views=VIEWS, partitions=12, mode="lazy", core=core)
    start = time.perf_counter()
    rt.apply(stream.batch(setup))
    rt.apply(stream.batch(trigger))
    built = time.perf_counter()
    rt.flush()
    flushed = time.perf_counter()
    sums = [_checksum(rt)]
    members = len(rt.view("active_region"))
    rng = random.Random(1)
    on = {r["id"] for r in trigger} | {s.id for s in grid.seeds}
    seeds = {s.id for s in grid.seeds}
    times = []
    for _ in range(changes):
        off = rng.sample(sorted(on - seeds), size)
        new = rng.sample(sorted({s.id for s in grid.sensors} - on), size)
        records = [triggered_delete(s) for s in off] + [triggered_insert(s) for s in new]
        on = (on - set(off)) | set(new)
        begin = time.perf_counter()
        rt.apply(stream.batch(records))
        rt.flush()
        times.append(time.perf_counter() - begin)
        sums.append(_checksum(rt))
    return {"sensors": len(grid.sensors), "core": rt.core, "triggered": len(on),
            "members": members, "build_s": built - start, "flush_s": flushed - built,
            "change_median_ms": 1000 * statistics.median(times) if times else None,
            "change_max_ms": 1000 * max(times) if times else None,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "checksums": sums}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sensors", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--cores", nargs="+", default=["native", "reference"])
    parser.add_argument("--fraction", type=float, default=0.3)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--size", type=int, default=20)
    parser.add_argument("--budget-s", type=float, default=600.0, help="per (N, core) process")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.sensors[0], args.cores[0], args.fraction, args.changes,
                             args.size)))
        return
    for sensors in args.sensors:
        results = []
        for core in args.cores:
            try:
                out = subprocess.run(
                    [sys.executable, __file__, "--one", "--sensors", str(sensors), "--cores",
                     core, "--fraction", str(args.fraction), "--changes", str(args.changes),
                     "--size", str(args.size)], capture_output=True, text=True, check=True,
                    timeout=args.budget_s)
            except subprocess.TimeoutExpired:
                print(f"{sensors} sensors, {core}: not finished in {args.budget_s:.0f} s",
                      flush=True)
                continue
            results.append(json.loads(out.stdout))
            result = dict(results[-1])
            result.pop("checksums")
            print(json.dumps(result), flush=True)
        agree = all(r["checksums"] == results[0]["checksums"] for r in results)
        print(f"{sensors} sensors: every batch's rows agree across cores: {agree}", flush=True)


if __name__ == "__main__":
    main()
