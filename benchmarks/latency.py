"""Update-to-view latency of single-link updates, cold and through a warm follower; see
:mod:`aspen.bench.latency`.

    .venv/bin/python benchmarks/latency.py                 # 100 and 1,000 nodes, both runtimes
    .venv/bin/python benchmarks/latency.py --nodes 20 --runtimes local --batches 2

Prints machine and commit, a line per batch, the table of medians and p90s with the Spark jobs
per phase, and the targets with their verdicts; writes ``latency.json`` and ``batches.csv``
into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aspen.bench.common import machine_info
from aspen.bench.latency import (
    MODES,
    RUNTIMES,
    comma_list,
    git_commit,
    latency,
    node_counts,
    table,
    write_outputs,
)


def _option(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def checked(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return checked


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=_option(node_counts), default=[100, 1000],
                        help="lake sizes, comma-separated (default 100,1000)")
    parser.add_argument("--runtimes", type=_option(lambda t: comma_list(t, RUNTIMES)),
                        default=list(RUNTIMES), help="local,spark (default both)")
    parser.add_argument("--batches", type=int, default=10, help="timed batches per cell")
    parser.add_argument("--modes", type=_option(lambda t: comma_list(t, MODES)),
                        default=list(MODES), help="cold,warm,inbox (default all three)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/latency")
    parser.add_argument("--work-dir", default=None,
                        help="where the lakes go (default a fresh temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the lakes and their logs")
    args = parser.parse_args(argv)
    if args.batches < 1:
        parser.error(f"--batches must be at least 1, got {args.batches}")
    return args


def main() -> None:
    args = parse_args()
    machine, commit = machine_info(), git_commit()
    print(f"machine: {json.dumps(machine)}")
    print(f"commit: {commit['commit']}{' (with uncommitted changes)' if commit['dirty'] else ''}")
    result, cells = latency(args.nodes, args.runtimes, args.batches, args.modes, args.seed,
                            args.work_dir)
    result = {"machine": machine, "git": commit} | result
    write_outputs(result, cells, Path(args.out))
    print()
    print(table(result))
    print(f"\nwrote {Path(args.out) / 'latency.json'} and {Path(args.out) / 'batches.csv'}")
    work = Path(result["config"]["work_dir"])
    failed = any(c.error or c.verify not in (None, "pass") for c in cells)
    if args.keep or args.work_dir or failed:
        print(f"lakes and logs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
