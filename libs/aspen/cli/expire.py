"""``aspen expire``: turn expired TTLs into deletions (the TTL sweep, :mod:`aspen.lake.expire`).

A small sweep runs in process and starts no Spark session (:mod:`aspen.lake.expire`). The
sweep writes the base tables, so it is refused with one line (exit 2) while a maintainer or
a follower holds the lake's maintainer lease (a follower sweeps itself, ``--expire-every``); it
waits briefly for an ingest writing the log.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from aspen.errors import ConfigError
from aspen.settings import Settings


def _instant(text: str) -> datetime:
    """An ISO-8601 instant (``Z`` allowed; naive means UTC).

    >>> _instant("2026-01-01T00:10:00Z").isoformat()
    '2026-01-01T00:10:00+00:00'
    """
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:
        raise ConfigError(f"--now must be an ISO-8601 time such as 2026-01-01T00:10:00Z, "
                          f"not {text!r}") from err
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("expire", help="turn expired TTLs into deletions")
    p.add_argument("--now", default=None, metavar="ISO",
                   help="sweep as of this time (default: the current time)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.lake.expire import expire_due
    from aspen.spark.session import get_spark

    now = _instant(args.now) if args.now else None
    # the session starts only if the sweep is too large to run in process
    report = expire_due(lambda: get_spark("aspen-expire"), settings, now)
    for line in report.lines():
        print(line)
    return 0
