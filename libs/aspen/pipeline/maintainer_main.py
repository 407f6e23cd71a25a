"""The maintainer as a process: its arguments, SIGTERM, its lines and exit code.

``python -m aspen.pipeline.maintainer_main --lake L [--runtime R] [--follow …]`` takes the
arguments of ``aspen maintain`` (:func:`add_arguments`; the CLI registers the same ones) and runs
:mod:`aspen.pipeline.maintainer`: the supervised follower (:mod:`aspen.pipeline.supervise`) and
``jobs/maintain.py`` start it so, without the CLI. SIGTERM stops a follower between batches
(:func:`sigterm_stops`); an :class:`~aspen.errors.AspenError` is one line on stderr
(``aspen maintain: …``; a library's error too, :mod:`aspen.pipeline.boundary`) and exit code
2, as the CLI prints it.

>>> args = build_parser().parse_args(["--lake", "/tmp/l", "--follow", "--poll", "0.5"])
>>> options_from(args)
MaintainOptions(runtime='local', hosts=None, queries=True, rebuild=False, follow=True, \
poll=0.5, inbox=None, max_batches=None, duration=None, expire_every=None, housekeep_every=None)
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from aspen.errors import ConfigError
from aspen.pipeline.entry import run_entry
from aspen.pipeline.maintainer import (
    Emit,
    MaintainOptions,
    ask_follower_to_stop,
    maintain_once,
    run_follower,
)
from aspen.settings import DEFAULT_LAKE, MAX_PARTITIONS, Settings

__all__ = ["PROG", "add_arguments", "build_parser", "main", "options_from", "run",
           "sigterm_stops"]

#: How the process names itself in an error line (as the CLI's ``aspen maintain``).
PROG = "aspen maintain"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``aspen maintain`` (but ``--lake``), added to ``p``."""
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


def build_parser(prog: str = "maintain") -> argparse.ArgumentParser:
    """The process's parser: ``--lake`` and :func:`add_arguments`.

    >>> build_parser().parse_args(["--runtime", "spark", "--hosts", "2"]).hosts
    2
    """
    parser = argparse.ArgumentParser(
        prog=prog, description="Apply logged updates to the base tables and maintain the views.")
    parser.add_argument("--lake", default=None,
                        help=f"lake root (default: $ASPEN_LAKE or {DEFAULT_LAKE})")
    add_arguments(parser)
    return parser


def options_from(args: argparse.Namespace) -> MaintainOptions:
    """The options of parsed arguments, their combination checked (one line naming the flags);
    ``--stop`` is no option but an action of its own (:func:`run`)."""
    options = MaintainOptions(
        runtime=args.runtime, hosts=args.hosts, queries=args.queries, rebuild=args.rebuild,
        follow=args.follow, poll=args.poll, inbox=args.inbox, max_batches=args.max_batches,
        duration=args.duration, expire_every=args.expire_every,
        housekeep_every=args.housekeep_every)
    options.check()
    if args.stop and options.rebuild:
        raise ConfigError("--rebuild runs one batch: not with --follow or --stop")
    if args.stop and options.follow:
        raise ConfigError("--stop and --follow exclude each other")
    return options


@contextmanager
def sigterm_stops() -> Iterator[threading.Event]:
    """An event that SIGTERM sets for the ``with`` block (the previous handler put back after);
    only the main thread may install a handler, so elsewhere the event is only the caller's (a
    follower run in another thread is stopped through the lake, ``aspen maintain --stop``)."""
    stop = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set()) if in_main else None
    try:
        yield stop
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)


def _print(line: str) -> None:
    print(line, flush=True)


def run(args: argparse.Namespace, settings: Settings, emit: Emit = _print) -> int:
    """Run what the arguments ask for: one batch, a follower (SIGTERM stops it) or a stop
    request; the exit code (0: errors are raised)."""
    options = options_from(args)
    if args.stop:
        ask_follower_to_stop(settings, emit)
    elif options.follow:
        with sigterm_stops() as stop:
            run_follower(settings, options, stop=stop, emit=emit)
    else:
        maintain_once(settings, options, emit)
    return 0


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run the maintainer with ``argv``; the process exit code (2 and one line on stderr for an
    error a person can act on, 130 when interrupted: :func:`aspen.pipeline.entry.run_entry`)."""
    args = build_parser(prog).parse_args(argv)

    def work() -> int:
        kwargs = {"lake": args.lake} if args.lake is not None else {}
        for key in ("partitions", "mode"):
            if getattr(args, key) is not None:
                kwargs[key] = getattr(args, key)
        return run(args, Settings(**kwargs))

    return run_entry(prog, work, args.lake)


if __name__ == "__main__":  # pragma: no cover -- the supervised follower's process
    from aspen.spark.job import exit_process

    exit_process(main())
