"""spark-submit entry point: the TTL sweep — expired instances become deletions.

    spark-submit jobs/expire.py --lake LAKE [--now ISO]

The lines and exit codes of ``aspen expire`` (:func:`aspen.pipeline.sweep.sweep`): a small
sweep runs in process, a large one on the job's Spark session.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aspen.spark.job import exit_process, lake_parser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--now", "2026-01-01T00:10:00Z"]).now
    '2026-01-01T00:10:00Z'
    """
    parser = lake_parser("expire", __doc__.splitlines()[0])
    parser.add_argument("--now", default=None, metavar="ISO",
                        help="sweep as of this time (default: the current time)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Sweep the lake's TTLs; return the process exit code."""
    from aspen.pipeline.entry import lake_settings, run_entry
    from aspen.pipeline.sweep import sweep

    args = build_parser().parse_args(argv)

    def work() -> int:
        for line in sweep(lake_settings(args.lake), args.now).lines():
            print(line)
        return 0

    return run_entry("aspen expire", work, args.lake)


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
