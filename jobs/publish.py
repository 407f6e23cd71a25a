"""spark-submit entry point: publish the lake ``summary`` table.

    spark-submit jobs/publish.py --lake ./lakehouse

The master comes from spark-submit (or ``SPARK_MASTER``), never from this file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from aspen.errors import AspenError
from aspen.settings import DEFAULT_LAKE, Settings

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The job's arguments.

    >>> build_parser().parse_args(["--lake", "/tmp/l"]).lake
    '/tmp/l'
    """
    parser = argparse.ArgumentParser(prog="publish", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lake", default=None, help=f"lake root (default: $ASPEN_LAKE or {DEFAULT_LAKE})"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Publish the summary; return the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings(lake=args.lake) if args.lake else Settings()
        from aspen.lake.summary import publish_summary
        from aspen.spark.session import get_spark

        rows = publish_summary(get_spark("aspen-publish"), settings)
    except AspenError as err:
        print(f"publish: {err}", file=sys.stderr)
        return 2
    print(f"publish: summary of {len(rows)} table(s) written to {settings.table_uri('summary')}")
    for row in rows:
        print(f"  {row.name}: version {row.version}, {row.row_count} row(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
