"""``aspen ingest FILE…``: validate update files and append them to the Delta updates log.

Valid records go to ``updates`` as one new ingest batch, invalid ones to ``quarantine`` with a
reason; per-file counts are printed. Re-ingesting the same file content changes nothing.

>>> import argparse
>>> parser = argparse.ArgumentParser(); register(parser.add_subparsers())
>>> parser.parse_args(["ingest", "a.jsonl", "b.csv"]).files
['a.jsonl', 'b.csv']
"""

from __future__ import annotations

import argparse

from aspen.settings import Settings

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``ingest`` command to ``sub``."""
    p = sub.add_parser(
        "ingest", help="validate update files and append them to the Delta updates log"
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="update files (.jsonl, .json, .csv)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Ingest ``args.files`` into the lake of ``settings``; print per-file counts."""
    from aspen.lake.ingest import check_inputs, ingest_files

    check_inputs(list(args.files))  # a missing file fails in one line, before Spark starts
    from aspen.spark.session import get_spark

    report = ingest_files(get_spark("aspen-ingest"), settings, list(args.files))
    for line in report.lines():
        print(line)
    return 0
