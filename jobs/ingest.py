"""spark-submit entry point: ingest update files into the Delta ``updates`` log.

    spark-submit jobs/ingest.py --lake LAKE [--delivery ID] [--again] FILE [FILE …]

Valid records go to ``updates`` (one new ingest batch), invalid ones to ``quarantine``; per-file
counts are printed. The job writes through delta-rs and starts no SparkSession (spark-submit
only launches it); ``python jobs/ingest.py …`` runs it as well, without a JVM. ``--delivery``
names the caller's delivery (the pipeline passes its run id): a retry of the same delivery is a
rerun, never a second send (aspen.lake.ingest has the rule).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from aspen.errors import AspenError
from aspen.settings import DEFAULT_LAKE, Settings
from aspen.spark.job import exit_process

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l", "a.jsonl"]).files
    ['a.jsonl']
    >>> build_parser().parse_args(["--delivery=run-1", "a.jsonl"]).delivery
    'run-1'
    """
    parser = argparse.ArgumentParser(prog="ingest", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lake", default=None, help=f"lake root (default: $ASPEN_LAKE or {DEFAULT_LAKE})"
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="update files (.jsonl, .csv)")
    parser.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                        help="how long to wait while another writer holds the update log "
                             "(default 120)")
    parser.add_argument("--delivery", default=None, metavar="ID",
                        help="the caller's delivery token (a run id): the same files again "
                             "under it are a rerun")
    parser.add_argument("--again", action="store_true",
                        help="apply files ingested before as a new send")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Ingest the files; return the process exit code (2 on an error a user can fix)."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings(lake=args.lake) if args.lake else Settings()
        from aspen.lake.ingest import check_inputs, ingest_files
        from aspen.lake.lease import LOG_WAIT_SECONDS

        wait = LOG_WAIT_SECONDS if args.wait is None else max(0.0, args.wait)
        check_inputs(list(args.files))
        report = ingest_files(settings, list(args.files), wait=wait, delivery=args.delivery,
                              again=args.again)
    except AspenError as err:
        print(f"ingest: {err}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(f"ingest: {line}")
    return 0


if __name__ == "__main__":  # exit_process: see aspen.spark.job
    exit_process(main())
