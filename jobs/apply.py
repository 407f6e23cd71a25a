"""spark-submit entry point: apply every ingested batch to the base tables (Delta MERGE).

    spark-submit jobs/apply.py --lake LAKE

Idempotent: a rerun after a crash gives the same tables; a rerun with nothing new does nothing.
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
    parser = argparse.ArgumentParser(prog="apply", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lake", default=None, help=f"lake root (default: $ASPEN_LAKE or {DEFAULT_LAKE})"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Apply pending batches; return the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings(lake=args.lake) if args.lake else Settings()
        from aspen.lake.apply import apply_pending
        from aspen.spark.session import get_spark

        report = apply_pending(get_spark("aspen-apply"), settings)
    except AspenError as err:
        print(f"apply: {err}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(f"apply: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
