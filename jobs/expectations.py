"""spark-submit (or plain Python) entry point: the data-quality gate before publishing.

    spark-submit jobs/expectations.py --lake LAKE [--verbose] [--no-write]
    python jobs/expectations.py --lake LAKE

Runs every Great Expectations suite over the lake (as ``aspen check``: delta-rs + pandas, no
Spark session is started), records the outcomes in ``expectation_results`` and exits 1, printing
the failed expectations, when one fails.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aspen.spark.job import exit_process, lake_parser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l", "--no-write"]).write
    False
    """
    parser = lake_parser("expectations", __doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true",
                        help="print every expectation, not only failures")
    parser.add_argument("--no-write", dest="write", action="store_false",
                        help="do not record the outcomes in the expectation_results table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Check the lake; return the process exit code (1 when an expectation failed)."""
    from aspen.pipeline.entry import lake_settings, run_entry
    from aspen.quality import run_expectations

    args = build_parser().parse_args(argv)

    def work() -> int:
        report = run_expectations(lake_settings(args.lake), write=args.write)
        for line in report.lines(verbose=args.verbose):
            print(line)
        return 0 if report.success else 1

    return run_entry("aspen check", work, args.lake)


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
