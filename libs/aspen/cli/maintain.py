"""``aspen maintain``: apply logged updates to the base tables and maintain the views.

Once (the default: every update logged since the last batch, as one batch), or as a follower
(``--follow``: a long-lived maintainer that runs a batch whenever updates arrive, see
:mod:`aspen.pipeline.follow`). Either holds the lake's maintainer lease while it runs
(:mod:`aspen.lake.lease`), so a second maintainer of the same lake is refused; a follower
therefore also sweeps TTLs and keeps the tables itself (``--expire-every``,
``--housekeep-every``), as ``aspen expire`` and the housekeeping job are refused meanwhile.
Each committed batch is handed to the query worker (:mod:`aspen.queries.worker`), which runs the
registered continuous queries in a thread of its own, off the lease: a follower goes on at
once, a one-shot run releases its lease first (``--no-queries`` skips them).

The command only parses its arguments: the maintainer itself — lease, batch, queries, follower,
stop request — is :mod:`aspen.pipeline.maintainer`, run as a process (SIGTERM, lines, flag
checks) by :mod:`aspen.pipeline.maintainer_main`, which the jobs and the supervisor start too.
"""

from __future__ import annotations

import argparse

from aspen.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:
    from aspen.pipeline.maintainer_main import add_arguments

    p = sub.add_parser(
        "maintain", help="apply logged updates to the base tables and maintain the views"
    )
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.pipeline.maintainer_main import run as run_maintainer

    return run_maintainer(args, settings)
