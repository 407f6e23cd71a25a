"""``aspen explain VIEW KEY…``: why a view tuple holds (witnesses, critical base tuples; only the
matching rows are decoded)."""

from __future__ import annotations

import argparse
import json

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="explain a view tuple: witness sets and critical base tuples",
        description="Examples: aspen explain reachable n1 n7; aspen explain cheapest_path n1 n7; "
        "aspen explain active_region r1 s12; aspen explain triggered s12 (the rule's windows "
        "and readings behind a sensor's triggered state); aspen explain network NAME (its latest "
        "outputs); aspen explain network NAME OUTPUT (the readings behind one output)",
    )
    p.add_argument("view", metavar="VIEW")
    p.add_argument("key", metavar="KEY", nargs="+", help="leading attributes of the tuple")
    p.add_argument("--limit", type=int, default=20, help="at most this many witnesses per tuple")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--at", default=None, metavar="TIME",
                   help="triggered: the state as of TIME (ISO 8601; default: the latest)")
    p.add_argument("--depth", choices=("tuples", "readings"), default="tuples",
                   help="readings: follow each triggered sensor of an active_region witness to "
                   "the rule's window and readings that triggered it")
    p.add_argument("--rule", default="avg_above",
                   help="triggered: the rule whose decisions to explain (default avg_above)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.cli._output import cell_text, printable
    from aspen.errors import ConfigError
    from aspen.pipeline.lake_provenance import LakeProvenance

    if args.limit < 0:
        raise ConfigError(f"--limit must not be negative, got {args.limit}")
    if args.view == "triggered":
        return _triggered(args, settings)
    if args.view == "network":
        return _network(args, settings)
    if args.at is not None:
        raise ConfigError("--at applies to 'aspen explain triggered' only")
    if args.depth == "readings" and args.view != "active_region":
        raise ConfigError("--depth readings applies to active_region (and triggered) only")
    explanations = LakeProvenance(settings).explain(args.view, tuple(args.key), limit=args.limit)
    chains = _chains(settings, explanations) if args.depth == "readings" else {}
    if args.format == "json":
        out = [e.as_dict() for e in explanations]
        for item in out:
            if chains:  # every triggered sensor of any witness, with its origins
                item["triggered_by"] = {sensor: [o.as_dict() for o in origins]
                                        for sensor, origins in chains.items()}
        print(json.dumps(out, indent=1))
        return 0
    for e in explanations:
        print(printable(f"{e.view}({', '.join(cell_text(v) for v in e.tuple)})"))
        print(f"  {len(e.witnesses)}{'+' if e.truncated else ''} minimal witness set(s):")
        for i, w in enumerate(e.witnesses, 1):
            print(printable(f"   {i:>3}. {' ∧ '.join(w)}"))
        print(printable(f"  critical (each alone removes it): {', '.join(e.critical) or 'none'}"))
    for origins in chains.values():
        for origin in origins:
            print(printable(_origin_line(origin)))
            if origin.window is not None:
                for reading_id, ts, value in origin.window.readings:
                    print(f"      reading {reading_id}  {ts:%Y-%m-%d %H:%M:%S.%f}  {value:g}")
    return 0


def _chains(settings: Settings, explanations: list) -> dict[str, list]:
    """Per triggered sensor named in the witnesses, the origins of its live instances."""
    import re

    from aspen.readings.rule_provenance import trigger_origins

    sensors = sorted({match[1] for e in explanations for witness in e.witnesses
                      for base in witness if (match := re.fullmatch(r"triggered\((.*)\)", base))})
    return {sensor: trigger_origins(settings, sensor) for sensor in sensors}


def _origin_line(origin) -> str:
    """One line of the chain: triggered sensor ← window ← readings, or ← an update file."""
    head = f"  triggered({origin.sensor}) [{origin.var}]"
    if origin.window is None:
        return f"{head} ← logged by {origin.source} (no rule's window behind it)"
    window = origin.window
    return (f"{head} ← rule {origin.rule} window [{window.start:%Y-%m-%d %H:%M:%S}, "
            f"{window.end:%H:%M:%S}) avg {window.avg:.2f} ← {window.count} reading(s):")


def _triggered(args: argparse.Namespace, settings: Settings) -> int:
    """``aspen explain triggered SENSOR``: the windows and readings behind its state."""
    from datetime import UTC, datetime

    from aspen.cli._output import printable
    from aspen.errors import ConfigError
    from aspen.readings.rule_provenance import explain_triggered
    from aspen.readings.rule_tables import load_rule

    if len(args.key) != 1:
        raise ConfigError("aspen explain triggered takes one sensor id")
    at = None
    if args.at is not None:
        try:
            at = datetime.fromisoformat(args.at)
        except ValueError:
            raise ConfigError(f"--at {args.at!r} is not an ISO 8601 time") from None
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at
    known = load_rule(settings, args.rule)
    if known is None:
        raise ConfigError(f"no stream has run rule '{args.rule}' on this lake (aspen stream)")
    rule = known[0]
    explained = explain_triggered(settings, args.key[0], rule, at)
    if args.format == "json":
        print(json.dumps(explained.as_dict(), indent=1))
        return 0
    state = "triggered" if explained.triggered else "not triggered"
    when = f" as of {at.isoformat()}" if at is not None else ""
    print(printable(f"{explained.sensor}: {state}{when} under rule {rule.name} "
                    f"({rule.describe()})"))
    if not explained.windows:
        print("  no window of this sensor has decided anything yet")
    for window in explained.windows:
        made = {"insert": "triggered it", "delete": "un-triggered it"}.get(
            window.decision or "", "kept it")
        print(printable(f"  window [{window.start:%Y-%m-%d %H:%M:%S}, {window.end:%H:%M:%S}) "
                        f"{getattr(rule, 'aggregate', 'avg')} {window.avg:.2f} over "
                        f"{window.count} reading(s): "
                        f"{made}"))
        for reading_id, ts, value in window.readings:
            print(f"    reading {reading_id}  {ts:%Y-%m-%d %H:%M:%S.%f}  {value:g}")
    return 0


def _network(args: argparse.Namespace, settings: Settings) -> int:
    """``aspen explain network NAME [OUTPUT]``: a stream network's latest outputs, or the
    readings behind one of them."""
    import shlex

    from aspen.cli._output import printable
    from aspen.errors import ConfigError
    from aspen.readings.network_provenance import (
        attribute_words,
        explain_output,
        latest_outputs,
    )

    if len(args.key) not in (1, 2):
        raise ConfigError("aspen explain network takes a network's name and, optionally, an "
                          "output id (as 'aspen explain network NAME' lists them)")
    if len(args.key) == 1:
        latest = latest_outputs(settings, args.key[0], args.limit)
        if args.format == "json":
            print(json.dumps(latest, indent=1))
            return 0
        for item in latest:  # the id quoted for the shell: pass it back to explain one output
            print(printable(shlex.quote(item["output"])))
            print(printable(f"    {attribute_words(item['data'])}"))
        return 0
    explained = explain_output(settings, args.key[0], args.key[1])
    if args.format == "json":
        print(json.dumps(explained.as_dict(), indent=1))
        return 0
    for line in explained.lines():
        print(printable(line))
    return 0
