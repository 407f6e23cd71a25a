"""spark-submit entry point: OPTIMIZE and VACUUM every table of the lake.

    spark-submit jobs/housekeeping.py --lake LAKE [--retain-hours H]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aspen.spark.job import exit_process, lake_parser, run_lake_job

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--retain-hours", "24"]).retain_hours
    24.0
    """
    from aspen.lake.housekeeping import DEFAULT_RETAIN_HOURS

    parser = lake_parser("housekeeping", __doc__.splitlines()[0])
    parser.add_argument("--retain-hours", type=float, default=DEFAULT_RETAIN_HOURS,
                        help="history VACUUM keeps (the time-travel window; default 168)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Keep the lake's tables; return the process exit code."""
    from aspen.lake.housekeeping import housekeep

    args = build_parser().parse_args(argv)
    return run_lake_job("housekeeping", args, lambda spark, settings: housekeep(
        spark, settings, args.retain_hours).lines())


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
