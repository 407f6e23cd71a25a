"""``aspen stream``: run a triggering rule over the lake's sensor readings (Spark Structured
Streaming), logging its decisions as ``triggered`` updates."""

from __future__ import annotations

import argparse

from aspen.settings import Settings


def rule_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that define a triggering rule (its name is ``--rule``)."""
    from aspen.streams.rules import AGGREGATES, TriggerRule

    default = TriggerRule()
    parser.add_argument("--aggregate", choices=AGGREGATES, default=default.aggregate)
    parser.add_argument("--window", type=float, default=default.size_s, metavar="SECONDS",
                        help=f"window size (default {default.size_s:g})")
    parser.add_argument("--slide", type=float, default=None, metavar="SECONDS",
                        help="window slide (default: the size, tumbling windows)")
    parser.add_argument("--threshold", type=float, default=default.threshold,
                        help=f"above it triggers, at or below un-triggers "
                        f"(default {default.threshold:g})")
    parser.add_argument("--lateness", type=float, default=default.lateness_s, metavar="SECONDS",
                        help=f"allowed lateness per sensor (default {default.lateness_s:g})")


def rule_of(args: argparse.Namespace):
    """The :class:`~aspen.streams.rules.TriggerRule` the options of ``args`` name."""
    from aspen.streams.rules import TriggerRule

    return TriggerRule(name=args.rule, aggregate=args.aggregate, size_s=args.window,
                       slide_s=args.window if args.slide is None else args.slide,
                       threshold=args.threshold, lateness_s=args.lateness)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stream",
        help="run a triggering rule over the sensor readings (Spark Structured Streaming)",
        description="Examples: aspen stream (everything new, then stop); aspen stream --every 5 "
        "--for 600 (a micro-batch every 5 s for 10 minutes); aspen stream --provenance lazy",
    )
    p.add_argument("--rule", default="avg_above",
                   help="the rule's name: a name keeps its definition, its windows and its "
                   "checkpoint (default avg_above)")
    rule_arguments(p)
    p.add_argument("--provenance", choices=("eager", "lazy", "none"), default="eager",
                   help="eager: every window keeps its readings' ids (Reduced-Eager); lazy: "
                   "only their covering interval, rebuilt by replay on request (Replay-Lazy); "
                   "none: no provenance (to compare)")
    p.add_argument("--every", type=float, default=None, metavar="SECONDS",
                   help="keep running, a micro-batch every SECONDS (default: drain and stop)")
    p.add_argument("--for", dest="duration", type=float, default=None, metavar="SECONDS",
                   help="with --every: stop after SECONDS")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.errors import ConfigError
    from aspen.pipeline.reading_stream import run_reading_stream
    from aspen.spark.session import get_spark

    rule = rule_of(args)
    if args.every is not None and args.every <= 0:
        raise ConfigError(f"--every must be positive, got {args.every:g}")
    if args.duration is not None and args.every is None:
        raise ConfigError("--for applies with --every only")
    report = run_reading_stream(get_spark("aspen-stream"), settings, rule, args.provenance,
                                every_s=args.every, timeout_s=args.duration)
    print(report.line())
    return 0
