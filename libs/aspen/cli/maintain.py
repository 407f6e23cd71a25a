"""``aspen maintain``: apply logged updates to the base tables and maintain the views."""

from __future__ import annotations

import argparse

from aspen.errors import ConfigError
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "maintain", help="apply logged updates to the base tables and maintain the views"
    )
    p.add_argument("--runtime", choices=("local", "spark"), default="local",
                   help="local: the operators in this process; spark: partitions on Spark")
    p.add_argument("--partitions", type=int, default=None, help="number of query nodes (default 4)")
    p.add_argument("--mode", choices=("lazy", "eager"), default=None, help="MinShip mode (default lazy)")
    p.add_argument("--hosts", type=int, default=None,
                   help="spark: Spark tasks a round runs the query nodes on, mail between nodes "
                        "of one task delivered within the round (default: as many as Spark "
                        "runs tasks at once, at most one per node)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.hosts is not None and args.runtime != "spark":
        raise ConfigError("--hosts applies to --runtime spark only")
    if args.runtime == "spark":
        from aspen.pipeline.maintain_spark import maintain_spark

        report = maintain_spark(settings, hosts=args.hosts)
    else:
        from aspen.pipeline.maintain_local import maintain_local

        report = maintain_local(settings)
    for line in report.lines():
        print(line)
    return 0
