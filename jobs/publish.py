"""spark-submit entry point: publish the lake ``summary`` table.

    spark-submit jobs/publish.py --lake ./lakehouse

The master comes from spark-submit (or ``SPARK_MASTER``), never from this file.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import Any

from aspen.settings import Settings
from aspen.spark.job import exit_process, lake_parser, run_lake_job

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l"]).lake
    '/tmp/l'
    """
    return lake_parser("publish", __doc__.splitlines()[0])


def _publish(spark: Any, settings: Settings) -> Iterator[str]:
    from aspen.lake.summary import publish_summary

    rows = publish_summary(spark, settings)
    yield f"summary of {len(rows)} table(s) written to {settings.table_uri('summary')}"
    for row in rows:
        yield f"  {row.name}: version {row.version}, {row.row_count} row(s)"


def main(argv: Sequence[str] | None = None) -> int:
    """Publish the summary; return the process exit code."""
    return run_lake_job("publish", build_parser().parse_args(argv), _publish)


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
