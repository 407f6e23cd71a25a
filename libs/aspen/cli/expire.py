"""``aspen expire``: turn expired TTLs into deletions (the TTL sweep, :mod:`aspen.lake.expire`).

A small sweep runs in process and starts no Spark session (:mod:`aspen.lake.expire`). The
sweep writes the base tables, so it is refused with one line (exit 2) while a maintainer or
a follower holds the lake's maintainer lease (a follower sweeps itself, ``--expire-every``); it
waits briefly for an ingest writing the log.
"""

from __future__ import annotations

import argparse

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("expire", help="turn expired TTLs into deletions")
    p.add_argument("--now", default=None, metavar="ISO",
                   help="sweep as of this time (default: the current time)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.pipeline.sweep import sweep  # a session only if the sweep is large

    report = sweep(settings, args.now)
    for line in report.lines():
        print(line)
    return 0
