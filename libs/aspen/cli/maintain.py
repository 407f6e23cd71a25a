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
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aspen.errors import ConfigError
from aspen.pipeline.batch import MaintainReport
from aspen.settings import MAX_PARTITIONS, Settings

if TYPE_CHECKING:
    from aspen.lake.lease import MaintainerLease
    from aspen.queries.worker import QueryWorker

#: Seconds between a follower's looks at the update log.
DEFAULT_POLL_SECONDS = 1.0
#: Seconds between ``--stop``'s looks at whether the follower has stopped.
STOP_POLL_SECONDS = 0.5


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "maintain", help="apply logged updates to the base tables and maintain the views"
    )
    p.add_argument("--runtime", choices=("local", "spark"), default="local",
                   help="local: the operators in this process; spark: partitions on Spark")
    p.add_argument("--partitions", type=int, default=None,
                   help=f"number of query nodes, 1–{MAX_PARTITIONS} (default 4)")
    p.add_argument("--mode", choices=("lazy", "eager"), default=None,
                   help="MinShip mode (default lazy)")
    p.add_argument("--hosts", type=int, default=None,
                   help="spark: Spark tasks a round runs the query nodes on, mail between nodes "
                        "of one task delivered within the round (default: as many as Spark "
                        "runs tasks at once, at most one per node)")
    p.add_argument("--no-queries", dest="queries", action="store_false",
                   help="do not run the registered continuous queries after each batch (they "
                        "run on Spark: with --runtime local this saves starting it)")
    p.add_argument("--rebuild", action="store_true",
                   help="rebuild every view, the change log and the runtime's state from the base "
                        "tables as one committed batch (the remedy for a damaged lake; no "
                        "continuous queries run after it)")
    follow = p.add_argument_group("follower (a long-lived maintainer)")
    follow.add_argument("--follow", action="store_true",
                        help="keep running: maintain a batch whenever updates arrive; SIGTERM "
                             "stops it after the current batch")
    follow.add_argument("--stop", action="store_true",
                        help="ask the lake's follower to stop after its current batch, and wait "
                             "until it has (works for a follower anywhere: the request goes "
                             "through the lake)")
    follow.add_argument("--poll", type=float, default=None, metavar="SECONDS",
                        help="with --follow: seconds between looks at the update log (default 1)")
    follow.add_argument("--inbox", type=str, default=None, metavar="DIR",
                        help="with --follow: ingest the update files that land in DIR (write "
                             "them under a hidden or .tmp name, then rename), then maintain "
                             "them; ingested files move to DIR/ingested")
    follow.add_argument("--max-batches", type=int, default=None, metavar="N",
                        help="with --follow: stop after N maintained batches")
    follow.add_argument("--for", dest="duration", type=float, default=None, metavar="SECONDS",
                        help="with --follow: stop after this many seconds")
    follow.add_argument("--expire-every", type=float, default=None, metavar="SECONDS",
                        help="with --follow: sweep expired TTLs between batches at most every "
                             "SECONDS (default 300; 0: never)")
    follow.add_argument("--housekeep-every", type=float, default=None, metavar="SECONDS",
                        help="with --follow: OPTIMIZE and VACUUM the tables between batches at "
                             "most every SECONDS, keeping ASPEN_RETAIN_HOURS of history "
                             "(default 86400; 0: never)")
    p.set_defaults(func=run)


def _batch_runner(args: argparse.Namespace, settings: Settings,
                  worker: QueryWorker | None = None) -> Callable[[], MaintainReport]:
    """One maintained batch of the chosen runtime, as a function of nothing; with a query
    worker, each committed batch is handed to it (the queries run in its thread)."""
    run_batch = _runtime_batch(args, settings)
    if worker is None:
        return run_batch
    from aspen.queries.worker import after_batches

    return after_batches(run_batch, worker)


def _runtime_batch(args: argparse.Namespace, settings: Settings) -> Callable[[], MaintainReport]:
    """One maintained batch of the chosen runtime."""
    if args.runtime == "spark":
        from aspen.pipeline.maintain_spark import maintain_spark

        if args.follow:  # a follower starts its application before it looks at the log
            from aspen.spark.session import get_spark

            get_spark("aspen-maintain")
        return lambda: maintain_spark(settings, hosts=args.hosts)
    from aspen.pipeline.maintain_local import maintain_local

    return lambda: maintain_local(settings)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aspen.lake.lease import MaintainerLease

    if args.hosts is not None and args.runtime != "spark":
        raise ConfigError("--hosts applies to --runtime spark only")
    if args.hosts is not None and not 1 <= args.hosts <= MAX_PARTITIONS:  # before Spark starts
        bound = "at least 1" if args.hosts < 1 else f"at most {MAX_PARTITIONS}"
        raise ConfigError(f"--hosts must be {bound}, got {args.hosts}")
    given = [flag for flag, value in (("--poll", args.poll), ("--inbox", args.inbox),
                                      ("--max-batches", args.max_batches),
                                      ("--for", args.duration),
                                      ("--expire-every", args.expire_every),
                                      ("--housekeep-every", args.housekeep_every))
             if value is not None]
    if given and not args.follow:
        raise ConfigError(f"{', '.join(given)}: only with --follow")
    for flag, value in (("--expire-every", args.expire_every),
                        ("--housekeep-every", args.housekeep_every)):
        if value is not None and value < 0:
            raise ConfigError(f"{flag} must not be negative, got {value:g}")
    if args.rebuild:  # one batch rebuilding every view, under the lease like any batch
        if args.follow or args.stop:
            raise ConfigError("--rebuild runs one batch: not with --follow or --stop")
        with MaintainerLease(settings, f"aspen maintain --runtime {args.runtime} --rebuild"):
            if args.runtime == "spark":
                from aspen.pipeline.maintain_spark import maintain_spark

                report = maintain_spark(settings, hosts=args.hosts, rebuild=True)
            else:
                from aspen.pipeline.maintain_local import maintain_local

                report = maintain_local(settings, rebuild=True)
            for line in report.lines():
                print(line)
        return 0
    if args.stop:
        if args.follow:
            raise ConfigError("--stop and --follow exclude each other")
        return _stop_follower(settings)
    command = f"aspen maintain --runtime {args.runtime}" + (" --follow" if args.follow else "")
    if args.inbox is not None:  # last, so a reader of the lease knows the inbox it watches
        from aspen.pipeline.inbox import inbox_folder  # its real path; refused if it could escape

        args.inbox = inbox_folder(str(args.inbox))
        command += f" --inbox {args.inbox}"
    worker = None
    if args.queries:
        from aspen.queries.worker import QueryWorker

        worker = QueryWorker(settings, emit=lambda line: print(line, flush=True))
    with MaintainerLease(settings, command, follower=args.follow) as lease:
        run_batch = _batch_runner(args, settings, worker)
        if args.follow:
            return _follow(args, settings, run_batch, lease, worker)
        report = run_batch()
    for line in report.lines():
        print(line, flush=True)
    if worker is not None:  # the lease is released: the queries run now, off it
        worker.finish()
    return 0


def _stop_follower(settings: Settings) -> int:
    """Ask the lake's maintainer to stop, then wait until it no longer holds the lease."""
    from aspen.lake.lease import current_holder, request_stop

    holder = request_stop(settings)
    if holder is None:
        print("no maintainer holds the lake's lease: nothing to stop")
        return 0
    print(f"asked {holder.describe()} to stop after its current batch", flush=True)
    while True:
        row = current_holder(settings)
        if row is None or row.owner != holder.owner or not row.is_live(datetime.now(UTC)):
            print("stopped")
            return 0
        time.sleep(STOP_POLL_SECONDS)


def _follow(args: argparse.Namespace, settings: Settings,
            run_batch: Callable[[], MaintainReport], lease: MaintainerLease,
            worker: QueryWorker | None = None) -> int:
    from aspen.lake.housekeeping import retain_hours_from_env
    from aspen.pipeline.follow import (
        DEFAULT_EXPIRE_EVERY,
        DEFAULT_HOUSEKEEP_EVERY,
        follow,
        lake_chores,
    )

    poll = DEFAULT_POLL_SECONDS if args.poll is None else args.poll
    keep_every = DEFAULT_HOUSEKEEP_EVERY if args.housekeep_every is None else args.housekeep_every
    chores = lake_chores(
        settings,
        expire_every=DEFAULT_EXPIRE_EVERY if args.expire_every is None else args.expire_every,
        housekeep_every=keep_every, retain_hours=retain_hours_from_env() if keep_every else None)
    stop = threading.Event()
    # SIGTERM stops between batches (only the main thread may install a handler: a follower
    # run in another thread is stopped through the lake, ``aspen maintain --stop``)
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set()) if in_main else None
    if worker is not None:
        worker.start()
    try:
        report = follow(settings, run_batch, poll=poll, max_batches=args.max_batches,
                        duration=args.duration, stop=stop, stop_requested=lease.stop_requested,
                        emit=lambda line: print(line, flush=True), chores=chores,
                        inbox=args.inbox)
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
        if worker is not None:  # a short grace for a running round, then its jobs cancelled
            for line in worker.stop():
                print(line, flush=True)
    for line in report.lines():
        print(line)
    return 0
