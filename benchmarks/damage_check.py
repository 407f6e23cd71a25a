"""What the damage check costs a batch: :func:`aspen.pipeline.integrity.find_damage` on a
maintained lake, timed ``--repeats`` times (the ledger read, every governed table's Delta log
at its committed version, one folder listing per table, the engine state's log statistics).

Run it on a lake a batch has maintained, e.g. the demo's::

    .venv/bin/aspen generate demo --out /tmp/demo/inbox
    .venv/bin/aspen --lake /tmp/demo/lake ingest /tmp/demo/inbox/*.jsonl
    .venv/bin/aspen --lake /tmp/demo/lake maintain --no-queries
    .venv/bin/python benchmarks/damage_check.py --lake /tmp/demo/lake [--repeats 20]

Prints the data files the check looked at, the median and the slowest time, and the object-store
listing's median (delta-rs, the path a non-local lake takes) for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import time

from aspen.lake import table_files
from aspen.lake.committed import committed_versions
from aspen.pipeline.integrity import find_damage
from aspen.settings import Settings


def timed(repeats: int, call) -> list[float]:
    """Seconds of each of ``repeats`` calls of ``call``."""
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", required=True)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    lake = Settings(lake=args.lake)
    versions = committed_versions(lake)
    files = sum(len(table_files.data_files(lake, name, version))
                for name, version in versions.items())
    damage = find_damage(lake)
    print(f"{len(versions)} governed tables, {files} data files; damage found: {damage or 'none'}")
    local = timed(args.repeats, lambda: find_damage(lake))
    print(f"check, local listing: median {statistics.median(local) * 1000:.1f} ms, "
          f"slowest {max(local) * 1000:.1f} ms")
    real = table_files.listing

    def store_listing(uri: str, folders: set[str], local: bool | None = None) -> dict[str, int]:
        return real(uri, folders, local=False)

    table_files.listing = store_listing  # the object-store path, on the same lake
    try:
        store = timed(args.repeats, lambda: find_damage(lake))
    finally:
        table_files.listing = real
    print(f"check, delta-rs listing: median {statistics.median(store) * 1000:.1f} ms, "
          f"slowest {max(store) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
