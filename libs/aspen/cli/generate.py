"""``aspen generate``: transit-stub topologies, sensor grids, update workloads, the demo set.

Sub-commands::

    aspen generate topology  [topology options] --out links.jsonl
    aspen generate sensors   [grid options]     --out sensors.csv
    aspen generate workload  fraction|delete-one|churn|triggers [options]
                             (--out FILE | --out-dir DIR)
    aspen generate demo      --out DIR

The output format follows the extension (``.jsonl``/``.ndjson`` or ``.csv``); ``--out -``
writes JSON Lines to stdout. ``--out-dir`` writes one file per batch (``batch-0000.jsonl`` …),
ready for ``aspen ingest FILE`` + ``aspen maintain`` per batch. Everything is reproducible
from ``--seed``; a summary line goes to stdout (stderr when the records go to stdout).

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> register(sub)
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from aspen.errors import ConfigError
from aspen.generators.demo import write_demo_inputs
from aspen.generators.invalid import inject_invalid
from aspen.generators.records import Record, parse_time
from aspen.generators.sensors import SensorGrid, sensor_grid
from aspen.generators.topology import (
    VARIANT_DEGREES,
    LinkCosts,
    Topology,
    TransitStubParams,
    scaled_params,
    transit_stub,
)
from aspen.generators.workloads import (
    DEFAULT_FRACTIONS,
    DEFAULT_START,
    ChurnParams,
    churn,
    delete_one_batches,
    fraction_batches,
    link_inserts,
    sensor_batches,
    split_batches,
    stamp_event_times,
)
from aspen.generators.writers import format_of, to_json_line, write_records
from aspen.settings import Settings

__all__ = ["register", "run"]


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ≥ ``minimum``, else one line saying what was expected."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer ≥ {minimum}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1)
_count = _int_at_least(0)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _numbers(text: str) -> list[float]:
    return [_number(part) for part in text.split(",") if part.strip()]


def _time(text: str) -> str:
    if text == "now":
        return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        parse_time(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


# ---------------------------------------------------------------- option groups


def _add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def _add_topology_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "topology (GT-ITM transit-stub; defaults: the setup of Liu et al. 2008, §7.1)"
    )
    group.add_argument(
        "--transit-domains", type=_positive_int, metavar="N", help="transit domains (default 1)"
    )
    group.add_argument(
        "--nodes-per-transit",
        type=_positive_int,
        default=4,
        metavar="N",
        help="transit nodes per transit domain (default 4)",
    )
    group.add_argument(
        "--stubs-per-transit",
        type=_count,
        default=3,
        metavar="N",
        help="stub domains per transit node (default 3)",
    )
    group.add_argument(
        "--nodes-per-stub",
        type=_positive_int,
        default=8,
        metavar="N",
        help="nodes per stub domain (default 8)",
    )
    group.add_argument(
        "--min-nodes",
        type=_positive_int,
        metavar="N",
        help="add transit domains until the network has at least N nodes",
    )
    group.add_argument(
        "--variant",
        choices=sorted(VARIANT_DEGREES),
        default="dense",
        help="dense: 4 link tuples per node (default); sparse: 2",
    )
    degree = group.add_mutually_exclusive_group()
    degree.add_argument(
        "--avg-degree",
        type=_number,
        metavar="D",
        help="link tuples per node, instead of the variant's",
    )
    degree.add_argument(
        "--extra-edge-prob",
        type=_number,
        metavar="P",
        help="add each candidate link with probability P, instead of a degree",
    )
    group.add_argument(
        "--costs",
        type=_numbers,
        metavar="TT,TS,SS",
        default=[50.0, 10.0, 2.0],
        help="latency of transit-transit, transit-stub, intra-stub links (default 50,10,2)",
    )
    group.add_argument(
        "--topology-seed",
        type=int,
        metavar="S",
        help="seed of the topology alone (default: --seed)",
    )


def _add_grid_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sensor grid (defaults: the setup of Liu et al. 2008, §7.1)")
    group.add_argument("--width", type=_number, default=100.0, help="area width, m (default 100)")
    group.add_argument("--height", type=_number, default=100.0, help="area height, m (default 100)")
    group.add_argument("--spacing", type=_number, default=10.0, help="grid spacing, m (default 10)")
    group.add_argument(
        "--jitter", type=_number, default=0.0, help="max random offset per axis, m (default 0)"
    )
    group.add_argument("--regions", type=_count, default=5, help="seed regions r1.. (default 5)")
    group.add_argument(
        "--seed-placement",
        choices=("spread", "random"),
        default="spread",
        help="where region seeds go (default spread: far apart)",
    )


def _add_output(parser: argparse.ArgumentParser, batched: bool) -> None:
    group = parser.add_argument_group("output")
    target = group.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--out",
        metavar="FILE",
        help="one file, .jsonl or .csv by extension; '-' = JSON Lines to stdout",
    )
    if batched:
        target.add_argument(
            "--out-dir",
            metavar="DIR",
            help="one file per batch: DIR/batch-0000.jsonl, … (old batch-* files there go)",
        )
        group.add_argument(
            "--format",
            choices=("jsonl", "csv"),
            default="jsonl",
            help="file format with --out-dir (default jsonl)",
        )
        group.add_argument(
            "--start",
            type=_time,
            metavar="ISO",
            help="stamp event_time from this ISO 8601 time ('now' allowed)",
        )


# ---------------------------------------------------------------- registration


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``generate`` and its sub-commands to the ``aspen`` parser."""
    p = sub.add_parser(
        "generate",
        help="generate topologies, sensor grids and update workloads",
        description="Generate inputs for Aspen: transit-stub topologies, sensor grids, update "
        "workloads (the experiments of Liu et al. 2008), and the demo input set.",
    )
    kinds = p.add_subparsers(dest="what", metavar="WHAT", parser_class=type(p))
    kinds.required = True

    topo = kinds.add_parser("topology", help="link inserts of a transit-stub topology")
    _add_topology_options(topo)
    _add_seed(topo)
    _add_output(topo, batched=False)
    topo.add_argument(
        "--nodes-out",
        metavar="FILE.csv",
        help="also write the node list (id,kind,domain,transit,stub) as CSV",
    )
    topo.set_defaults(func=run)

    sensors = kinds.add_parser("sensors", help="sensor inserts, region seeds and seed triggers")
    _add_grid_options(sensors)
    _add_seed(sensors)
    _add_output(sensors, batched=False)
    sensors.set_defaults(func=run)

    workload = kinds.add_parser("workload", help="update workloads of the paper's experiments")
    names = workload.add_subparsers(dest="workload", metavar="WORKLOAD", parser_class=type(p))
    names.required = True

    fraction = names.add_parser("fraction", help="insert links incrementally by fraction")
    fraction.add_argument(
        "--fractions",
        type=_numbers,
        default=list(DEFAULT_FRACTIONS),
        metavar="F1,F2,…",
        help="cumulative fractions, one batch each (default 0.25,0.5,0.75,1)",
    )
    delete_one = names.add_parser("delete-one", help="insert all links, then delete one by one")
    delete_one.add_argument(
        "--delete-fraction",
        type=_number,
        default=1.0,
        metavar="F",
        help="share of the tuples (links) deleted (default 1.0)",
    )
    delete_one.add_argument(
        "--unit",
        choices=("tuple", "link"),
        default="tuple",
        help="delete a directed tuple (default) or both directions per batch",
    )
    churn_p = names.add_parser("churn", help="deletes, re-inserts and TTL renewals over time")
    churn_p.add_argument("--events", type=_count, default=200, help="churn events (default 200)")
    churn_p.add_argument(
        "--ttl-fraction",
        type=_number,
        default=0.3,
        metavar="F",
        help="share of inserts with ttl_s (default 0.3)",
    )
    churn_p.add_argument(
        "--ttl-min", type=_positive_int, default=30, metavar="S", help="shortest ttl_s (default 30)"
    )
    churn_p.add_argument(
        "--ttl-max",
        type=_positive_int,
        default=300,
        metavar="S",
        help="longest ttl_s (default 300)",
    )
    churn_p.add_argument(
        "--step-s",
        type=_number,
        default=1.0,
        metavar="S",
        help="mean seconds between events (default 1)",
    )
    churn_p.add_argument(
        "--weights",
        type=_numbers,
        default=[0.4, 0.4, 0.2],
        metavar="D,R,N",
        help="relative weights of delete, re-insert, renew (default 0.4,0.4,0.2)",
    )
    churn_p.add_argument(
        "--stale-delete-prob",
        type=_number,
        default=0.0,
        metavar="P",
        help="share of deletes naming a dead link on purpose (default 0)",
    )
    churn_p.add_argument(
        "--no-initial-insert",
        action="store_true",
        help="do not start by inserting every link (assume they are live)",
    )
    churn_p.add_argument(
        "--invalid",
        type=_count,
        default=0,
        metavar="N",
        help="mix in N invalid records of different kinds (JSON Lines only)",
    )
    churn_p.add_argument(
        "--batch-size",
        type=_positive_int,
        metavar="N",
        help="records per batch with --out-dir (default: one batch)",
    )
    triggers = names.add_parser("triggers", help="sensor grid, then half triggered, un-triggered")
    triggers.add_argument(
        "--trigger-fraction",
        type=_number,
        default=0.5,
        metavar="F",
        help="share of non-seed sensors triggered (default 0.5)",
    )
    triggers.add_argument(
        "--batch-size",
        type=_positive_int,
        metavar="N",
        help="triggers per batch (default: all in one batch)",
    )
    for name, parser in (("fraction", fraction), ("delete-one", delete_one), ("churn", churn_p)):
        _add_topology_options(parser)
        _add_seed(parser)
        _add_output(parser, batched=True)
        parser.set_defaults(func=run, workload=name)
    _add_grid_options(triggers)
    _add_seed(triggers)
    _add_output(triggers, batched=True)
    triggers.set_defaults(func=run)

    demo = kinds.add_parser("demo", help="write the demo input set into a directory")
    demo.add_argument("--out", required=True, metavar="DIR", help="directory to write into")
    demo.add_argument("--events", type=_count, default=200, help="churn events (default 200)")
    demo.add_argument(
        "--start",
        type=_time,
        default=DEFAULT_START,
        metavar="ISO",
        help=f"first event_time (default {DEFAULT_START}; 'now' allowed)",
    )
    demo.add_argument(
        "--avg-degree",
        type=float,
        default=None,
        help="link tuples per node of the demo topology (default 2.4; the paper's dense is 4.0)",
    )
    _add_seed(demo)
    demo.set_defaults(func=run)


# ---------------------------------------------------------------- building


def _topology(args: argparse.Namespace) -> Topology:
    if len(args.costs) != 3:
        raise ConfigError(f"--costs needs three numbers TT,TS,SS, got {args.costs}")
    if args.min_nodes is not None and args.transit_domains is not None:
        raise ConfigError("give either --min-nodes or --transit-domains, not both")
    domains = args.transit_domains or 1
    if args.min_nodes is not None:
        domains = scaled_params(
            args.min_nodes,
            args.variant,
            nodes_per_transit=args.nodes_per_transit,
            stubs_per_transit_node=args.stubs_per_transit,
            nodes_per_stub=args.nodes_per_stub,
        ).transit_domains
    params = TransitStubParams(
        transit_domains=domains,
        nodes_per_transit=args.nodes_per_transit,
        stubs_per_transit_node=args.stubs_per_transit,
        nodes_per_stub=args.nodes_per_stub,
        variant=args.variant,
        avg_degree=args.avg_degree,
        extra_edge_prob=args.extra_edge_prob,
        costs=LinkCosts(*args.costs),
    )
    seed = args.seed if args.topology_seed is None else args.topology_seed
    return transit_stub(params, seed=seed)


def _grid(args: argparse.Namespace) -> SensorGrid:
    return sensor_grid(
        args.width,
        args.height,
        args.spacing,
        jitter=args.jitter,
        regions=args.regions,
        seed_placement=args.seed_placement,
        seed=args.seed,
    )


def _workload_batches(args: argparse.Namespace) -> tuple[list[list[Record]], str]:
    if args.workload == "triggers":
        grid = _grid(args)
        batches = sensor_batches(
            grid, seed=args.seed, trigger_fraction=args.trigger_fraction, batch_size=args.batch_size
        )
        return batches, f"{len(grid.sensors)} sensors, {len(grid.seeds)} regions"
    topology = _topology(args)
    about = f"{len(topology.nodes)} nodes, {len(topology.links)} link tuples"
    if args.workload == "fraction":
        return fraction_batches(topology, args.fractions, seed=args.seed), about
    if args.workload == "delete-one":
        batches = delete_one_batches(
            topology, seed=args.seed, fraction=args.delete_fraction, unit=args.unit
        )
        return batches, about
    if len(args.weights) != 3:
        raise ConfigError(f"--weights needs three numbers D,R,N, got {args.weights}")
    params = ChurnParams(
        events=args.events,
        delete_weight=args.weights[0],
        reinsert_weight=args.weights[1],
        renew_weight=args.weights[2],
        ttl_fraction=args.ttl_fraction,
        ttl_min_s=args.ttl_min,
        ttl_max_s=args.ttl_max,
        mean_step_s=args.step_s,
        stale_delete_prob=args.stale_delete_prob,
        initial_insert=not args.no_initial_insert,
        start=args.start or DEFAULT_START,
    )
    records = churn(topology, params, seed=args.seed)
    return split_batches(records, args.batch_size or max(1, len(records))), about


# ---------------------------------------------------------------- writing


def _stamp(batches: list[list[Record]], start: str | None) -> list[list[Record]]:
    if start is None:
        return batches
    return stamp_event_times(batches, start=start)


def _write(items: Sequence[Record | str], out: str) -> str:
    if out == "-":
        try:
            for item in items:
                sys.stdout.write((item if isinstance(item, str) else to_json_line(item)) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. piped into `head`: stop quietly, like other tools
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return "stdout"
    format_of(out)
    write_records(items, out)
    return out


def _write_batches(batches: list[list[Record | str]], out_dir: str, fmt: str) -> str:
    directory = Path(out_dir)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{out_dir!r} exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("batch-*.*"):  # a previous run's extra batches would be ingested
        stale.unlink()
    for index, batch in enumerate(batches):
        write_records(batch, directory / f"batch-{index:04d}.{fmt}")
    return f"{out_dir}/batch-0000.{fmt} … batch-{len(batches) - 1:04d}.{fmt}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("ch") else "s")


def _report(text: str, out: str | None) -> None:
    print(text, file=sys.stderr if out == "-" else sys.stdout)


def _write_nodes(topology: Topology, path: str) -> None:
    if Path(path).suffix.lower() != ".csv":
        raise ConfigError(f"--nodes-out must name a .csv file, got {path!r}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["id", "kind", "domain", "transit", "stub"])
        for node in topology.nodes:
            stub = "" if node.stub is None else node.stub
            writer.writerow([node.id, node.kind, node.domain, node.transit, stub])


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run ``aspen generate WHAT``; user errors raise :class:`ConfigError` (exit code 2)."""
    if args.what == "demo":
        demo = write_demo_inputs(
            args.out,
            seed=args.seed,
            churn_events=args.events,
            start=args.start,
            avg_degree=args.avg_degree,
        )
        print(
            f"wrote the demo inputs to {demo.directory}: "
            + ", ".join(f"{name} ({n} lines)" for name, n in demo.counts.items())
            + f"; {demo.invalid_records} invalid lines in churn.jsonl; see manifest.json"
        )
        return 0
    if args.what == "topology":
        if args.out != "-":
            format_of(args.out)
        topology = _topology(args)
        where = _write(link_inserts(topology), args.out)
        if args.nodes_out:
            _write_nodes(topology, args.nodes_out)
        transit = sum(1 for node in topology.nodes if node.kind == "transit")
        _report(
            f"wrote {len(topology.links)} link inserts to {where} ({len(topology.nodes)} "
            f"nodes: {transit} transit, {len(topology.nodes) - transit} stub; "
            f"{len(topology.links) // 2} bidirectional links, "
            f"{topology.average_degree:.2f} tuples per node)",
            args.out,
        )
        return 0
    if args.what == "sensors":
        if args.out != "-":
            format_of(args.out)
        grid = _grid(args)
        setup = sensor_batches(grid, seed=args.seed, trigger_fraction=0.0)[0]
        where = _write(setup, args.out)
        seeds = ", ".join(f"{s.region}={s.id}" for s in grid.seeds)
        _report(
            f"wrote {len(setup)} records to {where} ({len(grid.sensors)} sensors; "
            f"seeds {seeds or 'none'})",
            args.out,
        )
        return 0
    return _run_workload(args)


def _run_workload(args: argparse.Namespace) -> int:
    if args.out not in (None, "-"):
        format_of(args.out)
    batches, about = _workload_batches(args)
    batches = _stamp(batches, args.start if args.workload != "churn" else None)
    total = sum(len(batch) for batch in batches)
    items: list[list[Record | str]] = [list(batch) for batch in batches]
    invalid = getattr(args, "invalid", 0)
    if invalid:
        wants_csv = (args.out_dir and args.format == "csv") or (
            args.out not in (None, "-") and format_of(args.out) == "csv"
        )
        if wants_csv:
            raise ConfigError("--invalid needs JSON Lines output (invalid lines are not CSV)")
        flat = [record for batch in batches for record in batch]
        lines = inject_invalid(flat, invalid, seed=args.seed)
        size = args.batch_size or max(1, len(lines))
        items = split_batches(lines, size)  # type: ignore[arg-type]
    if args.out_dir:
        where = _write_batches(items, args.out_dir, args.format)
    else:
        where = _write([item for batch in items for item in batch], args.out)
    _report(
        f"wrote {total} records in {_plural(len(items), 'batch')}"
        + (f" plus {invalid} invalid lines" if invalid else "")
        + f" to {where} ({args.workload} over {about})",
        args.out,
    )
    return 0
