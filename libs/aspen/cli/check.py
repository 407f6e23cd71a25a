"""``aspen check``: run the Great Expectations suites over the lake (exit 1 if one fails).

The outcomes are written to the ``expectation_results`` table for the last committed batch
(a rerun replaces that batch's rows) and printed: a line per suite, then every failure.
"""

from __future__ import annotations

import argparse

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="run the data-quality expectations over the lake (exit 1 on a failure)"
    )
    p.add_argument(
        "--verbose", action="store_true", help="print every expectation, not only failures"
    )
    p.add_argument(
        "--no-write", dest="write", action="store_false",
        help="do not record the outcomes in the expectation_results table",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.quality import run_expectations

    report = run_expectations(settings, write=args.write)
    for line in report.lines(verbose=args.verbose):
        print(line)
    return 0 if report.success else 1
