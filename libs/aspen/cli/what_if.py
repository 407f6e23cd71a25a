"""``aspen what-if --delete RELATION:KEY…``: which view tuples would disappear (only the stored
rows that mention a deleted base tuple are decoded)."""

from __future__ import annotations

import argparse
import json
import time

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "what-if",
        help="which view tuples would disappear if base tuples were deleted",
        description="Example: aspen what-if --delete link:n1:n2 --delete sensor:s7. "
        "RELATION is link, sensor, triggered, region_seed or node (every link of a node).",
    )
    p.add_argument("--delete", action="append", required=True, metavar="RELATION:KEY",
                   help="a base tuple to delete (repeatable)")
    p.add_argument("--view", action="append", default=None, help="limit to these views")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.catalog import check_view
    from aspen.cli._output import cell_text, printable
    from aspen.pipeline.lake_provenance import LakeProvenance, parse_base_ref

    refs = [parse_base_ref(text) for text in args.delete]
    views = tuple(check_view(v) for v in args.view) if args.view else None
    lake = LakeProvenance(settings)
    deleted: set[str] = set()
    for relation, key in refs:
        deleted |= lake.live_vars_of(relation, key)
    started = time.perf_counter()
    lost = lake.what_if(deleted, views)
    elapsed = time.perf_counter() - started
    if args.format == "json":
        rows = {v: [list(map(cell_text, t)) for t in ts] for v, ts in lost.items()}
        print(json.dumps({"deleted": args.delete, "seconds": elapsed, "lost": rows}, indent=1))
        return 0
    print(printable(f"deleting {', '.join(args.delete)} ({len(deleted)} live instance(s)):"))
    for view, tuples in lost.items():
        print(f"  {view}: {len(tuples)} tuple(s) lost")
        for t in tuples:
            print(printable(f"    ({', '.join(cell_text(v) for v in t)})"))
    print(f"computed from provenance in {elapsed * 1000:.1f} ms, nothing recomputed or written")
    return 0
