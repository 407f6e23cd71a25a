"""spark-submit entry point: OPTIMIZE and VACUUM every table of the lake.

    spark-submit jobs/housekeeping.py --lake LAKE [--retain-hours H]
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

    >>> build_parser().parse_args(["--retain-hours", "24"]).retain_hours
    24.0
    """
    from aspen.lake.housekeeping import DEFAULT_RETAIN_HOURS

    parser = argparse.ArgumentParser(prog="housekeeping", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lake", default=None, help=f"lake root (default: $ASPEN_LAKE or {DEFAULT_LAKE})"
    )
    parser.add_argument("--retain-hours", type=float, default=DEFAULT_RETAIN_HOURS,
                        help="history VACUUM keeps (the time-travel window; default 168)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Keep the lake's tables; return the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings(lake=args.lake) if args.lake else Settings()
        from aspen.lake.housekeeping import housekeep
        from aspen.spark.session import get_spark

        report = housekeep(get_spark("aspen-housekeeping"), settings, args.retain_hours)
    except AspenError as err:
        print(f"housekeeping: {err}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(f"housekeeping: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
