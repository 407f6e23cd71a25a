"""spark-submit entry point: run a triggering rule over the new sensor readings and stop
(Spark Structured Streaming, ``trigger(availableNow=True)``), then every stream network the lake
has run before (``aspen stream --network``), each over its new readings.

    spark-submit jobs/readings.py --lake LAKE [--provenance eager|lazy]

Idempotent: the rule's checkpoint under the lake root holds the stream's offsets and state, and
a micro-batch rerun after a crash replaces its rows; with nothing new it does nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aspen.spark.job import exit_process, lake_parser, run_lake_job

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l"]).provenance
    'eager'
    """
    parser = lake_parser("readings", __doc__.splitlines()[0])
    parser.add_argument("--provenance", choices=("eager", "lazy"), default="eager")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the default rule, then the lake's networks, over the readings; return the process
    exit code."""
    from aspen.readings.network_stream import run_recorded_networks
    from aspen.readings.rule_stream import run_reading_stream

    args = build_parser().parse_args(argv)
    return run_lake_job("readings", args, lambda spark, settings: [
        run_reading_stream(spark, settings, mode=args.provenance).line(),
        *(report.line() for report in run_recorded_networks(spark, settings))])


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
