"""The shape shared by the lake-maintenance ``spark-submit`` jobs (``jobs/apply.py``,
``jobs/publish.py``, ``jobs/housekeeping.py``): a ``--lake`` argument, one SparkSession, the
work's report printed line by line, and an :class:`~aspen.errors.AspenError` turned into one
line on stderr and exit code 2 (no traceback).

>>> parser = lake_parser("apply", "Apply pending batches.")
>>> parser.parse_args(["--lake", "/tmp/l"]).lake
'/tmp/l'
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from aspen.errors import AspenError
from aspen.settings import DEFAULT_LAKE, Settings

__all__ = ["exit_process", "lake_parser", "run_lake_job"]


def lake_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the jobs' common ``--lake`` option."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--lake", default=None, help=f"lake root (default: $ASPEN_LAKE or {DEFAULT_LAKE})"
    )
    return parser


def run_lake_job(prog: str, args: argparse.Namespace,
                 work: Callable[[Any, Settings], Iterable[str]]) -> int:
    """Run ``work(spark, settings)`` and print its lines as ``prog: line``; the exit code.

    The master comes from spark-submit (or ``SPARK_MASTER``), never from here."""
    try:
        settings = Settings(lake=args.lake) if args.lake else Settings()
        from aspen.spark.session import get_spark

        lines = list(work(get_spark(f"aspen-{prog}"), settings))
    except AspenError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    for line in lines:
        print(f"{prog}: {line}")
    return 0


def exit_process(code: int) -> NoReturn:
    """End a job's (or the CLI's) process with exit code ``code`` once its output is flushed,
    skipping the interpreter's teardown: there Arrow's thread pools now and then abort a process
    that has finished its work ("terminate called without an active exception", exit 134;
    apache/arrow#34314), which would turn a committed batch into a failed task. Under
    spark-submit the JVM, the process's parent, still stops Spark when it sees the exit."""
    import logging
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to say
            pass
    logging.shutdown()
    os._exit(code)
