"""``aspen optimize --query Q.json --stats S.json [--changes C.jsonl] --method M``: plan a join
query, then re-plan after each change of the statistics (docs/optimizer.md)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aspen.errors import ConfigError
from aspen.optimizer.cost import JOIN_METHODS
from aspen.optimizer.methods import METHODS
from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "optimize",
        help="plan a join query; with changes, re-plan after each",
        description="Example: aspen optimize --query q.json --stats s.json --changes c.jsonl "
        "--method volcano. The formats of the three files: docs/optimizer.md.",
    )
    p.add_argument("--query", required=True, metavar="Q.json", help="the join graph")
    p.add_argument("--stats", required=True, metavar="S.json", help="the statistics")
    p.add_argument("--changes", metavar="C.jsonl",
                   help="changes of the statistics, one batch a line; re-plan after each")
    p.add_argument("--method", required=True, choices=tuple(METHODS), help="the optimizer")
    p.add_argument("--left-linear", action="store_true",
                   help="left-deep plans only (the right input of every join one relation)")
    p.add_argument("--methods", default=",".join(JOIN_METHODS), metavar="M,M,…",
                   help=f"the join methods to consider (default: {','.join(JOIN_METHODS)})")
    p.add_argument("--format", choices=("json", "table"), default="table")
    p.set_defaults(func=run)


def _no_constant(name: str) -> Any:
    # Python's json reads NaN, Infinity and -Infinity, which JSON does not have
    raise ValueError(f"{name} is not a JSON number")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant)


def _read_json(path: str, option: str) -> dict[str, Any]:
    try:
        data = _loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{option} {path}: {err.strerror or err}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ConfigError(f"{option} {path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{option} {path}: expected a JSON object")
    return data


def _read_changes(path: str) -> list[tuple[int, dict[str, Any]]]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConfigError(f"--changes {path}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"--changes {path}: not text ({err})") from None
    changes = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            change = _loads(line)
        except (ValueError, RecursionError) as err:
            raise ConfigError(f"--changes {path}, line {number}: not valid JSON ({err})") from None
        if not isinstance(change, dict):
            raise ConfigError(f"--changes {path}, line {number}: expected a JSON object")
        changes.append((number, change))
    return changes


def _check_params(values: Any, where: str) -> None:
    """Cost-model parameters must be ones the model has (a misspelt one would be ignored)."""
    from aspen.optimizer.cost import DEFAULT_PARAMS

    unknown = sorted(str(name) for name in values if name not in DEFAULT_PARAMS)
    if unknown:
        raise ConfigError(f"{where}: unknown cost parameter(s) {', '.join(unknown)}; "
                          f"known: {', '.join(DEFAULT_PARAMS)}")


def _print_table(step: str, result: Any, relations: Mapping[str, str]) -> None:
    from aspen.optimizer.render import plan_lines

    c = result.counters
    print(f"== {step}: cost {result.cost:.6g} ({result.seconds * 1000:.1f} ms)")
    for line in plan_lines(result.plan, relations):
        print(f"   {line}")
    print(f"   OR nodes:  {c.or_created} created, {c.or_pruned} pruned, "
          f"{c.or_recomputed} recomputed")
    print(f"   AND nodes: {c.and_created} created, {c.and_pruned} pruned, "
          f"{c.and_recomputed} recomputed")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.optimizer.methods import make_optimizer
    from aspen.optimizer.query import Query
    from aspen.optimizer.space import SearchSpace, SpaceOptions
    from aspen.optimizer.stats import Stats

    query_data = _read_json(args.query, "--query")
    stats_data = _read_json(args.stats, "--stats")
    try:
        query = Query.from_json(query_data)
    except ConfigError as err:
        raise ConfigError(f"--query {args.query}: {err}") from None
    try:
        stats = Stats.from_json(stats_data)
        _check_params(stats_data.get("params", {}), "params")
    except ConfigError as err:
        raise ConfigError(f"--stats {args.stats}: {err}") from None
    changes = _read_changes(args.changes) if args.changes else []
    check = stats
    for number, change in changes:  # every change checked before any output
        try:
            check, _ = check.changed(change)
            _check_params(change.get("params", {}), "params")
        except ConfigError as err:
            raise ConfigError(f"--changes {args.changes}, line {number}: {err}") from None
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    options = SpaceOptions(methods=methods, left_linear=args.left_linear)
    try:
        optimizer = make_optimizer(args.method, SearchSpace(query, options))
    except ConfigError as err:
        raise ConfigError(f"--query {args.query}: {err}") from None

    def emit(step: int, change: dict[str, Any] | None, result: Any) -> None:
        if not math.isfinite(result.cost):  # the input bounds rule it out; never print it
            raise ConfigError(f"step {step}: the best plan's cost is {result.cost}, not finite; "
                              "the statistics are beyond what the cost model can add up")
        if args.format == "json":
            print(json.dumps({"step": step, "method": args.method, "change": change,
                              **result.as_dict()}, allow_nan=False), flush=True)
        else:
            label = "initial plan" if change is None else (
                f"after change {step} {json.dumps(change)}")
            _print_table(f"{label} [{args.method}]", result, query.relations)

    emit(0, None, optimizer.optimize(stats))
    for step, (_, change) in enumerate(changes, 1):
        emit(step, change, optimizer.reoptimize(change))
    return 0
