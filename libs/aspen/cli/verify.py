"""``aspen verify``: maintained views against from-scratch evaluation (exit 1 on a mismatch; exit 2
with one line naming the damage and the remedy on a damaged lake)."""

from __future__ import annotations

import argparse

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="compare maintained views with from-scratch evaluation")
    p.add_argument("--show", type=int, default=10, help="differences printed per view")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.cli._output import printable
    from aspen.errors import ConfigError
    from aspen.pipeline.integrity import explained
    from aspen.pipeline.verify import verify_lake

    if args.show < 0:
        raise ConfigError(f"--show must not be negative, got {args.show}")
    with explained(settings):  # a damaged lake: one line naming the damage and the remedy
        result = verify_lake(settings)
    for line in result.lines(args.show):
        print(printable(line))
    return 0 if result.ok else 1
