"""spark-submit entry point: apply every ingested batch to the base tables (Delta MERGE).

    spark-submit jobs/apply.py --lake LAKE

Idempotent: a rerun after a crash gives the same tables; a rerun with nothing new does nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from aspen.spark.job import exit_process, lake_parser, run_lake_job

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l"]).lake
    '/tmp/l'
    """
    return lake_parser("apply", __doc__.splitlines()[0])


def main(argv: Sequence[str] | None = None) -> int:
    """Apply pending batches; return the process exit code."""
    from aspen.lake.apply import apply_pending

    return run_lake_job("apply", build_parser().parse_args(argv),
                        lambda spark, settings: apply_pending(spark, settings).lines())


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
