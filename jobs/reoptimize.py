"""spark-submit entry point: re-optimize the continuous queries incrementally and adopt changed
plans (the ``aspen_reoptimize`` DAG's job).

    spark-submit jobs/reoptimize.py --lake LAKE [NAME ...] [--method declarative|top-down|...]

The lines and exit codes of ``aspen query reoptimize``
(:func:`aspen.queries.reoptimize_run.reoptimize_queries`): exit 1 when a query could not be
re-optimized.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aspen.spark.job import exit_process, lake_parser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l", "hot", "--method", "top-down"]).names
    ['hot']
    """
    from aspen.optimizer.methods import METHODS
    from aspen.queries.reoptimize import DEFAULT_REOPTIMIZER

    parser = lake_parser("reoptimize", __doc__.splitlines()[0])
    parser.add_argument("names", metavar="NAME", nargs="*", help="default: every query")
    parser.add_argument("--method", choices=tuple(METHODS), default=DEFAULT_REOPTIMIZER,
                        help=f"the optimizer (default {DEFAULT_REOPTIMIZER})")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Re-optimize the queries; return the process exit code."""
    from aspen.pipeline.entry import lake_settings, run_entry
    from aspen.queries.reoptimize_run import reoptimize_queries

    args = build_parser().parse_args(argv)
    return run_entry("aspen query", lambda: 1 if reoptimize_queries(
        lake_settings(args.lake), args.names, args.method) else 0, args.lake)


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
