"""``aspen ingest FILE…``: validate update files and append them to the Delta updates log.

Valid records go to ``updates`` as one new ingest batch, invalid ones to ``quarantine`` with a
reason; per-file counts are printed. Ingesting the same file (name and content) again right
after changes nothing (a rerun); once later batches were ingested it is refused in one line
(exit 2), unless ``--again`` sends it again (aspen.lake.ingest has the rule). The
tables are written through delta-rs: no JVM starts (docs/performance.md has the time). While
another ingest (or the TTL sweep) writes the lake's update log, this one waits for it, up to
``--wait`` seconds (default 120), then fails with one line (exit 2).

>>> import argparse
>>> parser = argparse.ArgumentParser(); register(parser.add_subparsers())
>>> parser.parse_args(["ingest", "a.jsonl", "b.csv"]).files
['a.jsonl', 'b.csv']
>>> parser.parse_args(["ingest", "--again", "a.jsonl"]).again
True
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
    p.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                   help="how long to wait while another writer holds the update log "
                        "(default 120)")
    p.add_argument("--again", action="store_true",
                   help="apply the files even if the same name and content was ingested before "
                        "(a new send of the same updates)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Ingest ``args.files`` into the lake of ``settings``; print per-file counts."""
    from aspen.errors import ConfigError
    from aspen.lake.ingest import check_inputs, ingest_files
    from aspen.lake.lease import LOG_WAIT_SECONDS

    wait = LOG_WAIT_SECONDS if getattr(args, "wait", None) is None else args.wait
    if wait < 0:
        raise ConfigError(f"--wait must be ≥ 0 seconds, got {wait:g}")
    check_inputs(list(args.files))  # a missing file fails in one line, before the lake is read
    from aspen.cli._output import printable

    report = ingest_files(settings, list(args.files), wait=wait,
                          again=bool(getattr(args, "again", False)))
    for line in report.lines():
        print(printable(line))
    return 0
