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


def zone_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a zone rule (``--kind zone``: Ariadne's running example)."""
    from aspen.streams.zones import ZoneRule

    default = ZoneRule()
    parser.add_argument("--kind", choices=("window", "zone"), default="window",
                        help="window: per-sensor windows (default); zone: at least --sensors "
                        "sensors of a zone hot within --within seconds")
    parser.add_argument("--count", type=int, default=default.count,
                        help=f"zone: readings in a sensor's count window (default "
                        f"{default.count})")
    parser.add_argument("--sensors", type=int, default=default.sensors,
                        help=f"zone: hot sensors that make an alarm (default {default.sensors})")
    parser.add_argument("--within", type=float, default=default.within_s, metavar="SECONDS",
                        help=f"zone: the alarm's span (default {default.within_s:g})")
    parser.add_argument("--zone-size", type=float, default=default.zone_m, metavar="METERS",
                        help=f"zone: side of a zone's square (default {default.zone_m:g})")


def rule_of(args: argparse.Namespace):
    """The rule the options of ``args`` define: a
    :class:`~aspen.streams.rules.TriggerRule` or a :class:`~aspen.streams.zones.ZoneRule`."""
    from aspen.streams.rules import TriggerRule
    from aspen.streams.zones import ZoneRule

    if args.kind == "zone":
        name = "zone_alarm" if args.rule == "avg_above" else args.rule
        return ZoneRule(name=name, count=args.count, threshold=args.threshold,
                        sensors=args.sensors, within_s=args.within, zone_m=args.zone_size,
                        lateness_s=args.lateness)
    return TriggerRule(name=args.rule, aggregate=args.aggregate, size_s=args.window,
                       slide_s=args.window if args.slide is None else args.slide,
                       threshold=args.threshold, lateness_s=args.lateness)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "stream",
        help="run a triggering rule over the sensor readings (Spark Structured Streaming)",
        description="Examples: aspen stream (everything new, then stop); aspen stream --every 5 "
        "--for 600 (a micro-batch every 5 s for 10 minutes); aspen stream --provenance lazy; "
        "aspen stream --kind zone (rule zone_alarm: 3 sensors of a 50 m zone hot within 10 s)",
    )
    p.add_argument("--rule", default="avg_above",
                   help="the rule's name: a name keeps its definition, its windows and its "
                   "checkpoint (default avg_above)")
    rule_arguments(p)
    zone_arguments(p)
    p.add_argument("--network", default=None, metavar="FILE",
                   help="run the stream network FILE declares (JSON: streams, selections, "
                   "projections, unions, windows, joins; docs/readings.md) instead of a rule")
    p.add_argument("--local", action="store_true",
                   help="with --network: run it over every reading in process, without Spark "
                   "(from a fresh state; for small lakes and trying a network out)")
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
    from aspen.readings.rule_stream import run_reading_stream
    from aspen.spark.session import get_spark

    if args.every is not None and args.every <= 0:
        raise ConfigError(f"--every must be positive, got {args.every:g}")
    if args.duration is not None and args.every is None:
        raise ConfigError("--for applies with --every only")
    if args.network is not None:
        return _network(args, settings)
    if args.local:
        raise ConfigError("--local applies with --network only")
    rule = rule_of(args)
    report = run_reading_stream(get_spark("aspen-stream"), settings, rule, args.provenance,
                                every_s=args.every, timeout_s=args.duration)
    print(report.line())
    return 0


def _network(args: argparse.Namespace, settings: Settings) -> int:
    """``aspen stream --network FILE``: the network's query on Spark, or in process."""
    from pathlib import Path

    from aspen.errors import ConfigError
    from aspen.streams.networks import load_network

    try:
        network = load_network(Path(args.network).read_text())
    except OSError as error:
        raise ConfigError(f"cannot read --network {args.network}: {error.strerror}") from None
    if args.local:
        from aspen.readings.network_tables import run_network_locally

        if args.every is not None:
            raise ConfigError("--local runs once; --every needs the Spark stream")
        outputs, dropped = run_network_locally(settings, network, args.provenance)
        print(f"network {network.name} ({args.provenance}, in process): {outputs} output(s), "
              f"{dropped} reading(s) dropped")
        return 0
    from aspen.readings.network_stream import run_network_stream
    from aspen.spark.session import get_spark

    report = run_network_stream(get_spark("aspen-stream"), settings, network, args.provenance,
                                every_s=args.every, timeout_s=args.duration)
    print(report.line())
    return 0
