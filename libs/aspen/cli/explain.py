"""``aspen explain VIEW KEY…``: why a view tuple holds (witnesses, critical base tuples)."""

from __future__ import annotations

import argparse
import json

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="explain a view tuple: witness sets and critical base tuples",
        description="Examples: aspen explain reachable n1 n7; aspen explain cheapest_path n1 n7; "
        "aspen explain active_region r1 s12",
    )
    p.add_argument("view", metavar="VIEW")
    p.add_argument("key", metavar="KEY", nargs="+", help="leading attributes of the tuple")
    p.add_argument("--limit", type=int, default=20, help="at most this many witnesses per tuple")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.cli._output import cell_text, printable
    from aspen.errors import ConfigError
    from aspen.pipeline.lake_provenance import LakeProvenance

    if args.limit < 0:
        raise ConfigError(f"--limit must not be negative, got {args.limit}")
    explanations = LakeProvenance(settings).explain(args.view, tuple(args.key), limit=args.limit)
    if args.format == "json":
        print(json.dumps([e.as_dict() for e in explanations], indent=1))
        return 0
    for e in explanations:
        print(printable(f"{e.view}({', '.join(cell_text(v) for v in e.tuple)})"))
        print(f"  {len(e.witnesses)}{'+' if e.truncated else ''} minimal witness set(s):")
        for i, w in enumerate(e.witnesses, 1):
            print(printable(f"   {i:>3}. {' ∧ '.join(w)}"))
        print(printable(f"  critical (each alone removes it): {', '.join(e.critical) or 'none'}"))
    return 0
