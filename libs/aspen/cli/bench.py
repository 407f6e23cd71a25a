"""``aspen bench [--quick|--full] [--out DIR]``: run the benchmark suite.

``--quick`` (default) takes under 3 minutes; ``--full`` runs every experiment at full size with a
300 s cut-off per experiment (never part of ``make test``); ``--only GROUP …`` runs a subset, and
``--merge DIR …`` combines earlier runs into one report. Results (JSON, CSV, PNG, summary.md)
go to ``--out`` (default ``results/bench``). See :mod:`aspen.bench.run`.

>>> from aspen.cli.main import build_parser
>>> args = build_parser().parse_args(["bench", "--full", "--out", "/tmp/b"])
>>> mode_of(args), args.out
('full', '/tmp/b')
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aspen.settings import Settings

#: the experiment groups of :func:`aspen.bench.run.plan` (``--only``)
GROUPS = ("insertions", "deletions", "regions", "density", "scale-out", "aggsel", "order", "peers",
          "ladder", "ladder-dense", "peers-1000", "spark-runtime")

__all__ = ["mode_of", "register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run the benchmark suite (paper experiments, peers, scale)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="the quick suite (default, < 3 min)")
    group.add_argument("--full", action="store_true",
                       help="the full suite: paper sizes, scale ladder, 300 s cut-off each")
    group.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # the test's mode
    p.add_argument("--out", default="results/bench", help="results folder (default results/bench)")
    p.add_argument("--only", nargs="+", metavar="GROUP", choices=GROUPS,
                   help=f"run only these experiment groups ({', '.join(GROUPS)})")
    p.add_argument("--merge", nargs="+", metavar="DIR",
                   help="run nothing: combine the results of earlier runs into --out")
    p.set_defaults(func=run)


def mode_of(args: argparse.Namespace) -> str:
    """The mode the flags select."""
    return "full" if args.full else "tiny" if args.tiny else "quick"


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.bench.run import run_bench

    if args.merge:
        from aspen.bench.merge import merge_folders

        missing = [d for d in args.merge if not (Path(d) / "results.json").is_file()]
        if missing:
            print(f"aspen bench: no results.json in {', '.join(missing)}", file=sys.stderr)
            return 2
        summary = merge_folders(args.merge, args.out)
        print(f"merged {len(args.merge)} runs into {summary.parent}")
        return 0
    summary = run_bench(mode_of(args), args.out, log=lambda line: print(line, file=sys.stderr),
                        only=args.only)
    print(summary.read_text())
    print(f"results written to {summary.parent}")
    return 0
